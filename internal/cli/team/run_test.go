package team

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/cli/clitest"
	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/hubsync"
)

// fake is a Service with canned answers; it records what it was asked.
type fake struct {
	team    hub.Team
	tl      *hub.TeamLockfile
	invite  hub.Invite
	invites []hub.PendingInvite
	rep     *hubsync.Report
	reps    []*hubsync.Report
	err     error
	// pushErr is returned with tl and rep by Push (an apply that failed
	// after the push).
	pushErr error

	calls    []string
	approver hubsync.Approver
	workflow []hub.Workflow
}

func (f *fake) call(format string, args ...any) {
	f.calls = append(f.calls, fmt.Sprintf(format, args...))
}

func (f *fake) CreateTeam(_ context.Context, name string, fromInstalled bool) (hub.Team, *hub.TeamLockfile, error) {
	f.call("create %s %v", name, fromInstalled)
	return f.team, f.tl, f.err
}
func (f *fake) Invite(_ context.Context, team string, req hub.InviteRequest) (hub.Invite, error) {
	f.call("invite %s %s %s", team, req.Account, req.Role)
	return f.invite, f.err
}
func (f *fake) Invites(_ context.Context, team string) ([]hub.PendingInvite, error) {
	f.call("invites %s", team)
	return f.invites, f.err
}
func (f *fake) RevokeInvite(_ context.Context, team, id string) (hub.PendingInvite, error) {
	f.call("revoke %s %s", team, id)
	if len(f.invites) == 0 {
		return hub.PendingInvite{}, f.err
	}
	return f.invites[0], f.err
}
func (f *fake) RevokeInvites(_ context.Context, team string) ([]hub.PendingInvite, error) {
	f.call("revoke all %s", team)
	return f.invites, f.err
}
func (f *fake) Join(_ context.Context, code string, approve hubsync.Approver) (hub.Team, *hubsync.Report, error) {
	f.call("join %s", code)
	f.approver = approve
	return f.team, f.rep, f.err
}
func (f *fake) SyncTeams(_ context.Context, team string, approve hubsync.Approver) ([]*hubsync.Report, error) {
	f.call("sync %s", team)
	f.approver = approve
	return f.reps, f.err
}
func (f *fake) ApprovePending(_ context.Context, team, module, version string) (*hubsync.Report, error) {
	f.call("approve %s %s@%s", team, module, version)
	return f.rep, f.err
}
func (f *fake) Push(_ context.Context, team string, ids []string, wfs []hub.Workflow) (hub.TeamLockfile, *hubsync.Report, error) {
	f.call("push %s %s", team, strings.Join(ids, ","))
	f.workflow = wfs
	if f.err != nil {
		return hub.TeamLockfile{}, nil, f.err
	}
	return *f.tl, f.rep, f.pushErr
}
func (f *fake) Leave(_ context.Context, team string) error {
	f.call("leave %s", team)
	return f.err
}

func (f *fake) session() func(context.Context) (Service, error) {
	return func(context.Context) (Service, error) { return f, nil }
}

// streams returns streams reading stdin, and the output buffers.
func streams(stdin string) (*cmdutil.IOStreams, *bytes.Buffer, *bytes.Buffer) {
	var out, errb bytes.Buffer
	return &cmdutil.IOStreams{In: strings.NewReader(stdin), Out: &out, Err: &errb, Getenv: func(string) string { return "" }}, &out, &errb
}

func home() (string, error) { return "/h", nil }

// report is a sync of acme at revision 2 that installed one module, left
// one as it was, holds one for approval and failed one.
func report() *hubsync.Report {
	pending := hubsync.Plan{Version: hub.Version{Module: "alice/hello", Version: "1.1.0"}, Escalations: []string{"may now connect to api.stripe.com"}}
	return &hubsync.Report{Team: "acme", Revision: 2,
		Installed: []hubsync.Result{{ID: "alice/x", Version: "2.0.0", Changed: true}},
		Unchanged: []string{"alice/y"},
		Pending:   []hubsync.Plan{pending},
		Failed:    []hubsync.ModuleError{{ID: "alice/z", Version: "1.0.0", Err: errors.New("boom")}},
		Workflows: []string{"month-end"}}
}

const reportText = `team acme: lockfile revision 2
  installed alice/x@2.0.0
  up to date alice/y
  PENDING alice/hello@1.1.0 needs your approval; it:
    + may now connect to api.stripe.com
  FAILED alice/z@1.0.0: boom
  workflows: month-end (in /h/teams/acme/workflows)
`

