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

// InviteOptions are what `station team invite` was asked to do.
type InviteOptions struct {
	IO      *cmdutil.IOStreams
	Session func(context.Context) (Service, error)
	Team    string
	Request hub.InviteRequest // --account, --role
	JSON    bool
}

// NewCmdInvite returns `station team invite` (its subcommand revoke is
// NewCmdRevoke).
func NewCmdInvite(f *cmdutil.Factory, runF func(*InviteOptions) error) *cobra.Command {
	opts := &InviteOptions{IO: &f.IO, Session: session(f)}
	c := &cobra.Command{
		Use:   "invite TEAM",
		Short: "Make an invite code for a team (owners)",
		Long: `Invite prints a one-time invite code on standard output. Give it to the
person joining over a private channel: whoever holds it may join (only
--account, if set). It expires after 7 days. 'station team invites TEAM' lists
the pending invites, 'station team invite revoke TEAM ID' cancels one.

With --json: {"id", "team", "code", "role", "account", "expires_at"} — the
code too, printed this once.`,
		Example: "  station team invite acme --account erin\n  station team invite acme --role owner > invite.txt",
		Args:    cmdutil.ExactArgs(1, "TEAM"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Team = args[0]
			if runF != nil {
				return runF(opts)
			}
			return inviteRun(cmd.Context(), opts)
		},
	}
	c.Flags().StringVar(&opts.Request.Account, "account", "", "only this account may use the code")
	c.Flags().StringVar(&opts.Request.Role, "role", "", "role of the new member: member (default) or owner")
	cmdutil.AddJSONFlag(c, &opts.JSON)
	return c
}

// InviteResult is the invite made, with its code.
type InviteResult hub.Invite

// Text implements cmdutil.Texter: the code alone, so that it can be
// redirected to a file. The hub supplied it.
func (r InviteResult) Text(w io.Writer) error {
	_, err := fmt.Fprintln(w, cmdutil.TermText(r.Code))
	return err
}

func inviteRun(ctx context.Context, opts *InviteOptions) error {
	s, err := opts.Session(ctx)
	if err != nil {
		return err
	}
	inv, err := s.Invite(ctx, opts.Team, opts.Request)
	if err != nil {
		return err
	}
	if !opts.JSON {
		fmt.Fprintf(opts.IO.Err, "invite to %s as %s, valid until %s; join with: station team join - (code on stdin)\n",
			cmdutil.TermText(inv.Team), cmdutil.TermText(inv.Role), inv.ExpiresAt.Local().Format(time.RFC3339))
	}
	return cmdutil.Print(opts.IO.Out, opts.JSON, InviteResult(inv))
}
