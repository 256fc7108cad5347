package store

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/station-dev/station/hub"
)

// osv is an advisory of target from introduced to fixed, modified at mod.
func osv(id, target, level, introduced, fixed string, mod time.Time) hub.OSV {
	return hub.OSV{SchemaVersion: hub.OSVSchemaVersion, ID: id, Modified: hub.OSVTime{Time: mod}, Published: hub.OSVTime{Time: mod},
		Summary: "summary of " + id, Details: "details",
		Affected: []hub.OSVAffect{{Package: hub.OSVPackage{Ecosystem: hub.Ecosystem, Name: target},
			Ranges: []hub.OSVRange{{Type: "SEMVER", Events: []hub.OSVEvent{{Introduced: introduced}, {Fixed: fixed}}}}}},
		Database: &hub.OSVDatabase{Severity: strings.ToUpper(level)}}
}

// TestAdvisoriesMigration: a database of schema 8 with modules and origins
// migrates to 9, keeps them, and has empty advisory tables and no cursor.
func TestAdvisoriesMigration(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "station.db")
	saved := migrations
	t.Cleanup(func() { migrations = saved })
	migrations = saved[:8]
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`INSERT INTO modules (id, version, digest, manifest, wasm_path, approved, installed_at, source) VALUES ('dave/a', '1.0.0', 'sha256:0', x'', '', x'7b7d', 1, '/src/a')`,
		`INSERT INTO hub_origins (module, hub_url, version, manifest_digest, wasm_digest, key_id, team, installed_at) VALUES ('dave/a', 'https://a.example', '1.0.0', 'm', 'w', 'K1', '', 1)`,
	} {
		if _, err := s.db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	migrations = saved
	if s, err = Open(path); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var v int
	if err := s.db.QueryRow(`SELECT version FROM schema_version`).Scan(&v); err != nil || v != SchemaVersion {
		t.Fatalf("schema version %d, %v; want %d", v, err, SchemaVersion)
	}
	if m, err := s.Module(ctx, "dave/a"); err != nil || m.Source != "/src/a" {
		t.Errorf("module after the migration: %+v, %v", m, err)
	}
	if o, err := s.HubOrigin(ctx, "dave/a"); err != nil || o.HubURL != "https://a.example" {
		t.Errorf("origin after the migration: %+v, %v", o, err)
	}
	as, err := s.Advisories(ctx)
	ys, _ := s.Yanks(ctx)
	al, _ := s.AdvisoryAllows(ctx, "")
	if err != nil || len(as)+len(ys)+len(al) != 0 || as == nil {
		t.Errorf("after the migration: advisories %v (%v), yanks %v, allows %v; want none, and [] not nil", as, err, ys, al)
	}
	if f, err := s.AdvisoryCursor(ctx, "https://a.example"); err != nil || f.Cursor != 0 || !f.SyncedAt.IsZero() {
		t.Errorf("AdvisoryCursor before any sync = %+v, %v", f, err)
	}
}

