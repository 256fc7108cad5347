package hubsync_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/fixture"
	"github.com/station-dev/station/internal/hubsync"
	"github.com/station-dev/station/internal/station"
	"github.com/station-dev/station/internal/store"
)

// publishAdvisory publishes, as dave, an advisory against dave/hello.
func (e *env) publishAdvisory(t *testing.T, level string, r hub.Range) hub.OSV {
	t.Helper()
	a, err := e.dave.PublishAdvisory(context.Background(), hub.AdvisoryRequest{Target: "dave/hello", Ranges: []hub.Range{r},
		Summary: "greet leaks the name", Details: "The greeting is logged.", Severity: hub.Severity{Level: level}})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func (e *env) greet() error {
	_, err := e.sess.Station.Run(context.Background(), "dave/hello", "greet", []byte(`{"name":"Ada"}`))
	return err
}

// TestSyncAdvisories: the feed of a real hub is stored with its cursor,
// a second sync reads nothing new, and a withdrawal, a yank and an unyank
// are applied as they come.
func TestSyncAdvisories(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.publish(t, e.signer, "1.0.0", nil, none())
	e.publish(t, e.signer, "1.0.1", nil, none())
	a := e.publishAdvisory(t, "critical", hub.Range{Introduced: "0", Fixed: "1.0.1"})
	st := e.sess.Station.Store

	res, err := e.sess.SyncAdvisories(ctx)
	if err != nil || res.Advisories != 1 || res.Hub != e.sess.Login.URL || len(res.Skipped) != 0 {
		t.Fatalf("first sync = %+v, %v", res, err)
	}
	stored, _ := st.AdvisoriesFor(ctx, "dave/hello")
	if len(stored) != 1 || stored[0].OSV.ID != a.ID || stored[0].HubURL != e.sess.Login.URL || !stored[0].OSV.AffectsVersion("dave/hello", "1.0.0") {
		t.Fatalf("stored = %+v", stored)
	}
	if f, _ := st.AdvisoryCursor(ctx, e.sess.Login.URL); f.Cursor != res.Cursor || f.Cursor == 0 || f.SyncedAt.IsZero() {
		t.Errorf("cursor = %+v, sync said %d", f, res.Cursor)
	}
	if again, err := e.sess.SyncAdvisories(ctx); err != nil || again.Advisories+again.Yanks != 0 || again.Cursor != res.Cursor {
		t.Errorf("second sync = %+v, %v; want nothing new", again, err)
	}

	if _, err := e.dave.WithdrawAdvisory(ctx, a.ID, "it was wrong"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.dave.Yank(ctx, "dave/hello", "1.0.0", "broken greeting"); err != nil {
		t.Fatal(err)
	}
	if res, err = e.sess.SyncAdvisories(ctx); err != nil || res.Advisories != 1 || res.Yanks != 1 {
		t.Fatalf("sync after a withdrawal and a yank = %+v, %v", res, err)
	}
	stored, _ = st.AdvisoriesFor(ctx, "dave/hello")
	ys, _ := st.Yanks(ctx)
	if stored[0].OSV.Withdrawn == nil || len(ys) != 1 || ys[0].Reason != "broken greeting" || ys[0].Version != "1.0.0" {
		t.Errorf("after the withdrawal and the yank: %+v, yanks %+v", stored, ys)
	}
	if _, err := e.dave.Unyank(ctx, "dave/hello", "1.0.0"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.sess.SyncAdvisories(ctx); err != nil {
		t.Fatal(err)
	}
	if ys, _ := st.Yanks(ctx); len(ys) != 0 {
		t.Errorf("the unyank left %+v", ys)
	}
}

// fakeFeed is a hub that serves only the advisory feed, from pages; a
// page whose cursor is -1 answers cursor_ahead.
type fakeFeed struct {
	pages []hub.AdvisoryFeed
	mu    sync.Mutex
	asked []int64 // the cursors the feed was read after
}

func (f *fakeFeed) cursors() []int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]int64(nil), f.asked...)
}

func (f *fakeFeed) serve(t *testing.T) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(hub.HeaderProtocol, strconv.Itoa(hub.ProtocolVersion))
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path != "/v1/advisories/feed" {
			w.WriteHeader(http.StatusNotFound)
			json.NewEncoder(w).Encode(hub.ErrorResponse{Error: hub.Errorf(hub.CodeNoEndpoint, "no endpoint")})
			return
		}
		after, _ := strconv.ParseInt(r.URL.Query().Get("after"), 10, 64)
		f.mu.Lock()
		f.asked = append(f.asked, after)
		n := len(f.asked) - 1
		f.mu.Unlock()
		if n >= len(f.pages) {
			n = len(f.pages) - 1
		}
		p := f.pages[n]
		if p.Cursor == -1 {
			w.WriteHeader(http.StatusConflict)
			json.NewEncoder(w).Encode(hub.ErrorResponse{Error: hub.Errorf(hub.CodeCursorAhead, "the cursor is past the end")})
			return
		}
		json.NewEncoder(w).Encode(p)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// fakeSession is a station logged in (in its store) to the hub at url.
