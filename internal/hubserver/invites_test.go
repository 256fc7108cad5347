package hubserver_test

import (
	"strings"
	"testing"
	"time"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/hubclient"
	"github.com/station-dev/station/internal/hubserver"
	"github.com/station-dev/station/internal/hubserver/hubtest"
)

// TestRemovedOwnerCannotTakeTheTeamBack is issue 13's first attack: an
// owner makes an open owner invite, is demoted and removed, and uses the
// invite to come back as an owner. An invite is only as good as its
// creator's current role, so each way of losing the role — demoted,
// removed, leaving — leaves the creator's invites unusable, by the creator
// and by anyone else.
func TestRemovedOwnerCannotTakeTheTeamBack(t *testing.T) {
	for _, tt := range []struct {
		name string
		lose func(t *testing.T, dave, erin *hubclient.Client) // dave loses his role in acme
	}{
		{"demoted and removed", func(t *testing.T, dave, erin *hubclient.Client) {
			if _, err := erin.SetRole(ctx, "acme", "dave", hub.RoleMember); err != nil {
				t.Fatal(err)
			}
			if err := erin.RemoveMember(ctx, "acme", "dave"); err != nil {
				t.Fatal(err)
			}
		}},
		{"removed", func(t *testing.T, dave, erin *hubclient.Client) {
			if err := erin.RemoveMember(ctx, "acme", "dave"); err != nil {
				t.Fatal(err)
			}
		}},
		{"left", func(t *testing.T, dave, erin *hubclient.Client) {
			if err := dave.Leave(ctx, "acme"); err != nil {
				t.Fatal(err)
			}
		}},
		{"demoted, still a member", func(t *testing.T, dave, erin *hubclient.Client) {
			if _, err := erin.SetRole(ctx, "acme", "dave", hub.RoleMember); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := hubtest.Start(t)
			dave, erin, mallory := team(t, h)
			// Erin is an owner too, so dave can lose his role.
			if _, err := dave.SetRole(ctx, "acme", "erin", hub.RoleOwner); err != nil {
				t.Fatal(err)
			}
			own, err := dave.Invite(ctx, "acme", hub.InviteRequest{Role: hub.RoleOwner})
			if err != nil {
				t.Fatal(err)
			}
			forMallory, err := dave.Invite(ctx, "acme", hub.InviteRequest{Account: "mallory", Role: hub.RoleOwner})
			if err != nil {
				t.Fatal(err)
			}
			tt.lose(t, dave, erin)
			seq := lastSeq(t, h)

			_, err = dave.Join(ctx, own.Code)
			wantCode(t, "dave uses his own invite", err, hub.CodeInviteInvalid)
			_, err = mallory.Join(ctx, forMallory.Code)
			wantCode(t, "mallory uses dave's invite for her", err, hub.CodeInviteInvalid)
			_, err = mallory.Join(ctx, own.Code)
			wantCode(t, "mallory uses dave's open invite", err, hub.CodeInviteInvalid)
			if got := lastSeq(t, h); got != seq {
				t.Errorf("a refused join appended events (%d → %d)", seq, got)
			}
			tm, err := erin.Team(ctx, "acme")
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range tm.Members {
				if m.Role == hub.RoleOwner && m.Account != "erin" {
					t.Errorf("%s is an owner of acme: %+v", m.Account, tm.Members)
				}
			}
		})
	}
}

