package hubserver

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/hubserver/pgtest"
)

// TestMain stops the throwaway PostgreSQL cluster pgtest may have started.
// A test binary started as a hub node (EnvTestNode) only serves.
func TestMain(m *testing.M) {
	if spec := os.Getenv(EnvTestNode); spec != "" {
		runTestNode(spec)
		return
	}
	code := m.Run()
	pgtest.Stop()
	os.Exit(code)
}

// openPostgres opens a Postgres store on a fresh database of t's own.
func openPostgres(t *testing.T) *Postgres {
	t.Helper()
	st, err := OpenPostgres(context.Background(), pgtest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func TestPostgresStoreContract(t *testing.T) {
	t.Parallel()
	storeContract(t, func(t *testing.T) Store { return openPostgres(t) })
}

// TestPostgresRefusesUnstorableTimes: as SQLite, a time outside
// 1678-2262 is refused and nothing is written.
func TestPostgresRefusesUnstorableTimes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := openPostgres(t)
	for _, at := range []time.Time{{}, time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)} {
		if _, err := st.CreateAccount(ctx, "dave", at); err == nil {
			t.Errorf("CreateAccount at %v succeeded, want an error", at)
		}
	}
	if _, err := st.Account(ctx, "dave"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Account = %v, want ErrNotFound", err)
	}
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	st.CreateAccount(ctx, "dave", now)
	if _, err := st.CreateTeam(ctx, "acme", "dave", time.Time{}); err == nil {
		t.Error("CreateTeam at the zero time succeeded, want an error")
	}
	if teams, err := st.TeamsOf(ctx, "dave"); err != nil || teams == nil || len(teams) != 0 {
		t.Errorf("TeamsOf = %#v, %v; want no team (and [], not nil)", teams, err)
	}
	if n, _ := st.LastSeq(ctx); n != 0 {
		t.Errorf("a refused CreateTeam appended events: last seq %d", n)
	}
}

// TestPostgresMigrations: opening twice migrates once; a database whose
// schema is newer than the code is refused, by Open and by Migrate, with
// an error that says so, and left as it was; WithoutMigrate refuses an
// unmigrated database and says to migrate.
func TestPostgresMigrations(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := pgtest.DSN(t)

	fresh, err := OpenPostgres(ctx, dsn, WithoutMigrate())
	var se *SchemaError
	if !errors.As(err, &se) || se.Have != 0 || !strings.Contains(err.Error(), "station hub migrate") {
		t.Fatalf("OpenPostgres(WithoutMigrate) on an empty database = %v, want a SchemaError saying to migrate", err)
	}
	if fresh != nil {
		t.Fatal("OpenPostgres returned a store with its error")
	}

	st, err := OpenPostgres(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if v, err := st.SchemaVersion(ctx); err != nil || v != PostgresSchemaVersion {
		t.Fatalf("SchemaVersion = %d, %v; want %d", v, err, PostgresSchemaVersion)
	}
	again, err := OpenPostgres(ctx, dsn) // already current: nothing to do
	if err != nil {
		t.Fatal(err)
	}
	again.Close()
	var rows int
	st.pool.QueryRow(ctx, `SELECT count(*) FROM schema_migrations`).Scan(&rows)
	if rows != PostgresSchemaVersion {
		t.Errorf("schema_migrations has %d rows, want %d", rows, PostgresSchemaVersion)
	}

	// A newer hub migrated this database.
	if _, err := st.pool.Exec(ctx, `INSERT INTO schema_migrations (version) VALUES ($1)`, PostgresSchemaVersion+1); err != nil {
		t.Fatal(err)
	}
	for name, open := range map[string]func() error{
		"OpenPostgres": func() error {
			s, err := OpenPostgres(ctx, dsn)
			if err == nil {
				s.Close()
			}
			return err
		},
		"OpenPostgres(WithoutMigrate)": func() error {
			s, err := OpenPostgres(ctx, dsn, WithoutMigrate())
			if err == nil {
				s.Close()
			}
			return err
		},
		"Migrate": func() error { return st.Migrate(ctx) },
	} {
		err := open()
		if !errors.As(err, &se) || se.Have != PostgresSchemaVersion+1 || !strings.Contains(err.Error(), "newer than this hub supports") {
			t.Errorf("%s on a newer schema = %v, want a SchemaError that says it is newer", name, err)
		}
	}
	if v, _ := st.SchemaVersion(ctx); v != PostgresSchemaVersion+1 {
		t.Errorf("after the refusals the schema version is %d, want %d (untouched)", v, PostgresSchemaVersion+1)
	}
}

// TestPostgresBadDSN: a DSN that does not parse is refused without
// echoing it (it may hold a password); one that names no server says
// where it tried.
func TestPostgresBadDSN(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := OpenPostgres(ctx, "postgres://u:hunter2@[::1")
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("OpenPostgres(bad DSN) = %v, want an error without the password", err)
	}
	_, err = OpenPostgres(ctx, "postgres://u:hunter2@127.0.0.1:1/db?connect_timeout=2")
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("OpenPostgres(no server) = %v, want an error without the password", err)
	}
}

