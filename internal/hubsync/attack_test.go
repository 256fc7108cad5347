package hubsync_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/fixture"
	"github.com/station-dev/station/internal/hubclient"
	"github.com/station-dev/station/internal/hubserver/hubtest"
	"github.com/station-dev/station/internal/hubsync"
	"github.com/station-dev/station/internal/station"
	"github.com/station-dev/station/internal/store"
	"github.com/station-dev/station/internal/wasmbuild"
)

// TestSyncAppliesOnlyTheTeamItAskedFor: a hub that answers the lockfile of
// team acme with a lockfile that names team beta (another team of this
// station, at a revision far ahead, with a workflow of its choosing) changes
// nothing: not beta's revision (which would make the station ignore beta's
// real pushes), not beta's workflows, not acme.
func TestSyncAppliesOnlyTheTeamItAskedFor(t *testing.T) {
	ctx := context.Background()
	h := hubtest.Start(t)
	target, _ := url.Parse(h.URL)
	proxy := httputil.NewSingleHostReverseProxy(target)
	evil := "name: evil\nsteps: []\n"
	proxy.ModifyResponse = func(r *http.Response) error {
		if r.Request.URL.Path != "/v1/teams/acme/lockfile" || r.StatusCode != 200 {
			return nil
		}
		var tl hub.TeamLockfile
		if err := json.NewDecoder(r.Body).Decode(&tl); err != nil {
			return err
		}
		tl.Team, tl.Revision = "beta", 999
		tl.Lockfile.Workflows = append(tl.Lockfile.Workflows, hub.Workflow{Name: "evil", Source: evil, Digest: hub.Digest([]byte(evil))})
		b, _ := json.Marshal(tl)
		r.Body = io.NopCloser(bytes.NewReader(b))
		r.ContentLength = int64(len(b))
		r.Header.Set("Content-Length", strconv.Itoa(len(b)))
		return nil
	}
	front := httptest.NewServer(proxy)
	t.Cleanup(front.Close)

	st, err := station.Open(ctx, t.TempDir(), station.Options{Cache: testCache})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close(context.Background()) })
	if _, err := hubsync.Login(ctx, st, front.URL, h.Account(t, "erin")); err != nil {
		t.Fatal(err)
	}
	sess, err := hubsync.Open(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"acme", "beta"} {
		if _, _, err := sess.CreateTeam(ctx, name, false); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := sess.Sync(ctx, "beta", nil); err != nil {
		t.Fatal(err)
	}

	rep, err := sess.Sync(ctx, "acme", nil)
	if err == nil || !strings.Contains(err.Error(), `lockfile of team "beta"`) {
		t.Errorf("Sync(acme) = %+v, %v; want it refused, naming the team the hub answered for", rep, err)
	}
	for _, name := range []string{"acme", "beta"} {
		if team, _ := st.Store.HubTeam(ctx, name); team.Revision != 0 {
			t.Errorf("team %s is at revision %d after the hub answered for another team, want 0", name, team.Revision)
		}
	}
	if _, err := os.Stat(filepath.Join(hubsync.WorkflowDir(st.Home, "beta"), "evil.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the hub's workflow was written into team beta's directory (%v)", err)
	}
}

// twoHubs is a station and two hubs on which an account named dave
// publishes, each with a key of its own: the same name, two publishers.
type twoHubs struct {
	st             *station.Station
	a, b           *hubtest.Hub
	daveA, daveB   *hubclient.Client
	keyA, keyB     *hubclient.Signer
	tokenA, tokenB string
	approvals      []hubsync.Plan
}

func newTwoHubs(t *testing.T) *twoHubs {
	ctx := context.Background()
	e := &twoHubs{a: hubtest.Start(t), b: hubtest.Start(t)}
	e.daveA, e.keyA = e.a.Publisher(t, "dave")
	e.daveB, e.keyB = e.b.Publisher(t, "dave")
	e.tokenA, e.tokenB = e.a.Account(t, "erin"), e.b.Account(t, "erin")
	st, err := station.Open(ctx, t.TempDir(), station.Options{Cache: testCache})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close(context.Background()) })
	e.st = st
	return e
}

// on logs the station in to h and returns the session.
func (e *twoHubs) on(t *testing.T, h *hubtest.Hub) *hubsync.Session {
	t.Helper()
	tok := e.tokenA
	if h == e.b {
		tok = e.tokenB
	}
	if _, err := hubsync.Login(context.Background(), e.st, h.URL, tok); err != nil {
		t.Fatal(err)
	}
	sess, err := hubsync.Open(context.Background(), e.st, nil)
	if err != nil {
		t.Fatal(err)
	}
	return sess
}

