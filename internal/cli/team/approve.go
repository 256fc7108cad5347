package team

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/hubsync"
)

// ApproveOptions are what `station team approve` was asked to do.
type ApproveOptions struct {
	// Overrides are --allow-advisory.
	Overrides cmdutil.Overrides
	IO        *cmdutil.IOStreams
	Session   func(context.Context) (Service, error)
	// Reload tells a running daemon that a module changed.
	Reload func(ctx context.Context, id string)
	// Home is the station home (where the team workflows are written).
	Home   func() (string, error)
	Team   string
	Module string
	// Version is the version to approve; "" for the one pending.
	Version string
	JSON    bool
}

// NewCmdApprove returns `station team approve`.
func NewCmdApprove(f *cmdutil.Factory, runF func(*ApproveOptions) error) *cobra.Command {
	opts := &ApproveOptions{IO: &f.IO, Reload: f.ReloadInDaemon, Home: f.HomeDir}
	opts.Session = sessionWith(f, &opts.Overrides)
	c := &cobra.Command{
		Use:   "approve TEAM MODULE[@VERSION]",
		Short: "Approve one pending team change, and only it",
		Long: `Approve takes one change of TEAM's lockfile that waits for your approval on
this station (station team status lists them, with what each asks beyond
what you approved): the team is synced again, MODULE is installed at the
pending version (VERSION, if given, must be it), and every other change that
needs approval stays pending. A running daemon loads the new version for its
next call. A change you rejected (station team reject) is taken too: that is
changing your mind.

If the lockfile moved on since — it pins another version of MODULE now, or
none — nothing is approved: the new revision is applied as 'station team
sync' without --yes would, and the error says what it pins (review it with
station team status, then approve that). Nothing pending for MODULE is an
error that says what is pending.

With --json: {"team", "module", "version", "approved", "asks", "sync"}, sync
as one team of 'station team sync --json'.`,
		Example: "  station team approve acme alice/hello\n  station team approve acme alice/hello@1.1.0 --json",
		Args:    cmdutil.ExactArgs(2, "TEAM", "MODULE[@VERSION]"),
		RunE: func(cmd *cobra.Command, args []string) error {
			var err error
			opts.Team = args[0]
			if opts.Module, opts.Version, err = moduleArg(args[1]); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return approveRun(cmd.Context(), opts)
		},
	}
	cmdutil.AddAdvisoryFlag(c, &opts.Overrides)
	cmdutil.AddJSONFlag(c, &opts.JSON)
	return c
}

// moduleArg splits MODULE[@VERSION], refusing what is not a module id.
func moduleArg(arg string) (module, version string, err error) {
	module, version, at := strings.Cut(arg, "@")
	if msg := hub.CheckModuleID(module); msg != "" {
		return "", "", cmdutil.Usagef("%q is not a module id (OWNER/SLUG[@VERSION]: %s)", arg, msg)
	}
	if at && version == "" {
		return "", "", cmdutil.Usagef("%q names no version after @: give it, or leave @ out for the pending one", arg)
	}
	return module, version, nil
}

// ApproveResult is the change approved and the sync that took it.
type ApproveResult struct {
	Team    string `json:"team"`
	Module  string `json:"module"`
	Version string `json:"version"`
	// Approved is set when the change was installed; false when the
	// lockfile moved on and nothing was approved.
	Approved bool `json:"approved"`
	// Asks are what the change asked beyond what was approved before.
	Asks []string `json:"asks"`
	// Sync is what applying the team's lockfile did.
	Sync *TeamSync `json:"sync"`
}

// Text implements cmdutil.Texter. The names, versions and asks came from
// the hub and its lockfile.
func (r ApproveResult) Text(w io.Writer) error {
	t := cmdutil.TermText
	if r.Approved {
		fmt.Fprintf(w, "approved %s@%s of team %s", t(r.Module), t(r.Version), t(r.Team))
		if len(r.Asks) > 0 {
			fmt.Fprintf(w, ": it %s", strings.Join(cmdutil.TermList(r.Asks), "; "))
		}
		fmt.Fprintln(w)
	}
	if r.Sync != nil {
		r.Sync.text(w, "")
	}
	return nil
}

func approveRun(ctx context.Context, opts *ApproveOptions) error {
	s, err := opts.Session(ctx)
	if err != nil {
		return err
	}
	rep, err := s.ApprovePending(ctx, opts.Team, opts.Module, opts.Version)
	if rep == nil {
		return err
	}
	reload(ctx, opts.Reload, rep)
	home, _ := opts.Home()
	ts := newTeamSync(rep, home)
	res := ApproveResult{Team: opts.Team, Module: opts.Module, Version: opts.Version, Asks: []string{}, Sync: &ts}
	if mo := (*hubsync.MovedOnError)(nil); errors.As(err, &mo) {
		res.Version = mo.Version
	}
	for _, r := range rep.Installed {
		if r.ID == opts.Module && err == nil {
			res.Approved, res.Version = true, r.Version
			if r.Plan != nil {
				res.Asks = append(res.Asks, r.Plan.Differences()...)
			}
		}
	}
	if perr := cmdutil.Print(opts.IO.Out, opts.JSON, res); perr != nil {
		return perr
	}
	if err != nil {
		return err
	}
	// The change is taken; what else of the lockfile failed is an error
	// too (what stays pending is not: it was not asked about).
	var errs []error
	for _, f := range rep.Failed {
		errs = append(errs, f)
	}
	return errors.Join(errs...)
}
