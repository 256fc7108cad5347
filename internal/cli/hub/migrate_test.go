package hub

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/hubserver"
	"github.com/station-dev/station/internal/hubserver/pgtest"
)

// TestRedactDB: the password of a DSN never reaches the output.
func TestRedactDB(t *testing.T) {
	for _, db := range []string{"postgres://hub:hunter2@db:5432/hub?sslmode=require", "postgres://hub:hunter2@[::1"} {
		if got := redactDB(db); strings.Contains(got, "hunter2") {
			t.Errorf("redactDB(%q) = %q", db, got)
		}
	}
}

// TestMigrate runs `hub migrate` against a real PostgreSQL database:
// status on an empty one says to migrate and changes nothing, migrate
// applies every migration once, status then says up to date, and a
// database a newer hub migrated is refused by migrate and reported by
// status. The password of the DSN is never printed.
func TestMigrate(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.DSN(t)
	run := func(status, asJSON bool, env map[string]string) (MigrateResult, string, error) {
		io, out, _ := streams("", env)
		err := migrateRun(ctx, &MigrateOptions{IO: io, Migrate: migrate, Status: status, JSON: asJSON})
		var r MigrateResult
		if asJSON && err == nil {
			if err := json.Unmarshal(out.Bytes(), &r); err != nil {
				t.Fatalf("--json: %v: %s", err, out)
			}
		}
		if strings.Contains(out.String(), "hunter2") {
			t.Errorf("migrate printed the password: %s", out)
		}
		return r, out.String(), err
	}
	env := map[string]string{"STATION_HUB_DB": dsn}
	if _, text, err := run(true, false, env); err != nil || !strings.Contains(text, "schema 0, this hub's is") {
		t.Fatalf("status on an empty database = %q, %v", text, err)
	}
	if v, _ := hubserver.PostgresSchemaOf(ctx, dsn); v != 0 {
		t.Fatalf("status changed the schema to %d", v)
	}
	r, _, err := run(false, true, env)
	if err != nil || r.Schema != hubserver.PostgresSchemaVersion || r.Applied != hubserver.PostgresSchemaVersion || r.Latest != hubserver.PostgresSchemaVersion {
		t.Fatalf("migrate = %+v, %v", r, err)
	}
	if r, _, err := run(false, true, env); err != nil || r.Applied != 0 {
		t.Errorf("migrate again = %+v, %v; want nothing applied", r, err)
	}
	if _, text, err := run(true, false, env); err != nil || !strings.Contains(text, "up to date") {
		t.Errorf("status after migrate = %q, %v", text, err)
	}

	// A newer hub migrated it.
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	_, err = conn.Exec(ctx, `INSERT INTO schema_migrations (version) VALUES ($1)`, hubserver.PostgresSchemaVersion+1)
	conn.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var se *hubserver.SchemaError
	if _, _, err := run(false, false, env); !errors.As(err, &se) || !strings.Contains(err.Error(), "upgrade station") {
		t.Errorf("migrate on a newer schema = %v, want a SchemaError saying to upgrade", err)
	}
	if _, text, err := run(true, false, env); err != nil || !strings.Contains(text, "newer than this hub's") {
		t.Errorf("status on a newer schema = %q, %v", text, err)
	}
}

// TestMigrateRefusesWithoutPostgres: without --db (or $STATION_HUB_DB)
// and with something that is not a postgres:// URL, migrate is a usage
// error that says what it takes, and touches nothing.
func TestMigrateRefusesWithoutPostgres(t *testing.T) {
	ctx := context.Background()
	called := false
	m := func(context.Context, string, bool) (int, int, error) { called = true; return 0, 0, nil }
	for _, env := range []map[string]string{{}, {"STATION_HUB_DB": "/srv/hub/hub.db"}, {"STATION_HUB_DB": "host=db dbname=hub"}} {
		io, _, _ := streams("", env)
		err := migrateRun(ctx, &MigrateOptions{IO: io, Migrate: m})
		if err == nil || !strings.Contains(err.Error(), "postgres://") {
			t.Errorf("migrate with %v = %v, want a usage error naming postgres://", env, err)
		}
	}
	if called {
		t.Error("migrate ran on something that is not a PostgreSQL URL")
	}
	if err := NewCmdMigrate(cmdutil.New(cmdutil.IOStreams{Out: &bytes.Buffer{}, Err: &bytes.Buffer{}}), nil).Args(nil, []string{"down"}); err == nil {
		t.Error("migrate down was accepted")
	}
}

// TestOperatorCommandsOnPostgres: `user create`, `user token` and `user
// admin` work on the hub's PostgreSQL database with --db, and a served
// hub would see what they wrote.
func TestOperatorCommandsOnPostgres(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.DSN(t)
	io, out, _ := streams("", nil)
	if err := tokenRun(ctx, &TokenOptions{IO: io, Issue: issue, DB: dsn, Name: "root", Label: "cli", Create: true, Admin: true}); err != nil {
		t.Fatal(err)
	}
	secret := strings.TrimSpace(out.String())
	io, _, _ = streams("", nil)
	if err := adminRun(ctx, &AdminOptions{IO: io, SetAdmin: setAdmin, DB: dsn, Name: "nobody"}); err == nil {
		t.Error("user admin of an account that does not exist succeeded")
	}
	io, _, _ = streams("", nil)
	if err := tokenRun(ctx, &TokenOptions{IO: io, Issue: issue, DB: dsn, Name: "root", Label: "second"}); err != nil {
		t.Fatal(err)
	}
	st, err := hubserver.OpenPostgres(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	a, err := st.Account(ctx, "root")
	toks, _ := st.Tokens(ctx, "root")
	if err != nil || !a.Admin || len(toks) != 2 || secret == "" {
		t.Errorf("after user create --admin and user token: %+v, %d tokens, %v", a, len(toks), err)
	}
}
