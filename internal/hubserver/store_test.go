package hubserver

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/sqldb"
)

// storeContract checks the Store contract (see Store) against an
// implementation. A PostgreSQL store must pass it too.
func storeContract(t *testing.T, open func(t *testing.T) Store) {
	ctx := context.Background()
	at := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	digest := func(s string) string { return hub.Digest([]byte(s)) }
	version := func(id, v string) Version {
		return Version{Version: hub.Version{Module: id, Version: v, ManifestDigest: digest("m" + v), WasmDigest: digest("w" + v), WasmSize: 10, KeyID: "0000000000000001", PublishedAt: at}, Signature: "sig", Description: "d " + v}
	}
	setup := func(t *testing.T) Store {
		st := open(t)
		for _, a := range []string{"dave", "erin", "mallory"} {
			if _, err := st.CreateAccount(ctx, a, at); err != nil {
				t.Fatal(err)
			}
		}
		return st
	}

	t.Run("accounts and tokens", func(t *testing.T) {
		st := setup(t)
		if _, err := st.CreateAccount(ctx, "dave", at); !errors.Is(err, ErrExists) {
			t.Errorf("CreateAccount(existing) = %v, want ErrExists", err)
		}
		h := sha256.Sum256([]byte("secret"))
		if err := st.AddToken(ctx, Token{ID: "t1", Account: "dave", Hash: h, Label: "l", CreatedAt: at}); err != nil {
			t.Fatal(err)
		}
		if err := st.AddToken(ctx, Token{ID: "t2", Account: "nobody", Hash: sha256.Sum256([]byte("x")), CreatedAt: at}); !errors.Is(err, ErrNotFound) {
			t.Errorf("AddToken(no account) = %v, want ErrNotFound", err)
		}
		got, err := st.TokenByHash(ctx, h)
		if err != nil || got.Account != "dave" || got.ID != "t1" {
			t.Errorf("TokenByHash = %+v, %v", got, err)
		}
		if err := st.DeleteToken(ctx, "erin", "t1"); !errors.Is(err, ErrNotFound) {
			t.Errorf("DeleteToken(another's token) = %v, want ErrNotFound", err)
		}
		if err := st.DeleteToken(ctx, "dave", "t1"); err != nil {
			t.Fatal(err)
		}
		if _, err := st.TokenByHash(ctx, h); !errors.Is(err, ErrNotFound) {
			t.Errorf("TokenByHash(deleted) = %v, want ErrNotFound", err)
		}
	})

	t.Run("publish is immutable and logged", func(t *testing.T) {
		st := setup(t)
		ev, err := st.Publish(ctx, version("dave/x", "1.0.0"))
		if err != nil || ev.Seq == 0 || ev.Kind != hub.EventModulePublished {
			t.Fatalf("Publish = %+v, %v", ev, err)
		}
		last, _ := st.LastSeq(ctx)
		for _, v := range []string{"1.0.0", "1.0.0+build"} {
			if _, err := st.Publish(ctx, version("dave/x", v)); !errors.Is(err, ErrExists) {
				t.Errorf("Publish(%s again) = %v, want ErrExists", v, err)
			}
		}
		if got, _ := st.LastSeq(ctx); got != last {
			t.Errorf("a refused publish appended events: last seq %d, want %d", got, last)
		}
		st.Publish(ctx, version("dave/x", "1.1.0"))
		st.Publish(ctx, version("dave/x", "1.10.0-rc.1"))
		m, err := st.Module(ctx, "dave/x")
		if err != nil {
			t.Fatal(err)
		}
		if m.Latest != "1.10.0-rc.1" || len(m.Versions) != 3 || m.Versions[0].Version != "1.10.0-rc.1" {
			t.Errorf("module = latest %s, versions %v", m.Latest, m.Versions)
		}
		v, ev2, err := st.SetYanked(ctx, "dave/x", "1.10.0-rc.1", true, "broken", "dave", at)
		if err != nil || !v.Yanked || ev2 == nil || ev2.Kind != hub.EventModuleYanked {
			t.Fatalf("SetYanked = %+v, %+v, %v", v, ev2, err)
		}
		if _, ev3, _ := st.SetYanked(ctx, "dave/x", "1.10.0-rc.1", true, "again", "dave", at); ev3 != nil {
			t.Errorf("yanking a yanked version appended %+v", ev3)
		}
		if m, _ := st.Module(ctx, "dave/x"); m.Latest != "1.1.0" {
			t.Errorf("latest after yank = %s, want 1.1.0", m.Latest)
		}
		if _, err := st.Publish(ctx, version("dave/x", "1.10.0-rc.1")); !errors.Is(err, ErrExists) {
			t.Errorf("re-publishing a yanked version = %v, want ErrExists", err)
		}
		found, _ := st.Search(ctx, "x", "", 0, 10)
		if len(found) != 1 || found[0].ID != "dave/x" {
			t.Errorf("Search = %+v", found)
		}
		if found, _ := st.Search(ctx, "%", "", 0, 10); len(found) != 0 {
			t.Errorf("Search(%%) matched %d modules: LIKE wildcards must be literal", len(found))
		}
	})

	t.Run("teams", func(t *testing.T) {
		st := setup(t)
		if _, err := st.CreateTeam(ctx, "acme", "dave", at); err != nil {
			t.Fatal(err)
		}
		if _, err := st.CreateTeam(ctx, "acme", "mallory", at); !errors.Is(err, ErrExists) {
			t.Errorf("CreateTeam(taken) = %v, want ErrExists", err)
		}
		code := sha256.Sum256([]byte("invite"))
		if err := st.AddInvite(ctx, Invite{Hash: code, ID: "00000000000000a1", Team: "acme", Role: hub.RoleMember, CreatedBy: "mallory", CreatedAt: at, ExpiresAt: at.Add(time.Hour)}); !errors.Is(err, ErrNotFound) {
			t.Errorf("AddInvite by a non-member = %v, want ErrNotFound", err)
		}
		if err := st.AddInvite(ctx, Invite{Hash: code, ID: "00000000000000a1", Team: "acme", Role: hub.RoleMember, Account: "erin", CreatedBy: "dave", CreatedAt: at, ExpiresAt: at.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := st.AcceptInvite(ctx, code, "mallory", at); !errors.Is(err, ErrInviteInvalid) {
			t.Errorf("AcceptInvite by another account = %v, want ErrInviteInvalid", err)
		}
		if _, _, err := st.AcceptInvite(ctx, code, "erin", at.Add(2*time.Hour)); !errors.Is(err, ErrInviteInvalid) {
			t.Errorf("AcceptInvite after expiry = %v, want ErrInviteInvalid", err)
		}
		tm, ev, err := st.AcceptInvite(ctx, code, "erin", at)
		if err != nil || tm.Role != hub.RoleMember || ev.Kind != hub.EventMemberJoined {
			t.Fatalf("AcceptInvite = %+v, %+v, %v", tm, ev, err)
		}
		if _, _, err := st.AcceptInvite(ctx, code, "erin", at); !errors.Is(err, ErrInviteInvalid) {
			t.Errorf("AcceptInvite twice = %v, want ErrInviteInvalid", err)
		}

		l := hub.Lockfile{Modules: []hub.LockedModule{}, Workflows: []hub.Workflow{}}
		if _, _, err := st.PushLockfile(ctx, "acme", 0, l, "erin", at); !errors.Is(err, ErrNotOwner) {
			t.Errorf("PushLockfile by a member = %v, want ErrNotOwner", err)
		}
		if _, _, err := st.PushLockfile(ctx, "acme", 0, l, "mallory", at); !errors.Is(err, ErrNotFound) {
			t.Errorf("PushLockfile by a non-member = %v, want ErrNotFound", err)
		}
		tl, _, err := st.PushLockfile(ctx, "acme", 0, l, "dave", at)
		if err != nil || tl.Revision != 1 {
			t.Fatalf("PushLockfile = %+v, %v", tl, err)
		}
		var ce *ConflictError
		if _, _, err := st.PushLockfile(ctx, "acme", 0, l, "dave", at); !errors.As(err, &ce) || ce.Current != 1 {
			t.Errorf("PushLockfile on a stale base = %v, want *ConflictError at 1", err)
		}

		if _, _, err := st.SetRole(ctx, "acme", "dave", hub.RoleMember, "dave", at); !errors.Is(err, ErrLastOwner) {
			t.Errorf("demoting the last owner = %v, want ErrLastOwner", err)
		}
		if _, err := st.RemoveMember(ctx, "acme", "dave", "dave", at); !errors.Is(err, ErrLastOwner) {
			t.Errorf("last owner leaving = %v, want ErrLastOwner", err)
		}
		if _, err := st.RemoveMember(ctx, "acme", "dave", "erin", at); !errors.Is(err, ErrNotOwner) {
			t.Errorf("a member removing an owner = %v, want ErrNotOwner", err)
		}
		if _, _, err := st.SetRole(ctx, "acme", "erin", hub.RoleOwner, "dave", at); err != nil {
			t.Fatal(err)
		}
		if _, err := st.RemoveMember(ctx, "acme", "dave", "dave", at); err != nil {
			t.Errorf("an owner leaving when another owner remains = %v", err)
		}
		if _, _, err := st.PushLockfile(ctx, "acme", 1, l, "dave", at); !errors.Is(err, ErrNotFound) {
			t.Errorf("PushLockfile after leaving = %v, want ErrNotFound", err)
		}
	})

	t.Run("event visibility", func(t *testing.T) {
		st := setup(t)
		st.Publish(ctx, version("dave/x", "1.0.0"))
		st.CreateTeam(ctx, "acme", "dave", at)
		st.CreateTeam(ctx, "evil", "mallory", at)
		st.PushLockfile(ctx, "acme", 0, hub.Lockfile{}, "dave", at)
		last, _ := st.LastSeq(ctx)
		kinds := func(viewer string) []string {
			evs, err := st.EventsFor(ctx, viewer, 0, last, 100)
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, e := range evs {
				out = append(out, e.Kind+":"+e.Team)
			}
			return out
		}
		if got, want := kinds("mallory"), []string{"module.published:", "team.created:evil"}; !equal(got, want) {
			t.Errorf("mallory sees %v, want %v", got, want)
		}
		if got, want := kinds("dave"), []string{"module.published:", "team.created:acme", "team.lockfile:acme"}; !equal(got, want) {
			t.Errorf("dave sees %v, want %v", got, want)
		}
		if got, want := kinds(""), []string{"module.published:"}; !equal(got, want) {
			t.Errorf("no account sees %v, want %v", got, want)
		}
		all, _ := st.EventsAfter(ctx, 0, 100)
		if len(all) != 4 {
			t.Errorf("EventsAfter = %d events, want 4", len(all))
		}
	})

	t.Run("invites are listed, revoked, and die with their creator's role", func(t *testing.T) {
		st := setup(t)
		st.CreateTeam(ctx, "acme", "dave", at)
		st.CreateTeam(ctx, "evil", "mallory", at)
		n := 0
		invite := func(team, by, role, account string) ([32]byte, string) {
			t.Helper()
			n++
			hash := sha256.Sum256(fmt.Appendf(nil, "code %d", n))
			id := fmt.Sprintf("%016x", n)
			if err := st.AddInvite(ctx, Invite{Hash: hash, ID: id, Team: team, Role: role, Account: account, CreatedBy: by, CreatedAt: at.Add(time.Duration(n) * time.Second), ExpiresAt: at.Add(time.Hour)}); err != nil {
				t.Fatal(err)
			}
			return hash, id
		}
		ids := func(invs []Invite) []string {
			out := []string{}
			for _, inv := range invs {
				out = append(out, inv.ID)
			}
			return out
		}
		erinCode, erinID := invite("acme", "dave", hub.RoleOwner, "erin")
		if _, _, err := st.AcceptInvite(ctx, erinCode, "erin", at); err != nil {
			t.Fatal(err)
		}
		_, a1 := invite("acme", "dave", hub.RoleMember, "")
		_, a2 := invite("acme", "erin", hub.RoleOwner, "")
		_, e1 := invite("evil", "mallory", hub.RoleMember, "")

		got, err := st.Invites(ctx, "acme", "dave", at)
		if err != nil || !equal(ids(got), []string{a1, a2}) || got[1].CreatedBy != "erin" || got[1].Role != hub.RoleOwner {
			t.Fatalf("Invites(acme) = %+v, %v; want %s %s (not %s, used)", got, err, a1, a2, erinID)
		}
		if got, _ := st.Invites(ctx, "acme", "dave", at.Add(2*time.Hour)); len(got) != 0 {
			t.Errorf("Invites after expiry = %+v", got)
		}
		if _, err := st.Invites(ctx, "acme", "mallory", at); !errors.Is(err, ErrNotFound) {
			t.Errorf("Invites by a non-member = %v, want ErrNotFound", err)
		}
		if _, err := st.RevokeInvites(ctx, "acme", e1, "dave", at); !errors.Is(err, ErrNoInvite) {
			t.Errorf("revoking another team's invite = %v, want ErrNoInvite", err)
		}
		if _, err := st.RevokeInvites(ctx, "acme", a1, "mallory", at); !errors.Is(err, ErrNotFound) {
			t.Errorf("revoking as a non-member = %v, want ErrNotFound", err)
		}
		if got, err := st.RevokeInvites(ctx, "acme", a1, "dave", at); err != nil || !equal(ids(got), []string{a1}) {
			t.Errorf("RevokeInvites(a1) = %+v, %v", got, err)
		}
		if _, err := st.RevokeInvites(ctx, "acme", a1, "dave", at); !errors.Is(err, ErrNoInvite) {
			t.Errorf("revoking twice = %v, want ErrNoInvite", err)
		}

		// Erin, demoted, cannot list; her invite is gone, and its code
		// works for no one.
		a2Code := sha256.Sum256([]byte("code 3"))
		if _, _, err := st.SetRole(ctx, "acme", "erin", hub.RoleMember, "dave", at); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Invites(ctx, "acme", "erin", at); !errors.Is(err, ErrNotOwner) {
			t.Errorf("Invites by a member = %v, want ErrNotOwner", err)
		}
		if got, _ := st.Invites(ctx, "acme", "dave", at); len(got) != 0 {
			t.Errorf("erin's invite outlived her demotion: %+v", got)
		}
		if _, _, err := st.AcceptInvite(ctx, a2Code, "mallory", at); !errors.Is(err, ErrInviteInvalid) {
			t.Errorf("accepting a demoted owner's invite = %v, want ErrInviteInvalid", err)
		}

		// Removal and leaving drop the invites of the one who goes, and
		// nobody else's.
		st.SetRole(ctx, "acme", "erin", hub.RoleOwner, "dave", at)
		_, b1 := invite("acme", "erin", hub.RoleOwner, "")
		_, b2 := invite("acme", "dave", hub.RoleMember, "")
		if _, err := st.RemoveMember(ctx, "acme", "erin", "dave", at); err != nil {
			t.Fatal(err)
		}
		if got, _ := st.Invites(ctx, "acme", "dave", at); !equal(ids(got), []string{b2}) {
			t.Errorf("after erin's removal: invites %v, want %s (not %s)", ids(got), b2, b1)
		}
		st.AcceptInvite(ctx, sha256.Sum256([]byte("code 6")), "erin", at) // b2: erin is back, a member
		st.SetRole(ctx, "acme", "erin", hub.RoleOwner, "dave", at)
		_, c1 := invite("acme", "dave", hub.RoleOwner, "mallory")
		if _, err := st.RemoveMember(ctx, "acme", "dave", "dave", at); err != nil {
			t.Fatal(err)
		}
		if got, _ := st.Invites(ctx, "acme", "erin", at); len(got) != 0 {
			t.Errorf("dave's invite %s outlived his leaving: %v", c1, ids(got))
		}
		if got, _ := st.Invites(ctx, "evil", "mallory", at); !equal(ids(got), []string{e1}) {
			t.Errorf("evil's invites = %v, want %s", ids(got), e1)
		}
		all, err := st.RevokeInvites(ctx, "evil", "", "mallory", at)
		if err != nil || !equal(ids(all), []string{e1}) {
			t.Errorf("RevokeInvites(all) = %v, %v", ids(all), err)
		}
		if all, err := st.RevokeInvites(ctx, "evil", "", "mallory", at); err != nil || len(all) != 0 {
			t.Errorf("RevokeInvites(all) again = %v, %v; want none", ids(all), err)
		}
	})

	t.Run("an ex-member sees only its own leaving", func(t *testing.T) {
		st := setup(t)
		st.CreateTeam(ctx, "acme", "dave", at)
		code := sha256.Sum256([]byte("invite"))
		if err := st.AddInvite(ctx, Invite{Hash: code, ID: "0000000000000001", Team: "acme", Role: hub.RoleMember, CreatedBy: "dave", CreatedAt: at, ExpiresAt: at.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := st.AcceptInvite(ctx, code, "erin", at); err != nil {
			t.Fatal(err)
		}
		st.SetRole(ctx, "acme", "erin", hub.RoleOwner, "dave", at)
		st.PushLockfile(ctx, "acme", 0, hub.Lockfile{}, "erin", at)
		st.SetRole(ctx, "acme", "erin", hub.RoleMember, "dave", at)
		if _, err := st.RemoveMember(ctx, "acme", "erin", "dave", at); err != nil {
			t.Fatal(err)
		}
		st.PushLockfile(ctx, "acme", 1, hub.Lockfile{}, "dave", at)
		last, _ := st.LastSeq(ctx)
		evs, err := st.EventsFor(ctx, "erin", 0, last, 100)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range evs {
			got = append(got, e.Kind+":"+e.Account)
		}
		// Not her joining, not the roles she had, not the push she made.
		if want := []string{"team.member.removed:erin"}; !equal(got, want) {
			t.Errorf("erin, removed from acme, sees %v; want %v", got, want)
		}
	})

	t.Run("reports: who reads and triages, all or nothing", func(t *testing.T) {
		st := setup(t)
		st.Publish(ctx, version("dave/x", "1.0.0"))
		st.Publish(ctx, version("dave/x", "1.1.0"))
		st.SetYanked(ctx, "dave/x", "1.1.0", true, "broken", "dave", at)
		if err := st.SetAdmin(ctx, "nobody", true); !errors.Is(err, ErrNotFound) {
			t.Errorf("SetAdmin(nobody) = %v, want ErrNotFound", err)
		}
		if _, err := st.CreateAccount(ctx, "root", at); err != nil {
			t.Fatal(err)
		}
		if err := st.SetAdmin(ctx, "root", true); err != nil {
			t.Fatal(err)
		}
		if a, err := st.Account(ctx, "root"); err != nil || !a.Admin {
			t.Errorf("Account(root) = %+v, %v; want an admin", a, err)
		}
		report := func(id, target, reporter string) hub.Report {
			return hub.Report{ID: id, Target: target, Introduced: "1.0.0", Title: "t", Body: "b", Reproduction: "r",
				Severity: hub.Severity{Level: hub.SeverityHigh}, Reporter: reporter, CreatedAt: at}
		}
		if _, err := st.FileReport(ctx, report("R-aaaaaaaaaaaa", "dave/nope", "erin")); !errors.Is(err, ErrNoTarget) {
			t.Errorf("FileReport(no such module) = %v, want ErrNoTarget", err)
		}
		r, err := st.FileReport(ctx, report("R-aaaaaaaaaaaa", "dave/x", "erin"))
		if err != nil || r.State != hub.StateNew || len(r.Thread) != 1 || r.Thread[0].Kind != hub.ReportFiled {
			t.Fatalf("FileReport = %+v, %v", r, err)
		}
		if _, err := st.FileReport(ctx, report("R-aaaaaaaaaaaa", "dave/x", "mallory")); !errors.Is(err, ErrExists) {
			t.Errorf("FileReport(same id) = %v, want ErrExists", err)
		}
		last, _ := st.LastSeq(ctx)
		for _, viewer := range []string{"mallory", ""} {
			if _, err := st.Report(ctx, r.ID, viewer); !errors.Is(err, ErrNotFound) {
				t.Errorf("Report as %q = %v, want ErrNotFound", viewer, err)
			}
			if rs, _ := st.Reports(ctx, ReportFilter{Viewer: viewer, Limit: 10}); len(rs) != 0 {
				t.Errorf("Reports as %q = %+v", viewer, rs)
			}
		}
		for _, viewer := range []string{"erin", "dave", "root"} {
			if got, err := st.Report(ctx, r.ID, viewer); err != nil || got.Reproduction != "r" {
				t.Errorf("Report as %s = %+v, %v", viewer, got, err)
			}
		}
		if _, err := st.CommentReport(ctx, r.ID, "mallory", hub.ReportEvent{Comment: "hi", Time: at}); !errors.Is(err, ErrNotFound) {
			t.Errorf("CommentReport by a third party = %v, want ErrNotFound", err)
		}
		if _, err := st.CommentReport(ctx, r.ID, "erin", hub.ReportEvent{Comment: "still", VerifiedIn: "2.0.0", Time: at}); !errors.Is(err, ErrNoVersion) {
			t.Errorf("CommentReport verified in nothing = %v, want ErrNoVersion", err)
		}
		for _, tc := range []struct {
			actor string
			req   hub.TriageRequest
			want  error
		}{
			{"mallory", hub.TriageRequest{State: hub.StateTriaged}, ErrNotFound},
			{"erin", hub.TriageRequest{State: hub.StateTriaged}, ErrNotMaintainer},
			{"dave", hub.TriageRequest{State: hub.StateFixed, FixedIn: "1.0.0"}, ErrStateChange},
			{"dave", hub.TriageRequest{State: hub.StateTriaged, Award: &hub.Award{Amount: 1, Reason: "x"}}, ErrAwardRefused},
			{"dave", hub.TriageRequest{State: hub.StateTriaged, Advisory: true}, ErrStateChange},
			{"dave", hub.TriageRequest{State: hub.StateDuplicate, DuplicateOf: r.ID}, ErrReportInvalid},
		} {
			if _, _, err := st.TriageReport(ctx, r.ID, tc.actor, tc.req, at); !errors.Is(err, tc.want) {
				t.Errorf("TriageReport(%s, %+v) = %v, want %v", tc.actor, tc.req, err, tc.want)
			}
		}
		if got, _ := st.Report(ctx, r.ID, "dave"); got.State != hub.StateNew || len(got.Thread) != 1 {
			t.Errorf("the refused triages changed the report: %+v", got)
		}
		if got, _ := st.LastSeq(ctx); got != last {
			t.Errorf("a private report appended %d events to the log", got-last)
		}
		got, evs, err := st.TriageReport(ctx, r.ID, "dave", hub.TriageRequest{State: hub.StateConfirmed, Award: &hub.Award{Amount: 5, Reason: "x"}, Advisory: true}, at)
		if err != nil || got.State != hub.StateConfirmed || got.Credits != 5 || got.Advisory == "" || len(evs) != 1 || evs[0].Kind != hub.EventAdvisoryPublished || evs[0].Team != "" {
			t.Fatalf("TriageReport(confirm) = %+v, %+v, %v", got, evs, err)
		}
		for _, fixed := range []string{"1.1.0", "1.2.0"} {
			if _, _, err := st.TriageReport(ctx, r.ID, "dave", hub.TriageRequest{State: hub.StateFixed, FixedIn: fixed}, at); !errors.Is(err, ErrFixedVersion) {
				t.Errorf("fixed in %s = %v, want ErrFixedVersion", fixed, err)
			}
		}
		if cr, err := st.Credits(ctx, "erin"); err != nil || cr.Balance != 5 || cr.History[0].Report != "" {
			t.Errorf("Credits(erin) = %+v, %v", cr, err)
		}
		if _, err := st.RecordRelease(ctx, "0.1.0", "dave", at); !errors.Is(err, ErrNotAdmin) {
			t.Errorf("RecordRelease by a non-admin = %v, want ErrNotAdmin", err)
		}
		if _, err := st.RecordRelease(ctx, "0.1.0", "root", at); err != nil {
			t.Fatal(err)
		}
		if _, err := st.RecordRelease(ctx, "0.1.0+b", "root", at); !errors.Is(err, ErrExists) {
			t.Errorf("RecordRelease of an equal precedence = %v, want ErrExists", err)
		}
		a, ev, err := st.WithdrawAdvisory(ctx, got.Advisory, "mallory", "x", at)
		if !errors.Is(err, ErrNotMaintainer) {
			t.Errorf("WithdrawAdvisory by a third party = %+v, %+v, %v", a, ev, err)
		}
		if a, ev, err := st.WithdrawAdvisory(ctx, got.Advisory, "root", "x", at); err != nil || a.Withdrawn == nil || ev == nil {
			t.Errorf("WithdrawAdvisory by an admin = %+v, %+v, %v", a, ev, err)
		}
		evs, _ = st.AdvisoryEvents(ctx, 0, 1000, 100)
		if len(evs) != 3 || evs[0].Kind != hub.EventModuleYanked || evs[2].Kind != hub.EventAdvisoryWithdrawn {
			t.Errorf("AdvisoryEvents = %+v", evs)
		}

		// A thread takes comments up to its bound; a maintainer's change
		// without one still goes in.
		got, _ = st.Report(ctx, r.ID, "dave")
		for i := len(got.Thread); i < maxThreadEvents; i++ {
			if _, err := st.CommentReport(ctx, r.ID, "erin", hub.ReportEvent{Comment: "again", Time: at}); err != nil {
				t.Fatalf("comment %d: %v", i, err)
			}
		}
		if _, err := st.CommentReport(ctx, r.ID, "erin", hub.ReportEvent{Comment: "one more", Time: at}); !errors.Is(err, ErrReportInvalid) {
			t.Errorf("a comment on a full thread = %v, want ErrReportInvalid", err)
		}
		if got, _, err := st.TriageReport(ctx, r.ID, "dave", hub.TriageRequest{State: hub.StateWontFix}, at); err != nil || len(got.Thread) != maxThreadEvents+1 {
			t.Errorf("a state change on a full thread = %d events, %v", len(got.Thread), err)
		}
	})

	t.Run("concurrent triage: one state change, one advisory", func(t *testing.T) {
		st := setup(t)
		st.Publish(ctx, version("dave/x", "1.0.0"))
		r, err := st.FileReport(ctx, hub.Report{ID: "R-aaaaaaaaaaaa", Target: "dave/x", Title: "t", Body: "b", Severity: hub.Severity{Level: hub.SeverityLow}, Reporter: "erin", CreatedAt: at})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		wins := 0
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _, err := st.TriageReport(ctx, r.ID, "dave", hub.TriageRequest{State: hub.StateConfirmed, Advisory: true}, at)
				switch {
				case err == nil:
					mu.Lock()
					wins++
					mu.Unlock()
				case !errors.Is(err, ErrStateChange):
					t.Errorf("TriageReport = %v", err)
				}
			}()
		}
		wg.Wait()
		if as, _ := st.Advisories(ctx, "dave/x"); wins != 1 || len(as) != 1 {
			t.Errorf("%d triages to confirmed succeeded and made %d advisories, want 1 and 1", wins, len(as))
		}
	})

	t.Run("concurrency", func(t *testing.T) { storeConcurrency(t, open) })

	t.Run("concurrent pushes: exactly one wins per revision", func(t *testing.T) {
		st := setup(t)
		st.CreateTeam(ctx, "acme", "dave", at)
		var wg sync.WaitGroup
		var mu sync.Mutex
		wins := 0
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _, err := st.PushLockfile(ctx, "acme", 0, hub.Lockfile{}, "dave", at)
				var ce *ConflictError
				switch {
				case err == nil:
					mu.Lock()
					wins++
					mu.Unlock()
				case !errors.As(err, &ce):
					t.Errorf("PushLockfile = %v", err)
				}
			}()
		}
		wg.Wait()
		if wins != 1 {
			t.Errorf("%d pushes on revision 0 succeeded, want 1", wins)
		}
	})
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestSQLiteStoreContract(t *testing.T) {
	storeContract(t, func(t *testing.T) Store {
		st, err := OpenSQLite(filepath.Join(t.TempDir(), "hub.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	})
}

// TestSQLiteRefusesUnstorableTimes: a time an int64 of Unix nanoseconds
// cannot hold is refused, as the station's store refuses it, instead of
// being stored as whatever time.Time.UnixNano makes of it; nothing is
// written. (The hub's times come from its clock, so this is a guard.)
func TestSQLiteRefusesUnstorableTimes(t *testing.T) {
	ctx := context.Background()
	st, err := OpenSQLite(filepath.Join(t.TempDir(), "hub.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, at := range []time.Time{{}, time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)} {
		if _, err := st.CreateAccount(ctx, "dave", at); err == nil {
			t.Errorf("CreateAccount at %v succeeded, want an error", at)
		}
		if _, err := st.Account(ctx, "dave"); !errors.Is(err, ErrNotFound) {
			t.Errorf("after CreateAccount at %v: Account = %v, want ErrNotFound", at, err)
		}
	}
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	if _, err := st.CreateAccount(ctx, "dave", now); err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateTeam(ctx, "acme", "dave", time.Time{}); err == nil {
		t.Error("CreateTeam at the zero time succeeded, want an error")
	}
	if teams, err := st.TeamsOf(ctx, "dave"); err != nil || teams == nil || len(teams) != 0 {
		t.Errorf("TeamsOf = %#v, %v; want no team (and [], not nil)", teams, err)
	}
}

// TestSQLiteAcceptChecksTheCreator: the role check at accept time holds by
// itself, for an invite the deletions missed (one written by a hub before
// schema 2 deleted anything, say): the invite of a creator who is no
// longer an owner is refused.
func TestSQLiteAcceptChecksTheCreator(t *testing.T) {
	ctx := context.Background()
	at := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	st, err := OpenSQLite(filepath.Join(t.TempDir(), "hub.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, a := range []string{"dave", "erin", "mallory"} {
		st.CreateAccount(ctx, a, at)
	}
	st.CreateTeam(ctx, "acme", "dave", at)
	for i, by := range []string{"erin", "nobody"} { // a member, then an account that is not in the team
		hash := sha256.Sum256(fmt.Appendf(nil, "code %d", i))
		if _, err := st.db.ExecContext(ctx, `INSERT INTO invites (hash, id, team, role, account, created_by, created_at, expires_at) VALUES (?, ?, 'acme', 'owner', '', ?, ?, ?)`,
			hash[:], fmt.Sprintf("%016x", i), by, at.UnixNano(), at.Add(time.Hour).UnixNano()); err != nil {
			t.Fatal(err)
		}
		if _, _, err := st.AcceptInvite(ctx, hash, "mallory", at); !errors.Is(err, ErrInviteInvalid) {
			t.Errorf("accepting an owner invite made by %s = %v, want ErrInviteInvalid", by, err)
		}
	}
	if tm, _ := st.Team(ctx, "acme"); len(tm.Members) != 1 {
		t.Errorf("acme's members = %+v", tm.Members)
	}
}

// TestSQLiteMigratesInvites: an invite of a schema-1 database gets an id
// (its hash's first 8 bytes, in hex), is listed and revoked by it, and
// still works until then.
func TestSQLiteMigratesInvites(t *testing.T) {
	ctx := context.Background()
	at := time.Now().UTC()
	path := filepath.Join(t.TempDir(), "hub.db")
	db, _, err := sqldb.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := sqldb.Migrate(ctx, db, sqliteMigrations[:1], nil); err != nil {
		t.Fatal(err)
	}
	hash := [2][32]byte{sha256.Sum256([]byte("old 1")), sha256.Sum256([]byte("old 2"))}
	for _, q := range []string{
		`INSERT INTO accounts VALUES ('dave', 0), ('erin', 0)`,
		`INSERT INTO teams VALUES ('acme', 0, 0, CAST('{"modules":[],"workflows":[]}' AS BLOB), 0, '')`,
		`INSERT INTO members VALUES ('acme', 'dave', 'owner', 0)`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	for _, h := range hash {
		if _, err := db.ExecContext(ctx, `INSERT INTO invites VALUES (?, 'acme', 'member', '', 'dave', ?, ?)`, h[:], at.UnixNano(), at.Add(time.Hour).UnixNano()); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()

	st, err := OpenSQLite(path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	invs, err := st.Invites(ctx, "acme", "dave", at)
	if err != nil || len(invs) != 2 {
		t.Fatalf("invites after migrating = %+v, %v", invs, err)
	}
	byID := map[string][32]byte{}
	for _, inv := range invs {
		byID[inv.ID] = inv.Hash
	}
	first := fmt.Sprintf("%x", hash[0][:8])
	if byID[first] != hash[0] {
		t.Fatalf("invite ids after migrating = %v, want %s for the first", byID, first)
	}
	if _, err := st.RevokeInvites(ctx, "acme", first, "dave", at); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.AcceptInvite(ctx, hash[0], "erin", at); !errors.Is(err, ErrInviteInvalid) {
		t.Errorf("a revoked migrated invite = %v", err)
	}
	if _, _, err := st.AcceptInvite(ctx, hash[1], "erin", at); err != nil {
		t.Errorf("a migrated invite: %v", err)
	}
}

// TestSQLiteSurvivesReopen: what was committed is there after the database
// is closed and opened again, and the event log continues where it was.
func TestSQLiteSurvivesReopen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, blobs, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now()
	tok, err := CreateAccount(ctx, st, "dave", "laptop", at)
	if err != nil {
		t.Fatal(err)
	}
	wasm := []byte(hub.WasmMagic + "x")
	if err := blobs.Put(ctx, hub.Digest(wasm), wasm); err != nil {
		t.Fatal(err)
	}
	st.Publish(ctx, Version{Version: hub.Version{Module: "dave/x", Version: "1.0.0", ManifestDigest: hub.Digest(nil), WasmDigest: hub.Digest(wasm), WasmSize: int64(len(wasm)), PublishedAt: at}})
	st.CreateTeam(ctx, "acme", "dave", at)
	st.PushLockfile(ctx, "acme", 0, hub.Lockfile{Workflows: []hub.Workflow{{Name: "w", Source: "s", Digest: hub.Digest([]byte("s"))}}}, "dave", at)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	st, blobs, err = OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if got, err := st.TokenByHash(ctx, sha256.Sum256([]byte(tok.Secret))); err != nil || got.Account != "dave" {
		t.Errorf("token after reopen = %+v, %v", got, err)
	}
	if v, err := st.Version(ctx, "dave/x", "1.0.0"); err != nil || v.WasmDigest != hub.Digest(wasm) {
		t.Errorf("version after reopen = %+v, %v", v, err)
	}
	if got, err := blobs.Get(ctx, hub.Digest(wasm), 100); err != nil || string(got) != string(wasm) {
		t.Errorf("blob after reopen = %q, %v", got, err)
	}
	tl, err := st.Lockfile(ctx, "acme")
	if err != nil || tl.Revision != 1 || len(tl.Lockfile.Workflows) != 1 || tl.UpdatedBy != "dave" {
		t.Errorf("lockfile after reopen = %+v, %v", tl, err)
	}
	last, _ := st.LastSeq(ctx)
	ev, _ := st.CreateTeam(ctx, "beta", "dave", at)
	if last != 3 || ev.Seq != last+1 {
		t.Errorf("event log after reopen: last %d, next %d; want 3, 4", last, ev.Seq)
	}
}

func TestBlobDirRefusesCorruption(t *testing.T) {
	ctx := context.Background()
	b, err := OpenBlobDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	data := []byte("blob")
	if err := b.Put(ctx, hub.Digest([]byte("other")), data); err == nil {
		t.Error("Put with a wrong digest succeeded")
	}
	if err := b.Put(ctx, "sha256:../../etc/passwd", data); err == nil {
		t.Error("Put with a path for a digest succeeded")
	}
	d := hub.Digest(data)
	if err := b.Put(ctx, d, data); err != nil {
		t.Fatal(err)
	}
	p, _ := b.path(d)
	if err := os.WriteFile(p, []byte("bloc"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Get(ctx, d, 100); err == nil {
		t.Error("Get returned a corrupted blob")
	}
	if _, err := b.Get(ctx, hub.Digest([]byte("missing")), 100); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get(missing) = %v, want ErrNotFound", err)
	}
}

// TestBlobDirStreams: a blob written through Create is visible only after a
// Commit with its own digest; a wrong digest or an Abort leaves nothing,
// not even the temporary file.
func TestBlobDirStreams(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	b, err := OpenBlobDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := func() int {
		n := 0
		filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				n++
			}
			return nil
		})
		return n
	}
	data := []byte("streamed blob")
	for _, finish := range []func(BlobWriter) error{
		func(w BlobWriter) error { w.Abort(); return nil },
		func(w BlobWriter) error { return w.Commit(hub.Digest([]byte("other"))) },
		func(w BlobWriter) error { return w.Commit("sha256:../../x") },
	} {
		w, err := b.Create(ctx)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(data)
		finish(w)
		w.Abort()
		if n := files(); n != 0 {
			t.Errorf("%d files left after a blob was not committed", n)
		}
	}
	w, _ := b.Create(ctx)
	w.Write(data[:5])
	w.Write(data[5:])
	if err := w.Commit(hub.Digest(data)); err != nil {
		t.Fatal(err)
	}
	w.Abort() // after a commit: nothing
	if err := w.Commit(hub.Digest(data)); err == nil {
		t.Error("a second Commit succeeded")
	}
	r, err := b.Open(ctx, hub.Digest(data))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(r)
	r.Close()
	if string(got) != string(data) || files() != 1 {
		t.Errorf("committed blob = %q, %d files", got, files())
	}
	if _, err := b.Open(ctx, hub.Digest([]byte("missing"))); !errors.Is(err, ErrNotFound) {
		t.Errorf("Open(missing) = %v, want ErrNotFound", err)
	}

	// What a stopped hub left behind goes when the directory is opened
	// again, if it is older than any request; a younger one stays.
	old, _ := b.Create(ctx)
	old.Write(data)
	young, _ := b.Create(ctx)
	young.Write(data)
	oldName := old.(*blobFile).f.Name()
	os.Chtimes(oldName, time.Now().Add(-2*time.Hour), time.Now().Add(-2*time.Hour))
	if _, err := OpenBlobDir(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(oldName); err == nil {
		t.Error("a stale temporary blob survived")
	}
	if _, err := os.Stat(young.(*blobFile).f.Name()); err != nil {
		t.Errorf("a temporary blob being written was removed: %v", err)
	}
	young.Abort()
}
