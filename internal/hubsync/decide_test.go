package hubsync_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/hubclient"
	"github.com/station-dev/station/internal/hubsync"
	"github.com/station-dev/station/internal/wasmbuild"
)

// publishWith publishes id@version (the hello example) as dave with hosts
// as its network allowlist, and returns its lockfile entry with them
// approved by the team.
func (e *env) publishWith(t *testing.T, id, version string, hosts ...string) hub.LockedModule {
	t.Helper()
	m := "id: " + id + "\nversion: \"" + version + "\"\nwasm: module.wasm\ncommands:\n  - name: greet\nrequires:\n  network:\n    allow: [" + strings.Join(hosts, ", ") + "]\n"
	b, err := hubclient.NewBundle([]byte(m), wasmbuild.ForTest(t, "examples/hello"), e.signer)
	if err != nil {
		t.Fatal(err)
	}
	v, err := e.dave.Publish(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	perms := none()
	perms.Network = append(perms.Network, hosts...)
	return hub.LockedModule{ID: v.Module, Version: v.Version, ManifestDigest: v.ManifestDigest, WasmDigest: v.WasmDigest, Permissions: perms}
}

// pushAcme pushes ms as the whole of team acme's lockfile (erin owns the
// team) and returns the revision.
func (e *env) pushAcme(t *testing.T, ms ...hub.LockedModule) int64 {
	t.Helper()
	ctx := context.Background()
	cur, err := e.sess.Client.Lockfile(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	tl, err := e.sess.Client.PushLockfile(ctx, "acme", cur.Revision, hub.Lockfile{Modules: ms, Workflows: []hub.Workflow{}})
	if err != nil {
		t.Fatal(err)
	}
	return tl.Revision
}

// pendingTeam is an env whose station runs dave/hello and dave/other
// 1.0.0 (asking for nothing) from team acme's lockfile, which then pins
// 1.1.0 of each (hello may connect to api.stripe.com, other to
// api.groq.com): both are pending. It returns the entries of 1.1.0.
func pendingTeam(t *testing.T) (e *env, hello, other hub.LockedModule) {
	t.Helper()
	ctx := context.Background()
	e = newEnv(t)
	if _, _, err := e.sess.CreateTeam(ctx, "acme", false); err != nil {
		t.Fatal(err)
	}
	e.pushAcme(t, e.publishWith(t, "dave/hello", "1.0.0"), e.publishWith(t, "dave/other", "1.0.0"))
	if rep, err := e.sess.Sync(ctx, "acme", nil); err != nil || len(rep.Installed) != 2 {
		t.Fatalf("sync of 1.0.0 = %+v, %v", rep, err)
	}
	hello, other = e.publishWith(t, "dave/hello", "1.1.0", "api.stripe.com"), e.publishWith(t, "dave/other", "1.1.0", "api.groq.com")
	e.pushAcme(t, hello, other)
	if rep, err := e.sess.Sync(ctx, "acme", nil); err != nil || len(rep.Pending) != 2 || len(rep.Installed) != 0 {
		t.Fatalf("sync of 1.1.0 = %+v, %v; want both pending", rep, err)
	}
	return e, hello, other
}

// running returns the versions installed, by module.
func (e *env) running(t *testing.T) map[string]string {
	t.Helper()
	ms, err := e.sess.Station.Store.Modules(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, m := range ms {
		out[m.ID] = m.Version
	}
	return out
}

// recorded returns acme's recorded changes as "module@version", with
// " rejected" after a rejected one.
func (e *env) recorded(t *testing.T) []string {
	t.Helper()
	ps, err := e.sess.Station.Store.HubPendings(context.Background(), "acme")
	if err != nil {
		t.Fatal(err)
	}
	out := []string{}
	for _, p := range ps {
		s := p.Module + "@" + p.Version
		if !p.RejectedAt.IsZero() {
			s += " rejected"
		}
		out = append(out, s)
	}
	return out
}

func names(ps []hubsync.Plan) string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Version.Module+"@"+p.Version.Version)
	}
	return strings.Join(out, ", ")
}

func installed(rs []hubsync.Result) string {
	var out []string
	for _, r := range rs {
		out = append(out, r.ID+"@"+r.Version)
	}
	return strings.Join(out, ", ")
}

