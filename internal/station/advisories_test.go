package station_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/fixture"
	"github.com/station-dev/station/internal/hubclient"
	"github.com/station-dev/station/internal/hubserver/hubtest"
	"github.com/station-dev/station/internal/hubsync"
	"github.com/station-dev/station/internal/sandbox"
	"github.com/station-dev/station/internal/station"
	"github.com/station-dev/station/internal/store"
	"github.com/station-dev/station/internal/wasmbuild"
)

// advEnv is a real hub on which dave publishes dave/hello (the hello
// example) at 1.0.0 and 1.0.1, and a station logged in to it as erin with
// dave/hello@1.0.0 installed from it.
type advEnv struct {
	h    *hubtest.Hub
	sess *hubsync.Session
	st   *station.Station
	log  *fixture.SyncBuffer
	hub  string // the hub's URL as the station records it
}

const helloManifest = "id: dave/hello\nversion: \"%s\"\nwasm: module.wasm\ncommands:\n  - name: greet\nrequires:\n  network:\n    allow: []\n"

func helloAt(version string) []byte {
	return []byte(strings.Replace(helloManifest, "%s", version, 1))
}

// newAdvEnv starts the hub and the station; config, if not "", is the
// station's config.yaml.
func newAdvEnv(t testing.TB, config string) *advEnv {
	t.Helper()
	ctx := context.Background()
	h := hubtest.Start(t)
	dave, signer := h.Publisher(t, "dave")
	for _, v := range []string{"1.0.0", "1.0.1"} {
		b, err := hubclient.NewBundle(helloAt(v), wasmbuild.ForTest(t, "examples/hello"), signer)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := dave.Publish(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	home := t.TempDir()
	if config != "" {
		if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(config), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	e := &advEnv{h: h, log: &fixture.SyncBuffer{}}
	st, err := station.Open(ctx, home, station.Options{Cache: testCache(t), Logger: slog.New(slog.NewTextHandler(e.log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close(context.Background()) })
	if _, err := hubsync.Login(ctx, st, h.URL, h.Account(t, "erin")); err != nil {
		t.Fatal(err)
	}
	if e.sess, err = hubsync.Open(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	e.st, e.hub = st, e.sess.Login.URL
	if _, err := e.sess.Install(ctx, hubsync.Request{ID: "dave/hello", Version: "1.0.0"}, nil); err != nil {
		t.Fatal(err)
	}
	return e
}

// advisory is an advisory of dave/hello from introduced to fixed (fixed
// "" for none) at level.
func advisory(id, level, introduced, fixed string) hub.OSV {
	now := time.Now().UTC()
	events := []hub.OSVEvent{{Introduced: introduced}}
	if fixed != "" {
		events = append(events, hub.OSVEvent{Fixed: fixed})
	}
	return hub.OSV{SchemaVersion: hub.OSVSchemaVersion, ID: id, Modified: hub.OSVTime{Time: now}, Published: hub.OSVTime{Time: now},
		Summary: "the greeting leaks " + id, Details: "details",
		Affected: []hub.OSVAffect{{Package: hub.OSVPackage{Ecosystem: hub.Ecosystem, Name: "dave/hello"},
			Ranges: []hub.OSVRange{{Type: "SEMVER", Events: events}}}},
		Database: &hub.OSVDatabase{Severity: strings.ToUpper(level)}}
}

// put stores what a page of hubURL's feed brought.
func (e *advEnv) put(t testing.TB, hubURL string, advs []hub.OSV, yanks ...hub.Yank) {
	t.Helper()
	if err := e.st.Store.PutAdvisories(context.Background(), hubURL, advs, yanks, 1); err != nil {
		t.Fatal(err)
	}
}

func (e *advEnv) greet(t *testing.T) error {
	t.Helper()
	_, err := e.st.Run(context.Background(), "dave/hello", "greet", []byte(`{"name":"Ada"}`))
	return err
}

// advisoryRecords are the audit records of the advisory gate.
func (e *advEnv) advisoryRecords(t *testing.T) []store.AuditRecord {
	t.Helper()
	ctx := context.Background()
	if err := e.st.Audit.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	recs, err := e.st.Store.Audit(ctx, store.AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var out []store.AuditRecord
	for _, r := range recs {
		if r.Capability == sandbox.Advisory {
			out = append(out, r)
		}
	}
	return out
}

// TestAdvisoryGateBlocksCritical: a critical advisory against the
// installed version refuses every call of the module, already loaded, with
// the advisory and what to do; each refusal is in the audit log. Allowing
// the version lets it run (with one warning), and upgrading to the fixed
// version clears it.
func TestAdvisoryGateBlocksCritical(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newAdvEnv(t, "")
	if err := e.greet(t); err != nil {
		t.Fatalf("before any advisory: %v", err)
	}
	const id = "STATION-2026-0001"
	e.put(t, e.hub, []hub.OSV{advisory(id, "critical", "0", "1.0.1")})

	for range 2 {
		err := e.greet(t)
		var ae *station.AdvisoryError
		if !errors.As(err, &ae) {
			t.Fatalf("Run after a critical advisory = %v, want an *AdvisoryError", err)
		}
		if ae.ID != id || ae.Severity != "critical" || ae.FixedIn != "1.0.1" || ae.Module != "dave/hello" || ae.Version != "1.0.0" || ae.Hub != e.hub {
			t.Errorf("AdvisoryError = %+v", ae)
		}
		for _, want := range []string{id, "critical", "the greeting leaks", "upgrade to 1.0.1", "station advisories allow " + id + " dave/hello@1.0.0 --reason"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("the refusal %q does not say %q", err, want)
			}
		}
		var v *sandbox.Violation
		if !errors.As(err, &v) || v.Capability != sandbox.Advisory || v.Target != id || v.Module != "dave/hello" {
			t.Errorf("the refusal wraps %+v, want a violation of capability advisory", v)
		}
	}
	recs := e.advisoryRecords(t)
	if len(recs) != 2 || recs[0].Allowed || recs[0].Target != id || recs[0].Command != "greet" || !strings.Contains(recs[0].Reason, "upgrade to 1.0.1") {
		t.Errorf("audit records of the refusals = %+v, want two denials of %s", recs, id)
	}

	// Allowed for this version: it runs, with one warning.
	if _, err := e.st.AllowAdvisory(ctx, id, "dave/hello", "1.0.0", "the greeting is not secret here", time.Now()); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := e.greet(t); err != nil {
			t.Fatalf("Run after the allowance: %v", err)
		}
	}
	if n := strings.Count(e.log.String(), "is affected by advisory "+id); n != 1 {
		t.Errorf("warned %d times about the allowed version, want once:\n%s", n, e.log)
	}
	recs = e.advisoryRecords(t)
	if len(recs) != 4 || !recs[2].Allowed || !strings.Contains(recs[2].Reason, "allowed version 1.0.0") ||
		!recs[3].Allowed || !strings.Contains(recs[3].Reason, "the greeting is not secret here") {
		t.Errorf("audit after the allowance = %+v; want the allowance and one allowed run", recs)
	}

	// An allowance is for one version: the upgrade is unaffected anyway,
	// and runs without a word.
	if err := e.st.Store.DeleteAdvisoryAllow(ctx, "dave/hello", "1.0.0", id); err != nil {
		t.Fatal(err)
	}
	if err := e.greet(t); err == nil {
		t.Fatal("the withdrawn allowance still lets the version run")
	}
	if rs, err := e.sess.Upgrade(ctx, []string{"dave/hello@1.0.1"}, nil); err != nil || rs[0].Status != hubsync.Upgraded {
		t.Fatalf("upgrade to the fixed version: %+v, %v", rs, err)
	}
	before := len(e.advisoryRecords(t))
	if err := e.greet(t); err != nil {
		t.Errorf("Run of the fixed version: %v", err)
	}
	if after := len(e.advisoryRecords(t)); after != before {
		t.Errorf("the fixed version was audited by the advisory gate (%d records, then %d)", before, after)
	}
}

// TestAdvisoryGateWarnsOnce: an advisory below advisories.block and a yank
// of the installed version let it run, each with one warning and one audit
// record per process however often it runs.
func TestAdvisoryGateWarnsOnce(t *testing.T) {
	t.Parallel()
	e := newAdvEnv(t, "")
	e.put(t, e.hub, []hub.OSV{advisory("STATION-2026-0002", "high", "0", "1.0.1"), advisory("STATION-2026-0003", "low", "1.0.0", "")},
		hub.Yank{Module: "dave/hello", Version: "1.0.0", Yanked: true, Reason: "leaks the greeting", Time: time.Now()})
	for range 3 {
		if err := e.greet(t); err != nil {
			t.Fatalf("Run under a high advisory (block: critical): %v", err)
		}
	}
	log := e.log.String()
	for what, want := range map[string]string{
		"the high advisory": "is affected by advisory STATION-2026-0002 (high)",
		"the low advisory":  "is affected by advisory STATION-2026-0003 (low)",
		"the yank":          "dave/hello@1.0.0 is yanked on " + e.hub + ": leaks the greeting",
	} {
		if n := strings.Count(log, want); n != 1 {
			t.Errorf("warned %d times about %s, want once:\n%s", n, what, log)
		}
	}
	if !strings.Contains(log, "fixed in 1.0.1 (station module upgrade dave/hello)") {
		t.Errorf("the warning does not say the fix:\n%s", log)
	}
	recs := e.advisoryRecords(t)
	targets := map[string]int{}
	for _, r := range recs {
		if !r.Allowed {
			t.Errorf("a denial under block: critical: %+v", r)
		}
		targets[r.Target]++
	}
	if len(recs) != 3 || targets["STATION-2026-0002"] != 1 || targets["STATION-2026-0003"] != 1 || targets[station.YankTarget] != 1 {
		t.Errorf("audit records = %+v, want one per advisory and one for the yank", recs)
	}
	if !strings.Contains(recs[0].Reason, "below advisories.block (critical)") {
		t.Errorf("the record does not say why it ran: %q", recs[0].Reason)
	}
}

// TestAdvisoryGateLevels: advisories.block decides which levels refuse:
// high blocks a high one, none blocks nothing.
func TestAdvisoryGateLevels(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		block, level string
		refused      bool
	}{
		{"high", "high", true},
		{"high", "medium", false},
		{"none", "critical", false},
		{"low", "low", true},
	} {
		t.Run(tt.block+"/"+tt.level, func(t *testing.T) {
			t.Parallel()
			e := newAdvEnv(t, "advisories:\n  block: "+tt.block+"\n")
			e.put(t, e.hub, []hub.OSV{advisory("STATION-2026-0004", tt.level, "0", "")})
			err := e.greet(t)
			var ae *station.AdvisoryError
			if got := errors.As(err, &ae); got != tt.refused {
				t.Fatalf("block %s, advisory %s: Run = %v; want refused %v", tt.block, tt.level, err, tt.refused)
			}
			if tt.refused && !strings.Contains(err.Error(), "no fixed version is named: remove it (station module remove dave/hello)") {
				t.Errorf("a refusal with no fix does not say what to do: %v", err)
			}
		})
	}
}

// TestAdvisoryGateMatchesOnlyTheOrigin: an advisory applies to a module
// installed from the hub that published it, and to nothing else: not to
// the same id from another hub, a withdrawn one to nothing, a range that
// leaves the version out to nothing, and once the same module is
// reinstalled from a directory (same id, version and bytes; the hub origin
// is still recorded), not to it.
func TestAdvisoryGateMatchesOnlyTheOrigin(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newAdvEnv(t, "")
	withdrawn := advisory("STATION-2026-0006", "critical", "0", "")
	withdrawn.Withdrawn = &hub.OSVTime{Time: time.Now().UTC()}
	e.put(t, "http://127.0.0.1:1", []hub.OSV{advisory("STATION-2026-0005", "critical", "0", "")})
	e.put(t, e.hub, []hub.OSV{withdrawn, advisory("STATION-2026-0007", "critical", "1.0.1", ""), advisory("STATION-2026-0008", "critical", "0", "1.0.0")})
	if err := e.greet(t); err != nil {
		t.Fatalf("refused by an advisory that does not apply: %v", err)
	}

	// Now one that applies, and then the same module from a directory.
	e.put(t, e.hub, []hub.OSV{advisory("STATION-2026-0009", "critical", "0", "")})
	if err := e.greet(t); err == nil {
		t.Fatal("a critical advisory of the module's hub did not refuse it")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "module.yaml"), helloAt("1.0.0"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "module.wasm"), wasmbuild.ForTest(t, "examples/hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.Install(ctx, dir, func(station.Plan) (bool, error) { return true, nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.Store.HubOrigin(ctx, "dave/hello"); err != nil {
		t.Fatalf("the test needs the stale hub origin: %v", err)
	}
	if err := e.greet(t); err != nil {
		t.Errorf("a module installed from a directory was matched: %v", err)
	}
	all, err := e.st.InstalledAdvisories(ctx)
	if err != nil || len(all) != 1 || all[0].Hub != "" || len(all[0].Advisories) != 0 {
		t.Errorf("InstalledAdvisories = %+v, %v; want dave/hello with no hub and nothing against it", all, err)
	}
}

// TestAdvisoryGateSeesAnotherProcess: advisories stored by another process
// (another store on the same database) apply to a loaded module once the
// station is told (AdvisoriesChanged), and a failure to read them fails
// the call rather than running it unchecked.
func TestAdvisoryGateSeesAnotherProcess(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newAdvEnv(t, "")
	if err := e.greet(t); err != nil {
		t.Fatal(err)
	}
	other, err := store.Open(e.st.Store.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := other.PutAdvisories(ctx, e.hub, []hub.OSV{advisory("STATION-2026-0010", "critical", "0", "")}, nil, 1); err != nil {
		t.Fatal(err)
	}
	e.st.AdvisoriesChanged()
	var ae *station.AdvisoryError
	if err := e.greet(t); !errors.As(err, &ae) {
		t.Errorf("after another process stored a critical advisory: %v", err)
	}
}

// TestAllowAdvisoryRefuses: an allowance names an advisory the station
// knows and a version it affects; nothing else is recorded.
func TestAllowAdvisoryRefuses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newAdvEnv(t, "")
	e.put(t, e.hub, []hub.OSV{advisory("STATION-2026-0011", "critical", "0", "1.0.1")})
	for _, tt := range []struct{ id, module, version string }{
		{"STATION-2026-0999", "dave/hello", "1.0.0"}, // unknown
		{"STATION-2026-0011", "dave/hello", "1.0.1"}, // the fixed version
		{"STATION-2026-0011", "dave/other", "1.0.0"}, // another module
		{"STATION-2026-0011", "dave/hello", "(devel)"},
	} {
		_, err := e.st.AllowAdvisory(ctx, tt.id, tt.module, tt.version, "", time.Now())
		if !errors.Is(err, station.ErrAdvisoryNotApplicable) {
			t.Errorf("AllowAdvisory(%s, %s@%s) = %v, want ErrAdvisoryNotApplicable", tt.id, tt.module, tt.version, err)
		}
	}
	if as, _ := e.st.Store.AdvisoryAllows(ctx, ""); len(as) != 0 {
		t.Errorf("refused allowances were recorded: %+v", as)
	}
	if err := e.greet(t); err == nil {
		t.Error("the module runs after refused allowances")
	}
}

// TestAdvisoryGateHomeByAnotherPath: a module installed from the hub is
// matched by a station that opens the same home by another path (a
// symbolic link: ~ linked elsewhere, a daemon's unit naming the real
// directory, /tmp and /private/tmp), not taken for one installed from a
// directory and run unchecked.
func TestAdvisoryGateHomeByAnotherPath(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newAdvEnv(t, "")
	link := filepath.Join(t.TempDir(), "home")
	if err := os.Symlink(e.st.Home, link); err != nil {
		t.Fatal(err)
	}
	other, err := station.Open(ctx, link, station.Options{Cache: testCache(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(ctx)
	e.put(t, e.hub, []hub.OSV{advisory("STATION-2026-0012", "critical", "0", "")})
	var ae *station.AdvisoryError
	if _, err := other.Run(ctx, "dave/hello", "greet", []byte(`{"name":"Ada"}`)); !errors.As(err, &ae) {
		t.Errorf("a station opened by a link to the home ran a blocked version: %v", err)
	}
	all, err := other.InstalledAdvisories(ctx)
	if err != nil || len(all) != 1 || all[0].Hub != e.hub {
		t.Errorf("InstalledAdvisories by the link = %+v, %v; want dave/hello from %s", all, err, e.hub)
	}
}

// TestAllowanceIsForOneHub: hubs number their advisories each on their
// own, so an allowance of one hub's STATION-2026-0013 for a version does
// not allow another hub's advisory of that id: installing the version
// from that hub is refused, and it does not run.
func TestAllowanceIsForOneHub(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newAdvEnv(t, "")
	const elsewhere = "http://127.0.0.1:1"
	e.put(t, elsewhere, []hub.OSV{advisory("STATION-2026-0013", "low", "0", "")})
	// The same bytes from a directory are matched against no hub: the
	// operator allows the other hub's advisory for the version.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "module.yaml"), helloAt("1.0.0"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "module.wasm"), wasmbuild.ForTest(t, "examples/hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.Install(ctx, dir, func(station.Plan) (bool, error) { return true, nil }); err != nil {
		t.Fatal(err)
	}
	m, err := e.st.AllowAdvisory(ctx, "STATION-2026-0013", "dave/hello", "1.0.0", "a low one of the other hub", time.Now())
	if err != nil || m.Hub != elsewhere {
		t.Fatalf("AllowAdvisory = %+v, %v; want the advisory of %s", m, err, elsewhere)
	}

	// The module's own hub publishes a critical advisory under that id.
	e.put(t, e.hub, []hub.OSV{advisory("STATION-2026-0013", "critical", "0", "")})
	va, err := e.st.AdvisoriesAgainst(ctx, e.hub, "dave/hello", "1.0.0")
	if err != nil || va.Blocking() == nil {
		t.Errorf("AdvisoriesAgainst(%s) = %+v, %v; want the critical advisory, not allowed", e.hub, va, err)
	}
	_, err = e.sess.Install(ctx, hubsync.Request{ID: "dave/hello", Version: "1.0.0", Ask: true}, func(hubsync.Plan) (bool, error) { return true, nil })
	var blocked *hubsync.AdvisoryBlockedError
	if !errors.As(err, &blocked) {
		t.Errorf("installing the version from %s = %v; want it refused", e.hub, err)
	}
	if err == nil {
		if err := e.greet(t); err == nil {
			t.Error("the version runs, allowed by another hub's advisory")
		}
	}
}

// TestAdvisoryGateChecksWhatRuns: what the gate looks at is what runs.
// Another process upgraded the module and this one was not told (a
// daemon whose reload request failed): once a critical advisory against
// the old version arrives, the gate, which reads the new version from the
// store, does not let the warm copy of the old one run; the call runs the
// new version. And a module another process installed after this one last
// looked is looked at before it is loaded: a critical advisory that
// process stored refuses it.
func TestAdvisoryGateChecksWhatRuns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newAdvEnv(t, "")
	if err := e.greet(t); err != nil {
		t.Fatal(err)
	}
	other := func() (*station.Station, *hubsync.Session) {
		st, err := station.Open(ctx, e.st.Home, station.Options{Cache: testCache(t)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close(ctx) })
		sess, err := hubsync.Open(ctx, st, nil)
		if err != nil {
			t.Fatal(err)
		}
		return st, sess
	}
	_, sess := other()
	if _, err := sess.Install(ctx, hubsync.Request{ID: "dave/hello", Version: "1.0.1"}, nil); err != nil {
		t.Fatal(err)
	}
	e.put(t, e.hub, []hub.OSV{advisory("STATION-2026-0014", "critical", "0", "1.0.1")})
	if err := e.greet(t); err != nil {
		t.Errorf("the installed 1.0.1 is not affected: %v", err)
	}
	if m := e.st.Host.Module("dave/hello"); m == nil || m.Version() != "1.0.1" {
		v := "none"
		if m != nil {
			v = m.Version()
		}
		t.Errorf("the call ran %s, which the advisory blocks; want 1.0.1, which the gate looked at", v)
	}

	// Removed here; installed again at 1.0.0 by another process, which
	// also stored a critical advisory against it.
	if err := e.st.Remove(ctx, "dave/hello"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.InstalledAdvisories(ctx); err != nil {
		t.Fatal(err)
	}
	ost, sess := other()
	if err := ost.Store.PutAdvisories(ctx, e.hub, []hub.OSV{advisory("STATION-2026-0014", "low", "0", "1.0.1")}, nil, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := sess.Install(ctx, hubsync.Request{ID: "dave/hello", Version: "1.0.0"}, func(hubsync.Plan) (bool, error) { return true, nil }); err != nil {
		t.Fatal(err)
	}
	if err := ost.Store.PutAdvisories(ctx, e.hub, []hub.OSV{advisory("STATION-2026-0015", "critical", "0", "")}, nil, 1); err != nil {
		t.Fatal(err)
	}
	var ae *station.AdvisoryError
	if err := e.greet(t); !errors.As(err, &ae) {
		t.Errorf("a module installed by another process since this one looked ran unchecked: %v", err)
	}
}

// TestAdvisoryGateSeesAnotherProcessUntold is a known gap: an advisory
// another process stored (the CLI's install or team push asking the hub
// for one module's advisories) reaches a daemon only when it is told
// (Reload, as install, upgrade, allow and station advisories do) or when
// its relay brings the advisory event itself. Until then a module the
// daemon already looked at runs. Closing it needs the gate to see another
// process's writes on every call (a generation row in the store read per
// call, or SQLite's data_version), a design change of the store.
func TestAdvisoryGateSeesAnotherProcessUntold(t *testing.T) {
	t.Skip("known gap: a daemon learns of another process's advisory writes from Reload or its relay, not from the store (see the comment)")
	ctx := context.Background()
	e := newAdvEnv(t, "")
	if err := e.greet(t); err != nil {
		t.Fatal(err)
	}
	other, err := store.Open(e.st.Store.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := other.PutAdvisoryRecords(ctx, e.hub, []hub.OSV{advisory("STATION-2026-0016", "critical", "0", "")}, nil); err != nil {
		t.Fatal(err)
	}
	var ae *station.AdvisoryError
	if err := e.greet(t); !errors.As(err, &ae) {
		t.Errorf("a critical advisory another process stored did not refuse the next call: %v", err)
	}
}
