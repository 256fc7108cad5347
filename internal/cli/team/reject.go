package team

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/hubsync"
)

// RejectOptions are what `station team reject` was asked to do.
type RejectOptions struct {
	IO *cmdutil.IOStreams
	// Reject rejects the change on the Factory's station
	// (hubsync.RejectPending) and returns it as recorded: no hub needed.
	Reject  func(ctx context.Context, team, module, version string) (hubsync.PendingChange, error)
	Team    string
	Module  string
	Version string // "" for the one pending
	JSON    bool
}

// NewCmdReject returns `station team reject`.
func NewCmdReject(f *cmdutil.Factory, runF func(*RejectOptions) error) *cobra.Command {
	opts := &RejectOptions{IO: &f.IO, Reject: func(ctx context.Context, team, module, version string) (hubsync.PendingChange, error) {
		st, err := f.Open(ctx)
		if err != nil {
			return hubsync.PendingChange{}, err
		}
		if err := hubsync.RejectPending(ctx, st, team, module, version); err != nil {
			return hubsync.PendingChange{}, err
		}
		return hubsync.FindPending(ctx, st, team, module, version)
	}}
	c := &cobra.Command{
		Use:   "reject TEAM MODULE[@VERSION]",
		Short: "Reject one pending team change: the approved version keeps running",
		Long: `Reject records, on this station only, that you do not want one change of
TEAM's lockfile that waits for your approval (station team status lists
them): the version you approved keeps running, and later syncs — station team
sync, even with --yes, and a daemon applying what the hub relays — neither ask
about it nor report it as waiting again while the lockfile pins that version.
station team status shows it as REJECTED. A lockfile that pins another
version of MODULE waits for approval afresh. To take it after all: station
team approve TEAM MODULE. No hub is asked, and the team's lockfile does not
change (tell its owners why).

VERSION, if given, must be the pending one. Nothing pending for MODULE is an
error that says what is pending.

With --json: {"team", "module", "version", "from_version", "asks",
"revision", "recorded_at", "rejected_at"}.`,
		Example: "  station team reject acme alice/hello\n  station team reject acme alice/hello@1.1.0 --json",
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
			return rejectRun(cmd.Context(), opts)
		},
	}
	cmdutil.AddJSONFlag(c, &opts.JSON)
	return c
}

// RejectResult is the change rejected, as recorded.
type RejectResult struct {
	Team string `json:"team"`
	Pending
}

// Text implements cmdutil.Texter. The names and versions came from the
// hub and its lockfile.
func (r RejectResult) Text(w io.Writer) error {
	t := cmdutil.TermText
	fmt.Fprintf(w, "rejected %s@%s of team %s; %s\n", t(r.Module), t(r.Version), t(r.Team), keeps(r.FromVersion))
	fmt.Fprintf(w, "  syncs leave it rejected while the lockfile pins %s; another version waits for approval again\n", t(r.Version))
	fmt.Fprintf(w, "  to take it after all: station team approve %s %s\n", t(r.Team), t(r.Module))
	return nil
}

func rejectRun(ctx context.Context, opts *RejectOptions) error {
	p, err := opts.Reject(ctx, opts.Team, opts.Module, opts.Version)
	if err != nil {
		return err
	}
	return cmdutil.Print(opts.IO.Out, opts.JSON, RejectResult{Team: p.Team, Pending: Pending{Module: p.Module, Version: p.Version, FromVersion: p.FromVersion,
		Asks: append([]string{}, p.Escalations...), Revision: p.Revision, RecordedAt: p.RecordedAt, RejectedAt: p.RejectedAt}})
}