// TestAdvisoryAllowsMigration: an allowance made before schema 10 gets the
// hub the module version was installed from when that hub published the
// advisory, else the one hub that published an advisory of that id; one
// that names no such hub (two hubs published the id, and the module came
// from neither) gets none, and allows nothing.
func TestAdvisoryAllowsMigration(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "station.db")
	saved := migrations
	t.Cleanup(func() { migrations = saved })
	migrations = saved[:9]
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`INSERT INTO hub_origins (module, hub_url, version, manifest_digest, wasm_digest, key_id, team, installed_at) VALUES
			('dave/a', 'https://a.example', '1.0.0', 'm', 'w', 'K1', '', 1),
			('dave/c', 'https://c.example', '1.0.0', 'm', 'w', 'K1', '', 1)`,
		`INSERT INTO hub_advisories (hub_url, id, target, data, modified) VALUES
			('https://a.example', 'STATION-2026-0001', 'dave/a', x'7b7d', 1),
			('https://b.example', 'STATION-2026-0001', 'dave/a', x'7b7d', 1),
			('https://b.example', 'STATION-2026-0002', 'dave/b', x'7b7d', 1)`,
		`INSERT INTO advisory_allows (module, version, advisory, reason, allowed_at) VALUES
			('dave/a', '1.0.0', 'STATION-2026-0001', 'origin', 1),
			('dave/b', '1.0.0', 'STATION-2026-0002', 'the one hub', 1),
			('dave/c', '1.0.0', 'STATION-2026-0001', 'two hubs, neither the origin', 1)`,
	} {
		if _, err := s.db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	migrations = saved
	if s, err = Open(path); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := s.AdvisoryAllows(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	hubs := map[string]string{}
	for _, a := range got {
		hubs[a.Module] = a.HubURL
	}
	if want := map[string]string{"dave/a": "https://a.example", "dave/b": "https://b.example", "dave/c": ""}; !reflect.DeepEqual(hubs, want) {
		t.Errorf("the allowances' hubs after the migration = %v, want %v", hubs, want)
	}
}

// TestAdvisoriesRoundTrip: advisories, yanks and the cursor are stored per
// hub; an advisory modified earlier than the stored one does not replace
// it, one modified at the same time or later does; an unyank deletes the
// yank; and Changes moves with each write.
func TestAdvisoriesRoundTrip(t *testing.T) {
	ctx := context.Background()
	s := open(t)
	const a, b = "https://a.example", "https://b.example"
	t0 := time.Date(2026, 11, 3, 10, 0, 0, 123456789, time.UTC)
	adv1 := osv("STATION-2026-0001", "dave/x", "critical", "0", "1.0.1", t0)
	adv1.Aliases = []string{"CVE-2026-1"}
	adv2 := osv("STATION-2026-0002", hub.Product, "low", "0.1.0", "0.2.0", t0)
	before := s.Changes()
	yanks := []hub.Yank{
		{Module: "dave/x", Version: "1.0.0", Yanked: true, Reason: "broken", Time: t0},
		{Module: "dave/x", Version: "0.9.0", Yanked: true, Reason: "old", Time: t0},
		{Module: "dave/x", Version: "0.9.0", Yanked: false, Time: t0.Add(time.Second)}, // unyanked in the same page
	}
	if err := s.PutAdvisories(ctx, a, []hub.OSV{adv1, adv2}, yanks, 17); err != nil {
		t.Fatal(err)
	}
	if s.Changes() == before {
		t.Error("PutAdvisories did not move Changes")
	}
	// The same id on another hub is another advisory.
	other := osv("STATION-2026-0001", "erin/y", "high", "0", "2.0.0", t0)
	if err := s.PutAdvisories(ctx, b, []hub.OSV{other}, nil, 3); err != nil {
		t.Fatal(err)
	}

	got, err := s.Advisories(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []Advisory{{HubURL: a, Target: "dave/x", OSV: adv1}, {HubURL: a, Target: hub.Product, OSV: adv2}, {HubURL: b, Target: "erin/y", OSV: other}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Advisories =\n%+v\nwant\n%+v", got, want)
	}
	if got, _ := s.AdvisoriesFor(ctx, hub.Product); len(got) != 1 || got[0].OSV.ID != "STATION-2026-0002" {
		t.Errorf("AdvisoriesFor(station) = %+v", got)
	}
	if got, err := s.AdvisoryByID(ctx, "STATION-2026-0001"); err != nil || len(got) != 2 || got[0].HubURL != a || got[1].HubURL != b {
		t.Errorf("AdvisoryByID = %+v, %v; want one per hub", got, err)
	}
	if _, err := s.AdvisoryByID(ctx, "STATION-2026-0099"); !errors.Is(err, ErrNotFound) {
		t.Errorf("AdvisoryByID(unknown) = %v, want ErrNotFound", err)
	}
	ys, _ := s.Yanks(ctx)
	if want := []Yank{{HubURL: a, Module: "dave/x", Version: "1.0.0", Reason: "broken", YankedAt: t0}}; !reflect.DeepEqual(ys, want) {
		t.Errorf("Yanks = %+v, want %+v", ys, want)
	}
	if f, _ := s.AdvisoryCursor(ctx, a); f.Cursor != 17 || f.SyncedAt.IsZero() {
		t.Errorf("cursor of a = %+v", f)
	}
	if f, _ := s.AdvisoryCursor(ctx, b); f.Cursor != 3 {
		t.Errorf("cursor of b = %+v", f)
	}

	// An older record of the same advisory (a page read again, a replayed
	// feed) does not roll it back; the cursor still moves.
	stale := osv("STATION-2026-0001", "dave/x", "low", "0", "1.0.1", t0.Add(-time.Hour))
	if err := s.PutAdvisories(ctx, a, []hub.OSV{stale}, nil, 18); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.AdvisoriesFor(ctx, "dave/x"); len(got) != 1 || got[0].OSV.Level() != "critical" {
		t.Errorf("an older record replaced the stored one: %+v", got)
	}
	// A newer one (withdrawn) does; one modified at the same time too.
	w := adv1
	w.Modified = hub.OSVTime{Time: t0.Add(time.Hour)}
	w.Withdrawn = &hub.OSVTime{Time: t0.Add(time.Hour)}
	if err := s.PutAdvisories(ctx, a, []hub.OSV{w}, []hub.Yank{{Module: "dave/x", Version: "1.0.0", Yanked: false, Time: t0}}, 19); err != nil {
		t.Fatal(err)
	}
	got, _ = s.AdvisoriesFor(ctx, "dave/x")
	if len(got) != 1 || got[0].OSV.Withdrawn == nil || got[0].OSV.AffectsVersion("dave/x", "1.0.0") {
		t.Errorf("the withdrawal was not stored: %+v", got)
	}
	same := w
	same.Summary = "corrected"
	if err := s.PutAdvisories(ctx, a, []hub.OSV{same}, nil, 20); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.AdvisoriesFor(ctx, "dave/x"); got[0].OSV.Summary != "corrected" {
		t.Errorf("a record modified at the same time did not replace it: %+v", got[0].OSV)
	}
	if ys, _ := s.Yanks(ctx); len(ys) != 0 {
		t.Errorf("an unyank left the yank: %+v", ys)
	}
}

// TestPutAdvisoriesRejects: a page with one record the station cannot use
// stores nothing of it, cursor included.
func TestPutAdvisoriesRejects(t *testing.T) {
	ctx := context.Background()
	s := open(t)
	t0 := time.Date(2026, 11, 3, 10, 0, 0, 0, time.UTC)
	good := osv("STATION-2026-0001", "dave/x", "high", "0", "1.0.1", t0)
	noPkg := good
	noPkg.ID, noPkg.Affected = "STATION-2026-0002", nil
	noTime := good
	noTime.ID, noTime.Modified = "STATION-2026-0003", hub.OSVTime{}
	tests := []struct {
		name  string
		hub   string
		advs  []hub.OSV
		yanks []hub.Yank
		want  string
	}{
		{"no hub", "", []hub.OSV{good}, nil, "no hub"},
		{"bad id", "h", []hub.OSV{good, osv("GHSA-xxxx", "dave/x", "high", "0", "1.0.1", t0)}, nil, "is not one"},
		{"control characters in the id", "h", []hub.OSV{osv("STATION-2026-0001\x1b[2J", "dave/x", "high", "0", "1", t0)}, nil, "is not one"},
		{"no package", "h", []hub.OSV{good, noPkg}, nil, "names no package"},
		{"no modified", "h", []hub.OSV{noTime}, nil, "no modified time"},
		{"bad yank module", "h", []hub.OSV{good}, []hub.Yank{{Module: "../etc", Version: "1.0.0", Yanked: true, Time: t0}}, "module"},
		{"bad yank version", "h", []hub.OSV{good}, []hub.Yank{{Module: "dave/x", Version: "latest", Yanked: true, Time: t0}}, "version"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.PutAdvisories(ctx, tt.hub, tt.advs, tt.yanks, 5)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("PutAdvisories = %v, want an error containing %q", err, tt.want)
			}
		})
	}
	if as, _ := s.Advisories(ctx); len(as) != 0 {
		t.Errorf("a refused page stored %+v", as)
	}
	if f, _ := s.AdvisoryCursor(ctx, "h"); f.Cursor != 0 {
		t.Errorf("a refused page moved the cursor to %d", f.Cursor)
	}
	if err := s.PutAdvisories(ctx, "h", nil, nil, -1); err == nil {
		t.Error("a negative cursor was stored")
	}
}

