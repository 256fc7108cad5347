package hubserver

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/sqldb"
)

// The rules a Store checks in its transactions (rules.go, rules_reports.go)
// are written once, for both stores, against ruleTx: one transaction of
// SQLite or of PostgreSQL, with the statements they share written once in
// SQLite's ? style (the PostgreSQL side numbers them $1, $2, …). What is
// not the same in both — how an event gets its sequence number and an
// advisory its id, how a constraint violation reads, and the locks — are
// methods each store implements next to its SQL (sqliteTx in sqlite.go,
// pgTx in postgres.go).
//
// The locks are where the stores differ most, so the rules ask for each
// one by name, at the point where PostgreSQL must take it: before the
// reads the rule decides on. A SQLite write transaction (BEGIN IMMEDIATE)
// is the database's one writer from its start, so there every lock method
// is a no-op; a PostgreSQL transaction runs at READ COMMITTED and takes
// each lock when it is asked for, until the transaction ends (Postgres
// says which lock serializes what). A read (a pool, or PostgreSQL's
// read-only snapshot) locks nothing.
type ruleTx interface {
	// exec runs a statement.
	exec(ctx context.Context, query string, args ...any) error
	// queryRow runs a query for one row. Its Scan returns sql.ErrNoRows
	// (on PostgreSQL too) when there is none.
	queryRow(ctx context.Context, query string, args ...any) sqldb.Scanner
	// queryEach runs a query and calls scan on each row, in order.
	queryEach(ctx context.Context, scan func(sqldb.Scanner) error, query string, args ...any) error

	// unique reports a UNIQUE or PRIMARY KEY violation.
	unique(err error) bool
	// appendEvent adds ev to the log and returns it with its seq.
	appendEvent(ctx context.Context, ev hub.Event) (hub.Event, error)
	// nextAdvisoryID returns the next advisory id of at's year.
	nextAdvisoryID(ctx context.Context, at time.Time) (string, error)

	// lockName serializes the transactions that check a rule about
	// kind:name (a module, a team, the station's releases).
	lockName(ctx context.Context, kind, name string) error
	// lockReport locks a report's row, so that its state, thread and
	// advisory have one writer; ErrNotFound if there is no such report
	// (PostgreSQL only: on SQLite it finds nothing out).
	lockReport(ctx context.Context, id string) error
	// lockAdvisory locks an advisory's row.
	lockAdvisory(ctx context.Context, id string) error
	// lockAccount holds an account's row as it is (a share lock), so that
	// an admin's rights are not taken away between the check and the
	// commit.
	lockAccount(ctx context.Context, name string) error
}

// all is sqldb.QueryAll over a ruleTx: what scan makes of each row, []
// (not nil) for none.
func all[T any](ctx context.Context, q ruleTx, scan func(sqldb.Scanner) (T, error), query string, args ...any) ([]T, error) {
	out := []T{}
	err := q.queryEach(ctx, func(r sqldb.Scanner) error {
		v, err := scan(r)
		if err != nil {
			return err
		}
		out = append(out, v)
		return nil
	}, query, args...)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// optTime is a nullable time column, scanned into *int64 (both drivers
// scan NULL to nil): nil, or the time.
func optTime(n *int64) *time.Time {
	if n == nil {
		return nil
	}
	t := sqldb.FromNanos(*n)
	return &t
}

// exists returns ErrNotFound unless query returns a row.
func exists(ctx context.Context, q ruleTx, query string, args ...any) error {
	var one int
	err := q.queryRow(ctx, query, args...).Scan(&one)
	if isNoRows(err) {
		return ErrNotFound
	}
	return err
}

// isNoRows reports that a ruleTx's queryRow found no row.
func isNoRows(err error) bool { return errors.Is(err, sql.ErrNoRows) }
