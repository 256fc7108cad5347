package hubserver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/station-dev/station/hub"
)

// Export and import of the SQLite store (export.go has the format).

// sqliteNotCarried are the tables of the SQLite schema an export leaves
// out, and why.
var sqliteNotCarried = map[string]string{
	"schema_version":  "the target has its own schema; the manifest records the source's",
	"sqlite_sequence": "its row for events is carried as event_seq",
}

// sqliteRowid are the columns of the archive that SQLite keeps as a
// table's rowid: the order awards and advisories were stored in, which
// the listings keep.
var sqliteRowid = map[string]string{"credits": "n", "advisories": "n"}

// sqliteDerived are the tables of the archive that SQLite has no table
// for: it numbers events from sqlite_sequence and advisories from the
// stored ones.
var sqliteDerived = map[string]bool{"event_seq": true, "advisory_counters": true}

// sqliteAdvisoryCounters derives advisory_counters from the advisories:
// each year's highest number, as nextAdvisoryID reads it.
var sqliteAdvisoryCounters = fmt.Sprintf(`SELECT CAST(substr(id, %[1]d, 4) AS INTEGER) AS year, max(CAST(substr(id, %[2]d) AS INTEGER))
	FROM advisories WHERE id GLOB '%[3]s-[0-9][0-9][0-9][0-9]-*' GROUP BY year ORDER BY year`,
	len(hub.AdvisoryPrefix)+2, len(hub.AdvisoryPrefix)+7, hub.AdvisoryPrefix)

// sqliteSelect returns the query of t's rows in key order.
func sqliteSelect(t *archTable) string {
	switch t.name {
	case "event_seq":
		return `SELECT coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'events'), 0)`
	case "advisory_counters":
		return sqliteAdvisoryCounters
	}
	cols := t.colNames()
	if c := sqliteRowid[t.name]; c != "" {
		cols[t.col(c)] = "rowid"
	}
	var key []string
	for _, k := range t.key {
		key = append(key, cols[k])
	}
	return `SELECT ` + strings.Join(cols, ", ") + ` FROM ` + t.name + ` ORDER BY ` + strings.Join(key, ", ")
}

type sqliteSnapshot struct {
	tx     *sql.Tx
	schema int
}

// archiveSnapshot begins a read transaction (BEGIN DEFERRED: a writer of a
// running hub goes on) and reads the schema version, which starts its
// snapshot: in WAL mode every later read sees the database as it was then.
func (s *SQLite) archiveSnapshot(ctx context.Context) (archiveSnapshot, error) {
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("begin a snapshot of %s: %w", s.path, err)
	}
	snap := &sqliteSnapshot{tx: tx}
	if err := tx.QueryRowContext(ctx, `SELECT version FROM schema_version`).Scan(&snap.schema); err != nil {
		tx.Rollback()
		return nil, fmt.Errorf("read the schema version of %s: %w", s.path, err)
	}
	return snap, nil
}

func (s *sqliteSnapshot) source() ExportSource {
	return ExportSource{Store: "sqlite", Schema: s.schema}
}

func (s *sqliteSnapshot) close() { s.tx.Rollback() }