// TestAdvisoryAllows: allowances are per module, version and advisory,
// replace one another, and are withdrawn one by one.
func TestAdvisoryAllows(t *testing.T) {
	ctx := context.Background()
	s := open(t)
	at := time.Date(2026, 11, 3, 10, 0, 0, 0, time.UTC)
	for _, a := range []AdvisoryAllow{
		{Module: "dave/x", Version: "1.0.0", Advisory: "STATION-2026-0002", HubURL: "h", Reason: "not reachable here", AllowedAt: at},
		{Module: "dave/x", Version: "1.0.0", Advisory: "STATION-2026-0001", HubURL: "h", Reason: "first", AllowedAt: at},
		{Module: "dave/x", Version: "1.0.0", Advisory: "STATION-2026-0001", HubURL: "h2", Reason: "second", AllowedAt: at.Add(time.Hour)},
		{Module: "anna/y", Version: "2.0.0", Advisory: "STATION-2026-0001", HubURL: "h", Reason: "", AllowedAt: at},
	} {
		if err := s.PutAdvisoryAllow(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.AdvisoryAllows(ctx, "dave/x")
	want := []AdvisoryAllow{
		{Module: "dave/x", Version: "1.0.0", Advisory: "STATION-2026-0001", HubURL: "h2", Reason: "second", AllowedAt: at.Add(time.Hour)},
		{Module: "dave/x", Version: "1.0.0", Advisory: "STATION-2026-0002", HubURL: "h", Reason: "not reachable here", AllowedAt: at},
	}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("AdvisoryAllows(dave/x) = %+v, %v; want %+v", got, err, want)
	}
	if all, _ := s.AdvisoryAllows(ctx, ""); len(all) != 3 || all[0].Module != "anna/y" {
		t.Errorf("AdvisoryAllows(\"\") = %+v", all)
	}
	if err := s.DeleteAdvisoryAllow(ctx, "dave/x", "1.0.0", "STATION-2026-0001"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteAdvisoryAllow(ctx, "dave/x", "1.0.0", "STATION-2026-0001"); !errors.Is(err, ErrNotFound) {
		t.Errorf("deleting it twice = %v, want ErrNotFound", err)
	}
	if got, _ := s.AdvisoryAllows(ctx, "dave/x"); len(got) != 1 || got[0].Advisory != "STATION-2026-0002" {
		t.Errorf("after the delete: %+v", got)
	}
	for _, bad := range []AdvisoryAllow{
		{Version: "1.0.0", Advisory: "STATION-2026-0001", HubURL: "h", AllowedAt: at},
		{Module: "dave/x", Advisory: "STATION-2026-0001", HubURL: "h", AllowedAt: at},
		{Module: "dave/x", Version: "1.0.0", HubURL: "h", AllowedAt: at},
		{Module: "dave/x", Version: "1.0.0", Advisory: "STATION-2026-0001", AllowedAt: at},
		{Module: "dave/x", Version: "1.0.0", Advisory: "STATION-2026-0001", HubURL: "h", Reason: strings.Repeat("x", MaxAllowReason+1), AllowedAt: at},
	} {
		if err := s.PutAdvisoryAllow(ctx, bad); err == nil {
			t.Errorf("PutAdvisoryAllow(%+v) succeeded", bad)
		}
	}
}

// TestChangesCountsGateWrites: the writes the run gate depends on move
// Changes; others (the audit log) do not.
func TestChangesCountsGateWrites(t *testing.T) {
	ctx := context.Background()
	s := open(t)
	at := time.Unix(1, 0)
	for _, w := range []struct {
		name  string
		write func() error
	}{
		{"module", func() error { return s.PutModule(ctx, Module{ID: "a/b", InstalledAt: at}) }},
		{"origin", func() error { return s.PutHubOrigin(ctx, HubOrigin{Module: "a/b", HubURL: "h", InstalledAt: at}) }},
		{"delete origin", func() error { return s.DeleteHubOrigin(ctx, "a/b") }},
		{"delete module", func() error { return s.DeleteModule(ctx, "a/b") }},
		{"allow", func() error {
			return s.PutAdvisoryAllow(ctx, AdvisoryAllow{Module: "a/b", Version: "1.0.0", Advisory: "STATION-2026-0001", HubURL: "h", AllowedAt: at})
		}},
		{"delete allow", func() error { return s.DeleteAdvisoryAllow(ctx, "a/b", "1.0.0", "STATION-2026-0001") }},
		{"advisories", func() error { return s.PutAdvisories(ctx, "h", nil, nil, 1) }},
	} {
		before := s.Changes()
		if err := w.write(); err != nil {
			t.Fatalf("%s: %v", w.name, err)
		}
		if s.Changes() == before {
			t.Errorf("%s did not move Changes", w.name)
		}
	}
	before := s.Changes()
	if err := s.AppendAudit(ctx, nil); err != nil || s.Changes() != before {
		t.Errorf("the audit log moved Changes")
	}
}

// TestPutAdvisoryRecords: records sent outside the feed are stored as a
// page's are (newest modified wins), and the feed's cursor and the time
// it was last read do not move; Changes does.
func TestPutAdvisoryRecords(t *testing.T) {
	ctx := context.Background()
	s := open(t)
	t0 := time.Date(2026, 11, 3, 10, 0, 0, 0, time.UTC)
	if err := s.PutAdvisories(ctx, "h", nil, nil, 7); err != nil {
		t.Fatal(err)
	}
	before, _ := s.AdvisoryCursor(ctx, "h")
	changes := s.Changes()
	newer := osv("STATION-2026-0001", "dave/x", "high", "0", "1.0.1", t0.Add(time.Hour))
	older := osv("STATION-2026-0001", "dave/x", "low", "0", "1.0.1", t0)
	for _, a := range []hub.OSV{newer, older} {
		if err := s.PutAdvisoryRecords(ctx, "h", []hub.OSV{a}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := s.AdvisoriesFor(ctx, "dave/x"); len(got) != 1 || got[0].OSV.Level() != "high" {
		t.Errorf("stored %+v; want the newer record", got)
	}
	if after, err := s.AdvisoryCursor(ctx, "h"); err != nil || after != before {
		t.Errorf("the feed after records = %+v, %v; want %+v", after, err, before)
	}
	if err := s.PutAdvisoryRecords(ctx, "other", []hub.OSV{newer}, nil); err != nil {
		t.Fatal(err)
	}
	if f, err := s.AdvisoryCursor(ctx, "other"); err != nil || f.Cursor != 0 || !f.SyncedAt.IsZero() {
		t.Errorf("a hub whose feed was never read: %+v, %v", f, err)
	}
	if s.Changes() == changes {
		t.Error("records did not move Changes")
	}
}