// TestApprovePendingTakesOnlyThatChange: of two pending changes, the one
// approved is installed and the other stays pending, its approved version
// running.
func TestApprovePendingTakesOnlyThatChange(t *testing.T) {
	ctx := context.Background()
	e, _, _ := pendingTeam(t)
	rep, err := e.sess.ApprovePending(ctx, "acme", "dave/hello", "1.1.0")
	if err != nil {
		t.Fatal(err)
	}
	if installed(rep.Installed) != "dave/hello@1.1.0" || names(rep.Pending) != "dave/other@1.1.0" || len(rep.Rejected)+len(rep.Failed) != 0 {
		t.Errorf("approve dave/hello: installed %q, pending %q, rejected %q, failed %v", installed(rep.Installed), names(rep.Pending), names(rep.Rejected), rep.Failed)
	}
	if got := e.running(t); got["dave/hello"] != "1.1.0" || got["dave/other"] != "1.0.0" {
		t.Errorf("running %v; want hello 1.1.0, other 1.0.0", got)
	}
	if got := strings.Join(e.recorded(t), "; "); got != "dave/other@1.1.0" {
		t.Errorf("recorded %q, want dave/other@1.1.0 pending", got)
	}
	// The version defaults to the pending one.
	if rep, err := e.sess.ApprovePending(ctx, "acme", "dave/other", ""); err != nil || installed(rep.Installed) != "dave/other@1.1.0" {
		t.Errorf("approve dave/other = %+v, %v", rep, err)
	}
	if got := e.recorded(t); len(got) != 0 {
		t.Errorf("recorded after both approvals: %v", got)
	}
}

// TestRejectedChangeStaysRejected: a rejected change is not recorded as
// pending again, logged as waiting or shown to an approver by a re-sync of
// the same revision, or of a later one that pins the same version; nothing
// is installed for it. A newer version of the module waits for approval
// afresh.
func TestRejectedChangeStaysRejected(t *testing.T) {
	ctx := context.Background()
	e, hello11, other11 := pendingTeam(t)
	var log bytes.Buffer
	e.sess.Log = slog.New(slog.NewTextHandler(&log, nil))
	if err := hubsync.RejectPending(ctx, e.sess.Station, "acme", "dave/hello", "1.1.0"); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(e.recorded(t), "; "); got != "dave/hello@1.1.0 rejected; dave/other@1.1.0" {
		t.Errorf("recorded %q after the rejection", got)
	}
	ts, _ := hubsync.Status(ctx, e.sess.Station, "acme")
	if len(ts) != 1 || len(ts[0].Pending) != 2 || ts[0].Pending[0].RejectedAt.IsZero() || !ts[0].Pending[1].RejectedAt.IsZero() {
		t.Errorf("status after the rejection: %+v", ts)
	}

	rep, err := e.sess.Sync(ctx, "acme", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Installed) != 0 || names(rep.Pending) != "dave/other@1.1.0" || names(rep.Rejected) != "dave/hello@1.1.0" {
		t.Errorf("re-sync: installed %q, pending %q, rejected %q", installed(rep.Installed), names(rep.Pending), names(rep.Rejected))
	}
	for _, line := range strings.Split(log.String(), "\n") {
		if strings.Contains(line, "waits for approval") && strings.Contains(line, "dave/hello") {
			t.Errorf("the re-sync logged the rejected change as waiting: %s", line)
		}
	}
	// What the relay follower would print (station serve): the change
	// that waits, not the one rejected.
	for _, ev := range hubsync.RelayEvents(hubsync.RelayEvent{}, rep) {
		if ev.Kind == hubsync.RelayPending && ev.Module != "dave/other" {
			t.Errorf("the relay follower reports %s@%s as waiting", ev.Module, ev.Version)
		}
	}
	// An approver that says yes to everything (team sync --yes) is not
	// shown it.
	var asked []string
	rep, err = e.sess.Sync(ctx, "acme", func(p hubsync.Plan) (bool, error) {
		asked = append(asked, p.Version.Module)
		return true, nil
	})
	if err != nil || installed(rep.Installed) != "dave/other@1.1.0" || names(rep.Rejected) != "dave/hello@1.1.0" || strings.Join(asked, ",") != "dave/other" {
		t.Errorf("sync --yes: %+v, %v, asked about %v; want dave/other installed and dave/hello left rejected, unasked", rep, err, asked)
	}
	// A later revision that still pins dave/hello@1.1.0.
	log.Reset()
	rev := e.pushAcme(t, hello11, other11)
	rep, err = e.sess.Sync(ctx, "acme", nil)
	if err != nil || rep.Revision != rev || len(rep.Installed)+len(rep.Pending) != 0 || names(rep.Rejected) != "dave/hello@1.1.0" {
		t.Errorf("sync of revision %d: %+v, %v; want dave/hello@1.1.0 still rejected", rev, rep, err)
	}
	if strings.Contains(log.String(), "waits for approval") {
		t.Errorf("the sync of a later revision logged a change as waiting:\n%s", log.String())
	}
	if got := strings.Join(e.recorded(t), "; "); got != "dave/hello@1.1.0 rejected" {
		t.Errorf("recorded %q, want the rejection kept", got)
	}
	if got := e.running(t)["dave/hello"]; got != "1.0.0" {
		t.Errorf("dave/hello runs %s, want the approved 1.0.0", got)
	}

	// A newer version: it waits for approval, and is said to.
	e.pushAcme(t, e.publishWith(t, "dave/hello", "1.2.0", "api.stripe.com", "api.groq.com"), other11)
	rep, err = e.sess.Sync(ctx, "acme", nil)
	if err != nil || names(rep.Pending) != "dave/hello@1.2.0" || len(rep.Rejected) != 0 {
		t.Errorf("sync of dave/hello@1.2.0: %+v, %v; want it pending", rep, err)
	}
	if got := strings.Join(e.recorded(t), "; "); got != "dave/hello@1.2.0" {
		t.Errorf("recorded %q, want dave/hello@1.2.0 pending, not rejected", got)
	}
	if !strings.Contains(log.String(), "waits for approval") {
		t.Errorf("the newer version was not logged as waiting:\n%s", log.String())
	}
}

