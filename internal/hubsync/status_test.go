package hubsync_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/hubclient"
	"github.com/station-dev/station/internal/hubsync"
)

// TestPushRecordsTheRevisionHere: the owner's own station is at the
// revision it pushed — `station team status` used to show the revision of
// its last sync after every push — and it applies what the lockfile holds
// from another owner's push too (here dave/other, which asks for nothing),
// with the team's workflows, as a sync would.
func TestPushRecordsTheRevisionHere(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.publish(t, e.signer, "1.0.0", nil, none())
	publishAs(t, e.dave, e.signer, "dave/other", "1.0.0")
	yes := func(hubsync.Plan) (bool, error) { return true, nil }
	if _, err := e.sess.Install(ctx, hubsync.Request{ID: "dave/hello", Version: "1.0.0", Ask: true}, yes); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.sess.CreateTeam(ctx, "acme", false); err != nil {
		t.Fatal(err)
	}
	status := func() hubsync.TeamStatus {
		t.Helper()
		ts, err := hubsync.Status(ctx, e.sess.Station, "acme")
		if err != nil || len(ts) != 1 {
			t.Fatalf("status = %+v, %v", ts, err)
		}
		return ts[0]
	}
	if s := status(); s.Revision != 0 || s.Role != hub.RoleOwner {
		t.Fatalf("after create: %+v", s)
	}

	tl, rep, err := e.sess.Push(ctx, "acme", []string{"dave/hello"}, nil)
	if err != nil || tl.Revision != 1 {
		t.Fatalf("push = %+v, %v", tl, err)
	}
	if rep == nil || rep.Revision != 1 || len(rep.Unchanged) != 1 || len(rep.Installed)+len(rep.Pending)+len(rep.Failed) != 0 {
		t.Errorf("applied here: %+v", rep)
	}
	if s := status(); s.Revision != 1 || s.LastError != "" || len(s.Pending) != 0 {
		t.Errorf("after the push: %+v, want revision 1 applied", s)
	}

	// dave, made an owner, adds dave/other; erin's station has not synced
	// since. Her next push carries it, and her station installs it.
	inv, err := e.sess.Invite(ctx, "acme", hub.InviteRequest{Account: "dave", Role: hub.RoleOwner})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.dave.Join(ctx, inv.Code); err != nil {
		t.Fatal(err)
	}
	cur, err := e.dave.Lockfile(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	l := cur.Lockfile
	l.Modules = append(l.Modules, lockedAt(t, e.sess, "dave/other", "1.0.0"))
	if _, err := e.dave.PushLockfile(ctx, "acme", cur.Revision, l); err != nil {
		t.Fatal(err)
	}
	wf := hub.Workflow{Name: "month-end", Source: "name: month-end\nsteps: []\n"}
	wf.Digest = hub.Digest([]byte(wf.Source))
	tl, rep, err = e.sess.Push(ctx, "acme", []string{"dave/hello"}, []hub.Workflow{wf})
	if err != nil || tl.Revision != 3 {
		t.Fatalf("second push = %+v, %v", tl, err)
	}
	if len(rep.Installed) != 1 || rep.Installed[0].ID != "dave/other" {
		t.Errorf("applied here: installed %+v, pending %+v, failed %v; want dave/other installed", rep.Installed, rep.Pending, rep.Failed)
	}
	s := status()
	if s.Revision != 3 {
		t.Errorf("after the second push: revision %d, want 3", s.Revision)
	}
	if b, err := os.ReadFile(filepath.Join(s.WorkflowDir, "month-end.yaml")); err != nil || string(b) != wf.Source {
		t.Errorf("the pushed workflow here: %q, %v", b, err)
	}
	if _, err := e.sess.Station.Store.Module(ctx, "dave/other"); err != nil {
		t.Errorf("dave/other: %v", err)
	}
}

// TestPushOfATeamCreatedElsewhere: a station that pushes to a team its
// account owns but it has not recorded (created from another station)
// records it as owner, at the revision pushed.
func TestPushOfATeamCreatedElsewhere(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.publish(t, e.signer, "1.0.0", nil, none())
	yes := func(hubsync.Plan) (bool, error) { return true, nil }
	if _, err := e.sess.Install(ctx, hubsync.Request{ID: "dave/hello", Version: "1.0.0", Ask: true}, yes); err != nil {
		t.Fatal(err)
	}
	if _, err := e.sess.Client.CreateTeam(ctx, "acme"); err != nil { // as another station of erin's would
		t.Fatal(err)
	}
	if _, _, err := e.sess.Push(ctx, "acme", nil, nil); err != nil {
		t.Fatal(err)
	}
	ts, err := hubsync.Status(ctx, e.sess.Station, "")
	if err != nil || len(ts) != 1 || ts[0].Name != "acme" || ts[0].Role != hub.RoleOwner || ts[0].Revision != 1 {
		t.Errorf("status = %+v, %v", ts, err)
	}
}

// TestStatus: what `station team status` reads, without a hub: every team
// or one, each with its pending changes, and a team the station is not in.
func TestStatus(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	st := e.sess.Station
	if ts, err := hubsync.Status(ctx, st, ""); err != nil || ts == nil || len(ts) != 0 {
		t.Errorf("no teams: %#v, %v; want an empty list", ts, err)
	}
	var nm *hubsync.NotMemberError
	if _, err := hubsync.Status(ctx, st, "acme"); !errors.As(err, &nm) || nm.Team != "acme" || nm.Account || err.Error() != "this station is not a member of team acme" {
		t.Errorf("not a member: %v", err)
	}

	// A pending change, as the daemon records one.
	other, err := hubclient.GenerateSigner()
	if err != nil {
		t.Fatal(err)
	}
	v1 := e.publish(t, e.signer, "1.0.0", nil, none())
	if _, err := e.sess.Apply(ctx, lockfile(1, v1), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := e.dave.AddKey(ctx, other.PublicKey()); err != nil {
		t.Fatal(err)
	}
	v2 := e.publish(t, other, "1.1.0", nil, none())
	if _, err := e.sess.Apply(ctx, lockfile(2, v2), nil); err != nil {
		t.Fatal(err)
	}
	ts, err := hubsync.Status(ctx, st, "acme")
	if err != nil || len(ts) != 1 {
		t.Fatalf("status = %+v, %v", ts, err)
	}
	s := ts[0]
	if s.Name != "acme" || s.HubURL != e.h.URL || s.Revision != 2 || s.SyncedAt.IsZero() || s.WorkflowDir != hubsync.WorkflowDir(st.Home, "acme") {
		t.Errorf("status = %+v", s)
	}
	if len(s.Pending) != 1 || s.Pending[0].Module != "dave/hello" || s.Pending[0].Version != "1.1.0" || s.Pending[0].FromVersion != "1.0.0" || s.Pending[0].Revision != 2 || len(s.Pending[0].Escalations) != 1 {
		t.Errorf("pending = %+v", s.Pending)
	}
}
