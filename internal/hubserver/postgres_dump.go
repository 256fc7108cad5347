package hubserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/jackc/pgx/v5"
)

// Export and import of the PostgreSQL store (export.go has the format).

// pgNotCarried are the tables of the PostgreSQL schema an export leaves
// out, and why.
var pgNotCarried = map[string]string{
	"schema_migrations": "the target has its own schema; the manifest records the source's",
	"rate_buckets":      "rate limits refill within seconds; a moved hub starts with full buckets",
}

// pgExtraColumns are the columns of a PostgreSQL table that the archive
// leaves out: event_seq's one, the key that keeps it one row.
var pgExtraColumns = map[string][]string{"event_seq": {"one"}}

// pgSelect returns the query of t's rows in key order (text by its bytes,
// as SQLite orders it).
func pgSelect(t *archTable) string {
	var key []string
	for _, k := range t.key {
		c := t.cols[k]
		if c.kind == kText {
			key = append(key, c.name+` COLLATE "C"`)
		} else {
			key = append(key, c.name)
		}
	}
	q := `SELECT ` + strings.Join(t.colNames(), ", ") + ` FROM ` + t.name
	if len(key) > 0 {
		q += ` ORDER BY ` + strings.Join(key, ", ")
	}
	return q
}

type pgSnapshot struct {
	tx     pgx.Tx
	schema int
}

// archiveSnapshot begins a REPEATABLE READ, READ ONLY transaction: every
// read sees the database as of its first statement, and writers of the
// running hub go on. The statement timeout is off in it: a large table
// takes as long as the archive's writer does.
func (p *Postgres) archiveSnapshot(ctx context.Context) (archiveSnapshot, error) {
	tx, err := p.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, fmt.Errorf("begin a snapshot: %w", err)
	}
	snap := &pgSnapshot{tx: tx}
	if _, err := tx.Exec(ctx, `SET LOCAL statement_timeout = 0`); err != nil {
		tx.Rollback(ctx)
		return nil, fmt.Errorf("begin a snapshot: %w", err)
	}
	if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&snap.schema); err != nil {
		tx.Rollback(ctx)
		return nil, fmt.Errorf("read the schema version: %w", err)
	}
	return snap, nil
}

func (s *pgSnapshot) source() ExportSource { return ExportSource{Store: "postgres", Schema: s.schema} }

func (s *pgSnapshot) close() { s.tx.Rollback(context.Background()) }

func (s *pgSnapshot) rows(ctx context.Context, t *archTable, fn func([]any) error) error {
	rows, err := s.tx.Query(ctx, pgSelect(t))
	if err != nil {
		return err
	}
	defer rows.Close()
	row := make([]any, len(t.cols))
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			return err
		}
		for i, c := range t.cols {
			if row[i], err = canonValue(c, vals[i]); err != nil {
				return err
			}
		}
		if err := fn(row); err != nil {
			return err
		}
	}
	return rows.Err()
}

// archiveLoad runs fn in one transaction that first locks every table of
// the archive against writers (a hub started on the target too early
// waits, or its writes would slip between the check that the target is
// empty and the commit). The statement timeout is off in it.
func (p *Postgres) archiveLoad(ctx context.Context, fn func(archiveLoader) error) error {
	return pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SET LOCAL statement_timeout = 0`); err != nil {
			return err
		}
		var names []string
		for _, t := range archiveTables {
			names = append(names, t.name)
		}
		if _, err := tx.Exec(ctx, `LOCK TABLE `+strings.Join(names, ", ")+` IN EXCLUSIVE MODE`); err != nil {
			return fmt.Errorf("lock the tables: %w", err)
		}
		return fn(&pgLoader{tx: tx})
	})
}

type pgLoader struct{ tx pgx.Tx }

func (l *pgLoader) rowsIn(ctx context.Context) (map[string]int64, error) {
	out := map[string]int64{}
	for _, t := range archiveTables {
		q := `SELECT count(*) FROM ` + t.name
		if t.name == "event_seq" {
			q = `SELECT last FROM event_seq`
		}
		var n int64
		if err := l.tx.QueryRow(ctx, q).Scan(&n); err != nil {
			return nil, fmt.Errorf("count %s: %w", t.name, err)
		}
		out[t.name] = n
	}
	return out, nil
}

func (l *pgLoader) insert(ctx context.Context, t *archTable, next func() ([]any, error)) error {
	if t.name == "event_seq" {
		row, err := next()
		if err != nil {
			return err
		}
		_, err = l.tx.Exec(ctx, `UPDATE event_seq SET last = $1`, row[0])
		return err
	}
	_, err := l.tx.CopyFrom(ctx, pgx.Identifier{t.name}, t.colNames(), &copySource{next: next})
	return err
}

// finish moves the sequences of credits.n and advisories.n past the
// numbers loaded, so that the next award and advisory are stored after
// them.
func (l *pgLoader) finish(ctx context.Context) error {
	for _, t := range []string{"credits", "advisories"} {
		if _, err := l.tx.Exec(ctx, `SELECT setval(pg_get_serial_sequence('`+t+`', 'n'), coalesce(max(n), 0) + 1, false) FROM `+t); err != nil {
			return fmt.Errorf("set the sequence of %s: %w", t, err)
		}
	}
	return nil
}

// copySource is pgx.CopyFromSource over an archive's rows.
type copySource struct {
	next func() ([]any, error)
	row  []any
	err  error
}

func (c *copySource) Next() bool {
	c.row, c.err = c.next()
	if errors.Is(c.err, io.EOF) {
		c.err = nil
		return false
	}
	return c.err == nil
}

func (c *copySource) Values() ([]any, error) { return c.row, nil }

func (c *copySource) Err() error { return c.err }