// TestInviteListAndRevoke: an owner lists the team's pending invites —
// ids, roles, creators, expiry, never a code — and revokes one or all; a
// revoked code no longer works.
func TestInviteListAndRevoke(t *testing.T) {
	var clk clock
	h := hubtest.StartWith(t, func(o *hubserver.Options) { o.Now = clk.Now; o.InviteTTL = time.Hour })
	dave, _, mallory := team(t, h)
	if invs, err := dave.Invites(ctx, "acme"); err != nil || len(invs) != 0 {
		t.Fatalf("invites after erin used hers = %+v, %v; want none", invs, err)
	}
	forMallory, err := dave.Invite(ctx, "acme", hub.InviteRequest{Account: "mallory"})
	if err != nil {
		t.Fatal(err)
	}
	open, _ := dave.Invite(ctx, "acme", hub.InviteRequest{Role: hub.RoleOwner})
	third, _ := dave.Invite(ctx, "acme", hub.InviteRequest{})
	if !hub.ValidInviteID(forMallory.ID) || forMallory.ID == open.ID {
		t.Fatalf("invite ids %q, %q", forMallory.ID, open.ID)
	}

	invs, err := dave.Invites(ctx, "acme")
	if err != nil || len(invs) != 3 {
		t.Fatalf("invites = %+v, %v", invs, err)
	}
	if i := invs[0]; i.ID != forMallory.ID || i.Team != "acme" || i.Role != hub.RoleMember || i.Account != "mallory" || i.CreatedBy != "dave" ||
		!i.ExpiresAt.Equal(forMallory.ExpiresAt) || i.ExpiresAt.Sub(i.CreatedAt) != time.Hour {
		t.Errorf("first invite = %+v, want the one for mallory (%+v)", i, forMallory)
	}
	if invs[1].ID != open.ID || invs[1].Role != hub.RoleOwner || invs[1].Account != "" {
		t.Errorf("second invite = %+v", invs[1])
	}
	// The raw answer holds no code, nor anything of one.
	a := send(t, h, "GET", "/v1/teams/acme/invites", tokenOf(t, h, "dave"), nil)
	for _, code := range []string{forMallory.Code, open.Code, third.Code} {
		if strings.Contains(string(a.body), strings.TrimPrefix(code, hub.InvitePrefix)[:12]) {
			t.Errorf("the invite list repeats a code: %s", a.body)
		}
	}
	if strings.Contains(string(a.body), hub.InvitePrefix) || strings.Contains(string(a.body), `"code"`) {
		t.Errorf("the invite list has a code field: %s", a.body)
	}

	got, err := dave.RevokeInvite(ctx, "acme", open.ID)
	if err != nil || got.ID != open.ID || got.Role != hub.RoleOwner {
		t.Fatalf("revoke = %+v, %v", got, err)
	}
	seq := lastSeq(t, h)
	_, err = mallory.Join(ctx, open.Code)
	wantCode(t, "join with a revoked invite", err, hub.CodeInviteInvalid)
	_, err = dave.RevokeInvite(ctx, "acme", open.ID)
	wantCode(t, "revoke twice", err, hub.CodeInviteNotFound)
	if invs, _ := dave.Invites(ctx, "acme"); len(invs) != 2 || invs[0].ID != forMallory.ID || invs[1].ID != third.ID {
		t.Errorf("invites after a revoke = %+v", invs)
	}
	if got := lastSeq(t, h); got != seq {
		t.Errorf("refusals appended events (%d → %d)", seq, got)
	}

	// Expired invites are not listed, and revoking one revokes nothing.
	clk.Advance(30 * time.Minute)
	fresh, _ := dave.Invite(ctx, "acme", hub.InviteRequest{Account: "mallory"})
	clk.Advance(31 * time.Minute)
	if invs, _ := dave.Invites(ctx, "acme"); len(invs) != 1 || invs[0].ID != fresh.ID {
		t.Errorf("invites after the first three expired = %+v, want only %s", invs, fresh.ID)
	}
	_, err = dave.RevokeInvite(ctx, "acme", third.ID)
	wantCode(t, "revoke an expired invite", err, hub.CodeInviteNotFound)

	// Revoke all.
	another, _ := dave.Invite(ctx, "acme", hub.InviteRequest{})
	all, err := dave.RevokeInvites(ctx, "acme")
	if err != nil || len(all) != 2 || all[0].ID != fresh.ID || all[1].ID != another.ID {
		t.Errorf("revoke all = %+v, %v", all, err)
	}
	if all, err := dave.RevokeInvites(ctx, "acme"); err != nil || len(all) != 0 {
		t.Errorf("revoke all again = %+v, %v; want nothing, no error", all, err)
	}
	_, err = mallory.Join(ctx, another.Code)
	wantCode(t, "join with an invite revoked with all", err, hub.CodeInviteInvalid)
	if tm, _ := dave.Team(ctx, "acme"); len(tm.Members) != 2 {
		t.Errorf("acme's members = %+v", tm.Members)
	}
}