// publishAs publishes id@version (the hello example, no permissions) with c
// signed by s.
func publishAs(t *testing.T, c *hubclient.Client, s *hubclient.Signer, id, version string) {
	t.Helper()
	m := "id: " + id + "\nversion: \"" + version + "\"\nwasm: module.wasm\ncommands:\n  - name: greet\n"
	b, err := hubclient.NewBundle([]byte(m), wasmbuild.ForTest(t, "examples/hello"), s)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Publish(context.Background(), b); err != nil {
		t.Fatal(err)
	}
}

func (e *twoHubs) yes(p hubsync.Plan) (bool, error) {
	e.approvals = append(e.approvals, p)
	return true, nil
}

// TestKeysArePinnedPerHub: a key the operator approved for dave on hub B
// is not trusted for dave on hub A. Here hub B's dave (another person, or
// another hub's idea of dave) signs with key B, which the operator accepts
// for hub B; then hub A — or whoever stole dave's account there — registers
// key B for A's dave and publishes an upgrade of dave/hello signed with it.
// The upgrade waits for approval, and 1.0.0, signed by A's key, keeps
// running.
func TestKeysArePinnedPerHub(t *testing.T) {
	ctx := context.Background()
	e := newTwoHubs(t)
	publishAs(t, e.daveA, e.keyA, "dave/hello", "1.0.0")
	sess := e.on(t, e.a)
	if _, err := sess.Install(ctx, hubsync.Request{ID: "dave/hello", Version: "1.0.0"}, e.yes); err != nil {
		t.Fatal(err)
	}

	publishAs(t, e.daveB, e.keyB, "dave/tool", "1.0.0")
	sess = e.on(t, e.b)
	if _, err := sess.Install(ctx, hubsync.Request{ID: "dave/tool", Version: "1.0.0"}, e.yes); err != nil {
		t.Fatal(err)
	}

	if _, err := e.daveA.AddKey(ctx, e.keyB.PublicKey()); err != nil {
		t.Fatal(err)
	}
	publishAs(t, e.daveA, e.keyB, "dave/hello", "1.1.0")
	sess = e.on(t, e.a)
	_, err := sess.Install(ctx, hubsync.Request{ID: "dave/hello", Version: "1.1.0"}, nil)
	var pe *hubsync.PendingError
	if !errors.As(err, &pe) || !pe.Plan.KeyChange {
		t.Fatalf("upgrade on hub A signed by the key pinned for hub B's dave = %v; want it pending as a key change", err)
	}
	if got := strings.Join(pe.Plan.Differences(), "; "); !strings.Contains(got, "not the key pinned for dave on "+e.a.URL+" ("+e.keyA.PublicKey().ID.String()+")") {
		t.Errorf("differences = %q, want the key pinned on hub A named", got)
	}
	if rec, _ := e.st.Store.Module(ctx, "dave/hello"); rec.Version != "1.0.0" {
		t.Errorf("dave/hello %s was installed with a key pinned for another hub", rec.Version)
	}
}

