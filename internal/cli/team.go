package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/hubsync"
	"github.com/station-dev/station/internal/station"
	"github.com/station-dev/station/internal/store"
)

func (a *app) teamCmd() *cobra.Command {
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
asks (or approves with --yes). Modules installed here but not in the lockfile
are left alone.`,
	}
	c.AddCommand(a.teamCreateCmd(), a.teamInviteCmd(), a.teamJoinCmd(), a.teamSyncCmd(), a.teamStatusCmd(), a.teamPushCmd(), a.teamLeaveCmd())
	a.addInviteCommands(c) // station team invites, station team invite revoke (teaminvite.go)
	return c
}

func (a *app) teamCreateCmd() *cobra.Command {
	var fromInstalled bool
	c := &cobra.Command{
		Use:   "create NAME",
		Short: "Create a team you own",
		Long: `Create makes a team on the hub with you as its owner. Its lockfile starts
empty; with --from-installed it is the modules this station installed from the
hub, at their installed versions with the permissions you approved.`,
		Example: "  station team create acme\n  station team create acme --from-installed",
		Args:    cmdutil.ExactArgs(1, "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			sess, err := a.HubSession(ctx)
			if err != nil {
				return err
			}
			t, tl, err := sess.CreateTeam(ctx, args[0], fromInstalled)
			if err != nil {
				return hubError(err)
			}
			fmt.Fprintf(a.IO.Out, "created team %s (you are its %s)\n", cmdutil.TermText(t.Name), cmdutil.TermText(t.Role))
			if tl != nil {
				fmt.Fprintf(a.IO.Out, "pushed lockfile revision %d: %s\n", tl.Revision, lockedNames(tl.Lockfile))
			}
			fmt.Fprintf(a.IO.Err, "invite members with: station team invite %s\n", cmdutil.TermText(t.Name))
			return nil
		},
	}
	c.Flags().BoolVar(&fromInstalled, "from-installed", false, "start the lockfile with this station's hub-installed modules")
	return c
}

// lockedNames lists a lockfile's modules as the hub answered them.
func lockedNames(l hub.Lockfile) string {
	if len(l.Modules) == 0 {
		return "no modules"
	}
	names := make([]string, len(l.Modules))
	for i, m := range l.Modules {
		names[i] = cmdutil.TermText(m.ID + "@" + m.Version)
	}
	return strings.Join(names, ", ")
}

func (a *app) teamInviteCmd() *cobra.Command {
	var req hub.InviteRequest
	c := &cobra.Command{
		Use:   "invite TEAM",
		Short: "Make an invite code for a team (owners)",
		Long: `Invite prints a one-time invite code on standard output. Give it to the
person joining over a private channel: whoever holds it may join (only
--account, if set). It expires after 7 days.`,
		Example: "  station team invite acme --account erin",
		Args:    cmdutil.ExactArgs(1, "TEAM"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			sess, err := a.HubSession(ctx)
			if err != nil {
				return err
			}
			inv, err := sess.Client.Invite(ctx, args[0], req)
			if err != nil {
				return hubError(err)
			}
			fmt.Fprintf(a.IO.Err, "invite to %s as %s, valid until %s; join with: station team join - (code on stdin)\n", cmdutil.TermText(inv.Team), cmdutil.TermText(inv.Role), inv.ExpiresAt.Local().Format(time.RFC3339))
			fmt.Fprintln(a.IO.Out, cmdutil.TermText(inv.Code))
			return nil
		},
	}
	c.Flags().StringVar(&req.Account, "account", "", "only this account may use the code")
	c.Flags().StringVar(&req.Role, "role", "", "role of the new member: member (default) or owner")
	return c
}

func (a *app) teamJoinCmd() *cobra.Command {
	var yes bool
	c := &cobra.Command{
		Use:   "join CODE|-",
		Short: "Join a team with an invite code and apply its lockfile",
		Long: `Join uses an invite code ("-" reads it from standard input, which keeps it out
of shell history) and applies the team's lockfile like 'station team sync'.`,
		Example: "  station team join - < invite.txt",
		Args:    cmdutil.ExactArgs(1, "CODE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			code := args[0]
			if code == "-" {
				b, err := io.ReadAll(io.LimitReader(a.IO.In, 4096))
				if err != nil {
					return fmt.Errorf("team join: read the code: %w", err)
				}
				code = strings.TrimSpace(string(b))
			}
			ctx := cmd.Context()
			sess, err := a.HubSession(ctx)
			if err != nil {
				return err
			}
			t, rep, err := sess.Join(ctx, code, a.syncApprover(yes))
			if err != nil {
				return hubError(err)
			}
			fmt.Fprintf(a.IO.Out, "joined team %s as %s\n", cmdutil.TermText(t.Name), cmdutil.TermText(t.Role))
			return a.finishSync(ctx, []*hubsync.Report{rep})
		},
	}
	c.Flags().BoolVarP(&yes, "yes", "y", false, "approve what the team's modules ask for without asking")
	return c
}