// TestInviteListAndRevokeRefusals: another team's invites, a member who is
// not an owner, an outsider, malformed ids and oversized or unexpected
// bodies are all refused, and none of them revokes anything.
func TestInviteListAndRevokeRefusals(t *testing.T) {
	h := hubtest.StartWith(t, func(o *hubserver.Options) { o.Limits.MaxRequestBytes = 1 << 10 })
	dave, erin, mallory := team(t, h)
	acmeInv, err := dave.Invite(ctx, "acme", hub.InviteRequest{})
	if err != nil {
		t.Fatal(err)
	}
	evilInv, err := mallory.Invite(ctx, "evil", hub.InviteRequest{})
	if err != nil {
		t.Fatal(err)
	}
	daveTok, malloryTok, erinTok := tokenOf(t, h, "dave"), tokenOf(t, h, "mallory"), tokenOf(t, h, "erin")
	tests := []struct {
		name   string
		call   func() error
		status int
		code   hub.Code
	}{
		{"mallory lists acme's invites", func() error { _, err := mallory.Invites(ctx, "acme"); return err }, 404, hub.CodeTeamNotFound},
		{"mallory revokes acme's invite", func() error { _, err := mallory.RevokeInvite(ctx, "acme", acmeInv.ID); return err }, 404, hub.CodeTeamNotFound},
		{"mallory revokes acme's invite through evil", func() error { _, err := mallory.RevokeInvite(ctx, "evil", acmeInv.ID); return err }, 404, hub.CodeInviteNotFound},
		{"mallory revokes all of acme's", func() error { _, err := mallory.RevokeInvites(ctx, "acme"); return err }, 404, hub.CodeTeamNotFound},
		{"dave revokes evil's invite through acme", func() error { _, err := dave.RevokeInvite(ctx, "acme", evilInv.ID); return err }, 404, hub.CodeInviteNotFound},
		{"erin (a member) lists", func() error { _, err := erin.Invites(ctx, "acme"); return err }, 403, hub.CodeNotTeamOwner},
		{"erin (a member) revokes", func() error { _, err := erin.RevokeInvite(ctx, "acme", acmeInv.ID); return err }, 403, hub.CodeNotTeamOwner},
		{"erin (a member) revokes all", func() error { _, err := erin.RevokeInvites(ctx, "acme"); return err }, 403, hub.CodeNotTeamOwner},
		{"anonymous lists", func() error { _, err := h.Client(t, "").Invites(ctx, "acme"); return err }, 401, hub.CodeUnauthenticated},
		{"a missing team", func() error { _, err := dave.Invites(ctx, "nope"); return err }, 404, hub.CodeTeamNotFound},
		{"an unknown id", func() error { _, err := dave.RevokeInvite(ctx, "acme", "0123456789abcdef"); return err }, 404, hub.CodeInviteNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantCode(t, tt.name, tt.call(), tt.code)
		})
	}
	raw := []struct {
		name, method, path, token, body string
		status                          int
		code                            hub.Code
	}{
		{"short id", "DELETE", "/v1/teams/acme/invites/abc", daveTok, "", 400, hub.CodeBadRequest},
		{"upper-case id", "DELETE", "/v1/teams/acme/invites/" + strings.ToUpper(acmeInv.ID), daveTok, "", 400, hub.CodeBadRequest},
		{"id too long", "DELETE", "/v1/teams/acme/invites/" + acmeInv.ID + "0", daveTok, "", 400, hub.CodeBadRequest},
		{"the code for an id", "DELETE", "/v1/teams/acme/invites/" + acmeInv.Code, daveTok, "", 400, hub.CodeBadRequest},
		{"an escaped path", "DELETE", "/v1/teams/acme/invites/..%2F..%2Fteams", daveTok, "", 400, hub.CodeBadRequest},
		{"a LIKE pattern", "DELETE", "/v1/teams/acme/invites/%25", daveTok, "", 400, hub.CodeBadRequest},
		{"a bad team name", "GET", "/v1/teams/ACME/invites", daveTok, "", 400, hub.CodeInvalidName},
		{"a member's raw list", "GET", "/v1/teams/acme/invites", erinTok, "", 403, hub.CodeNotTeamOwner},
		{"an outsider's raw revoke", "DELETE", "/v1/teams/acme/invites", malloryTok, "", 404, hub.CodeTeamNotFound},
		{"an oversized invite request", "POST", "/v1/teams/acme/invites", daveTok, `{"account":"` + strings.Repeat("a", 2<<10) + `"}`, 413, hub.CodeTooLarge},
		{"an unknown field in an invite request", "POST", "/v1/teams/acme/invites", daveTok, `{"role":"owner","created_by":"mallory"}`, 400, hub.CodeBadRequest},
	}
	for _, tt := range raw {
		t.Run(tt.name, func(t *testing.T) {
			a := send(t, h, tt.method, tt.path, tt.token, tt.body)
			if a.status != tt.status || a.code() != tt.code {
				t.Errorf("%s %s = %d %s, want %d code %d", tt.method, tt.path, a.status, a.body, tt.status, tt.code)
			}
			if strings.Contains(string(a.body), strings.TrimPrefix(acmeInv.Code, hub.InvitePrefix)) {
				t.Errorf("the answer repeats the code: %s", a.body)
			}
		})
	}
	// A body on a DELETE is not read, and changes nothing.
	a := send(t, h, "DELETE", "/v1/teams/evil/invites/"+acmeInv.ID, malloryTok, strings.Repeat("x", 4<<20))
	if a.code() != hub.CodeInviteNotFound {
		t.Errorf("a DELETE with a 4 MiB body = %d %s", a.status, a.body)
	}
	// The client refuses a secret for an id without repeating it.
	_, err = dave.RevokeInvite(ctx, "acme", acmeInv.Code)
	if err == nil || strings.Contains(err.Error(), strings.TrimPrefix(acmeInv.Code, hub.InvitePrefix)) {
		t.Errorf("revoke with the code for an id = %v", err)
	}

	// Nothing was revoked: both invites still work.
	if invs, _ := dave.Invites(ctx, "acme"); len(invs) != 1 || invs[0].ID != acmeInv.ID {
		t.Errorf("acme's invites = %+v", invs)
	}
	if invs, _ := mallory.Invites(ctx, "evil"); len(invs) != 1 || invs[0].ID != evilInv.ID {
		t.Errorf("evil's invites = %+v", invs)
	}
	outsider := h.Client(t, h.Account(t, "frank"))
	if _, err := outsider.Join(ctx, acmeInv.Code); err != nil {
		t.Errorf("acme's invite after the refusals: %v", err)
	}
	if _, err := outsider.Join(ctx, evilInv.Code); err != nil {
		t.Errorf("evil's invite after the refusals: %v", err)
	}
}