// TestApproveAfterReject: the operator may take a rejected change after
// all; it is installed and nothing of it stays recorded.
func TestApproveAfterReject(t *testing.T) {
	ctx := context.Background()
	e, _, _ := pendingTeam(t)
	if err := hubsync.RejectPending(ctx, e.sess.Station, "acme", "dave/hello", ""); err != nil {
		t.Fatal(err)
	}
	// Rejecting it again changes nothing.
	before, _ := e.sess.Station.Store.HubPendings(ctx, "acme")
	if err := hubsync.RejectPending(ctx, e.sess.Station, "acme", "dave/hello", "1.1.0"); err != nil {
		t.Fatal(err)
	}
	if after, _ := e.sess.Station.Store.HubPendings(ctx, "acme"); !after[0].RejectedAt.Equal(before[0].RejectedAt) {
		t.Errorf("a second rejection moved the first's time: %v, then %v", before[0].RejectedAt, after[0].RejectedAt)
	}
	rep, err := e.sess.ApprovePending(ctx, "acme", "dave/hello", "")
	if err != nil {
		t.Fatal(err)
	}
	if installed(rep.Installed) != "dave/hello@1.1.0" || names(rep.Pending) != "dave/other@1.1.0" || len(rep.Rejected) != 0 {
		t.Errorf("approve after reject: installed %q, pending %q, rejected %q", installed(rep.Installed), names(rep.Pending), names(rep.Rejected))
	}
	if got := e.running(t)["dave/hello"]; got != "1.1.0" {
		t.Errorf("dave/hello runs %s, want 1.1.0", got)
	}
	if got := strings.Join(e.recorded(t), "; "); got != "dave/other@1.1.0" {
		t.Errorf("recorded %q, want only dave/other pending", got)
	}
}