// syncApprover approves with --yes, asks on a terminal, and otherwise
// leaves escalations pending (nil).
func (a *app) syncApprover(yes bool) hubsync.Approver {
	if !yes && !a.IO.IsTerminal {
		return nil
	}
	return a.HubApprover(yes, cmdutil.AskOrDecline, "apply")
}

func (a *app) teamSyncCmd() *cobra.Command {
	var yes bool
	c := &cobra.Command{
		Use:   "sync [TEAM]",
		Short: "Apply the team lockfile on this station",
		Long: `Sync applies the current lockfile of TEAM (or of every team this account
belongs to): modules are installed at their pinned versions and digests, and
the team's workflows are written to STATION_HOME/teams/TEAM/workflows/.
Changes within what this station approved apply at once. Changes that ask for
more are shown with the difference and approved on a terminal or with --yes;
otherwise they stay pending (exit code 5) and the approved version keeps
running. Modules installed here but absent from the lockfile are left alone.`,
		Example: "  station team sync\n  station team sync acme --yes",
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			sess, err := a.HubSession(ctx)
			if err != nil {
				return err
			}
			teams, err := sess.RefreshTeams(ctx)
			if err != nil {
				return hubError(err)
			}
			var names []string
			for _, t := range teams {
				if len(args) == 0 || t.Name == args[0] {
					names = append(names, t.Name)
				}
			}
			if len(args) == 1 && len(names) == 0 {
				return fmt.Errorf("team sync: this account is not a member of team %s (station team join CODE)", cmdutil.TermText(args[0]))
			}
			if len(names) == 0 {
				fmt.Fprintln(a.IO.Err, "this account belongs to no team (station team create NAME, station team join CODE)")
				return nil
			}
			var reps []*hubsync.Report
			for _, n := range names {
				rep, err := sess.Sync(ctx, n, a.syncApprover(yes))
				if err != nil {
					return hubError(err)
				}
				reps = append(reps, rep)
			}
			return a.finishSync(ctx, reps)
		},
	}
	c.Flags().BoolVarP(&yes, "yes", "y", false, "approve what the lockfile asks for without asking")
	return c
}

// finishSync prints what syncs did, tells a running daemon, and turns
// failures and pending changes into the exit code. Names, versions,
// differences and failures come from the hub and its lockfile.
func (a *app) finishSync(ctx context.Context, reps []*hubsync.Report) error {
	var errs []error
	pending := 0
	home, _ := a.HomeDir()
	for _, rep := range reps {
		if rep == nil {
			continue
		}
		w := a.IO.Out
		fmt.Fprintf(w, "team %s: lockfile revision %d\n", cmdutil.TermText(rep.Team), rep.Revision)
		for _, r := range rep.Installed {
			fmt.Fprintf(w, "  installed %s@%s\n", cmdutil.TermText(r.ID), cmdutil.TermText(r.Version))
			a.ReloadInDaemon(ctx, r.ID)
		}
		for _, id := range rep.Unchanged {
			fmt.Fprintf(w, "  up to date %s\n", cmdutil.TermText(id))
		}
		for _, p := range rep.Pending {
			pending++
			fmt.Fprintf(w, "  PENDING %s@%s needs your approval; it:\n", cmdutil.TermText(p.Version.Module), cmdutil.TermText(p.Version.Version))
			for _, d := range p.Differences() {
				fmt.Fprintf(w, "    + %s\n", cmdutil.TermText(d))
			}
		}
		for _, f := range rep.Failed {
			fmt.Fprintf(w, "  FAILED %s\n", cmdutil.TermText(f.Error()))
			errs = append(errs, f)
		}
		if len(rep.Workflows) > 0 {
			fmt.Fprintf(w, "  workflows: %s (in %s)\n", strings.Join(cmdutil.TermList(rep.Workflows), ", "), cmdutil.TermText(hubsync.WorkflowDir(home, rep.Team)))
		}
	}
	if pending > 0 {
		errs = append(errs, fmt.Errorf("%d team change(s) wait for your approval; the approved versions keep running (review them, then: station team sync --yes): %w", pending, station.ErrNotApproved))
	}
	return errors.Join(errs...)
}

