package hubserver_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/hubclient"
	"github.com/station-dev/station/internal/hubserver"
	"github.com/station-dev/station/internal/hubserver/hubtest"
)

// team sets up dave (owner) and erin (member) in acme, and mallory as the
// owner of another team, evil.
func team(t *testing.T, h *hubtest.Hub) (dave, erin, mallory *hubclient.Client) {
	t.Helper()
	dave = h.Client(t, h.Account(t, "dave"))
	erin = h.Client(t, h.Account(t, "erin"))
	mallory = h.Client(t, h.Account(t, "mallory"))
	if _, err := dave.CreateTeam(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	if _, err := mallory.CreateTeam(ctx, "evil"); err != nil {
		t.Fatal(err)
	}
	inv, err := dave.Invite(ctx, "acme", hub.InviteRequest{Account: "erin"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := erin.Join(ctx, inv.Code); err != nil {
		t.Fatal(err)
	}
	return dave, erin, mallory
}

// lockfileOf returns a lockfile pinning v.
func lockfileOf(vs ...hub.Version) hub.Lockfile {
	l := hub.Lockfile{}
	for _, v := range vs {
		l.Modules = append(l.Modules, hub.LockedModule{ID: v.Module, Version: v.Version, ManifestDigest: v.ManifestDigest, WasmDigest: v.WasmDigest,
			Permissions: hub.Permissions{Network: []string{"api.stripe.com"}, FilesystemWrites: []string{}}})
	}
	return l
}

// TestTeamIsolation: a member of one team can read or change nothing of
// another, a member reads but does not change, and every refusal changes
// nothing.
func TestTeamIsolation(t *testing.T) {
	h := hubtest.Start(t)
	dave, erin, mallory := team(t, h)
	pub, key := h.Publisher(t, "stripe")
	v := publish(t, pub, key, "stripe/invoicing", "1.0.0")
	if _, err := dave.PushLockfile(ctx, "acme", 0, lockfileOf(v)); err != nil {
		t.Fatal(err)
	}
	erinToken, malloryToken := tokenOf(t, h, "erin"), tokenOf(t, h, "mallory")

	tests := []struct {
		name string
		call func() error
		code hub.Code
	}{
		{"mallory reads acme", func() error { _, err := mallory.Team(ctx, "acme"); return err }, hub.CodeTeamNotFound},
		{"mallory reads acme's lockfile", func() error { _, err := mallory.Lockfile(ctx, "acme"); return err }, hub.CodeTeamNotFound},
		{"mallory pushes acme's lockfile", func() error { _, err := mallory.PushLockfile(ctx, "acme", 1, hub.Lockfile{}); return err }, hub.CodeTeamNotFound},
		{"mallory invites herself", func() error { _, err := mallory.Invite(ctx, "acme", hub.InviteRequest{Account: "mallory"}); return err }, hub.CodeTeamNotFound},
		{"mallory makes herself owner", func() error { _, err := mallory.SetRole(ctx, "acme", "mallory", hub.RoleOwner); return err }, hub.CodeTeamNotFound},
		{"mallory removes dave", func() error { return mallory.RemoveMember(ctx, "acme", "dave") }, hub.CodeTeamNotFound},
		{"mallory leaves acme", func() error { return mallory.Leave(ctx, "acme") }, hub.CodeTeamNotFound},
		{"erin pushes (a member)", func() error { _, err := erin.PushLockfile(ctx, "acme", 1, hub.Lockfile{}); return err }, hub.CodeNotTeamOwner},
		{"erin invites (a member)", func() error { _, err := erin.Invite(ctx, "acme", hub.InviteRequest{}); return err }, hub.CodeNotTeamOwner},
		{"erin promotes herself", func() error { _, err := erin.SetRole(ctx, "acme", "erin", hub.RoleOwner); return err }, hub.CodeNotTeamOwner},
		{"erin removes dave", func() error { return erin.RemoveMember(ctx, "acme", "dave") }, hub.CodeNotTeamOwner},
		{"dave leaves as the last owner", func() error { return dave.Leave(ctx, "acme") }, hub.CodeLastOwner},
		{"dave demotes himself as the last owner", func() error { _, err := dave.SetRole(ctx, "acme", "dave", hub.RoleMember); return err }, hub.CodeLastOwner},
		{"dave removes a non-member", func() error { return dave.RemoveMember(ctx, "acme", "mallory") }, hub.CodeMemberNotFound},
		{"dave joins evil with acme's invite", func() error {
			inv, err := dave.Invite(ctx, "acme", hub.InviteRequest{Account: "mallory"})
			if err != nil {
				return err
			}
			_, err = dave.Join(ctx, inv.Code)
			return err
		}, hub.CodeInviteInvalid},
		{"anonymous", func() error { _, err := h.Client(t, "").Team(ctx, "acme"); return err }, hub.CodeUnauthenticated},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seq := lastSeq(t, h)
			wantCode(t, tt.name, tt.call(), tt.code)
			if got := lastSeq(t, h); got != seq {
				t.Errorf("a refused request appended events (%d → %d)", seq, got)
			}
			tl, err := dave.Lockfile(ctx, "acme")
			if err != nil || tl.Revision != 1 || len(tl.Lockfile.Modules) != 1 {
				t.Errorf("acme's lockfile changed: %+v, %v", tl, err)
			}
			tm, _ := dave.Team(ctx, "acme")
			if len(tm.Members) != 2 || tm.Members[0].Role != hub.RoleOwner || tm.Members[1].Role != hub.RoleMember {
				t.Errorf("acme's members changed: %+v", tm.Members)
			}
		})
	}

	// Erin reads; mallory's stream and sync never show acme.
	if tl, err := erin.Lockfile(ctx, "acme"); err != nil || tl.Revision != 1 {
		t.Errorf("erin reads acme's lockfile: %+v, %v", tl, err)
	}
	for name, c := range map[string]*hubclient.Client{"mallory": mallory} {
		res, err := c.Sync(ctx, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range res.Events {
			if e.Team == "acme" {
				t.Errorf("%s synced an acme event: %+v", name, e)
			}
		}
	}
	if ts, _ := mallory.Teams(ctx); len(ts) != 1 || ts[0].Name != "evil" {
		t.Errorf("mallory's teams = %+v", ts)
	}
	// Raw requests: the answer for another team says nothing about it.
	a := send(t, h, "GET", "/v1/teams/acme/lockfile", malloryToken, nil)
	if a.status != 404 || strings.Contains(string(a.body), "stripe") {
		t.Errorf("mallory GET acme lockfile = %d %s", a.status, a.body)
	}
	if a := send(t, h, "GET", "/v1/teams/acme", erinToken, nil); a.status != 200 {
		t.Errorf("erin GET acme = %d %s", a.status, a.body)
	}
}

// tokenOf issues another token for an existing account.
func tokenOf(t *testing.T, h *hubtest.Hub, account string) string {
	t.Helper()
	tok, err := hubserver.CreateToken(ctx, h.Store, account, "raw", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return tok.Secret
}

// TestLockfileRevisions: a push on a stale revision is refused with the
// current revision; a lockfile must pin what the hub has, byte for byte.
func TestLockfileRevisions(t *testing.T) {
	h := hubtest.StartWith(t, func(o *hubserver.Options) { o.Limits.MaxLockfileBytes = 64 << 10 })
	dave, erin, _ := team(t, h)
	pub, key := h.Publisher(t, "stripe")
	v1 := publish(t, pub, key, "stripe/invoicing", "1.0.0")
	v2 := publish(t, pub, key, "stripe/invoicing", "1.1.0")

	tl, err := dave.PushLockfile(ctx, "acme", 0, lockfileOf(v1))
	if err != nil || tl.Revision != 1 || tl.UpdatedBy != "dave" {
		t.Fatalf("first push = %+v, %v", tl, err)
	}
	// Erin, promoted, pushes revision 2; dave's push on revision 1 is stale.
	if _, err := dave.SetRole(ctx, "acme", "erin", hub.RoleOwner); err != nil {
		t.Fatal(err)
	}
	if _, err := erin.PushLockfile(ctx, "acme", 1, lockfileOf(v2)); err != nil {
		t.Fatal(err)
	}
	_, err = dave.PushLockfile(ctx, "acme", 1, lockfileOf(v1))
	wantCode(t, "stale push", err, hub.CodeRevisionConflict)
	var he *hub.Error
	if !errors.As(err, &he) || he.Revision != 2 || !strings.Contains(he.Message, "pull the lockfile") {
		t.Errorf("conflict error = %+v, want revision 2 and what to do", he)
	}

	wrongDigest := lockfileOf(v2)
	wrongDigest.Modules[0].WasmDigest = v1.WasmDigest
	missing := lockfileOf(v2)
	missing.Modules[0].Version = "9.9.9"
	bad := []struct {
		name string
		l    hub.Lockfile
		code hub.Code
		msg  string
	}{
		{"digest the hub does not have", wrongDigest, hub.CodeLockfileInvalid, "not the pinned ones"},
		{"version the hub does not have", missing, hub.CodeLockfileInvalid, "is not on this hub"},
	}
	for _, tt := range bad {
		_, err := dave.PushLockfile(ctx, "acme", 2, tt.l)
		wantCode(t, tt.name, err, tt.code)
		if err == nil || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("%s: %v does not say %q", tt.name, err, tt.msg)
		}
	}
	// The client validates before sending; a raw request meets the same
	// check on the hub.
	tok := tokenOf(t, h, "dave")
	dup := lockfileOf(v2, v2)
	if a := send(t, h, "PUT", "/v1/teams/acme/lockfile", tok, hub.PushLockfileRequest{BaseRevision: 2, Lockfile: dup}); a.code() != hub.CodeLockfileInvalid {
		t.Errorf("duplicate module = %d %s", a.status, a.body)
	}
	huge := hub.PushLockfileRequest{BaseRevision: 2, Lockfile: hub.Lockfile{Workflows: []hub.Workflow{{Name: "w", Source: strings.Repeat("x", 100<<10)}}}}
	if a := send(t, h, "PUT", "/v1/teams/acme/lockfile", tok, huge); a.status != 413 || a.code() != hub.CodeTooLarge {
		t.Errorf("oversized lockfile = %d %s", a.status, a.body)
	}
	if a := send(t, h, "PUT", "/v1/teams/acme/lockfile", tok, `{"base_revision":-1,"lockfile":{}}`); a.code() != hub.CodeBadRequest {
		t.Errorf("negative base = %d %s", a.status, a.body)
	}
	if tl, _ := dave.Lockfile(ctx, "acme"); tl.Revision != 2 || tl.Lockfile.Modules[0].Version != "1.1.0" || tl.UpdatedBy != "erin" {
		t.Errorf("lockfile after refusals = %+v", tl)
	}
}

// TestInvites: an invite is used once, only by the account it names,
// before it expires; a malformed or unknown code is refused.
func TestInvites(t *testing.T) {
	var clk clock
	h := hubtest.StartWith(t, func(o *hubserver.Options) { o.Now = clk.Now; o.InviteTTL = time.Hour })
	dave := h.Client(t, h.Account(t, "dave"))
	erin := h.Client(t, h.Account(t, "erin"))
	mallory := h.Client(t, h.Account(t, "mallory"))
	if _, err := dave.CreateTeam(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	_, err := dave.CreateTeam(ctx, "acme")
	wantCode(t, "create a taken team", err, hub.CodeTeamExists)
	_, err = dave.CreateTeam(ctx, "Acme Corp")
	wantCode(t, "create a badly named team", err, hub.CodeInvalidName)
	_, err = dave.Invite(ctx, "acme", hub.InviteRequest{Account: "nobody"})
	wantCode(t, "invite a missing account", err, hub.CodeAccountNotFound)
	_, err = dave.Invite(ctx, "acme", hub.InviteRequest{Role: "admin"})
	wantCode(t, "invite with a bad role", err, hub.CodeBadRequest)

	forErin, _ := dave.Invite(ctx, "acme", hub.InviteRequest{Account: "erin"})
	_, err = mallory.Join(ctx, forErin.Code)
	wantCode(t, "mallory uses erin's invite", err, hub.CodeInviteInvalid)
	if _, err := erin.Join(ctx, forErin.Code); err != nil {
		t.Fatalf("erin joins: %v", err)
	}
	_, err = erin.Join(ctx, forErin.Code)
	wantCode(t, "an invite used twice", err, hub.CodeInviteInvalid)

	open, _ := dave.Invite(ctx, "acme", hub.InviteRequest{})
	_, err = erin.Join(ctx, open.Code)
	wantCode(t, "a member joins again", err, hub.CodeAlreadyMember)
	clk.Advance(2 * time.Hour)
	_, err = mallory.Join(ctx, open.Code)
	wantCode(t, "an expired invite", err, hub.CodeInviteInvalid)
	_, err = mallory.Join(ctx, "sti_guess")
	wantCode(t, "a malformed code", err, hub.CodeInviteInvalid)
	_, err = mallory.Join(ctx, hub.InvitePrefix+strings.Repeat("A", 43))
	wantCode(t, "an unknown code", err, hub.CodeInviteInvalid)

	asOwner, _ := dave.Invite(ctx, "acme", hub.InviteRequest{Role: hub.RoleOwner})
	tm, err := mallory.Join(ctx, asOwner.Code)
	if err != nil || tm.Role != hub.RoleOwner || len(tm.Members) != 3 {
		t.Fatalf("join as owner = %+v, %v", tm, err)
	}
	if err := dave.Leave(ctx, "acme"); err != nil {
		t.Errorf("dave leaves with another owner left: %v", err)
	}
	if err := mallory.RemoveMember(ctx, "acme", "erin"); err != nil {
		t.Errorf("owner removes a member: %v", err)
	}
	if ts, _ := erin.Teams(ctx); len(ts) != 0 {
		t.Errorf("erin's teams after removal = %+v", ts)
	}
}
