package hubsync_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/hubclient"
	"github.com/station-dev/station/internal/hubserver/hubtest"
	"github.com/station-dev/station/internal/hubsync"
	"github.com/station-dev/station/internal/station"
	"github.com/station-dev/station/internal/wasmbuild"
)

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
	st, err := station.Open(ctx, t.TempDir(), station.Options{})
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