func (a *app) teamStatusCmd() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "status [TEAM]",
		Short: "Show this station's teams, the lockfile revision applied and pending changes",
		Long: `Status reads this station's records (no hub needed): each team, its role, the
lockfile revision last applied, why the last sync did not apply everything,
and the changes waiting for approval with what each asks beyond the approved
version, which keeps running meanwhile.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			s, err := a.Open(ctx)
			if err != nil {
				return err
			}
			teams, err := s.Store.HubTeams(ctx)
			if err != nil {
				return err
			}
			team := ""
			if len(args) == 1 {
				team = args[0]
			}
			pend, err := s.Store.HubPendings(ctx, team)
			if err != nil {
				return err
			}
			type teamJSON struct {
				store.HubTeam
				Pending []store.HubPending
			}
			var out []teamJSON
			for _, t := range teams {
				if team != "" && t.Name != team {
					continue
				}
				tj := teamJSON{HubTeam: t, Pending: []store.HubPending{}}
				for _, p := range pend {
					if p.Team == t.Name {
						tj.Pending = append(tj.Pending, p)
					}
				}
				out = append(out, tj)
			}
			if team != "" && len(out) == 0 {
				return fmt.Errorf("team status: this station is not a member of team %s", team)
			}
			if asJSON {
				if out == nil {
					out = []teamJSON{}
				}
				return cmdutil.WriteJSON(a.IO.Out, out)
			}
			if len(out) == 0 {
				fmt.Fprintln(a.IO.Err, "this station belongs to no team (station team create NAME, station team join CODE)")
				return nil
			}
			w := a.IO.Out
			for _, t := range out {
				rev := fmt.Sprintf("lockfile revision %d applied", t.Revision)
				if t.Revision < 0 {
					rev = "lockfile not applied yet (station team sync)"
				}
				fmt.Fprintf(w, "team %s (%s) on %s: %s", cmdutil.TermText(t.Name), cmdutil.TermText(t.Role), cmdutil.TermText(t.HubURL), rev)
				if !t.SyncedAt.IsZero() {
					fmt.Fprintf(w, " at %s", t.SyncedAt.Local().Format(time.RFC3339))
				}
				fmt.Fprintln(w)
				if t.LastError != "" {
					fmt.Fprintf(w, "  not applied: %s\n", cmdutil.TermText(t.LastError))
				}
				fmt.Fprintf(w, "  workflows in %s\n", cmdutil.TermText(hubsync.WorkflowDir(s.Home, t.Name)))
				for _, p := range t.Pending {
					from := "not installed"
					if p.FromVersion != "" {
						from = cmdutil.TermText(p.FromVersion) + " keeps running"
					}
					fmt.Fprintf(w, "  PENDING %s %s (revision %d; %s); compared with what you approved, it:\n", cmdutil.TermText(p.Module), cmdutil.TermText(p.Version), p.Revision, from)
					for _, e := range p.Escalations {
						fmt.Fprintf(w, "    + %s\n", cmdutil.TermText(e))
					}
				}
				if len(t.Pending) > 0 {
					fmt.Fprintf(w, "  approve with: station team sync %s (or --yes)\n", cmdutil.TermText(t.Name))
				}
			}
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return c
}

func (a *app) teamPushCmd() *cobra.Command {
	var workflowFiles []string
	c := &cobra.Command{
		Use:   "push TEAM [ID...]",
		Short: "Pin this station's installed versions (and workflows) in the team lockfile (owners)",
		Long: `Push sets the team lockfile's entries for the modules named (every module
this station installed from the hub when none is named) to the versions
installed here, with the permissions approved here, adds or replaces the
--workflow files (named after the file, without .yaml), keeps the rest of the
lockfile, and pushes it as a new revision. Members' daemons apply it as soon
as the hub relays it.`,
		Example: "  station team push acme dave/stripe-invoicing\n  station team push acme --workflow month-end.yaml",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 1 {
				return cmdutil.Usagef("%s needs the TEAM argument", cmd.CommandPath())
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			var wfs []hub.Workflow
			for _, f := range workflowFiles {
				b, err := os.ReadFile(f)
				if err != nil {
					return fmt.Errorf("team push: %w", err)
				}
				name := strings.TrimSuffix(strings.TrimSuffix(filepath.Base(f), ".yaml"), ".yml")
				wfs = append(wfs, hub.Workflow{Name: name, Digest: hub.Digest(b), Source: string(b)})
			}
			ctx := cmd.Context()
			sess, err := a.HubSession(ctx)
			if err != nil {
				return err
			}
			tl, err := sess.Push(ctx, args[0], args[1:], wfs)
			if err != nil {
				return hubError(err)
			}
			fmt.Fprintf(a.IO.Out, "pushed team %s lockfile revision %d: %s\n", cmdutil.TermText(tl.Team), tl.Revision, lockedNames(tl.Lockfile))
			return nil
		},
	}
	c.Flags().StringArrayVar(&workflowFiles, "workflow", nil, "a workflow file to share (repeatable)")
	return c
}

func (a *app) teamLeaveCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "leave TEAM",
		Short: "Leave a team (its modules stay installed)",
		Args:  cmdutil.ExactArgs(1, "TEAM"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			sess, err := a.HubSession(ctx)
			if err != nil {
				return err
			}
			if err := sess.Leave(ctx, args[0]); err != nil {
				return hubError(err)
			}
			fmt.Fprintf(a.IO.Out, "left team %s; its modules stay installed (station module remove ID)\n", args[0])
			return nil
		},
	}
}
