package hubsync_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/fixture"
	"github.com/station-dev/station/internal/hubclient"
	"github.com/station-dev/station/internal/hubserver/hubtest"
	"github.com/station-dev/station/internal/hubsync"
	"github.com/station-dev/station/internal/station"
)

// events collects what Follow reports.
type events struct {
	mu  sync.Mutex
	all []hubsync.RelayEvent
}

func (e *events) add(ev hubsync.RelayEvent) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.all = append(e.all, ev)
}

// of returns the events of kind so far.
func (e *events) of(kind hubsync.RelayEventKind) []hubsync.RelayEvent {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []hubsync.RelayEvent
	for _, ev := range e.all {
		if ev.Kind == kind {
			out = append(out, ev)
		}
	}
	return out
}

// TestFollowPicksUpALoginMadeWhileItRuns: a station's relay follower
// started before the station logged in to a hub (as `station serve` is)
// picks the login up without a restart, applies a team push within the
// approval, records one that asks for more as pending, reports each of
// these, and stops following when the station logs out.
func TestFollowPicksUpALoginMadeWhileItRuns(t *testing.T) {
	ctx := context.Background()
	h := hubtest.Start(t)
	dave, signer := h.Publisher(t, "dave")
	bob := h.Account(t, "bob")
	st, err := station.Open(ctx, t.TempDir(), station.Options{Cache: testCache})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close(context.Background()) })

	var log fixture.SyncBuffer
	var got events
	fctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		hubsync.Follow(fctx, st, hubsync.FollowOptions{Log: slog.New(slog.NewTextHandler(&log, nil)), Poll: 10 * time.Millisecond, OnEvent: got.add, MinBackoff: time.Millisecond})
	}()
	t.Cleanup(func() { stop(); <-done })

	// The owner, dave, makes the team and invites bob; bob's station logs
	// in and joins while the follower runs.
	if _, err := dave.CreateTeam(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	inv, err := dave.Invite(ctx, "acme", hub.InviteRequest{Account: "bob"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hubsync.Login(ctx, st, h.URL, bob); err != nil {
		t.Fatal(err)
	}
	sess, err := hubsync.Open(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := sess.Join(ctx, inv.Code, nil); err != nil {
		t.Fatal(err)
	}
	fixture.Eventuallyf(t, 20*time.Second, func() bool { return strings.Contains(log.String(), "hub relay connected") }, "the follower to connect to the relay")
	if f := got.of(hubsync.RelayFollowing); len(f) != 1 || f[0].Hub != h.URL || f[0].Account != "bob" {
		t.Errorf("following events = %+v", f)
	}

	// dave pushes hello 1.0.0, which asks for nothing: applied, reported.
	v1 := publishHello(t, dave, signer, "1.0.0")
	tl, err := dave.PushLockfile(ctx, "acme", 0, hub.Lockfile{Modules: []hub.LockedModule{v1}, Workflows: []hub.Workflow{}})
	if err != nil {
		t.Fatal(err)
	}
	fixture.Eventuallyf(t, 30*time.Second, func() bool {
		rec, err := st.Store.Module(ctx, "dave/hello")
		return err == nil && rec.Version == "1.0.0"
	}, "the follower to install dave/hello 1.0.0")
	// (The relay may also have replayed bob's join, applying revision 0.)
	applied := func() []hubsync.RelayEvent {
		var out []hubsync.RelayEvent
		for _, a := range got.of(hubsync.RelayApplied) {
			if a.Revision == tl.Revision {
				out = append(out, a)
			}
		}
		return out
	}
	fixture.Eventuallyf(t, 5*time.Second, func() bool { return len(applied()) == 1 }, "the applied event of revision %d", tl.Revision)
	if a := applied()[0]; a.Team != "acme" || a.Hub != h.URL || strings.Join(a.Installed, ",") != "dave/hello@1.0.0" || len(a.Failed) != 0 {
		t.Errorf("applied event = %+v", a)
	}

	// 1.1.0 may connect to api.stripe.com: the team approved it, this
	// station did not. Pending, reported with the difference.
	v2 := publishHello(t, dave, signer, "1.1.0", "api.stripe.com")
	if _, err := dave.PushLockfile(ctx, "acme", tl.Revision, hub.Lockfile{Modules: []hub.LockedModule{v2}, Workflows: []hub.Workflow{}}); err != nil {
		t.Fatal(err)
	}
	fixture.Eventuallyf(t, 20*time.Second, func() bool { return len(got.of(hubsync.RelayPending)) >= 1 }, "the pending event")
	p := got.of(hubsync.RelayPending)[0]
	if p.Team != "acme" || p.Module != "dave/hello" || p.Version != "1.1.0" || p.FromVersion != "1.0.0" || strings.Join(p.Asks, "; ") != "may now connect to api.stripe.com" {
		t.Errorf("pending event = %+v", p)
	}
	if rec, _ := st.Store.Module(ctx, "dave/hello"); rec.Version != "1.0.0" {
		t.Errorf("installed %s while 1.1.0 waits for approval", rec.Version)
	}

	// An advisory against the running 1.0.0: applied at once, and the
	// event says what it means for this station.
	adv, err := dave.PublishAdvisory(ctx, hub.AdvisoryRequest{Target: "dave/hello", Ranges: []hub.Range{{Introduced: "0", Fixed: "1.1.0"}},
		Summary: "greet leaks", Details: "It does.", Severity: hub.Severity{Level: hub.SeverityCritical}})
	if err != nil {
		t.Fatal(err)
	}
	want := "dave/hello@1.0.0: " + adv.ID + " (critical), DOES NOT RUN"
	fixture.Eventuallyf(t, 20*time.Second, func() bool {
		for _, e := range got.of(hubsync.RelayAdvisories) {
			if e.Hub == h.URL && e.Advisories >= 1 && strings.Join(e.Affected, "; ") == want {
				return true
			}
		}
		return false
	}, "the advisories event saying %q", want)

	// A logout stops the relay, and says so.
	if err := hubsync.Logout(ctx, st); err != nil {
		t.Fatal(err)
	}
	fixture.Eventuallyf(t, 20*time.Second, func() bool { return len(got.of(hubsync.RelayStopped)) == 1 }, "the stopped event")
	if s := got.of(hubsync.RelayStopped)[0]; s.Hub != h.URL || s.Reason != "the hub login changed" {
		t.Errorf("stopped event = %+v", s)
	}
	if !strings.Contains(log.String(), "stopped following the hub relay: the hub login changed") {
		t.Errorf("the log does not say the relay stopped:\n%s", log.String())
	}
}

// TestFollowReportsARefusedToken: a login whose token the hub no longer
// accepts stops the relay once, with the hub's reason, and the follower
// does not report it again until the login changes.
func TestFollowReportsARefusedToken(t *testing.T) {
	ctx := context.Background()
	h := hubtest.Start(t)
	st, err := station.Open(ctx, t.TempDir(), station.Options{Cache: testCache})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close(context.Background()) })
	if _, err := hubsync.Login(ctx, st, h.URL, h.Account(t, "erin")); err != nil {
		t.Fatal(err)
	}
	// The token is replaced by one the hub never issued.
	if err := hubsync.SaveToken(st.Home, hub.TokenPrefix+strings.Repeat("A", 43)); err != nil {
		t.Fatal(err)
	}
	var got events
	fctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		hubsync.Follow(fctx, st, hubsync.FollowOptions{Poll: 5 * time.Millisecond, OnEvent: got.add, MinBackoff: time.Millisecond})
	}()
	fixture.Eventuallyf(t, 20*time.Second, func() bool { return len(got.of(hubsync.RelayStopped)) >= 1 }, "the stopped event")
	time.Sleep(50 * time.Millisecond) // ten polls more: nothing new to report
	stop()
	<-done
	s := got.of(hubsync.RelayStopped)
	if len(s) != 1 || s[0].Hub != h.URL || !strings.Contains(s[0].Reason, "unauthenticated") {
		t.Errorf("stopped events = %+v, want one that names the refusal", s)
	}
	if f := got.of(hubsync.RelayFollowing); len(f) != 1 {
		t.Errorf("following events = %+v, want one", f)
	}
}

// publishHello publishes dave/hello@version (the hello example) with allow
// as its hosts, and returns its lockfile entry with them approved.
func publishHello(t *testing.T, dave *hubclient.Client, s *hubclient.Signer, version string, allow ...string) hub.LockedModule {
	t.Helper()
	perms := none()
	perms.Network = append(perms.Network, allow...)
	return (&env{dave: dave}).publish(t, s, version, allow, perms)
}
