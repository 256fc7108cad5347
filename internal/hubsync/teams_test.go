package hubsync_test

import (
	"context"
	"errors"
	"testing"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/hubsync"
)

// TestSyncTeams: every team of the account, one of them, a team the
// account is not in, and no team at all.
func TestSyncTeams(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	if reps, err := e.sess.SyncTeams(ctx, "", nil); err != nil || len(reps) != 0 {
		t.Errorf("no teams: %v, %v", reps, err)
	}
	var nm *hubsync.NotMemberError
	if _, err := e.sess.SyncTeams(ctx, "acme", nil); !errors.As(err, &nm) || !nm.Account || err.Error() != "this account is not a member of team acme" {
		t.Errorf("not a member: %v", err)
	}
	for _, name := range []string{"acme", "beta"} {
		// Created on the hub only, as from another station: the sync
		// records the memberships first.
		if _, err := e.sess.Client.CreateTeam(ctx, name); err != nil {
			t.Fatal(err)
		}
	}
	reps, err := e.sess.SyncTeams(ctx, "", nil)
	if err != nil || len(reps) != 2 || reps[0].Team != "acme" || reps[1].Team != "beta" {
		t.Fatalf("every team: %+v, %v", reps, err)
	}
	reps, err = e.sess.SyncTeams(ctx, "beta", nil)
	if err != nil || len(reps) != 1 || reps[0].Team != "beta" || reps[0].Revision != 0 {
		t.Errorf("one team: %+v, %v", reps, err)
	}
	if ts, _ := hubsync.Status(ctx, e.sess.Station, ""); len(ts) != 2 || ts[0].Revision != 0 || ts[0].Role != hub.RoleOwner {
		t.Errorf("status after sync: %+v", ts)
	}
}

// TestInviteErrorsNameTheTeam: the invite calls' errors carry the team
// asked about (what to do next names it) and the hub's code.
func TestInviteErrorsNameTheTeam(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	check := func(what string, err error, code hub.Code) {
		t.Helper()
		var ie *hubsync.InviteError
		if !errors.As(err, &ie) || ie.Team != "acme" || hub.CodeOf(err) != code {
			t.Errorf("%s: %v (code %v), want an InviteError for acme with %v", what, err, hub.CodeOf(err), code)
		}
	}
	_, err := e.sess.Invites(ctx, "acme")
	check("invites of a team that is not there", err, hub.CodeTeamNotFound)
	if _, _, err := e.sess.CreateTeam(ctx, "acme", false); err != nil {
		t.Fatal(err)
	}
	inv, err := e.sess.Invite(ctx, "acme", hub.InviteRequest{})
	if err != nil {
		t.Fatal(err)
	}
	invs, err := e.sess.Invites(ctx, "acme")
	if err != nil || len(invs) != 1 || invs[0].ID != inv.ID {
		t.Fatalf("invites = %+v, %v", invs, err)
	}
	if _, err := e.sess.RevokeInvite(ctx, "acme", inv.ID); err != nil {
		t.Fatal(err)
	}
	_, err = e.sess.RevokeInvite(ctx, "acme", inv.ID)
	check("a revoke twice", err, hub.CodeInviteNotFound)
	if revoked, err := e.sess.RevokeInvites(ctx, "acme"); err != nil || len(revoked) != 0 {
		t.Errorf("revoke all of none: %+v, %v", revoked, err)
	}
	if id, err := e.sess.WhoAmI(ctx); err != nil || id.Account != "erin" || id.Hub != e.h.URL {
		t.Errorf("whoami = %+v, %v", id, err)
	}
}
