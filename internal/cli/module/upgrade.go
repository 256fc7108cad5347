package module

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/hubclient"
	"github.com/station-dev/station/internal/hubsync"
)

// Upgrader upgrades modules installed from the hub (*hubsync.Session).
type Upgrader interface {
	Upgrade(ctx context.Context, refs []string, approve hubsync.Approver) ([]*hubsync.UpgradeResult, error)
}

// UpgradeOptions are what `station module upgrade` was asked to do.
type UpgradeOptions struct {
	// Overrides are --allow-advisory.
	Overrides     cmdutil.Overrides
	IO            *cmdutil.IOStreams
	Upgrader      func(context.Context) (Upgrader, error)
	HubApprover   func(yes bool, mode cmdutil.ApprovalMode, verb string) hubsync.Approver
	Reload        func(ctx context.Context, id string)
	StartProgress func(label string) *cmdutil.Progress

	Refs []string // ID or ID@VERSION; none for every module from the hub
	Yes  bool
	JSON bool
}

// NewCmdUpgrade returns `station module upgrade`.
func NewCmdUpgrade(f *cmdutil.Factory, runF func(*UpgradeOptions) error) *cobra.Command {
	opts := &UpgradeOptions{IO: &f.IO, HubApprover: f.HubApprover, Reload: f.ReloadInDaemon, StartProgress: f.StartProgress}
	opts.Upgrader = func(ctx context.Context) (Upgrader, error) {
		s, err := f.HubSession(ctx)
		if err != nil {
			return nil, err
		}
		if err := opts.Overrides.Apply(s); err != nil {
			return nil, err
		}
		return s, nil
	}
	c := &cobra.Command{
		Use:   "upgrade [ID[@VERSION]...]",
		Short: "Upgrade modules installed from the hub to their latest version, or to a version",
		Long: `Upgrade installs the latest version (not yanked) of each ID, or of every module
installed from the hub; ID@VERSION installs exactly VERSION (an older one than
installed is a downgrade, which asks first). An upgrade that asks for nothing
beyond what you approved, signed by the key you trusted before, applies at
once. One that asks for more — a new host, a program, a wider write glob, the
LLM — or is signed by another key shows the difference and waits for your
approval (a terminal prompt, or --yes); without it nothing changes and the
installed version keeps running (exit code 5), and the upgrade waits in the
dashboard's Approvals (station ui), where you can approve or reject it.

A module installed from a directory is not upgraded: replace it with the
hub's version with station module install OWNER/SLUG@VERSION, which asks
first; from then on upgrade upgrades it.`,
		Example: `  station module upgrade
  station module upgrade dave/stripe-invoicing --yes
  station module upgrade dave/stripe-invoicing@1.4.2`,
		Args: func(cmd *cobra.Command, args []string) error {
			for _, a := range args {
				if _, _, err := hubclient.ParseRef(a); err != nil {
					return cmdutil.UsageError{Err: err}
				}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Refs = args
			if runF != nil {
				return runF(opts)
			}
			return upgradeRun(cmd.Context(), opts)
		},
	}
	c.Flags().BoolVarP(&opts.Yes, "yes", "y", false, "approve what the new versions ask for without asking")
	cmdutil.AddAdvisoryFlag(c, &opts.Overrides)
	cmdutil.AddJSONFlag(c, &opts.JSON)
	return c
}

// Upgrade is what an upgrade did to one module.
type Upgrade struct {
	ID string `json:"id"`
	// From is the version installed before; To the version installed now,
	// or the one a declined or failed upgrade was to install.
	From string `json:"from"`
	To   string `json:"to,omitempty"`
	// Status is upgraded, downgraded, up_to_date, declined or failed.
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`
}

// statusDowngraded is the status of an upgrade to an older version than
// was installed (hubsync calls both upgraded): scripts see which it was.
const statusDowngraded = "downgraded"

// UpgradeResult is what an upgrade did, module by module.
type UpgradeResult []Upgrade

// Text implements cmdutil.Texter: what changed and what is up to date
// (the errors of the rest are the command's error).
func (r UpgradeResult) Text(w io.Writer) error {
	for _, u := range r {
		switch hubsync.UpgradeStatus(u.Status) {
		case hubsync.Upgraded, statusDowngraded:
			fmt.Fprintf(w, "%s %s %s -> %s\n", u.Status, cmdutil.TermText(u.ID), cmdutil.TermText(u.From), cmdutil.TermText(u.To))
		case hubsync.UpToDate:
			fmt.Fprintf(w, "%s@%s is up to date\n", cmdutil.TermText(u.ID), cmdutil.TermText(u.To))
		}
	}
	return nil
}

func upgradeRun(ctx context.Context, opts *UpgradeOptions) error {
	up, err := opts.Upgrader(ctx)
	if err != nil {
		return err
	}
	approve := opts.HubApprover(opts.Yes, cmdutil.AskOrDecline, "upgrade to")
	w := &work{start: opts.StartProgress}
	w.begin("looking for upgrades")
	results, uerr := up.Upgrade(ctx, opts.Refs, func(p hubsync.Plan) (bool, error) {
		w.pause()
		ok, err := approve(p)
		w.begin("upgrading")
		return ok, err
	})
	w.done()
	out := make(UpgradeResult, 0, len(results))
	for _, r := range results {
		u := Upgrade{ID: r.Module, From: r.From, To: r.To, Status: string(r.Status)}
		if r.Status == hubsync.Upgraded && hub.CompareVersions(r.To, r.From) < 0 {
			u.Status = statusDowngraded
		}
		if r.Err != nil {
			u.Error = r.Err.Error()
		}
		if r.Status == hubsync.Upgraded {
			opts.Reload(ctx, r.Module)
		}
		out = append(out, u)
	}
	if len(out) == 0 && uerr == nil && !opts.JSON {
		fmt.Fprintln(opts.IO.Err, "no modules installed from the hub (station module install OWNER/SLUG installs one)")
		return nil
	}
	if err := cmdutil.Print(opts.IO.Out, opts.JSON, out); err != nil {
		return err
	}
	return uerr
}