// TestApproveOrRejectWithNothingPending: a module with nothing pending,
// another version than the pending one, and a team the station is not in
// are refused, saying what is pending; nothing is synced or recorded.
func TestApproveOrRejectWithNothingPending(t *testing.T) {
	ctx := context.Background()
	e, _, _ := pendingTeam(t)
	e.sess.ApprovePending(ctx, "acme", "dave/other", "1.1.0")
	team, _ := e.sess.Station.Store.HubTeam(ctx, "acme")
	for _, c := range []struct{ module, version, want string }{
		{"dave/nope", "", "no change to dave/nope is pending in team acme on this station (pending there: dave/hello@1.1.0): station team status acme shows what waits for approval"},
		{"dave/hello", "1.2.0", "no change to dave/hello@1.2.0 is pending in team acme on this station (the pending change of dave/hello is to 1.1.0): station team status acme"},
		{"dave/other", "1.1.0", "(pending there: dave/hello@1.1.0)"}, // approved already
	} {
		var np *hubsync.NoPendingError
		rep, err := e.sess.ApprovePending(ctx, "acme", c.module, c.version)
		if !errors.As(err, &np) || np.Module != c.module || np.Version != c.version || !strings.Contains(err.Error(), c.want) || rep != nil {
			t.Errorf("approve %s@%s = %+v, %v; want a *NoPendingError saying %q", c.module, c.version, rep, err, c.want)
		}
		if err := hubsync.RejectPending(ctx, e.sess.Station, "acme", c.module, c.version); !errors.As(err, &np) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("reject %s@%s = %v; want a *NoPendingError saying %q", c.module, c.version, err, c.want)
		}
	}
	var nm *hubsync.NotMemberError
	if _, err := e.sess.ApprovePending(ctx, "beta", "dave/hello", ""); !errors.As(err, &nm) {
		t.Errorf("approve in a team the station is not in = %v", err)
	}
	if err := hubsync.RejectPending(ctx, e.sess.Station, "beta", "dave/hello", ""); !errors.As(err, &nm) {
		t.Errorf("reject in a team the station is not in = %v", err)
	}
	if got := strings.Join(e.recorded(t), "; "); got != "dave/hello@1.1.0" {
		t.Errorf("recorded %q, want dave/hello@1.1.0 pending as it was", got)
	}
	if after, _ := e.sess.Station.Store.HubTeam(ctx, "acme"); !after.SyncedAt.Equal(team.SyncedAt) {
		t.Errorf("a refused approval synced the team (at %v, then %v)", team.SyncedAt, after.SyncedAt)
	}
}

// TestApprovePendingAfterTheLockfileMovedOn: an approval of a version the
// lockfile no longer pins approves nothing and says what it pins now; the
// sync recorded that version as pending.
func TestApprovePendingAfterTheLockfileMovedOn(t *testing.T) {
	ctx := context.Background()
	e, _, other11 := pendingTeam(t)
	rev := e.pushAcme(t, e.publishWith(t, "dave/hello", "1.2.0", "api.stripe.com", "api.groq.com"), other11)
	rep, err := e.sess.ApprovePending(ctx, "acme", "dave/hello", "1.1.0")
	var mo *hubsync.MovedOnError
	if !errors.As(err, &mo) || mo.Pinned != "1.2.0" || mo.Revision != rev || mo.State != "waits for approval" {
		t.Fatalf("approve of the old pending version = %+v, %v; want a *MovedOnError naming 1.2.0", rep, err)
	}
	want := "the lockfile of team acme moved on: revision 3 pins dave/hello@1.2.0, which waits for approval; 1.1.0 is no longer pending, and nothing was approved"
	if !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say %q", err, want)
	}
	if rep == nil || len(rep.Installed) != 0 || names(rep.Pending) != "dave/hello@1.2.0, dave/other@1.1.0" {
		t.Errorf("the sync: %+v", rep)
	}
	if got := e.running(t); got["dave/hello"] != "1.0.0" || got["dave/other"] != "1.0.0" {
		t.Errorf("running %v; want both at 1.0.0", got)
	}
	if got := strings.Join(e.recorded(t), "; "); got != "dave/hello@1.2.0; dave/other@1.1.0" {
		t.Errorf("recorded %q", got)
	}
	// The lockfile drops the module.
	e.pushAcme(t, other11)
	if _, err := e.sess.ApprovePending(ctx, "acme", "dave/hello", "1.2.0"); !errors.As(err, &mo) || mo.Pinned != "" || !strings.Contains(err.Error(), "no longer pins dave/hello") {
		t.Errorf("approve of a module the lockfile dropped = %v", err)
	}
}
