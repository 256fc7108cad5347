package team

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/cli/cmdutil"
)

// InvitesOptions are what `station team invites` was asked to do.
type InvitesOptions struct {
	IO      *cmdutil.IOStreams
	Session func(context.Context) (Service, error)
	Team    string
	JSON    bool
}

// NewCmdInvites returns `station team invites`.
func NewCmdInvites(f *cmdutil.Factory, runF func(*InvitesOptions) error) *cobra.Command {
	opts := &InvitesOptions{IO: &f.IO, Session: session(f)}
	c := &cobra.Command{
		Use:   "invites TEAM",
		Short: "List a team's pending invites (owners)",
		Long: `Invites lists the team's pending invites — made, neither used nor expired —
with the id to revoke each by, the role it grants, who may use it (one account
or anyone holding the code), the owner who made it and when it expires. Codes
are never shown: the hub keeps only their hashes, and a code is printed once,
by 'station team invite'.

An invite lasts only while the owner who made it is an owner of the team:
when they are demoted, removed or leave, their invites are revoked.

With --json: [{"id", "team", "role", "account", "created_by", "created_at",
"expires_at"}].`,
		Example: "  station team invites acme\n  station team invites acme --json",
		Args:    cmdutil.ExactArgs(1, "TEAM"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Team = args[0]
			if runF != nil {
				return runF(opts)
			}
			return invitesRun(cmd.Context(), opts)
		},
	}
	cmdutil.AddJSONFlag(c, &opts.JSON)
	return c
}

// InvitesResult are pending invites, every string the hub sent in them
// passed through cmdutil.TermText (safeInvites).
type InvitesResult []hub.PendingInvite

// Text implements cmdutil.Texter: a table.
func (r InvitesResult) Text(w io.Writer) error {
	tw := cmdutil.NewTable(w)
	fmt.Fprintln(tw, "ID\tROLE\tFOR\tMADE BY\tCREATED\tEXPIRES")
	for _, inv := range r {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", inv.ID, inv.Role, inviteFor(inv), inv.CreatedBy,
			inv.CreatedAt.Local().Format(time.RFC3339), inv.ExpiresAt.Local().Format(time.RFC3339))
	}
	return tw.Flush()
}

func invitesRun(ctx context.Context, opts *InvitesOptions) error {
	s, err := opts.Session(ctx)
	if err != nil {
		return err
	}
	invs, err := s.Invites(ctx, opts.Team)
	if err != nil {
		return err
	}
	res := InvitesResult(safeInvites(invs))
	team := cmdutil.TermText(opts.Team)
	if len(res) == 0 && !opts.JSON {
		fmt.Fprintf(opts.IO.Err, "team %s has no pending invites (make one with: station team invite %s)\n", team, team)
		return nil
	}
	if err := cmdutil.Print(opts.IO.Out, opts.JSON, res); err != nil || opts.JSON {
		return err
	}
	fmt.Fprintf(opts.IO.Err, "revoke one with: station team invite revoke %s ID\n", team)
	return nil
}

// safeInvites passes every string the hub sent through TermText, for the
// table and the JSON alike: an honest hub's ids, names and roles are
// unchanged by it.
func safeInvites(invs []hub.PendingInvite) []hub.PendingInvite {
	out := make([]hub.PendingInvite, len(invs))
	for i, inv := range invs {
		inv.ID, inv.Team, inv.Role = cmdutil.TermText(inv.ID), cmdutil.TermText(inv.Team), cmdutil.TermText(inv.Role)
		inv.Account, inv.CreatedBy = cmdutil.TermText(inv.Account), cmdutil.TermText(inv.CreatedBy)
		out[i] = inv
	}
	return out
}

func inviteFor(inv hub.PendingInvite) string {
	if inv.Account == "" {
		return "anyone with the code"
	}
	return inv.Account
}
