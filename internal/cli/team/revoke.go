package team

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/cli/cmdutil"
)

// RevokeOptions are what `station team invite revoke` was asked to do.
type RevokeOptions struct {
	IO      *cmdutil.IOStreams
	Session func(context.Context) (Service, error)
	Team    string
	ID      string // "" with --all
	All     bool   // --all
	JSON    bool
}

// NewCmdRevoke returns `station team invite revoke`.
func NewCmdRevoke(f *cmdutil.Factory, runF func(*RevokeOptions) error) *cobra.Command {
	opts := &RevokeOptions{IO: &f.IO, Session: session(f)}
	c := &cobra.Command{
		Use:   "revoke TEAM (ID | --all)",
		Short: "Revoke a pending invite of a team, or all of them (owners)",
		Long: `Revoke makes a pending invite's code stop working at once: the one with ID
(from 'station team invites'), or with --all every pending invite of the team —
for instance when a code may have leaked. Members who joined with an invite
stay members.

With --json: the invites revoked, as 'station team invites --json' lists them.

(To make an invite to a team named "revoke", write: station team invite -- revoke.)`,
		Example: "  station team invite revoke acme 3f9c2a7d41e0b865\n  station team invite revoke acme --all",
		Args: func(cmd *cobra.Command, args []string) error {
			switch {
			case opts.All && len(args) != 1:
				return cmdutil.Usagef("%s --all needs exactly the TEAM argument (got %d arguments)", cmd.CommandPath(), len(args))
			case !opts.All && len(args) != 2:
				return cmdutil.Usagef("%s needs 2 arguments: TEAM ID (or TEAM --all; the ids are in station team invites TEAM), got %d", cmd.CommandPath(), len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Team = args[0]
			if len(args) == 2 {
				opts.ID = args[1]
			}
			if runF != nil {
				return runF(opts)
			}
			return revokeRun(cmd.Context(), opts)
		},
	}
	c.Flags().BoolVar(&opts.All, "all", false, "revoke every pending invite of the team")
	cmdutil.AddJSONFlag(c, &opts.JSON)
	return c
}

// RevokeResult are the invites revoked of a team (sanitised as
// InvitesResult). --json prints the list alone, Revoked, as
// 'station team invites --json' lists invites.
type RevokeResult struct {
	Team    string              `json:"team"`
	Revoked []hub.PendingInvite `json:"revoked"`
}

// Text implements cmdutil.Texter.
func (r RevokeResult) Text(w io.Writer) error {
	if len(r.Revoked) == 0 {
		_, err := fmt.Fprintf(w, "team %s had no pending invites; nothing was revoked\n", cmdutil.TermText(r.Team))
		return err
	}
	for _, inv := range r.Revoked {
		fmt.Fprintf(w, "revoked invite %s of team %s: %s, for %s, made by %s; its code no longer works\n",
			inv.ID, inv.Team, inv.Role, inviteFor(inv), inv.CreatedBy)
	}
	return nil
}

func revokeRun(ctx context.Context, opts *RevokeOptions) error {
	s, err := opts.Session(ctx)
	if err != nil {
		return err
	}
	var revoked []hub.PendingInvite
	if opts.All {
		revoked, err = s.RevokeInvites(ctx, opts.Team)
	} else {
		var inv hub.PendingInvite
		inv, err = s.RevokeInvite(ctx, opts.Team, opts.ID)
		revoked = []hub.PendingInvite{inv}
	}
	if err != nil {
		return err
	}
	res := RevokeResult{Team: opts.Team, Revoked: safeInvites(revoked)}
	if opts.JSON {
		return cmdutil.WriteJSON(opts.IO.Out, res.Revoked)
	}
	return res.Text(opts.IO.Out)
}
