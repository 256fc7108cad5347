package hubsync_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/station-dev/station/internal/hubsync"
	"github.com/station-dev/station/internal/store"
)

// TestHeldUpgrade: an upgrade that asks for more and is not approved
// waits (UpgradePendings), with what it asks; a rejection of it holds
// through another declined upgrade to the same version; approving it
// makes the upgrade and forgets it; an upgrade that went through is no
// longer held.
func TestHeldUpgrade(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	st := e.sess.Station
	e.publish(t, e.signer, "1.0.0", nil, none())
	if _, err := e.sess.Install(ctx, hubsync.Request{ID: "dave/hello", Version: "1.0.0"}, nil); err != nil {
		t.Fatal(err)
	}
	e.publish(t, e.signer, "1.1.0", []string{"api.stripe.com"}, none())
	held := func() []hubsync.PendingChange {
		t.Helper()
		ps, err := hubsync.UpgradePendings(ctx, st)
		if err != nil {
			t.Fatal(err)
		}
		return ps
	}
	if r, _ := upgradeOne(t, e, nil, nil); r.Status != hubsync.Declined {
		t.Fatalf("upgrade without approval: %+v", r)
	}
	ps := held()
	if len(ps) != 1 || ps[0].Team != store.UpgradeTeam || ps[0].Module != "dave/hello" || ps[0].Version != "1.1.0" || ps[0].FromVersion != "1.0.0" ||
		strings.Join(ps[0].Escalations, "; ") != "may now connect to api.stripe.com" || !ps[0].RejectedAt.IsZero() {
		t.Fatalf("held upgrades: %+v", ps)
	}
	// Teams do not see it.
	if ts, err := hubsync.Status(ctx, st, ""); err != nil || len(ts) != 0 {
		t.Errorf("team status: %+v, %v", ts, err)
	}

	// Rejected, then asked (and declined) again: still rejected.
	if err := hubsync.RejectPending(ctx, st, store.UpgradeTeam, "dave/hello", ""); err != nil {
		t.Fatal(err)
	}
	no := func(hubsync.Plan) (bool, error) { return false, nil }
	if r, _ := upgradeOne(t, e, []string{"dave/hello"}, no); r.Status != hubsync.Declined {
		t.Fatalf("declined upgrade: %+v", r)
	}
	if ps := held(); len(ps) != 1 || ps[0].RejectedAt.IsZero() {
		t.Errorf("after another declined upgrade to the same version: %+v", ps)
	}

	// Approved: upgraded, and no longer held.
	rep, err := e.sess.ApprovePending(ctx, store.UpgradeTeam, "dave/hello", "1.1.0")
	if err != nil || len(rep.Installed) != 1 || rep.Installed[0].Version != "1.1.0" {
		t.Fatalf("approve the held upgrade: %+v, %v", rep, err)
	}
	if rec, _ := st.Store.Module(ctx, "dave/hello"); rec.Version != "1.1.0" {
		t.Errorf("installed %s after the approval", rec.Version)
	}
	if ps := held(); len(ps) != 0 {
		t.Errorf("still held after the approval: %+v", ps)
	}
	var nothing *hubsync.NoPendingError
	if _, err := e.sess.ApprovePending(ctx, store.UpgradeTeam, "dave/hello", ""); !errors.As(err, &nothing) || !strings.Contains(err.Error(), "no upgrade of dave/hello waits") {
		t.Errorf("approve again: %v", err)
	}

	// A held upgrade that another way made moot (the module upgraded with
	// --yes) is not shown.
	e.publish(t, e.signer, "1.2.0", []string{"api.stripe.com", "api.github.com"}, none())
	if r, _ := upgradeOne(t, e, nil, nil); r.Status != hubsync.Declined || len(held()) != 1 {
		t.Fatalf("second held upgrade: %+v, %+v", r, held())
	}
	yes := func(hubsync.Plan) (bool, error) { return true, nil }
	if r, err := upgradeOne(t, e, nil, yes); err != nil || r.Status != hubsync.Upgraded {
		t.Fatalf("upgrade --yes: %+v, %v", r, err)
	}
	if ps := held(); len(ps) != 0 {
		t.Errorf("held after the upgrade went through: %+v", ps)
	}
}
