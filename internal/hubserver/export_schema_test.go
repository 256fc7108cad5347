package hubserver

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/station-dev/station/internal/hubserver/pgtest"
)

// TestExportCoversSchemas fails when a table or column of either schema is
// neither in the archive (archiveTables) nor listed as not carried: a
// migration that adds one must say how a move carries it.
func TestExportCoversSchemas(t *testing.T) {
	ctx := context.Background()
	want := func(t *testing.T, store string, have map[string][]string, notCarried map[string]string, columns func(*archTable) []string) {
		t.Helper()
		for name, cols := range have {
			if _, ok := notCarried[name]; ok {
				continue
			}
			at := archTableNamed(name)
			if at == nil {
				t.Errorf("%s table %s is not exported: add it to archiveTables (and ExportFormat), or to the tables not carried, with why", store, name)
				continue
			}
			slices.Sort(cols)
			wantCols := columns(at)
			slices.Sort(wantCols)
			if !slices.Equal(cols, wantCols) {
				t.Errorf("%s table %s has columns %v, the archive %v", store, name, cols, wantCols)
			}
		}
		for name := range notCarried {
			if _, ok := have[name]; ok && archTableNamed(name) != nil {
				t.Errorf("%s table %s is both exported and not carried", store, name)
			}
		}
	}

	t.Run("sqlite", func(t *testing.T) {
		s, err := OpenSQLite(filepath.Join(t.TempDir(), "hub.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		have := map[string][]string{}
		names, err := sqliteStrings(ctx, s, `SELECT name FROM sqlite_master WHERE type = 'table'`)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range names {
			cols, err := sqliteStrings(ctx, s, `SELECT name FROM pragma_table_info(?)`, name)
			if err != nil {
				t.Fatal(err)
			}
			have[name] = cols
		}
		if len(have) < 10 {
			t.Fatalf("sqlite_master lists %v", have)
		}
		want(t, "SQLite", have, sqliteNotCarried, func(at *archTable) []string {
			var out []string
			for _, c := range at.colNames() {
				if sqliteRowid[at.name] != c {
					out = append(out, c)
				}
			}
			return out
		})
		for _, at := range archiveTables {
			if _, ok := have[at.name]; !ok && !sqliteDerived[at.name] {
				t.Errorf("the archive's table %s is not in the SQLite schema", at.name)
			}
		}
	})

	t.Run("postgres", func(t *testing.T) {
		p, err := OpenPostgres(ctx, pgtest.DSN(t))
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		rows, err := p.pool.Query(ctx, `SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = current_schema()`)
		if err != nil {
			t.Fatal(err)
		}
		have := map[string][]string{}
		for rows.Next() {
			var table, col string
			if err := rows.Scan(&table, &col); err != nil {
				t.Fatal(err)
			}
			have[table] = append(have[table], col)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		if len(have) < 10 {
			t.Fatalf("information_schema lists %v", have)
		}
		want(t, "PostgreSQL", have, pgNotCarried, func(at *archTable) []string {
			return append(at.colNames(), pgExtraColumns[at.name]...)
		})
		for _, at := range archiveTables {
			if _, ok := have[at.name]; !ok {
				t.Errorf("the archive's table %s is not in the PostgreSQL schema", at.name)
			}
		}
	})
}

// sqliteStrings returns the first column of query's rows, as text.
func sqliteStrings(ctx context.Context, s *SQLite, query string, args ...any) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, strings.Clone(v))
	}
	return out, rows.Err()
}

// TestRowEncoding checks that a row's canonical line decodes to the same
// values, whatever text, bytes or NULLs it holds, and that nothing but the
// canonical line decodes.
func TestRowEncoding(t *testing.T) {
	at := table("t", []string{"s"}, "s", "n int", "b bool", "d bytes", "o int null")
	rows := [][]any{
		{"", int64(0), false, []byte{}, nil},
		{"<\"\\\x00\x1f\u2028é>", int64(-1 << 63), true, []byte{0, 255, 10}, int64(1<<63 - 1)},
	}
	for _, row := range rows {
		line, err := encodeRow(nil, &at, row)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeRow(&at, line[:len(line)-1])
		if err != nil {
			t.Fatalf("decode %s: %v", line, err)
		}
		again, _ := encodeRow(nil, &at, got)
		if string(again) != string(line) {
			t.Errorf("round trip of %s = %s", line, again)
		}
	}
	for _, bad := range []string{
		`{"s":"","n":0,"b":false,"d":"","o":null,"x":1}`,
		`{"n":0,"s":"","b":false,"d":"","o":null}`,
		`{"s":"","n":0,"b":false,"d":"","o":null} `,
		`{"s":"","n":0,"b":false,"d":"","o":null,"o":null}`,
		`{"s":"","n":0.0,"b":false,"d":"","o":null}`,
		`{"s":"","n":1e2,"b":false,"d":"","o":null}`,
		`{"s":"","n":0,"b":0,"d":"","o":null}`,
		`{"s":"","n":0,"b":false,"d":"AA","o":null}`,
		`{"s":"\u0041","n":0,"b":false,"d":"","o":null}`,
		`{"s":null,"n":0,"b":false,"d":"","o":null}`,
		`{"s":"","n":99999999999999999999,"b":false,"d":"","o":null}`,
		`[]`,
	} {
		if row, err := decodeRow(&at, []byte(bad)); err == nil {
			t.Errorf("decodeRow(%s) = %v, want an error", bad, row)
		}
	}
	if _, err := encodeRow(nil, &at, []any{"\xff", int64(0), false, []byte{}, nil}); err == nil {
		t.Error("encodeRow took text that is not UTF-8")
	}
}
