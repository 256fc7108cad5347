// Package sqldb opens the embedded SQLite databases — the station's store
// and the hub's — the one way: a private file, WAL, immediate write
// transactions, a busy timeout, and append-only migrations applied in one
// transaction. It also reads them the one way: QueryAll and QueryOne scan
// rows with a function and check every error a query can end with, and
// ToNanos and FromNanos convert the times both databases store as Unix
// nanoseconds.
package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"time"

	_ "modernc.org/sqlite" // the "sqlite" driver
)

// BusyTimeout is how long a statement waits for the write lock.
const BusyTimeout = 10 * time.Second

// Open opens the database at path, creating it (mode 0600, and its
// directory, mode 0700) if needed. It returns the database and the file's
// absolute path.
func Open(path string) (*sql.DB, string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, "", err
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return nil, "", err
	}
	// Create the file here so that it is private to the user: the SQLite
	// driver would create it with the umask's mode.
	f, err := os.OpenFile(abs, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, "", err
	}
	f.Close()
	q := url.Values{}
	q.Set("_busy_timeout", fmt.Sprint(BusyTimeout.Milliseconds()))
	q.Set("_journal_mode", "WAL")
	q.Set("_synchronous", "NORMAL")
	q.Set("_foreign_keys", "1")
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite", (&url.URL{Scheme: "file", Path: abs, RawQuery: q.Encode()}).String())
	if err != nil {
		return nil, "", err
	}
	return db, abs, nil
}

// Tx runs fn in a write transaction (BEGIN IMMEDIATE), committing if fn
// returns nil.
func Tx(ctx context.Context, db *sql.DB, fn func(*sql.Tx) error) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

// Migrate brings the database to schema version len(migrations) in one
// transaction: migrations[i] takes it from version i to i+1. A database
// newer than that is refused with tooNew(have, supported).
func Migrate(ctx context.Context, db *sql.DB, migrations []string, tooNew func(have, supported int) error) error {
	return Tx(ctx, db, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL) STRICT`); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		var v int
		switch err := tx.QueryRowContext(ctx, `SELECT version FROM schema_version`).Scan(&v); {
		case errors.Is(err, sql.ErrNoRows):
			if _, err := tx.ExecContext(ctx, `INSERT INTO schema_version (version) VALUES (0)`); err != nil {
				return fmt.Errorf("migrate: %w", err)
			}
		case err != nil:
			return fmt.Errorf("migrate: read schema version: %w", err)
		}
		if v > len(migrations) {
			return tooNew(v, len(migrations))
		}
		if v == len(migrations) {
			return nil
		}
		for ; v < len(migrations); v++ {
			if _, err := tx.ExecContext(ctx, migrations[v]); err != nil {
				return fmt.Errorf("migrate to schema version %d: %w", v+1, err)
			}
		}
		if _, err := tx.ExecContext(ctx, `UPDATE schema_version SET version = ?`, v); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		return nil
	})
}

// Querier runs queries: a *sql.DB, *sql.Tx or *sql.Conn.
type Querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Scanner is a row to scan: a *sql.Row, or a *sql.Rows on its current row.
type Scanner interface {
	Scan(dest ...any) error
}

// QueryAll runs query and returns what scan makes of each row, in order:
// an empty slice, not nil, when there is no row, so that a listing encodes
// as [] in JSON. The rows are closed before it returns, and the error is
// the query's, the first scan's, or the iteration's (rows.Err), unwrapped:
// the caller says what it was reading.
func QueryAll[T any](ctx context.Context, q Querier, scan func(Scanner) (T, error), query string, args ...any) ([]T, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []T{}
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// QueryOne runs query and returns what scan makes of its first row. When
// there is none, the row's Scan returns sql.ErrNoRows, and so does QueryOne
// if scan passes the error on. As with QueryAll, the caller wraps the
// error.
func QueryOne[T any](ctx context.Context, q Querier, scan func(Scanner) (T, error), query string, args ...any) (T, error) {
	return scan(q.QueryRowContext(ctx, query, args...))
}

// Times are stored as Unix nanoseconds (UTC): exact for every time from
// 1678 to 2262, the range an int64 of nanoseconds holds.
var (
	minTime = time.Unix(0, math.MinInt64)
	maxTime = time.Unix(0, math.MaxInt64)
)

// ToNanos returns t as Unix nanoseconds, the form both databases store
// times in. A time outside 1678-2262 has none (time.Time.UnixNano's result
// is undefined there) and is an error.
func ToNanos(t time.Time) (int64, error) {
	if t.Before(minTime) || t.After(maxTime) {
		return 0, fmt.Errorf("time %s cannot be stored (outside 1678-2262)", t.Format(time.RFC3339))
	}
	return t.UnixNano(), nil
}

// FromNanos returns the time of n Unix nanoseconds, in UTC: ToNanos's
// inverse.
func FromNanos(n int64) time.Time {
	return time.Unix(0, n).UTC()
}
