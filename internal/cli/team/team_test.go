package team

import (
	"reflect"
	"strings"
	"testing"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/cli/clitest"
	"github.com/station-dev/station/internal/cli/cmdutil"
)

func TestFlags(t *testing.T) {
	f := clitest.Factory()
	for _, tc := range []struct {
		name string
		run  func(args ...string) (any, error)
		args []string
		want any
		code int
	}{
		{"create", func(a ...string) (any, error) {
			var o *CreateOptions
			err := clitest.Parse(NewCmdCreate(f, func(x *CreateOptions) error { o = x; return nil }), a...)
			return clean(o), err
		}, []string{"acme", "--from-installed", "--json"}, CreateOptions{Name: "acme", FromInstalled: true, JSON: true}, 0},
		{"invite", func(a ...string) (any, error) {
			var o *InviteOptions
			err := clitest.Parse(NewCmdInvite(f, func(x *InviteOptions) error { o = x; return nil }), a...)
			return clean(o), err
		}, []string{"acme", "--account", "erin", "--role", "owner", "--json"}, InviteOptions{Team: "acme", Request: hub.InviteRequest{Account: "erin", Role: "owner"}, JSON: true}, 0},
		{"invites", func(a ...string) (any, error) {
			var o *InvitesOptions
			err := clitest.Parse(NewCmdInvites(f, func(x *InvitesOptions) error { o = x; return nil }), a...)
			return clean(o), err
		}, []string{"acme", "--json"}, InvitesOptions{Team: "acme", JSON: true}, 0},
		{"revoke one", func(a ...string) (any, error) {
			var o *RevokeOptions
			err := clitest.Parse(NewCmdRevoke(f, func(x *RevokeOptions) error { o = x; return nil }), a...)
			return clean(o), err
		}, []string{"acme", "3f9c2a7d41e0b865"}, RevokeOptions{Team: "acme", ID: "3f9c2a7d41e0b865"}, 0},
		{"revoke all", func(a ...string) (any, error) {
			var o *RevokeOptions
			err := clitest.Parse(NewCmdRevoke(f, func(x *RevokeOptions) error { o = x; return nil }), a...)
			return clean(o), err
		}, []string{"acme", "--all", "--json"}, RevokeOptions{Team: "acme", All: true, JSON: true}, 0},
		{"join", func(a ...string) (any, error) {
			var o *JoinOptions
			err := clitest.Parse(NewCmdJoin(f, func(x *JoinOptions) error { o = x; return nil }), a...)
			return clean(o), err
		}, []string{"-", "-y", "--json"}, JoinOptions{Code: "-", Yes: true, JSON: true}, 0},
		{"sync", func(a ...string) (any, error) {
			var o *SyncOptions
			err := clitest.Parse(NewCmdSync(f, func(x *SyncOptions) error { o = x; return nil }), a...)
			return clean(o), err
		}, []string{"acme", "--yes"}, SyncOptions{Team: "acme", Yes: true}, 0},
		{"status", func(a ...string) (any, error) {
			var o *StatusOptions
			err := clitest.Parse(NewCmdStatus(f, func(x *StatusOptions) error { o = x; return nil }), a...)
			return clean(o), err
		}, []string{"--json"}, StatusOptions{JSON: true}, 0},
		{"approve", func(a ...string) (any, error) {
			var o *ApproveOptions
			err := clitest.Parse(NewCmdApprove(f, func(x *ApproveOptions) error { o = x; return nil }), a...)
			return clean(o), err
		}, []string{"acme", "alice/hello@1.1.0", "--json", "--allow-advisory", "STATION-2026-0001"},
			ApproveOptions{Overrides: cmdutil.Overrides{Advisories: []string{"STATION-2026-0001"}}, Team: "acme", Module: "alice/hello", Version: "1.1.0", JSON: true}, 0},
		{"reject", func(a ...string) (any, error) {
			var o *RejectOptions
			err := clitest.Parse(NewCmdReject(f, func(x *RejectOptions) error { o = x; return nil }), a...)
			return clean(o), err
		}, []string{"acme", "alice/hello"}, RejectOptions{Team: "acme", Module: "alice/hello"}, 0},
		{"push", func(a ...string) (any, error) {
			var o *PushOptions
			err := clitest.Parse(NewCmdPush(f, func(x *PushOptions) error { o = x; return nil }), a...)
			return clean(o), err
		}, []string{"acme", "dave/a", "dave/b", "--workflow", "m.yaml", "--workflow", "n.yml"}, PushOptions{Team: "acme", IDs: []string{"dave/a", "dave/b"}, WorkflowFiles: []string{"m.yaml", "n.yml"}}, 0},
		{"leave", func(a ...string) (any, error) {
			var o *LeaveOptions
			err := clitest.Parse(NewCmdLeave(f, func(x *LeaveOptions) error { o = x; return nil }), a...)
			return clean(o), err
		}, []string{"acme", "--json"}, LeaveOptions{Team: "acme", JSON: true}, 0},
	} {
		got, err := tc.run(tc.args...)
		if code := cmdutil.ExitCode(err); code != tc.code || (code == 0 && !reflect.DeepEqual(got, tc.want)) {
			t.Errorf("%s %q: %+v (exit %d, %v), want %+v", tc.name, tc.args, got, code, err, tc.want)
		}
	}

	// Usage errors, before anything runs, each naming what is missing.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"invite", "revoke", "acme"}, "TEAM ID"},
		{[]string{"invite", "revoke", "acme", "3f9c2a7d41e0b865", "--all"}, "--all needs exactly the TEAM argument"},
		{[]string{"invite", "revoke"}, "TEAM"},
		{[]string{"invites"}, "TEAM"},
		{[]string{"push"}, "needs at least 1 argument(s): TEAM [ID...] (got 0)"},
		{[]string{"sync", "a", "b"}, "at most 1 argument(s): TEAM"},
		{[]string{"status", "a", "b"}, "at most 1 argument(s): TEAM"},
		{[]string{"join"}, "CODE"},
		{[]string{"approve", "acme"}, "needs 2 argument(s): TEAM MODULE[@VERSION] (got 1)"},
		{[]string{"reject", "acme", "hello"}, `"hello" is not a module id`},
		{[]string{"approve", "acme", "alice/hello@"}, "names no version after @"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
	} {
		c := NewCmdTeam(clitest.Factory())
		err := clitest.Parse(c, tc.args...)
		if cmdutil.ExitCode(err) != cmdutil.ExitUsage || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("team %q: %v, want a usage error with %q", tc.args, err, tc.want)
		}
	}
	// A team named "revoke" is still invited to, after "--"; "revoke"
	// alone is the subcommand.
	var invited *InviteOptions
	revoked := false
	invite := NewCmdInvite(f, func(o *InviteOptions) error { invited = o; return nil })
	invite.AddCommand(NewCmdRevoke(f, func(*RevokeOptions) error { revoked = true; return nil }))
	if err := clitest.Parse(invite, "--", "revoke"); err != nil || invited == nil || invited.Team != "revoke" || revoked {
		t.Errorf("team invite -- revoke: %v, %+v, revoke ran: %v", err, invited, revoked)
	}
	invited = nil
	if err := clitest.Parse(invite, "revoke", "acme", "--all"); err != nil || invited != nil || !revoked {
		t.Errorf("team invite revoke acme --all: %v, invite ran: %v, revoke ran: %v", err, invited != nil, revoked)
	}
}

// clean returns the options *o points to without their dependencies
// (streams and funcs), for comparing what was parsed.
func clean(o any) any {
	v := reflect.ValueOf(o)
	if v.IsNil() {
		return nil
	}
	v = v.Elem()
	out := reflect.New(v.Type()).Elem()
	out.Set(v)
	for i := range out.NumField() {
		if k := out.Field(i).Kind(); k == reflect.Func || k == reflect.Pointer {
			out.Field(i).SetZero()
		}
	}
	return out.Interface()
}
