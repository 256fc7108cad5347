// Package team is `station team`: share a pinned set of modules and
// workflows with a team through the hub — create, invite, invites, invite
// revoke, join, sync, status, approve, reject, push, leave. Each command is a file: its
// options, its constructor (with a run hook for tests of its flags) and
// its run function, which calls one hubsync method and prints a typed
// result as text or, with --json, as JSON.
package team

import (
	"context"
	"strings"

	"github.com/spf13/cobra"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/hubsync"
)

// NewCmdTeam returns `station team` with its subcommands.
func NewCmdTeam(f *cmdutil.Factory) *cobra.Command {
	c := &cobra.Command{
		Use:   "team",
		Short: "Share a pinned set of modules and workflows with a team through the hub",
		Long: `A team shares a lockfile on the hub: modules pinned to a version and its
digests with the permissions the team approved, and workflows. Owners push it
(station team push); every member's station applies it (station team sync, or
a running daemon as soon as the hub relays a push).

Anything that asks for more than this station approved — a new module that
may do anything, a new host, a program, a wider write glob — still needs
approval here: the daemon records it as pending and keeps the approved version
running, 'station team status' shows the difference, and 'station team sync'
asks (or approves with --yes); 'station team approve' takes one change and
'station team reject' refuses one (the approved version keeps running, and
the change is not asked about again while the lockfile pins it). Modules
installed here but not in the lockfile are left alone.`,
		Example: `  station team create acme
  station team invite acme --account erin
  station team join - < invite.txt
  station team status`,
	}
	invite := NewCmdInvite(f, nil)
	invite.AddCommand(NewCmdRevoke(f, nil))
	c.AddCommand(NewCmdCreate(f, nil), invite, NewCmdInvites(f, nil), NewCmdJoin(f, nil), NewCmdSync(f, nil),
		NewCmdStatus(f, nil), NewCmdApprove(f, nil), NewCmdReject(f, nil), NewCmdPush(f, nil), NewCmdLeave(f, nil))
	return cmdutil.Group(c)
}

// Service is what the team commands ask of the station's hub session
// (*hubsync.Session).
type Service interface {
	CreateTeam(ctx context.Context, name string, fromInstalled bool) (hub.Team, *hub.TeamLockfile, error)
	Invite(ctx context.Context, team string, req hub.InviteRequest) (hub.Invite, error)
	Invites(ctx context.Context, team string) ([]hub.PendingInvite, error)
	RevokeInvite(ctx context.Context, team, id string) (hub.PendingInvite, error)
	RevokeInvites(ctx context.Context, team string) ([]hub.PendingInvite, error)
	Join(ctx context.Context, code string, approve hubsync.Approver) (hub.Team, *hubsync.Report, error)
	SyncTeams(ctx context.Context, team string, approve hubsync.Approver) ([]*hubsync.Report, error)
	ApprovePending(ctx context.Context, team, module, version string) (*hubsync.Report, error)
	Push(ctx context.Context, team string, ids []string, workflows []hub.Workflow) (hub.TeamLockfile, *hubsync.Report, error)
	Leave(ctx context.Context, team string) error
}

// session opens the Factory's station and its hub login.
func session(f *cmdutil.Factory) func(context.Context) (Service, error) {
	return sessionWith(f, nil)
}

// sessionWith is session with the operator's overrides (nil: none).
func sessionWith(f *cmdutil.Factory, o *cmdutil.Overrides) func(context.Context) (Service, error) {
	return func(ctx context.Context) (Service, error) {
		s, err := f.HubSession(ctx)
		if err != nil {
			return nil, err
		}
		if o != nil {
			if err := o.Apply(s); err != nil {
				return nil, err
			}
		}
		return s, nil
	}
}

// approver is how a sync asks: --yes approves, a terminal asks, and
// otherwise (nil) escalations stay pending.
func approver(f *cmdutil.Factory) func(yes bool) hubsync.Approver {
	return func(yes bool) hubsync.Approver {
		if !yes && !f.IO.IsTerminal {
			return nil
		}
		return f.HubApprover(yes, cmdutil.AskOrDecline, "apply")
	}
}

// lockedNames lists a lockfile's modules as the hub answered them.
func lockedNames(l hub.Lockfile) []string {
	names := make([]string, len(l.Modules))
	for i, m := range l.Modules {
		names[i] = m.ID + "@" + m.Version
	}
	return names
}

// namesText is names for a line of text: "no modules" for none.
func namesText(names []string) string {
	if len(names) == 0 {
		return "no modules"
	}
	return strings.Join(cmdutil.TermList(names), ", ")
}
