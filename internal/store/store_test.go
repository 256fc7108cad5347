package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/station-dev/station/internal/sandbox"
)

func open(t testing.TB) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "station.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestSchemaVersionMatchesMigrations(t *testing.T) {
	if got, want := SchemaVersion, len(migrations); got != want {
		t.Errorf("SchemaVersion = %d, want len(migrations) = %d", got, want)
	}
}

// TestPragmas checks the settings every connection runs with.
func TestPragmas(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	// Take several connections at once so that more than one is checked.
	var conns []*sql.Conn
	for range 3 {
		c, err := s.db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	for i, c := range conns {
		for _, tt := range []struct{ pragma, want string }{
			{"journal_mode", "wal"},
			{"synchronous", "1"}, // NORMAL
			{"foreign_keys", "1"},
			{"busy_timeout", fmt.Sprint(busyTimeout.Milliseconds())},
		} {
			var got string
			if err := c.QueryRowContext(ctx, "PRAGMA "+tt.pragma).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("connection %d: PRAGMA %s = %s, want %s", i, tt.pragma, got, tt.want)
			}
		}
		c.Close()
	}
}

func TestOpenCreatesPrivateFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new home", "with ?#% chars")
	path := filepath.Join(dir, "station.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.PutModule(context.Background(), Module{ID: "a/b", InstalledAt: time.Unix(1, 0)}); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatalf("the database is not at %s: %v", path, err)
	}
	if got := fi.Mode().Perm(); got != 0o600 {
		t.Errorf("database mode = %v, want 0600", got)
	}
	if got := s.Path(); got != path {
		t.Errorf("Path() = %q, want %q", got, path)
	}
}

func TestReopenKeepsData(t *testing.T) {
	path := filepath.Join(t.TempDir(), "station.db")
	ctx := context.Background()
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	m := Module{ID: "dave/x", Version: "1.0.0", InstalledAt: time.Unix(5, 0).UTC()}
	if err := s.PutModule(ctx, m); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := s.Module(ctx, "dave/x")
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != "1.0.0" {
		t.Errorf("after reopen: %+v", got)
	}
}

func TestNewerSchemaRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "station.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.Exec(`UPDATE schema_version SET version = ?`, SchemaVersion+1); err != nil {
		t.Fatal(err)
	}
	s.Close()
	_, err = Open(path)
	want := fmt.Sprintf("schema version %d, newer than this station supports (%d)", SchemaVersion+1, SchemaVersion)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Open(newer db) = %v, want an error containing %q", err, want)
	}
}

