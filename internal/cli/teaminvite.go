package cli

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/cli/cmdutil"
)

// addInviteCommands adds what an owner does with a team's pending invites:
// `station team invites TEAM` lists them and `station team invite revoke`
// revokes them. team is the `station team` command, whose `invite`
// subcommand makes invites.
func (a *app) addInviteCommands(team *cobra.Command) {
	team.AddCommand(a.teamInvitesCmd())
	for _, c := range team.Commands() {
		if c.Name() == "invite" {
			c.AddCommand(a.teamInviteRevokeCmd())
		}
	}
}

func (a *app) teamInvitesCmd() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "invites TEAM",
		Short: "List a team's pending invites (owners)",
		Long: `Invites lists the team's pending invites — made, neither used nor expired —
with the id to revoke each by, the role it grants, who may use it (one account
or anyone holding the code), the owner who made it and when it expires. Codes
are never shown: the hub keeps only their hashes, and a code is printed once,
by 'station team invite'.

An invite lasts only while the owner who made it is an owner of the team:
when they are demoted, removed or leave, their invites are revoked.`,
		Example: "  station team invites acme\n  station team invites acme --json",
		Args:    cmdutil.ExactArgs(1, "TEAM"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			sess, err := a.HubSession(ctx)
			if err != nil {
				return err
			}
			invs, err := sess.Client.Invites(ctx, args[0])
			if err != nil {
				return inviteError(err, args[0])
			}
			invs = safeInvites(invs)
			if asJSON {
				return cmdutil.WriteJSON(a.IO.Out, invs)
			}
			if len(invs) == 0 {
				fmt.Fprintf(a.IO.Err, "team %s has no pending invites (make one with: station team invite %s)\n", args[0], args[0])
				return nil
			}
			printInvites(a.IO.Out, invs)
			fmt.Fprintf(a.IO.Err, "revoke one with: station team invite revoke %s ID\n", args[0])
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return c
}

func (a *app) teamInviteRevokeCmd() *cobra.Command {
	var all, asJSON bool
	c := &cobra.Command{
		Use:   "revoke TEAM ID | revoke TEAM --all",
		Short: "Revoke a pending invite of a team, or all of them (owners)",
		Long: `Revoke makes a pending invite's code stop working at once: the one with ID
(from 'station team invites'), or with --all every pending invite of the team —
for instance when a code may have leaked. Members who joined with an invite
stay members.

(To make an invite to a team named "revoke", write: station team invite -- revoke.)`,
		Example: "  station team invite revoke acme 3f9c2a7d41e0b865\n  station team invite revoke acme --all",
		Args: func(cmd *cobra.Command, args []string) error {
			switch {
			case all && len(args) != 1:
				return cmdutil.Usagef("%s --all needs exactly the TEAM argument (got %d arguments)", cmd.CommandPath(), len(args))
			case !all && len(args) != 2:
				return cmdutil.Usagef("%s needs 2 arguments: TEAM ID (or TEAM --all; the ids are in station team invites TEAM), got %d", cmd.CommandPath(), len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			sess, err := a.HubSession(ctx)
			if err != nil {
				return err
			}
			team := args[0]
			var revoked []hub.PendingInvite
			if all {
				revoked, err = sess.Client.RevokeInvites(ctx, team)
			} else {
				var inv hub.PendingInvite
				inv, err = sess.Client.RevokeInvite(ctx, team, args[1])
				revoked = []hub.PendingInvite{inv}
			}
			if err != nil {
				return inviteError(err, team)
			}
			revoked = safeInvites(revoked)
			if asJSON {
				return cmdutil.WriteJSON(a.IO.Out, revoked)
			}
			if len(revoked) == 0 {
				fmt.Fprintf(a.IO.Out, "team %s had no pending invites; nothing was revoked\n", team)
				return nil
			}
			for _, inv := range revoked {
				fmt.Fprintf(a.IO.Out, "revoked invite %s of team %s: %s, for %s, made by %s; its code no longer works\n",
					inv.ID, inv.Team, inv.Role, inviteFor(inv), inv.CreatedBy)
			}
			return nil
		},
	}
	c.Flags().BoolVar(&all, "all", false, "revoke every pending invite of the team")
	c.Flags().BoolVar(&asJSON, "json", false, "print what was revoked as JSON")
	return c
}

// safeInvites passes every string the hub sent through termText, for the
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

func printInvites(w io.Writer, invs []hub.PendingInvite) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tROLE\tFOR\tMADE BY\tCREATED\tEXPIRES")
	for _, inv := range invs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", inv.ID, inv.Role, inviteFor(inv), inv.CreatedBy,
			inv.CreatedAt.Local().Format(time.RFC3339), inv.ExpiresAt.Local().Format(time.RFC3339))
	}
	tw.Flush()
}

// inviteError adds what to do to the invite commands' errors.
func inviteError(err error, team string) error {
	switch hub.CodeOf(err) {
	case hub.CodeInviteNotFound:
		return fmt.Errorf("%w (station team invites %s lists the pending ones)", err, team)
	case hub.CodeNotTeamOwner:
		return fmt.Errorf("%w (only owners see and revoke invites)", err)
	case hub.CodeTeamNotFound:
		return fmt.Errorf("%w (station team status lists this station's teams)", err)
	}
	return hubError(err)
}
