package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func openTest(t *testing.T) *sql.DB {
	t.Helper()
	db, _, err := Open(filepath.Join(t.TempDir(), "test.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	err = Migrate(context.Background(), db, []string{`CREATE TABLE t (n INTEGER NOT NULL, s TEXT NOT NULL) STRICT`}, func(have, supported int) error {
		return errors.New("too new")
	})
	if err != nil {
		t.Fatal(err)
	}
	return db
}

type row struct {
	n int64
	s string
}

func scanRow(r Scanner) (row, error) {
	var v row
	err := r.Scan(&v.n, &v.s)
	return v, err
}

func TestQueryAll(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)

	got, err := QueryAll(ctx, db, scanRow, `SELECT n, s FROM t`)
	if err != nil || got == nil || len(got) != 0 {
		t.Fatalf("no rows: %#v, %v; want an empty, non-nil slice", got, err)
	}

	err = Tx(ctx, db, func(tx *sql.Tx) error {
		for i, s := range []string{"a", "b", "c"} {
			if _, err := tx.ExecContext(ctx, `INSERT INTO t (n, s) VALUES (?, ?)`, i, s); err != nil {
				return err
			}
		}
		// The rows are closed when QueryAll returns: the transaction
		// can go on with another statement.
		if _, err := QueryAll(ctx, tx, scanRow, `SELECT n, s FROM t`); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `UPDATE t SET s = s || '!'`)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err = QueryAll(ctx, db, scanRow, `SELECT n, s FROM t WHERE n >= ? ORDER BY n`, 1)
	if err != nil || len(got) != 2 || got[0] != (row{1, "b!"}) || got[1] != (row{2, "c!"}) {
		t.Fatalf("got %v, %v", got, err)
	}

	if _, err := QueryAll(ctx, db, scanRow, `SELECT nope FROM t`); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("a bad query: %v", err)
	}
	boom := errors.New("boom")
	_, err = QueryAll(ctx, db, func(Scanner) (row, error) { return row{}, boom }, `SELECT n, s FROM t`)
	if !errors.Is(err, boom) {
		t.Errorf("a failing scan: %v, want %v", err, boom)
	}
}

func TestQueryOne(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	if _, err := QueryOne(ctx, db, scanRow, `SELECT n, s FROM t`); !errors.Is(err, sql.ErrNoRows) {
		t.Errorf("no row: %v, want sql.ErrNoRows", err)
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO t (n, s) VALUES (7, 'x'), (8, 'y')`); err != nil {
		t.Fatal(err)
	}
	if got, err := QueryOne(ctx, db, scanRow, `SELECT n, s FROM t ORDER BY n`); err != nil || got != (row{7, "x"}) {
		t.Errorf("got %v, %v; want the first row", got, err)
	}
}

// TestTimeRoundTrip: a time in the range comes back as the same instant in
// UTC, without its monotonic reading; a time outside it is refused.
func TestTimeRoundTrip(t *testing.T) {
	tests := []time.Time{
		time.Date(2026, 11, 3, 10, 4, 5, 123456789, time.UTC),
		time.Date(2024, 2, 29, 12, 30, 1, 123456789, time.FixedZone("x", 3600)),
		time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(1969, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(1678, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2262, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Now(), // with a monotonic reading and the local zone
	}
	for _, at := range tests {
		n, err := ToNanos(at)
		if err != nil {
			t.Errorf("ToNanos(%v): %v", at, err)
			continue
		}
		if got := FromNanos(n); !got.Equal(at) || got != at.UTC() {
			t.Errorf("round trip of %v = %v", at, got)
		}
	}
	for _, at := range []time.Time{{}, time.Date(2263, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(1677, 1, 1, 0, 0, 0, 0, time.UTC)} {
		if n, err := ToNanos(at); err == nil {
			t.Errorf("ToNanos(%v) = %d, want an error (outside 1678-2262)", at, n)
		}
	}
}