// TestMigrationIsAtomic checks that a failing migration leaves the database
// as it was.
func TestMigrationIsAtomic(t *testing.T) {
	path := filepath.Join(t.TempDir(), "station.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	saved := migrations
	t.Cleanup(func() { migrations = saved })
	migrations = append(append([]string(nil), saved...), `CREATE TABLE extra (x INTEGER); THIS IS NOT SQL`)
	if _, err := Open(path); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("migrate to schema version %d", SchemaVersion+1)) {
		t.Fatalf("Open with a bad migration = %v, want a migration error", err)
	}
	migrations = saved
	s, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var n int
	if err := s.db.QueryRow(`SELECT count(*) FROM sqlite_master WHERE name = 'extra'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Error("a failed migration left its table behind")
	}
}

func TestModules(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	at := time.Date(2026, 11, 3, 10, 4, 5, 123456789, time.FixedZone("CET", 3600))
	b := Module{ID: "dave/b", Version: "1.0.0", Digest: "sha256:bb", Manifest: []byte("id: dave/b\n"), WasmPath: "/w/b.wasm", Approved: []byte(`{"network":["api.b.com"]}`), InstalledAt: at}
	a := Module{ID: "anna/a", Version: "0.1.0", Digest: "sha256:aa", Manifest: []byte("id: anna/a\n"), WasmPath: "/w/a.wasm", Approved: []byte(`{}`), InstalledAt: at.Add(time.Hour)}
	for _, m := range []Module{b, a} {
		if err := s.PutModule(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.Module(ctx, "dave/b")
	if err != nil {
		t.Fatal(err)
	}
	if !got.InstalledAt.Equal(at) || got.InstalledAt.Location() != time.UTC {
		t.Errorf("InstalledAt = %v, want %v in UTC", got.InstalledAt, at)
	}
	wantB := b
	wantB.InstalledAt = at.UTC()
	if !reflect.DeepEqual(got, wantB) {
		t.Errorf("Module(dave/b) =\n%+v\nwant\n%+v", got, wantB)
	}

	// Replace by ID.
	b2 := b
	b2.Version, b2.Digest, b2.Approved = "2.0.0", "sha256:b2", []byte(`{"network":[]}`)
	if err := s.PutModule(ctx, b2); err != nil {
		t.Fatal(err)
	}
	list, err := s.Modules(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids, versions []string
	for _, m := range list {
		ids, versions = append(ids, m.ID), append(versions, m.Version)
	}
	if want := []string{"anna/a", "dave/b"}; !reflect.DeepEqual(ids, want) {
		t.Errorf("Modules() ids = %v, want %v", ids, want)
	}
	if want := []string{"0.1.0", "2.0.0"}; !reflect.DeepEqual(versions, want) {
		t.Errorf("Modules() versions = %v, want %v", versions, want)
	}

	if err := s.DeleteModule(ctx, "dave/b"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Module(ctx, "dave/b"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Module(deleted) = %v, want ErrNotFound", err)
	}
	if err := s.DeleteModule(ctx, "dave/b"); !errors.Is(err, ErrNotFound) {
		t.Errorf("DeleteModule(deleted) = %v, want ErrNotFound", err)
	}
	if _, err := s.Module(ctx, "nobody/none"); err == nil || !strings.Contains(err.Error(), "nobody/none") {
		t.Errorf("Module(missing) = %v, want an error naming the module", err)
	}
}

func TestModulesEmpty(t *testing.T) {
	list, err := open(t).Modules(context.Background())
	if err != nil || len(list) != 0 {
		t.Errorf("Modules() on a new store = %v, %v", list, err)
	}
}

func TestPutModuleRejects(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	tests := []struct {
		name string
		m    Module
	}{
		{"empty id", Module{InstalledAt: time.Unix(1, 0)}},
		{"bad json", Module{ID: "a/b", Approved: []byte("{"), InstalledAt: time.Unix(1, 0)}},
		{"zero time", Module{ID: "a/b"}},
	}
	for _, tt := range tests {
		if err := s.PutModule(ctx, tt.m); err == nil {
			t.Errorf("PutModule(%s) succeeded, want an error", tt.name)
		}
	}
}

func decision(i int, module string, allowed bool, at time.Time) sandbox.Decision {
	d := sandbox.Decision{
		Time: at, Module: module, Command: "cmd", Capability: sandbox.Network,
		Target: fmt.Sprintf("host%d.example:443", i), Allowed: allowed,
	}
	if !allowed {
		d.Reason = "is not in its allowlist"
	}
	return d
}

func TestAudit(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	base := time.Date(2026, 11, 1, 12, 0, 0, 1, time.UTC)
	var all []sandbox.Decision
	for i := range 10 {
		module := "dave/a"
		if i%2 == 1 {
			module = "anna/b"
		}
		d := decision(i, module, i%3 != 0, base.Add(time.Duration(i)*time.Second))
		if i%4 == 2 {
			d.Trace = "run/1/step/s"
		}
		if i%5 == 4 {
			d.Capability = sandbox.Subprocess
		}
		if i == 5 {
			d.Folded, d.Target = 700, "(700 decisions)" // a rate-limit summary row
		}
		all = append(all, d)
	}
	if err := s.AppendAudit(ctx, all[:4]); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendAudit(ctx, all[4:]); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendAudit(ctx, nil); err != nil {
		t.Fatal(err)
	}
	pick := func(idx ...int) []sandbox.Decision {
		var out []sandbox.Decision
		for _, i := range idx {
			out = append(out, all[i])
		}
		return out
	}
	tests := []struct {
		name string
		f    AuditFilter
		want []sandbox.Decision
	}{
		{"all", AuditFilter{}, all},
		{"module", AuditFilter{Module: "anna/b"}, pick(1, 3, 5, 7, 9)},
		{"denied", AuditFilter{DeniedOnly: true}, pick(0, 3, 6, 9)},
		{"module denied", AuditFilter{Module: "dave/a", DeniedOnly: true}, pick(0, 6)},
		{"since", AuditFilter{Since: base.Add(7 * time.Second)}, pick(7, 8, 9)},
		{"since exact nanosecond", AuditFilter{Since: base.Add(7*time.Second + 1)}, pick(8, 9)},
		{"limit keeps newest, oldest first", AuditFilter{Limit: 3}, pick(7, 8, 9)},
		{"limit with filter", AuditFilter{Module: "dave/a", Limit: 2}, pick(6, 8)},
		{"trace", AuditFilter{Trace: "run/1/step/s"}, pick(2, 6)},
		{"trace and module", AuditFilter{Trace: "run/1/step/s", Module: "anna/b"}, nil},
		{"no match", AuditFilter{Module: "nobody/none"}, nil},
		{"allowed", AuditFilter{AllowedOnly: true}, pick(1, 2, 4, 5, 7, 8)},
		{"allowed and denied is nothing", AuditFilter{AllowedOnly: true, DeniedOnly: true}, nil},
		{"capability", AuditFilter{Capability: sandbox.Subprocess}, pick(4, 9)},
		{"until", AuditFilter{Until: base.Add(2 * time.Second)}, pick(0, 1)},
		{"since and until", AuditFilter{Since: base.Add(3 * time.Second), Until: base.Add(5 * time.Second)}, pick(3, 4)},
		// IDs are 1..10 in the order stored.
		{"before: the page after one that ends at ID 6", AuditFilter{Before: 6, Limit: 3}, pick(2, 3, 4)},
		{"before with filter", AuditFilter{Before: 6, DeniedOnly: true}, pick(0, 3)},
		{"after: the oldest newer ones", AuditFilter{After: 3, Limit: 2}, pick(3, 4)},
		{"after with filter", AuditFilter{After: 3, Module: "anna/b"}, pick(3, 5, 7, 9)},
		{"after the newest", AuditFilter{After: 10}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			recs, err := s.Audit(ctx, tt.f)
			if err != nil {
				t.Fatal(err)
			}
			var got []sandbox.Decision
			var lastID int64
			for _, r := range recs {
				if r.ID <= lastID {
					t.Errorf("IDs not increasing: %d after %d", r.ID, lastID)
				}
				lastID = r.ID
				got = append(got, r.Decision)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Audit(%+v) =\n%+v\nwant\n%+v", tt.f, got, tt.want)
			}
		})
	}
}

// TestAuditFoldedMigration: summary rows stored before schema 6, whose
// count was only in their reason, get it in folded; no other row does.
func TestAuditFoldedMigration(t *testing.T) {
	path := filepath.Join(t.TempDir(), "station.db")
	saved := migrations
	t.Cleanup(func() { migrations = saved })
	migrations = saved[:5]
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	rows := []struct{ target, reason string }{
		{"(700 decisions)", "audit rate limit: 700 more denied network decisions from 2026-11-29T12:00:00Z to 2026-11-29T12:00:01Z were counted, not recorded one by one"},
		{"(3 decisions)", "audit rate limit: 3 more allowed filesystem decisions from 2026-11-29T12:00:00Z to 2026-11-29T12:00:00Z were counted, not recorded one by one"},
		{"evil.example:443", "is not in its allowlist"},
		{"evil.example:443", "audit rate limit: 9 more denied network decisions, says the module"}, // not a summary's target
	}
	for _, r := range rows {
		if _, err := s.db.Exec(`INSERT INTO audit (time, module, command, capability, target, allowed, reason, trace) VALUES (1, 'dave/a', '', 'network', ?, 0, ?, '')`, r.target, r.reason); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	migrations = saved
	s, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	recs, err := s.Audit(context.Background(), AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var got []int
	for _, r := range recs {
		got = append(got, r.Folded)
	}
	if want := []int{700, 3, 0, 0}; !reflect.DeepEqual(got, want) {
		t.Errorf("folded after the migration = %v, want %v", got, want)
	}
}

func TestAuditDefaultLimit(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	batch := make([]sandbox.Decision, DefaultAuditLimit+5)
	for i := range batch {
		batch[i] = decision(i, "dave/a", true, time.Unix(int64(i), 0).UTC())
	}
	if err := s.AppendAudit(ctx, batch); err != nil {
		t.Fatal(err)
	}
	recs, err := s.Audit(ctx, AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != DefaultAuditLimit {
		t.Fatalf("got %d records, want %d", len(recs), DefaultAuditLimit)
	}
	if got, want := recs[0].Target, batch[5].Target; got != want {
		t.Errorf("first record = %s, want %s (the oldest of the newest %d)", got, want, DefaultAuditLimit)
	}
}

// TestAppendAuditIsAtomic checks that a batch with one unstorable decision
// stores none of them.
func TestAppendAuditIsAtomic(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	batch := []sandbox.Decision{
		decision(0, "dave/a", true, time.Unix(1, 0)),
		decision(1, "dave/a", true, time.Time{}), // year 1: not representable
	}
	if err := s.AppendAudit(ctx, batch); err == nil {
		t.Fatal("AppendAudit with a zero time succeeded")
	}
	recs, err := s.Audit(ctx, AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 0 {
		t.Errorf("a failed batch stored %d records", len(recs))
	}
}

// TestConcurrentWriters checks that concurrent writers on separate stores
// (as two station processes would be) and on one store all succeed: write
// transactions take the lock up front and wait for each other.
func TestConcurrentWriters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "station.db")
	ctx := context.Background()
	stores := make([]*Store, 3)
	for i := range stores {
		s, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		stores[i] = s
	}
	const writers, batches = 6, 20
	var wg sync.WaitGroup
	errs := make(chan error, writers*batches)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := stores[w%len(stores)]
			for b := range batches {
				batch := []sandbox.Decision{decision(b, fmt.Sprintf("w%d/m", w), true, time.Unix(int64(b), 0))}
				if err := s.AppendAudit(ctx, batch); err != nil {
					errs <- err
				}
				if err := s.PutModule(ctx, Module{ID: fmt.Sprintf("w%d/m", w), Version: fmt.Sprint(b), InstalledAt: time.Unix(1, 0)}); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	recs, err := stores[0].Audit(ctx, AuditFilter{Limit: 10 * writers * batches})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(recs), writers*batches; got != want {
		t.Errorf("stored %d records, want %d", got, want)
	}
}

func BenchmarkAppendAudit(b *testing.B) {
	s := open(b)
	ctx := context.Background()
	batch := make([]sandbox.Decision, 256)
	for b.Loop() {
		now := time.Now()
		for i := range batch {
			// Mostly allowed, a few modules, times increasing: what gates
			// record.
			batch[i] = decision(i, fmt.Sprintf("dave/m%d", i%4), i%16 != 0, now.Add(time.Duration(i)))
		}
		if err := s.AppendAudit(ctx, batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(batch)), "ns/decision")
}