// TestPostgresStatementTimeout: the pool's statement timeout ends a
// statement that runs longer.
func TestPostgresStatementTimeout(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := OpenPostgres(ctx, pgtest.DSN(t), WithStatementTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	start := time.Now()
	_, err = st.pool.Exec(ctx, `SELECT pg_sleep(5)`)
	if !isPgCode(err, "57014") || time.Since(start) > 3*time.Second {
		t.Errorf("a 5 s statement under a 100 ms timeout = %v after %v, want SQLSTATE 57014 (query_canceled) at once", err, time.Since(start))
	}
}

// TestPostgresRetriesSerializationFailures: a transaction that fails
// with SQLSTATE 40001 or 40P01 is run again from the start, and what it
// did the first time is rolled back; any other error is returned at once;
// a conflict that never goes away ends after pgMaxAttempts runs.
func TestPostgresRetriesSerializationFailures(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := openPostgres(t)
	at := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	for _, code := range []string{"40001", "40P01"} {
		runs := 0
		err := st.tx(ctx, func(tx pgx.Tx) error {
			runs++
			if _, err := pgAppendEvent(ctx, tx, hub.Event{Kind: hub.EventTeamCreated, Time: at, Team: "t"}); err != nil {
				return err
			}
			if runs == 1 {
				return fmt.Errorf("wrapped: %w", &pgconn.PgError{Code: code})
			}
			return nil
		})
		if err != nil || runs != 2 {
			t.Errorf("SQLSTATE %s: %d runs, %v; want 2 and nil", code, runs, err)
		}
	}
	if evs, _ := st.EventsAfter(ctx, 0, 10); len(evs) != 2 || evs[0].Seq != 1 || evs[1].Seq != 2 {
		t.Errorf("events after two retried appends: %+v; want seq 1 and 2 (the failed runs rolled back)", evs)
	}
	runs := 0
	other := errors.New("not a conflict")
	if err := st.tx(ctx, func(pgx.Tx) error { runs++; return other }); !errors.Is(err, other) || runs != 1 {
		t.Errorf("another error: %d runs, %v; want 1 and it", runs, err)
	}
	runs = 0
	if err := st.tx(ctx, func(pgx.Tx) error { runs++; return &pgconn.PgError{Code: "40001"} }); !retryable(err) || runs != pgMaxAttempts {
		t.Errorf("a lasting conflict: %d runs, %v; want %d and the conflict", runs, err, pgMaxAttempts)
	}
}

// TestPostgresAcceptChecksTheCreator: as TestSQLiteAcceptChecksTheCreator,
// the role check at accept time holds by itself, for an invite the
// deletions missed: one whose creator is a member but no owner, or not in
// the team, is refused.
func TestPostgresAcceptChecksTheCreator(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	at := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	st := openPostgres(t)
	for _, a := range []string{"dave", "erin", "mallory"} {
		st.CreateAccount(ctx, a, at)
	}
	st.CreateTeam(ctx, "acme", "dave", at)
	for i, by := range []string{"erin", "nobody"} {
		hash := sha256.Sum256(fmt.Appendf(nil, "code %d", i))
		if _, err := st.pool.Exec(ctx, `INSERT INTO invites (hash, id, team, role, account, created_by, created_at, expires_at) VALUES ($1, $2, 'acme', 'owner', '', $3, $4, $5)`,
			hash[:], fmt.Sprintf("%016x", i), by, at.UnixNano(), at.Add(time.Hour).UnixNano()); err != nil {
			t.Fatal(err)
		}
		if _, _, err := st.AcceptInvite(ctx, hash, "mallory", at); !errors.Is(err, ErrInviteInvalid) {
			t.Errorf("accepting an owner invite made by %s = %v, want ErrInviteInvalid", by, err)
		}
	}
	if tm, _ := st.Team(ctx, "acme"); len(tm.Members) != 1 {
		t.Errorf("acme's members = %+v", tm.Members)
	}
}