func TestSync(t *testing.T) {
	ctx := context.Background()
	var reloaded []string
	reload := func(_ context.Context, id string) { reloaded = append(reloaded, id) }
	yes := func(hubsync.Plan) (bool, error) { return true, nil }
	approver := func(y bool) hubsync.Approver {
		if y {
			return yes
		}
		return nil
	}
	svc := &fake{reps: []*hubsync.Report{report()}}
	io, out, _ := streams("")
	err := syncRun(ctx, &SyncOptions{IO: io, Session: svc.session(), Approver: approver, Reload: reload, Home: home, Team: "acme"})
	if out.String() != reportText {
		t.Errorf("sync printed\n%s\nwant\n%s", out.String(), reportText)
	}
	// The failure and the pending change are the exit code: 5, approval.
	if cmdutil.ExitCode(err) != cmdutil.ExitDeclined || !strings.Contains(err.Error(), "alice/z@1.0.0: boom") || !strings.Contains(err.Error(), "1 team change(s) wait for your approval") {
		t.Errorf("sync error: %v (exit %d)", err, cmdutil.ExitCode(err))
	}
	if strings.Join(svc.calls, ";") != "sync acme" || svc.approver != nil || strings.Join(reloaded, ",") != "alice/x" {
		t.Errorf("calls %v, approver set %v, reloaded %v", svc.calls, svc.approver != nil, reloaded)
	}

	// --yes hands the service an approver; --json prints the same result.
	svc = &fake{reps: []*hubsync.Report{{Team: "acme", Revision: 3, Unchanged: []string{"alice/y"}}}}
	io, out, _ = streams("")
	if err := syncRun(ctx, &SyncOptions{IO: io, Session: svc.session(), Approver: approver, Reload: reload, Home: home, Yes: true, JSON: true}); err != nil {
		t.Fatal(err)
	}
	if svc.approver == nil {
		t.Error("--yes gave the sync no approver")
	}
	var res struct {
		Teams []map[string]any
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil || len(res.Teams) != 1 || res.Teams[0]["revision"] != float64(3) || res.Teams[0]["workflow_dir"] != "/h/teams/acme/workflows" {
		t.Errorf("sync --json: %s (%v)", out.String(), err)
	}
	for _, k := range []string{"installed", "pending", "failed", "workflows"} {
		if l, ok := res.Teams[0][k].([]any); !ok || len(l) != 0 {
			t.Errorf("sync --json: %s is %v, want []", k, res.Teams[0][k])
		}
	}

	// No team: said on stderr, exit 0 (and [] with --json).
	io, out, errb := streams("")
	if err := syncRun(ctx, &SyncOptions{IO: io, Session: (&fake{}).session(), Approver: approver, Home: home}); err != nil || out.Len() != 0 || !strings.Contains(errb.String(), "this account belongs to no team") {
		t.Errorf("sync of no team: %q %q %v", out.String(), errb.String(), err)
	}
	io, out, _ = streams("")
	if err := syncRun(ctx, &SyncOptions{IO: io, Session: (&fake{}).session(), Approver: approver, Home: home, JSON: true}); err != nil || strings.TrimSpace(out.String()) != "{\n  \"teams\": []\n}" {
		t.Errorf("sync --json of no team: %q %v", out.String(), err)
	}

	// The service's errors are the command's, with their hints.
	nm := &hubsync.NotMemberError{Team: "acme", Account: true}
	if err := syncRun(ctx, &SyncOptions{IO: io, Session: (&fake{err: nm}).session(), Approver: approver, Home: home, Team: "acme"}); !errors.Is(err, nm) || !strings.Contains(cmdutil.Hint(err), "station team join CODE") {
		t.Errorf("sync of a team the account is not in: %v, hint %q", err, cmdutil.Hint(err))
	}
}

func TestJoin(t *testing.T) {
	ctx := context.Background()
	svc := &fake{team: hub.Team{Name: "acme", Role: "member"}, rep: &hubsync.Report{Team: "acme", Revision: 1, Installed: []hubsync.Result{{ID: "alice/hello", Version: "1.0.0"}}}}
	var reloaded []string
	io, out, _ := streams("  sti_code\n")
	opts := &JoinOptions{IO: io, Session: svc.session(), Approver: func(bool) hubsync.Approver { return nil }, Home: home, Code: "-",
		Reload: func(_ context.Context, id string) { reloaded = append(reloaded, id) }}
	if err := joinRun(ctx, opts); err != nil {
		t.Fatal(err)
	}
	want := "joined team acme as member\nteam acme: lockfile revision 1\n  installed alice/hello@1.0.0\n"
	if out.String() != want || strings.Join(svc.calls, ";") != "join sti_code" || strings.Join(reloaded, ",") != "alice/hello" {
		t.Errorf("join printed %q (calls %v, reloaded %v), want %q", out.String(), svc.calls, reloaded, want)
	}
	io, out, _ = streams("")
	opts.IO, opts.Code, opts.JSON = io, "sti_inline", true
	if err := joinRun(ctx, opts); err != nil {
		t.Fatal(err)
	}
	var res struct {
		Team, Role string
		Sync       map[string]any
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil || res.Team != "acme" || res.Role != "member" || res.Sync["revision"] != float64(1) || svc.calls[1] != "join sti_inline" {
		t.Errorf("join --json: %s (%v)", out.String(), err)
	}
	// Pending after the join: exit 5, with what was printed.
	svc.rep = report()
	io, out, _ = streams("")
	opts.IO, opts.JSON = io, false
	if err := joinRun(ctx, opts); cmdutil.ExitCode(err) != cmdutil.ExitDeclined || !strings.HasSuffix(out.String(), reportText) {
		t.Errorf("join with a pending change: %v\n%s", err, out.String())
	}
	want2 := errors.New("invite_invalid")
	if err := joinRun(ctx, &JoinOptions{IO: io, Session: (&fake{err: want2}).session(), Approver: opts.Approver, Home: home, Code: "x"}); !errors.Is(err, want2) {
		t.Errorf("join error: %v", err)
	}
}

func TestStatus(t *testing.T) {
	ctx := context.Background()
	at := time.Date(2026, 11, 29, 9, 4, 5, 0, time.UTC)
	teams := []hubsync.TeamStatus{
		{Name: "acme", HubURL: "https://hub.example.com", Role: "member", Revision: 2, SyncedAt: at, WorkflowDir: "/h/teams/acme/workflows",
			Pending: []hubsync.PendingChange{{Team: "acme", Module: "alice/hello", Version: "1.1.0", Revision: 2, FromVersion: "1.0.0", Escalations: []string{"may now connect to api.stripe.com"}, RecordedAt: at},
				{Team: "acme", Module: "alice/other", Version: "2.0.0", Revision: 2, Escalations: []string{"may run any program"}, RecordedAt: at, RejectedAt: at.Add(time.Hour)}}},
		{Name: "beta", HubURL: "https://hub.example.com", Role: "owner", Revision: -1, LastError: "alice/z@1.0.0: boom", WorkflowDir: "/h/teams/beta/workflows", Pending: []hubsync.PendingChange{}},
	}
	var asked string
	status := func(_ context.Context, team string) ([]hubsync.TeamStatus, error) { asked = team; return teams, nil }
	io, out, _ := streams("")
	if err := statusRun(ctx, &StatusOptions{IO: io, Status: status, Team: "acme"}); err != nil || asked != "acme" {
		t.Fatal(err)
	}
	want := "team acme (member) on https://hub.example.com: lockfile revision 2 applied at " + at.Local().Format(time.RFC3339) + `
  workflows in /h/teams/acme/workflows
  PENDING alice/hello@1.1.0 (revision 2; 1.0.0 keeps running); compared with what you approved, it:
    + may now connect to api.stripe.com
    approve: station team approve acme alice/hello, or reject: station team reject acme alice/hello
  REJECTED alice/other@2.0.0 (revision 2; not installed): station team approve acme alice/other to take it after all; compared with what you approved, it:
    + may run any program
  approve all with: station team sync acme (or --yes)
team beta (owner) on https://hub.example.com: lockfile not applied yet (station team sync)
  not applied: alice/z@1.0.0: boom
  workflows in /h/teams/beta/workflows
`
	if out.String() != want {
		t.Errorf("status printed\n%s\nwant\n%s", out.String(), want)
	}

	// --json: snake_case (WriteJSON checks it in tests), the revision
	// where a script looks for it, and the names the other team commands
	// use (team, hub, asks).
	io, out, _ = streams("")
	if err := statusRun(ctx, &StatusOptions{IO: io, Status: status, JSON: true}); err != nil {
		t.Fatal(err)
	}
	var got []map[string]any
	if err := json.Unmarshal(out.Bytes(), &got); err != nil || len(got) != 2 || got[0]["revision"] != float64(2) || got[0]["team"] != "acme" || got[0]["hub"] != "https://hub.example.com" {
		t.Fatalf("status --json: %s (%v)", out.String(), err)
	}
	p := got[0]["pending"].([]any)[0].(map[string]any)
	if _, rejected := p["rejected_at"]; p["from_version"] != "1.0.0" || p["revision"] != float64(2) || p["asks"].([]any)[0] != "may now connect to api.stripe.com" || rejected {
		t.Errorf("status --json pending: %v", p)
	}
	if r := got[0]["pending"].([]any)[1].(map[string]any); r["rejected_at"] != at.Add(time.Hour).Format(time.RFC3339) || r["module"] != "alice/other" {
		t.Errorf("status --json rejected: %v", r)
	}
	if _, ok := got[1]["synced_at"]; ok {
		t.Errorf("status --json of a team never synced has a synced_at: %v", got[1])
	}

	// No team: a note on stderr; [] with --json.
	none := func(context.Context, string) ([]hubsync.TeamStatus, error) { return nil, nil }
	io, out, errb := streams("")
	if err := statusRun(ctx, &StatusOptions{IO: io, Status: none}); err != nil || out.Len() != 0 || !strings.Contains(errb.String(), "this station belongs to no team") {
		t.Errorf("status of no team: %q %q %v", out.String(), errb.String(), err)
	}
	io, out, _ = streams("")
	if err := statusRun(ctx, &StatusOptions{IO: io, Status: none, JSON: true}); err != nil || strings.TrimSpace(out.String()) != "[]" {
		t.Errorf("status --json of no team: %q %v", out.String(), err)
	}
	nm := &hubsync.NotMemberError{Team: "acme"}
	err := statusRun(ctx, &StatusOptions{IO: io, Status: func(context.Context, string) ([]hubsync.TeamStatus, error) { return nil, nm }, Team: "acme"})
	if !errors.Is(err, nm) || cmdutil.Hint(err) != "station team status lists this station's teams" {
		t.Errorf("status of a team the station is not in: %v, hint %q", err, cmdutil.Hint(err))
	}
}

// TestApproveReject: approve hands the service the change asked for,
// prints what it asked and the sync, and reloads what was installed; a
// lockfile that moved on prints the sync and is an error; reject prints
// the change as recorded.
func TestApproveReject(t *testing.T) {
	ctx := context.Background()
	plan := &hubsync.Plan{Version: hub.Version{Module: "alice/hello", Version: "1.1.0"}, Escalations: []string{"may now connect to api.stripe.com"}}
	other := hubsync.Plan{Version: hub.Version{Module: "alice/other", Version: "2.0.0"}, Escalations: []string{"may run any program"}}
	svc := &fake{rep: &hubsync.Report{Team: "acme", Revision: 2, Installed: []hubsync.Result{{Plan: plan, ID: "alice/hello", Version: "1.1.0", Changed: true}},
		Pending: []hubsync.Plan{other}}}
	var reloaded []string
	io, out, _ := streams("")
	opts := &ApproveOptions{IO: io, Session: svc.session(), Home: home, Team: "acme", Module: "alice/hello",
		Reload: func(_ context.Context, id string) { reloaded = append(reloaded, id) }}
	if err := approveRun(ctx, opts); err != nil {
		t.Fatal(err)
	}
	want := `approved alice/hello@1.1.0 of team acme: it may now connect to api.stripe.com
team acme: lockfile revision 2
  installed alice/hello@1.1.0
  PENDING alice/other@2.0.0 needs your approval; it:
    + may run any program
`
	if out.String() != want || strings.Join(svc.calls, ";") != "approve acme alice/hello@" || strings.Join(reloaded, ",") != "alice/hello" {
		t.Errorf("approve printed\n%s\nwant\n%s(calls %v, reloaded %v)", out.String(), want, svc.calls, reloaded)
	}
	io, out, _ = streams("")
	opts.IO, opts.JSON, opts.Version = io, true, "1.1.0"
	if err := approveRun(ctx, opts); err != nil {
		t.Fatal(err)
	}
	var res map[string]any
	if err := json.Unmarshal(out.Bytes(), &res); err != nil || res["approved"] != true || res["version"] != "1.1.0" || res["asks"].([]any)[0] != "may now connect to api.stripe.com" ||
		res["sync"].(map[string]any)["revision"] != float64(2) || svc.calls[1] != "approve acme alice/hello@1.1.0" {
		t.Errorf("approve --json: %s (%v)", out.String(), err)
	}

	// The lockfile moved on: the sync is printed, nothing is approved.
	moved := &hubsync.MovedOnError{Team: "acme", Module: "alice/hello", Version: "1.1.0", Revision: 3, Pinned: "1.2.0", State: "waits for approval"}
	svc = &fake{rep: &hubsync.Report{Team: "acme", Revision: 3, Pending: []hubsync.Plan{{Version: hub.Version{Module: "alice/hello", Version: "1.2.0"}}}}, err: moved}
	io, out, _ = streams("")
	opts.IO, opts.Session, opts.JSON = io, svc.session(), false
	if err := approveRun(ctx, opts); !errors.Is(err, moved) || cmdutil.ExitCode(err) != cmdutil.ExitError || !strings.HasPrefix(out.String(), "team acme: lockfile revision 3\n  PENDING alice/hello@1.2.0") {
		t.Errorf("approve after the lockfile moved on: %v\n%s", err, out.String())
	}
	// Nothing pending: the error alone.
	np := &hubsync.NoPendingError{Team: "acme", Module: "alice/hello"}
	io, out, _ = streams("")
	opts.IO, opts.Session = io, (&fake{err: np}).session()
	if err := approveRun(ctx, opts); !errors.Is(err, np) || out.Len() != 0 {
		t.Errorf("approve of nothing pending: %v, printed %q", err, out.String())
	}

	at := time.Date(2026, 11, 29, 9, 4, 5, 0, time.UTC)
	var asked string
	reject := func(_ context.Context, team, module, version string) (hubsync.PendingChange, error) {
		asked = team + " " + module + "@" + version
		return hubsync.PendingChange{Team: "acme", Module: "alice/hello", Version: "1.1.0", Revision: 2, FromVersion: "1.0.0", Escalations: []string{"may now connect to api.stripe.com"}, RecordedAt: at, RejectedAt: at}, nil
	}
	io, out, _ = streams("")
	if err := rejectRun(ctx, &RejectOptions{IO: io, Reject: reject, Team: "acme", Module: "alice/hello"}); err != nil || asked != "acme alice/hello@" {
		t.Fatalf("reject: %v (asked %q)", err, asked)
	}
	want = `rejected alice/hello@1.1.0 of team acme; 1.0.0 keeps running
  syncs leave it rejected while the lockfile pins 1.1.0; another version waits for approval again
  to take it after all: station team approve acme alice/hello
`
	if out.String() != want {
		t.Errorf("reject printed\n%s\nwant\n%s", out.String(), want)
	}
	io, out, _ = streams("")
	if err := rejectRun(ctx, &RejectOptions{IO: io, Reject: reject, Team: "acme", Module: "alice/hello", JSON: true}); err != nil {
		t.Fatal(err)
	}
	res = nil
	if err := json.Unmarshal(out.Bytes(), &res); err != nil || res["team"] != "acme" || res["version"] != "1.1.0" || res["from_version"] != "1.0.0" || res["rejected_at"] != at.Format(time.RFC3339) {
		t.Errorf("reject --json: %s (%v)", out.String(), err)
	}
	if err := rejectRun(ctx, &RejectOptions{IO: io, Reject: func(context.Context, string, string, string) (hubsync.PendingChange, error) {
		return hubsync.PendingChange{}, np
	}}); !errors.Is(err, np) {
		t.Errorf("reject of nothing pending: %v", err)
	}
}

func TestCreateInviteLeave(t *testing.T) {
	ctx := context.Background()
	svc := &fake{team: hub.Team{Name: "acme", Role: "owner"}}
	io, out, errb := streams("")
	if err := createRun(ctx, &CreateOptions{IO: io, Session: svc.session(), Name: "acme"}); err != nil {
		t.Fatal(err)
	}
	if out.String() != "created team acme (you are its owner)\n" || errb.String() != "invite members with: station team invite acme\n" {
		t.Errorf("create printed %q and %q", out.String(), errb.String())
	}
	svc.tl = &hub.TeamLockfile{Team: "acme", Revision: 1, Lockfile: hub.Lockfile{Modules: []hub.LockedModule{{ID: "dave/stripe-invoicing", Version: "1.4.0"}}}}
	io, out, _ = streams("")
	if err := createRun(ctx, &CreateOptions{IO: io, Session: svc.session(), Name: "acme", FromInstalled: true}); err != nil || svc.calls[1] != "create acme true" {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "pushed lockfile revision 1: dave/stripe-invoicing@1.4.0\n") {
		t.Errorf("create --from-installed printed %q", out.String())
	}
	io, out, errb = streams("")
	if err := createRun(ctx, &CreateOptions{IO: io, Session: svc.session(), Name: "acme", JSON: true}); err != nil {
		t.Fatal(err)
	}
	var created map[string]any
	if err := json.Unmarshal(out.Bytes(), &created); err != nil || created["team"] != "acme" || created["role"] != "owner" || created["revision"] != float64(1) || errb.Len() != 0 {
		t.Errorf("create --json: %s %q (%v)", out.String(), errb.String(), err)
	}

	exp := time.Now().Add(7 * 24 * time.Hour)
	svc.invite = hub.Invite{ID: "3f9c2a7d41e0b865", Team: "acme", Code: "sti_secret", Role: "member", Account: "erin", ExpiresAt: exp}
	io, out, errb = streams("")
	if err := inviteRun(ctx, &InviteOptions{IO: io, Session: svc.session(), Team: "acme", Request: hub.InviteRequest{Account: "erin"}}); err != nil {
		t.Fatal(err)
	}
	// The code alone on stdout (it may be redirected to a file); the rest
	// on stderr.
	if out.String() != "sti_secret\n" || !strings.Contains(errb.String(), "invite to acme as member, valid until ") || strings.Contains(errb.String(), "sti_secret") {
		t.Errorf("invite printed %q and %q", out.String(), errb.String())
	}
	io, out, errb = streams("")
	if err := inviteRun(ctx, &InviteOptions{IO: io, Session: svc.session(), Team: "acme", JSON: true}); err != nil {
		t.Fatal(err)
	}
	var invited map[string]any
	if err := json.Unmarshal(out.Bytes(), &invited); err != nil || invited["code"] != "sti_secret" || invited["id"] != "3f9c2a7d41e0b865" || errb.Len() != 0 {
		t.Errorf("invite --json: %s %q (%v)", out.String(), errb.String(), err)
	}
	notOwner := &hubsync.InviteError{Team: "acme", Err: hub.Errorf(hub.CodeNotTeamOwner, "only an owner may invite")}
	if err := inviteRun(ctx, &InviteOptions{IO: io, Session: (&fake{err: notOwner}).session(), Team: "acme"}); !errors.Is(err, notOwner) || cmdutil.Hint(err) != "only owners make, see and revoke invites" {
		t.Errorf("invite by a member: %v, hint %q", err, cmdutil.Hint(err))
	}

	io, out, _ = streams("")
	if err := leaveRun(ctx, &LeaveOptions{IO: io, Session: svc.session(), Team: "acme"}); err != nil || out.String() != "left team acme; its modules stay installed (station module remove ID)\n" {
		t.Errorf("leave: %q %v", out.String(), err)
	}
	io, out, _ = streams("")
	if err := leaveRun(ctx, &LeaveOptions{IO: io, Session: svc.session(), Team: "acme", JSON: true}); err != nil || strings.TrimSpace(out.String()) != "{\n  \"team\": \"acme\"\n}" {
		t.Errorf("leave --json: %q %v", out.String(), err)
	}
	lastOwner := hub.Errorf(hub.CodeLastOwner, "the team would have no owner")
	if err := leaveRun(ctx, &LeaveOptions{IO: io, Session: (&fake{err: lastOwner}).session(), Team: "acme"}); hub.CodeOf(err) != hub.CodeLastOwner {
		t.Errorf("leave as the last owner: %v", err)
	}
}

func TestInvitesAndRevoke(t *testing.T) {
	ctx := context.Background()
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	invs := []hub.PendingInvite{
		{ID: "0123456789abcdef", Team: "acme", Role: "member", Account: "bob", CreatedBy: "alice", CreatedAt: at, ExpiresAt: at.Add(time.Hour)},
		{ID: "fedcba9876543210", Team: "acme", Role: "owner", CreatedBy: "alice", CreatedAt: at, ExpiresAt: at.Add(time.Hour)},
	}
	svc := &fake{invites: invs}
	io, out, errb := streams("")
	if err := invitesRun(ctx, &InvitesOptions{IO: io, Session: svc.session(), Team: "acme"}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "ID ") || !strings.Contains(lines[1], "member  bob") || !strings.Contains(lines[2], "owner   anyone with the code  alice") {
		t.Errorf("invites:\n%s", out.String())
	}
	if errb.String() != "revoke one with: station team invite revoke acme ID\n" {
		t.Errorf("invites stderr %q", errb.String())
	}
	io, out, _ = streams("")
	if err := invitesRun(ctx, &InvitesOptions{IO: io, Session: svc.session(), Team: "acme", JSON: true}); err != nil {
		t.Fatal(err)
	}
	var listed []map[string]any
	if err := json.Unmarshal(out.Bytes(), &listed); err != nil || len(listed) != 2 || listed[0]["created_by"] != "alice" || listed[0]["account"] != "bob" {
		t.Errorf("invites --json: %s (%v)", out.String(), err)
	}
	if _, ok := listed[0]["code"]; ok {
		t.Errorf("invites --json has a code: %s", out.String())
	}
	io, out, errb = streams("")
	if err := invitesRun(ctx, &InvitesOptions{IO: io, Session: (&fake{}).session(), Team: "acme"}); err != nil || out.Len() != 0 ||
		errb.String() != "team acme has no pending invites (make one with: station team invite acme)\n" {
		t.Errorf("no invites: %q %q %v", out.String(), errb.String(), err)
	}
	notFound := &hubsync.InviteError{Team: "acme", Err: hub.Errorf(hub.CodeInviteNotFound, "no pending invite")}
	if err := revokeRun(ctx, &RevokeOptions{IO: io, Session: (&fake{err: notFound}).session(), Team: "acme", ID: "0123456789abcdef"}); !errors.Is(err, notFound) ||
		cmdutil.Hint(err) != "station team invites acme lists the pending ones" {
		t.Errorf("revoke twice: %v, hint %q", err, cmdutil.Hint(err))
	}

	io, out, _ = streams("")
	if err := revokeRun(ctx, &RevokeOptions{IO: io, Session: svc.session(), Team: "acme", ID: invs[1].ID}); err != nil {
		t.Fatal(err)
	}
	if want := "revoked invite 0123456789abcdef of team acme: member, for bob, made by alice; its code no longer works\n"; out.String() != want || svc.calls[len(svc.calls)-1] != "revoke acme "+invs[1].ID {
		t.Errorf("revoke printed %q (calls %v), want %q", out.String(), svc.calls, want)
	}
	io, out, _ = streams("")
	if err := revokeRun(ctx, &RevokeOptions{IO: io, Session: svc.session(), Team: "acme", All: true, JSON: true}); err != nil {
		t.Fatal(err)
	}
	var revoked []hub.PendingInvite
	if err := json.Unmarshal(out.Bytes(), &revoked); err != nil || len(revoked) != 2 || svc.calls[len(svc.calls)-1] != "revoke all acme" {
		t.Errorf("revoke --all --json: %s (%v)", out.String(), err)
	}
	io, out, _ = streams("")
	if err := revokeRun(ctx, &RevokeOptions{IO: io, Session: (&fake{}).session(), Team: "acme", All: true}); err != nil || out.String() != "team acme had no pending invites; nothing was revoked\n" {
		t.Errorf("revoke --all of none: %q %v", out.String(), err)
	}
}

func TestPush(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	wf := filepath.Join(dir, "month-end.yaml")
	os.WriteFile(wf, []byte("name: month-end\n"), 0o600)
	tl := &hub.TeamLockfile{Team: "acme", Revision: 3, Lockfile: hub.Lockfile{
		Modules:   []hub.LockedModule{{ID: "alice/hello", Version: "1.1.0"}, {ID: "bob/x", Version: "2.0.0"}},
		Workflows: []hub.Workflow{{Name: "month-end"}}}}
	svc := &fake{tl: tl, rep: &hubsync.Report{Team: "acme", Revision: 3, Unchanged: []string{"alice/hello"}, Installed: []hubsync.Result{{ID: "bob/x", Version: "2.0.0"}}}}
	var reloaded []string
	io, out, _ := streams("")
	opts := &PushOptions{IO: io, Session: svc.session(), Home: home, Team: "acme", IDs: []string{"alice/hello"}, WorkflowFiles: []string{wf},
		Reload: func(_ context.Context, id string) { reloaded = append(reloaded, id) }}
	if err := pushRun(ctx, opts); err != nil {
		t.Fatal(err)
	}
	want := "pushed team acme lockfile revision 3: alice/hello@1.1.0, bob/x@2.0.0; workflows month-end\n  on this station:\n    installed bob/x@2.0.0\n"
	if out.String() != want {
		t.Errorf("push printed %q, want %q", out.String(), want)
	}
	if svc.calls[0] != "push acme alice/hello" || len(svc.workflow) != 1 || svc.workflow[0].Name != "month-end" || svc.workflow[0].Source != "name: month-end\n" ||
		svc.workflow[0].Digest != hub.Digest([]byte("name: month-end\n")) || strings.Join(reloaded, ",") != "bob/x" {
		t.Errorf("pushed %v with %+v, reloaded %v", svc.calls, svc.workflow, reloaded)
	}

	// Nothing changed here: one line. --json: the same, with applied_here.
	svc.rep = &hubsync.Report{Team: "acme", Revision: 3, Unchanged: []string{"alice/hello", "bob/x"}}
	io, out, _ = streams("")
	opts.IO, opts.WorkflowFiles = io, nil
	if err := pushRun(ctx, opts); err != nil || strings.Count(out.String(), "\n") != 1 {
		t.Errorf("push with nothing to apply here: %q %v", out.String(), err)
	}
	io, out, _ = streams("")
	opts.IO, opts.JSON = io, true
	if err := pushRun(ctx, opts); err != nil {
		t.Fatal(err)
	}
	var pushed struct {
		Team        string
		Revision    int
		Modules     []string
		AppliedHere map[string]any `json:"applied_here"`
	}
	if err := json.Unmarshal(out.Bytes(), &pushed); err != nil || pushed.Revision != 3 || len(pushed.Modules) != 2 || pushed.AppliedHere["revision"] != float64(3) {
		t.Errorf("push --json: %s (%v)", out.String(), err)
	}

	// Pushed, but applying it here failed: what was pushed is printed, the
	// error is the command's.
	applyErr := errors.New("team acme: revision 3 is pushed, but applying it on this station failed")
	svc = &fake{tl: tl, pushErr: applyErr}
	io, out, _ = streams("")
	if err := pushRun(ctx, &PushOptions{IO: io, Session: svc.session(), Home: home, Team: "acme"}); !errors.Is(err, applyErr) || !strings.HasPrefix(out.String(), "pushed team acme lockfile revision 3") {
		t.Errorf("push that failed to apply here: %q %v", out.String(), err)
	}
	// Not pushed: nothing printed.
	notOwner := hub.Errorf(hub.CodeNotTeamOwner, "only an owner may push")
	io, out, _ = streams("")
	if err := pushRun(ctx, &PushOptions{IO: io, Session: (&fake{err: notOwner}).session(), Home: home, Team: "acme"}); hub.CodeOf(err) != hub.CodeNotTeamOwner || out.Len() != 0 ||
		cmdutil.Hint(err) != "ask an owner of the team to push, or to make you an owner" {
		t.Errorf("push by a member: %q %v, hint %q", out.String(), err, cmdutil.Hint(err))
	}
	// A workflow file that cannot be read: before anything is asked.
	svc = &fake{tl: tl}
	if err := pushRun(ctx, &PushOptions{IO: io, Session: svc.session(), Home: home, Team: "acme", WorkflowFiles: []string{filepath.Join(dir, "missing.yaml")}}); err == nil || len(svc.calls) != 0 {
		t.Errorf("push of a missing workflow: %v, calls %v", err, svc.calls)
	}
}

// TestPrintersEscape feeds the hostile text through every field of what
// the team commands print (text and JSON): the hub's answers (teams,
// invites, lockfiles), sync reports, the station's team records.
func TestPrintersEscape(t *testing.T) {
	h := clitest.Hostile
	now := time.Now()
	sync := TeamSync{Team: h, Revision: 1, Installed: []ModuleVersion{{ID: h, Version: h}}, Unchanged: []string{h},
		Pending: []Pending{{Module: h, Version: h, Asks: []string{h}}}, Rejected: []Pending{{Module: h, Version: h, FromVersion: h, Asks: []string{h}}}, Failed: []Failure{{Module: h, Version: h, Error: h}}, Workflows: []string{h}, WorkflowDir: h}
	inv := hub.PendingInvite{ID: h, Team: h, Role: h, Account: h, CreatedBy: h, CreatedAt: now, ExpiresAt: now}
	for what, r := range map[string]cmdutil.Texter{
		"create":      CreateResult{Team: h, Role: h, Modules: []string{h}, pushed: true},
		"invite":      InviteResult{ID: h, Team: h, Code: h, Role: h, Account: h},
		"invites":     InvitesResult(safeInvites([]hub.PendingInvite{inv, {ID: h}})),
		"revoke":      RevokeResult{Team: h, Revoked: safeInvites([]hub.PendingInvite{inv})},
		"revoke none": RevokeResult{Team: h},
		"join":        JoinResult{Team: h, Role: h, Sync: &sync},
		"sync":        SyncResult{Teams: []TeamSync{sync}},
		"push":        PushResult{Team: h, Modules: []string{h}, Workflows: []string{h}, AppliedHere: &sync},
		"leave":       LeaveResult{Team: h},
		"approve":     ApproveResult{Team: h, Module: h, Version: h, Approved: true, Asks: []string{h}, Sync: &sync},
		"reject":      RejectResult{Team: h, Pending: Pending{Module: h, Version: h, FromVersion: h, Asks: []string{h}, RejectedAt: now}},
		"status": newStatusResult([]hubsync.TeamStatus{{Name: h, HubURL: h, Role: h, Revision: 1, SyncedAt: now, LastError: h, WorkflowDir: h,
			Pending: []hubsync.PendingChange{{Team: h, Module: h, Version: h, FromVersion: h, Escalations: []string{h}}, {Module: h, Version: h}, {Module: h, Version: h, FromVersion: h, RejectedAt: now}},
			Affected: []hubsync.Finding{{Module: h, Version: h, Yanked: true, YankReason: h,
				Advisories: []hubsync.AdvisoryFinding{{ID: h, Severity: h, Summary: h, FixedIn: h, Status: hubsync.StatusBlocked}, {ID: h, Summary: h, Status: hubsync.StatusAllowed}}}}}}),
	} {
		var buf bytes.Buffer
		if err := r.Text(&buf); err != nil {
			t.Fatal(err)
		}
		clitest.CheckPrinted(t, what, buf.String())
		buf.Reset()
		if err := cmdutil.WriteJSON(&buf, r); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if c := clitest.RawControl(buf.String()); c != "" || !json.Valid(buf.Bytes()) {
			t.Errorf("%s --json: %s in %q", what, c, buf.String())
		}
	}
}

// TestInvitesFromAHostileHub: what a hub sends for an invite reaches the
// terminal only through TermText, in the table and in the JSON, and the
// rest of the row is still shown (moved from internal/cli, where it ran
// against a hub server that answered so).
func TestInvitesFromAHostileHub(t *testing.T) {
	ctx := context.Background()
	evil := "\x1b]0;pwned\x07\x1b[2J\r\u202e"
	inv := hub.PendingInvite{ID: "0123456789abcdef" + evil, Team: "acme" + evil, Role: "owner" + evil, Account: "bob" + evil, CreatedBy: "alice" + evil}
	svc := &fake{invites: []hub.PendingInvite{inv}}
	for _, json := range []bool{false, true} {
		for name, run := range map[string]func(*cmdutil.IOStreams) error{
			"invites": func(io *cmdutil.IOStreams) error {
				return invitesRun(ctx, &InvitesOptions{IO: io, Session: svc.session(), Team: "acme", JSON: json})
			},
			"invite revoke": func(io *cmdutil.IOStreams) error {
				return revokeRun(ctx, &RevokeOptions{IO: io, Session: svc.session(), Team: "acme", ID: "0123456789abcdef", JSON: json})
			},
		} {
			io, out, errb := streams("")
			if err := run(io); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if strings.ContainsAny(out.String()+errb.String(), "\x1b\x07\r\u202e") {
				t.Errorf("%s (json %v) printed a control character from the hub:\n%q\n%q", name, json, out.String(), errb.String())
			}
			if !strings.Contains(out.String(), "alice") {
				t.Errorf("%s (json %v) printed %q", name, json, out.String())
			}
		}
	}
}