func fakeSession(t *testing.T, url string) *hubsync.Session {
	t.Helper()
	ctx := context.Background()
	st, err := station.Open(ctx, t.TempDir(), station.Options{Cache: testCache})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close(context.Background()) })
	c, err := hubsync.NewClient(url, "sth_test")
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Store.PutHubLogin(ctx, store.HubLogin{URL: c.URL(), Account: "erin", LoggedIn: time.Now()}); err != nil {
		t.Fatal(err)
	}
	l, _ := st.Store.HubLogin(ctx)
	return &hubsync.Session{Station: st, Client: c, Login: l}
}

func feedOSV(id, pkg string) hub.OSV {
	now := time.Now().UTC()
	return hub.OSV{SchemaVersion: hub.OSVSchemaVersion, ID: id, Modified: hub.OSVTime{Time: now}, Published: hub.OSVTime{Time: now}, Summary: "s",
		Affected: []hub.OSVAffect{{Package: hub.OSVPackage{Ecosystem: hub.Ecosystem, Name: pkg},
			Ranges: []hub.OSVRange{{Type: "SEMVER", Events: []hub.OSVEvent{{Introduced: "0"}}}}}},
		Database: &hub.OSVDatabase{Severity: "CRITICAL"}}
}

// TestSyncAdvisoriesHostileFeed: a feed is read page by page from the
// stored cursor; records the station cannot use are left out and named
// (the rest of the page is stored); a feed behind the cursor is read again
// from 0; and a feed that says there is more without moving is refused.
func TestSyncAdvisoriesHostileFeed(t *testing.T) {
	ctx := context.Background()
	noTime := feedOSV("STATION-2026-0004", "dave/x")
	noTime.Modified = hub.OSVTime{}
	f := &fakeFeed{pages: []hub.AdvisoryFeed{
		{Advisories: []hub.OSV{feedOSV("STATION-2026-0001", "dave/x"), feedOSV("STATION-2026-0001\x1b[2J", "dave/x")}, Cursor: 5, More: true},
		{Advisories: []hub.OSV{feedOSV("STATION-2026-0002", "../../etc"), feedOSV("STATION-2026-0003", hub.Product), noTime},
			Yanks:  []hub.Yank{{Module: "dave/x", Version: "1.0.0", Yanked: true, Reason: "r", Time: time.Now()}, {Module: "dave/x", Version: "latest", Yanked: true, Time: time.Now()}},
			Cursor: 9},
	}}
	s := fakeSession(t, f.serve(t))
	res, err := s.SyncAdvisories(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Advisories != 2 || res.Yanks != 1 || res.Cursor != 9 || len(res.Skipped) != 4 {
		t.Errorf("sync = %+v; want 2 advisories, 1 yank, 4 skipped, cursor 9", res)
	}
	if got := f.cursors(); len(got) != 2 || got[0] != 0 || got[1] != 5 {
		t.Errorf("the feed was read after %v, want [0 5]", got)
	}
	as, _ := s.Station.Store.Advisories(ctx)
	if len(as) != 2 || as[0].OSV.ID != "STATION-2026-0001" || as[1].Target != hub.Product {
		t.Errorf("stored %+v", as)
	}

	// The hub was replaced: its feed is behind the stored cursor 9.
	f2 := &fakeFeed{pages: []hub.AdvisoryFeed{{Cursor: -1}, {Advisories: []hub.OSV{}, Cursor: 2}}}
	s2 := fakeSession(t, f2.serve(t))
	if err := s2.Station.Store.PutAdvisories(ctx, s2.Login.URL, nil, nil, 9); err != nil {
		t.Fatal(err)
	}
	if res, err := s2.SyncAdvisories(ctx); err != nil || !res.Resynced || res.Cursor != 2 || len(f2.cursors()) != 2 || f2.cursors()[0] != 9 || f2.cursors()[1] != 0 {
		t.Errorf("sync of a feed behind the cursor = %+v, %v; asked after %v", res, err, f2.cursors())
	}

	// More, forever, without moving.
	f3 := &fakeFeed{pages: []hub.AdvisoryFeed{{Cursor: 0, More: true}}}
	s3 := fakeSession(t, f3.serve(t))
	if _, err := s3.SyncAdvisories(ctx); err == nil || !strings.Contains(err.Error(), "did not move past it") {
		t.Errorf("a feed that does not move = %v", err)
	}
	// A hub without the feed is its error, not a hang.
	f4 := &fakeFeed{}
	s4 := fakeSession(t, f4.serve(t))
	s4.Client, _ = hubsync.NewClient(strings.TrimSuffix(s4.Login.URL, "/")+"/elsewhere", "sth_test")
	if _, err := s4.SyncAdvisories(ctx); hub.CodeOf(err) != hub.CodeNoEndpoint {
		t.Errorf("a hub without the feed = %v, want no_endpoint", err)
	}
}

// TestRelayAppliesAdvisoryWithoutRestart: a daemon-style runner follows
// the hub's relay; a module already loaded and running is refused on its
// next call once the hub publishes a critical advisory against it, and
// runs again once the advisory is withdrawn; a yank makes it warn. No
// restart, no sleep.
func TestRelayAppliesAdvisoryWithoutRestart(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.publish(t, e.signer, "1.0.0", nil, none())
	e.publish(t, e.signer, "1.0.1", nil, none())
	if _, err := e.sess.Install(ctx, hubsync.Request{ID: "dave/hello", Version: "1.0.0"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := e.greet(); err != nil {
		t.Fatal(err)
	}
	var applied atomic.Int32
	r := &hubsync.Runner{Session: e.sess, MinBackoff: 10 * time.Millisecond, OnAdvisories: func(hubsync.SyncResult) { applied.Add(1) }}
	var connected atomic.Bool
	r.OnConnect = func(int64) { connected.Store(true) }
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- r.Run(rctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("runner: %v", err)
		}
	}()
	fixture.Eventuallyf(t, 10*time.Second, connected.Load, "the runner to connect")

	a := e.publishAdvisory(t, "critical", hub.Range{Introduced: "0", Fixed: "1.0.1"})
	var ae *station.AdvisoryError
	fixture.Eventuallyf(t, 10*time.Second, func() bool { return errors.As(e.greet(), &ae) }, "the loaded module to be refused")
	if ae.ID != a.ID || ae.FixedIn != "1.0.1" {
		t.Errorf("refused with %+v", ae)
	}
	if applied.Load() == 0 {
		t.Error("OnAdvisories was not called")
	}

	if _, err := e.dave.WithdrawAdvisory(ctx, a.ID, "it was wrong"); err != nil {
		t.Fatal(err)
	}
	fixture.Eventuallyf(t, 10*time.Second, func() bool { return e.greet() == nil }, "the module to run again after the withdrawal")

	if _, err := e.dave.Yank(ctx, "dave/hello", "1.0.0", "broken greeting"); err != nil {
		t.Fatal(err)
	}
	fixture.Eventuallyf(t, 10*time.Second, func() bool {
		ys, _ := e.sess.Station.Store.Yanks(ctx)
		return len(ys) == 1
	}, "the yank to be applied")
	if err := e.greet(); err != nil {
		t.Errorf("a yanked version is refused: %v", err)
	}
}

// TestRunnerCatchesUpOnAdvisories: a runner that starts after advisories
// were published (and past their events: its relay cursor is at the end)
// reads them from the feed when it starts.
func TestRunnerCatchesUpOnAdvisories(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.publish(t, e.signer, "1.0.0", nil, none())
	if _, err := e.sess.Install(ctx, hubsync.Request{ID: "dave/hello", Version: "1.0.0"}, nil); err != nil {
		t.Fatal(err)
	}
	a := e.publishAdvisory(t, "critical", hub.Range{Introduced: "0", LastAffected: "1.0.0"})
	sync, err := e.dave.Sync(ctx, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.sess.Station.Store.SetHubCursor(ctx, sync.Cursor); err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- (&hubsync.Runner{Session: e.sess}).Run(rctx) }()
	defer func() { cancel(); <-done }()
	var ae *station.AdvisoryError
	fixture.Eventuallyf(t, 10*time.Second, func() bool { return errors.As(e.greet(), &ae) }, "the advisory published before the runner started to apply")
	if ae.ID != a.ID || ae.FixedIn != "" {
		t.Errorf("refused with %+v", ae)
	}
}

// TestCheckAdvisories: every installed version is listed with what
// affects it, a directory install with nothing, and the station by its
// version: a release is matched, a development build or a pseudo-version
// is unknown.
func TestCheckAdvisories(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.publish(t, e.signer, "1.0.0", nil, none())
	e.publish(t, e.signer, "1.0.1", nil, none())
	if _, err := e.sess.Install(ctx, hubsync.Request{ID: "dave/hello", Version: "1.0.0"}, nil); err != nil {
		t.Fatal(err)
	}
	st := e.sess.Station
	if _, err := st.Install(ctx, localHelloAs(t, "erin/local", "1.0.0"), func(station.Plan) (bool, error) { return true, nil }); err != nil {
		t.Fatal(err)
	}
	hi := e.publishAdvisory(t, "high", hub.Range{Introduced: "0", Fixed: "1.0.1"})
	crit := e.publishAdvisory(t, "critical", hub.Range{Introduced: "1.0.0", LastAffected: "1.0.0"})
	if _, err := e.dave.Yank(ctx, "dave/hello", "1.0.0", "use 1.0.1"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.sess.SyncAdvisories(ctx); err != nil {
		t.Fatal(err)
	}
	// An advisory against the station, and the same id for erin/local
	// from a hub it was not installed from.
	self := feedOSV("STATION-2026-0100", hub.Product)
	self.Affected[0].Ranges[0].Events = append(self.Affected[0].Ranges[0].Events, hub.OSVEvent{Fixed: "0.73.0"})
	if err := st.Store.PutAdvisories(ctx, e.sess.Login.URL, []hub.OSV{self}, nil, 0); err != nil {
		t.Fatal(err)
	}
	if err := st.Store.PutAdvisories(ctx, "http://127.0.0.1:1", []hub.OSV{feedOSV("STATION-2026-0101", "erin/local")}, nil, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := st.AllowAdvisory(ctx, crit.ID, "dave/hello", "1.0.0", "not reachable here", time.Now()); err != nil {
		t.Fatal(err)
	}

	f, err := hubsync.CheckAdvisories(ctx, st, "v0.72.0")
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Modules) != 2 || f.Hub != e.sess.Login.URL || f.SyncedAt.IsZero() || !f.Affected() {
		t.Fatalf("findings = %+v", f)
	}
	hello, local := f.Modules[0], f.Modules[1]
	if hello.Module != "dave/hello" || hello.Origin != hubsync.FromHub || !hello.Yanked || hello.YankReason != "use 1.0.1" || len(hello.Advisories) != 2 {
		t.Fatalf("dave/hello = %+v", hello)
	}
	// The most severe first: the critical one, allowed; then the high one.
	if c := hello.Advisories[0]; c.ID != crit.ID || c.Status != hubsync.StatusAllowed || !c.Allowed || c.AllowReason != "not reachable here" {
		t.Errorf("the critical advisory = %+v", c)
	}
	if h := hello.Advisories[1]; h.ID != hi.ID || h.Status != hubsync.StatusWarn || h.FixedIn != "1.0.1" || h.Severity != "high" {
		t.Errorf("the high advisory = %+v", h)
	}
	if hello.Status != hubsync.StatusWarn {
		t.Errorf("dave/hello's status = %s, want warn", hello.Status)
	}
	if local.Module != "erin/local" || local.Origin != hubsync.FromDirectory || local.Affected() || local.Status != hubsync.StatusOK || local.Note == "" {
		t.Errorf("the directory install = %+v", local)
	}
	if s := f.Station; s.Status != hubsync.StatusWarn || len(s.Advisories) != 1 || s.Advisories[0].FixedIn != "0.73.0" || s.Version != "v0.72.0" {
		t.Errorf("the station at a release = %+v", s)
	}

	for _, v := range []string{"(devel)", "", "v0.0.0-20261201123456-abcdefabcdef", "v0.72.1-0.20261201123456-abcdefabcdef", "v0.72.0+dirty", "latest"} {
		f, err := hubsync.CheckAdvisories(ctx, st, v)
		if err != nil {
			t.Fatal(err)
		}
		if s := f.Station; s.Status != hubsync.StatusUnknown || len(s.Advisories) != 0 || !strings.Contains(s.Note, "unknown") {
			t.Errorf("the station at %q = %+v, want unknown", v, s)
		}
	}
	// Once the critical advisory is no longer allowed, dave/hello is
	// blocked.
	if err := st.Store.DeleteAdvisoryAllow(ctx, "dave/hello", "1.0.0", crit.ID); err != nil {
		t.Fatal(err)
	}
	f, _ = hubsync.CheckAdvisories(ctx, st, "(devel)")
	if f.Modules[0].Status != hubsync.StatusBlocked || f.Modules[0].Advisories[0].Status != hubsync.StatusBlocked {
		t.Errorf("after the allowance is withdrawn: %+v", f.Modules[0])
	}
}

// localHelloAs writes the hello example as id@version in a directory.
func localHelloAs(t *testing.T, id, version string) string {
	t.Helper()
	dir := localHello(t, version)
	file := filepath.Join(dir, "module.yaml")
	m, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte(strings.Replace(string(m), "id: dave/hello", "id: "+id, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}