// TestASecondHubsKeyForTheSameOwnerIsAsked: the first module of dave from
// hub B, signed by another key than the one pinned for dave on hub A, is
// not trusted on first use: the operator is told that dave on A signs with
// another key, and without an approval nothing is installed or pinned. A
// hub B whose dave signs with the very key pinned on A is that publisher:
// its first module installs without the question.
func TestASecondHubsKeyForTheSameOwnerIsAsked(t *testing.T) {
	ctx := context.Background()
	e := newTwoHubs(t)
	publishAs(t, e.daveA, e.keyA, "dave/hello", "1.0.0")
	sess := e.on(t, e.a)
	if _, err := sess.Install(ctx, hubsync.Request{ID: "dave/hello", Version: "1.0.0"}, e.yes); err != nil {
		t.Fatal(err)
	}

	publishAs(t, e.daveB, e.keyB, "dave/tool", "1.0.0")
	sess = e.on(t, e.b)
	lm := lockedAt(t, sess, "dave/tool", "1.0.0")
	rep, err := sess.Apply(ctx, hub.TeamLockfile{Team: "acme", Revision: 1, Lockfile: hub.Lockfile{Modules: []hub.LockedModule{lm}, Workflows: []hub.Workflow{}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Pending) != 1 || len(rep.Installed) != 0 {
		t.Fatalf("a module needing nothing, signed for dave on hub B by another key than hub A's dave: installed %+v, pending %+v, failed %v; want it pending", rep.Installed, rep.Pending, rep.Failed)
	}
	want := "IS SIGNED BY KEY " + e.keyB.PublicKey().ID.String() + ", and no key is pinned for dave on " + e.b.URL +
		"; dave on " + e.a.URL + " signs with " + e.keyA.PublicKey().ID.String()
	if got := strings.Join(rep.Pending[0].Differences(), "; "); !strings.Contains(got, want) {
		t.Errorf("differences = %q\nwant them to contain %q", got, want)
	}
	if keys, _ := e.st.Store.HubKeys(ctx, e.b.URL, "dave"); len(keys) != 0 {
		t.Errorf("keys pinned for dave on hub B without an approval: %+v", keys)
	}

	// An approval pins key B for dave on hub B, and only there.
	if _, err := sess.Apply(ctx, hub.TeamLockfile{Team: "acme", Revision: 1, Lockfile: hub.Lockfile{Modules: []hub.LockedModule{lm}, Workflows: []hub.Workflow{}}}, e.yes); err != nil {
		t.Fatal(err)
	}
	keysB, _ := e.st.Store.HubKeys(ctx, e.b.URL, "dave")
	keysA, _ := e.st.Store.HubKeys(ctx, e.a.URL, "dave")
	if len(keysB) != 1 || keysB[0].KeyID != e.keyB.PublicKey().ID.String() || len(keysA) != 1 || keysA[0].KeyID != e.keyA.PublicKey().ID.String() {
		t.Errorf("pins after the approval: on A %+v, on B %+v", keysA, keysB)
	}

	// A third hub whose dave signs with hub A's key.
	c := hubtest.Start(t)
	daveC, _ := c.Publisher(t, "dave")
	if _, err := daveC.AddKey(ctx, e.keyA.PublicKey()); err != nil {
		t.Fatal(err)
	}
	publishAs(t, daveC, e.keyA, "dave/other", "1.0.0")
	if _, err := hubsync.Login(ctx, e.st, c.URL, c.Account(t, "erin")); err != nil {
		t.Fatal(err)
	}
	sess, _ = hubsync.Open(ctx, e.st, nil)
	lm = lockedAt(t, sess, "dave/other", "1.0.0")
	rep, err = sess.Apply(ctx, hub.TeamLockfile{Team: "acme", Revision: 1, Lockfile: hub.Lockfile{Modules: []hub.LockedModule{lm}, Workflows: []hub.Workflow{}}}, nil)
	if err != nil || len(rep.Installed) != 1 {
		t.Errorf("a module signed by the key pinned for dave on hub A, from hub C: %+v, %v; want it installed", rep, err)
	}
	if keys, _ := e.st.Store.HubKeys(ctx, c.URL, "dave"); len(keys) != 1 {
		t.Errorf("pins for dave on hub C: %+v", keys)
	}
}

// lockedAt is the lockfile entry of id@version as the session's hub lists it.
func lockedAt(t *testing.T, sess *hubsync.Session, id, version string) hub.LockedModule {
	t.Helper()
	v, err := sess.Client.Version(context.Background(), id, version)
	if err != nil {
		t.Fatal(err)
	}
	return hub.LockedModule{ID: id, Version: version, ManifestDigest: v.ManifestDigest, WasmDigest: v.WasmDigest, Permissions: none()}
}

// TestRunnerSaysWhyTheRelayDropped: the daemon's relay runner logs why a
// stream was dropped — here an event that never ends — and reconnects; an
// event that names no valid team is skipped, recording nothing.
func TestRunnerSaysWhyTheRelayDropped(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	var conns atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/events" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		switch conns.Add(1) {
		case 1:
			io.WriteString(w, "id: 1\ndata: {\n")
			line := []byte("data: " + strings.Repeat(" ", 64<<10) + "\n")
			for i := 0; i < 64; i++ {
				if _, err := w.Write(line); err != nil {
					return
				}
			}
		case 2:
			io.WriteString(w, "id: 1\nevent: team.created\ndata: {\"seq\":1,\"kind\":\"team.created\",\"team\":\"../../x\",\"account\":\"erin\",\"role\":\"owner\"}\n\n")
		}
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	st, err := station.Open(ctx, t.TempDir(), station.Options{Cache: testCache})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close(context.Background()) })
	l := store.HubLogin{URL: srv.URL, Account: "erin", LoggedIn: time.Now().UTC()}
	if err := st.Store.PutHubLogin(ctx, l); err != nil {
		t.Fatal(err)
	}
	c, err := hubclient.New(srv.URL, &http.Client{Transport: &http.Transport{}}, hubclient.Options{Token: "sth_test"})
	if err != nil {
		t.Fatal(err)
	}
	var log fixture.SyncBuffer
	sess := &hubsync.Session{Station: st, Client: c, Login: l, Log: slog.New(slog.NewTextHandler(&log, nil))}
	done := make(chan error, 1)
	go func() { done <- (&hubsync.Runner{Session: sess, MinBackoff: time.Millisecond}).Run(ctx) }()
	if !fixture.Poll(10*time.Second, func() bool { l, _ := st.Store.HubLogin(ctx); return l.Cursor == 1 }) {
		t.Error("the runner did not handle event 1 within 10s")
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run = %v", err)
	}
	out := log.String()
	if !strings.Contains(out, `msg="hub relay disconnected; reconnecting with backoff" hub=`+srv.URL+` reason="the hub's event stream sent an event larger than 1 MiB`) {
		t.Errorf("the log does not say why the relay dropped the stream:\n%s", out)
	}
	if !strings.Contains(out, "ignored an event that names no valid team") {
		t.Errorf("the log does not say the event was skipped:\n%s", out)
	}
	if teams, _ := st.Store.HubTeams(context.Background()); len(teams) != 0 {
		t.Errorf("teams recorded from the event: %+v", teams)
	}
	if l, _ := st.Store.HubLogin(context.Background()); l.Cursor != 1 {
		t.Errorf("cursor %d, want 1 (the event was handled by skipping it)", l.Cursor)
	}
}