func (s *sqliteSnapshot) rows(ctx context.Context, t *archTable, fn func([]any) error) error {
	rows, err := s.tx.QueryContext(ctx, sqliteSelect(t))
	if err != nil {
		return err
	}
	defer rows.Close()
	vals := make([]any, len(t.cols))
	ptrs := make([]any, len(t.cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	row := make([]any, len(t.cols))
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
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

// canonValue returns a value a driver read for column c as the Go type of
// its kind: SQLite gives booleans as integers, PostgreSQL integer columns
// as int32.
func canonValue(c archCol, v any) (any, error) {
	switch x := v.(type) {
	case nil:
		return nil, nil
	case int32:
		v = int64(x)
	case int64:
		if c.kind == kBool {
			switch x {
			case 0:
				return false, nil
			case 1:
				return true, nil
			}
			return nil, fmt.Errorf("column %s holds %d, not a boolean", c.name, x)
		}
	}
	ok := false
	switch c.kind {
	case kText:
		_, ok = v.(string)
	case kInt:
		_, ok = v.(int64)
	case kBool:
		_, ok = v.(bool)
	case kBytes:
		_, ok = v.([]byte)
	}
	if !ok {
		return nil, fmt.Errorf("column %s holds a %T", c.name, v)
	}
	return v, nil
}

// archiveLoad runs fn in one write transaction (BEGIN IMMEDIATE: no other
// writer meanwhile).
func (s *SQLite) archiveLoad(ctx context.Context, fn func(archiveLoader) error) error {
	return s.tx(ctx, func(tx *sql.Tx) error { return fn(&sqliteLoader{tx: tx}) })
}

type sqliteLoader struct {
	tx *sql.Tx
	// counters are the archive's advisory_counters, checked by finish.
	counters [][2]int64
}

func (l *sqliteLoader) rowsIn(ctx context.Context) (map[string]int64, error) {
	out := map[string]int64{}
	for _, t := range archiveTables {
		q := `SELECT count(*) FROM ` + t.name
		switch t.name {
		case "advisory_counters":
			continue // the advisories'
		case "event_seq":
			q = sqliteSelect(&t)
		}
		var n int64
		if err := l.tx.QueryRowContext(ctx, q).Scan(&n); err != nil {
			return nil, fmt.Errorf("count %s: %w", t.name, err)
		}
		out[t.name] = n
	}
	return out, nil
}

func (l *sqliteLoader) insert(ctx context.Context, t *archTable, next func() ([]any, error)) error {
	var query string
	switch t.name {
	case "event_seq":
		// The inserts of events moved sqlite_sequence to the last seq;
		// the counter may not be below it (the archive was checked).
		query = `UPDATE sqlite_sequence SET seq = ?1 WHERE name = 'events'`
	case "advisory_counters":
	default:
		cols := t.colNames()
		if c := sqliteRowid[t.name]; c != "" {
			cols[t.col(c)] = "rowid"
		}
		query = `INSERT INTO ` + t.name + ` (` + strings.Join(cols, ", ") + `) VALUES (?` + strings.Repeat(", ?", len(cols)-1) + `)`
	}
	var stmt *sql.Stmt
	if query != "" {
		var err error
		if stmt, err = l.tx.PrepareContext(ctx, query); err != nil {
			return err
		}
		defer stmt.Close()
	}
	for {
		row, err := next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		switch t.name {
		case "advisory_counters":
			l.counters = append(l.counters, [2]int64{row[0].(int64), row[1].(int64)})
			continue
		case "event_seq":
			res, err := stmt.ExecContext(ctx, row...)
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n == 0 && row[0].(int64) > 0 {
				if _, err := l.tx.ExecContext(ctx, `INSERT INTO sqlite_sequence (name, seq) VALUES ('events', ?)`, row[0]); err != nil {
					return err
				}
			}
			continue
		}
		if _, err := stmt.ExecContext(ctx, row...); err != nil {
			return err
		}
	}
}

// finish checks that the archive's advisory counters are the ones SQLite
// derives from the advisories loaded: a counter beyond them (PostgreSQL
// keeps its counters apart) would have SQLite give a number again.
func (l *sqliteLoader) finish(ctx context.Context) error {
	rows, err := l.tx.QueryContext(ctx, sqliteAdvisoryCounters)
	if err != nil {
		return err
	}
	defer rows.Close()
	var have [][2]int64
	for rows.Next() {
		var c [2]int64
		if err := rows.Scan(&c[0], &c[1]); err != nil {
			return err
		}
		have = append(have, c)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if fmt.Sprint(have) != fmt.Sprint(l.counters) {
		return fmt.Errorf("the archive's advisory counters (year, last) %v are not those of its advisories %v: SQLite numbers advisories from the stored ones and would give a number again; import into PostgreSQL, which keeps the counters", l.counters, have)
	}
	return nil
}