// TestTeamNamesFromTheHubAreChecked: the team a join answer names, the
// teams a listing names and the team a create answers for become store
// keys and directories: a name that is not a team name, or another team
// than the one created, is refused and nothing is recorded.
func TestTeamNamesFromTheHubAreChecked(t *testing.T) {
	ctx := context.Background()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/v1/invites/accept":
			io.WriteString(w, `{"name":"../../x","role":"member","revision":0,"created_at":"2026-11-01T00:00:00Z"}`)
		case "/v1/teams":
			if r.Method == http.MethodPost {
				w.WriteHeader(201)
				io.WriteString(w, `{"name":"beta","role":"owner","revision":0,"created_at":"2026-11-01T00:00:00Z"}`)
				return
			}
			io.WriteString(w, `[{"name":"acme","role":"member","revision":0,"created_at":"2026-11-01T00:00:00Z"},{"name":"Bad/Name","role":"member","revision":0,"created_at":"2026-11-01T00:00:00Z"}]`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	st, err := station.Open(ctx, t.TempDir(), station.Options{Cache: testCache})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close(context.Background()) })
	l := store.HubLogin{URL: srv.URL, Account: "erin", LoggedIn: time.Now().UTC()}
	if err := st.Store.PutHubLogin(ctx, l); err != nil {
		t.Fatal(err)
	}
	c, _ := hubclient.New(srv.URL, &http.Client{Transport: &http.Transport{}}, hubclient.Options{Token: "sth_test"})
	sess := &hubsync.Session{Station: st, Client: c, Login: l}
	if _, _, err := sess.Join(ctx, "sti_code", nil); err == nil || !strings.Contains(err.Error(), `the hub named team "../../x"`) {
		t.Errorf("Join = %v, want the team name refused", err)
	}
	if _, err := sess.RefreshTeams(ctx); err == nil || !strings.Contains(err.Error(), `"Bad/Name"`) {
		t.Errorf("RefreshTeams = %v, want the team name refused", err)
	}
	if _, _, err := sess.CreateTeam(ctx, "acme", false); err == nil || !strings.Contains(err.Error(), `answered for team "beta"`) {
		t.Errorf("CreateTeam(acme) = %v, want the answer for beta refused", err)
	}
	if teams, _ := st.Store.HubTeams(ctx); len(teams) != 0 {
		t.Errorf("teams recorded: %+v", teams)
	}
	if _, err := os.Stat(filepath.Join(st.Home, "x")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a directory outside the teams' was made (%v)", err)
	}
}
