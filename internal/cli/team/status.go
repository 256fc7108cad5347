package team

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/hubsync"
)

// StatusOptions are what `station team status` was asked to do.
type StatusOptions struct {
	IO *cmdutil.IOStreams
	// Status reads the station's teams (hubsync.Status on the Factory's
	// station): no hub needed.
	Status func(ctx context.Context, team string) ([]hubsync.TeamStatus, error)
	Team   string // "" for every team
	JSON   bool
}

// NewCmdStatus returns `station team status`.
func NewCmdStatus(f *cmdutil.Factory, runF func(*StatusOptions) error) *cobra.Command {
	opts := &StatusOptions{IO: &f.IO, Status: func(ctx context.Context, team string) ([]hubsync.TeamStatus, error) {
		s, err := f.Open(ctx)
		if err != nil {
			return nil, err
		}
		return hubsync.Status(ctx, s, team)
	}}
	c := &cobra.Command{
		Use:   "status [TEAM]",
		Short: "Show this station's teams, the lockfile revision applied and pending changes",
		Long: `Status reads this station's records (no hub needed): each team, its role, the
lockfile revision last applied (after a sync, a push from here, or the daemon
applying what the hub relayed), why the last sync did not apply everything,
and the changes waiting for approval with what each asks beyond the approved
version, which keeps running meanwhile. Take one with station team approve
TEAM ID, refuse it with station team reject TEAM ID, or take them all with
station team sync TEAM --yes. A change you rejected is shown as REJECTED: it
stays so while the lockfile pins that version (a later version waits for
approval again), and station team approve still takes it.

With --json: [{"team", "hub", "role", "revision", "synced_at", "last_error",
"workflow_dir", "pending": [{"module", "version", "from_version", "asks",
"revision", "recorded_at", "rejected_at"}]}] — the names team sync --json
uses; revision is -1 before the first sync; rejected_at is there only for a
rejected change.`,
		Example: "  station team status\n  station team status acme --json",
		Args:    cmdutil.MaxArgs(1, "TEAM"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.Team = args[0]
			}
			if runF != nil {
				return runF(opts)
			}
			return statusRun(cmd.Context(), opts)
		},
	}
	cmdutil.AddJSONFlag(c, &opts.JSON)
	return c
}

// StatusResult is this station's teams.
type StatusResult []TeamStatus

// TeamStatus is one team of this station, under the names the other team
// commands use: team, hub, revision, and a pending change's asks.
type TeamStatus struct {
	Team string `json:"team"`
	Hub  string `json:"hub"`
	Role string `json:"role"`
	// Revision is the lockfile revision last applied here; -1 before the
	// first.
	Revision int64     `json:"revision"`
	SyncedAt time.Time `json:"synced_at,omitzero"`
	// LastError is why the last sync did not apply everything.
	LastError   string    `json:"last_error,omitempty"`
	WorkflowDir string    `json:"workflow_dir"`
	Pending     []Pending `json:"pending"`
	// Affected are the team's modules installed here that an advisory
	// affects or that are yanked (hubsync.TeamStatus.Affected).
	Affected []hubsync.Finding `json:"affected"`
}

func newStatusResult(teams []hubsync.TeamStatus) StatusResult {
	out := make(StatusResult, 0, len(teams))
	for _, ts := range teams {
		s := TeamStatus{Team: ts.Name, Hub: ts.HubURL, Role: ts.Role, Revision: ts.Revision, SyncedAt: ts.SyncedAt, LastError: ts.LastError,
			WorkflowDir: ts.WorkflowDir, Pending: []Pending{}, Affected: ts.Affected}
		if s.Affected == nil {
			s.Affected = []hubsync.Finding{}
		}
		for _, p := range ts.Pending {
			s.Pending = append(s.Pending, Pending{Module: p.Module, Version: p.Version, FromVersion: p.FromVersion,
				Asks: append([]string{}, p.Escalations...), Revision: p.Revision, RecordedAt: p.RecordedAt, RejectedAt: p.RejectedAt})
		}
		out = append(out, s)
	}
	return out
}

// Text implements cmdutil.Texter. The names, URLs, versions, errors and
// escalations came from the hub and its lockfiles.
func (r StatusResult) Text(w io.Writer) error {
	t := cmdutil.TermText
	for _, ts := range r {
		rev := fmt.Sprintf("lockfile revision %d applied", ts.Revision)
		if ts.Revision < 0 {
			rev = "lockfile not applied yet (station team sync)"
		}
		fmt.Fprintf(w, "team %s (%s) on %s: %s", t(ts.Team), t(ts.Role), t(ts.Hub), rev)
		if !ts.SyncedAt.IsZero() {
			fmt.Fprintf(w, " at %s", ts.SyncedAt.Local().Format(time.RFC3339))
		}
		fmt.Fprintln(w)
		if ts.LastError != "" {
			fmt.Fprintf(w, "  not applied: %s\n", t(ts.LastError))
		}
		fmt.Fprintf(w, "  workflows in %s\n", t(ts.WorkflowDir))
		waiting := 0
		for _, p := range ts.Pending {
			if !p.RejectedAt.IsZero() {
				fmt.Fprintf(w, "  REJECTED %s@%s (revision %d; %s): station team approve %s %s to take it after all; compared with what you approved, it:\n",
					t(p.Module), t(p.Version), p.Revision, keeps(p.FromVersion), t(ts.Team), t(p.Module))
			} else {
				waiting++
				fmt.Fprintf(w, "  PENDING %s@%s (revision %d; %s); compared with what you approved, it:\n", t(p.Module), t(p.Version), p.Revision, keeps(p.FromVersion))
			}
			for _, e := range p.Asks {
				fmt.Fprintf(w, "    + %s\n", t(e))
			}
			if p.RejectedAt.IsZero() {
				fmt.Fprintf(w, "    approve: station team approve %s %s, or reject: station team reject %s %s\n", t(ts.Team), t(p.Module), t(ts.Team), t(p.Module))
			}
		}
		if waiting > 0 {
			fmt.Fprintf(w, "  approve all with: station team sync %s (or --yes)\n", t(ts.Team))
		}
		for _, a := range ts.Affected {
			for _, adv := range a.Advisories {
				status := "runs, with a warning"
				switch adv.Status {
				case hubsync.StatusBlocked:
					status = "BLOCKED: does not run"
				case hubsync.StatusAllowed:
					status = "allowed by you"
				}
				fix := ""
				if adv.FixedIn != "" {
					fix = "; fixed in " + t(adv.FixedIn)
				}
				fmt.Fprintf(w, "  AFFECTED %s@%s by %s (%s, %s): %s%s\n", t(a.Module), t(a.Version), t(adv.ID), t(cmp.Or(adv.Severity, "unknown severity")), status, t(adv.Summary), fix)
			}
			if a.Yanked {
				fmt.Fprintf(w, "  YANKED %s@%s on the hub: %s\n", t(a.Module), t(a.Version), t(a.YankReason))
			}
		}
		if len(ts.Affected) > 0 {
			fmt.Fprintf(w, "  upgrade the team to fixed versions with: station module upgrade ID, then station team push %s ID\n", t(ts.Team))
		}
	}
	return nil
}

func statusRun(ctx context.Context, opts *StatusOptions) error {
	teams, err := opts.Status(ctx, opts.Team)
	if err != nil {
		return err
	}
	if len(teams) == 0 && !opts.JSON {
		fmt.Fprintln(opts.IO.Err, "this station belongs to no team (station team create NAME, station team join CODE)")
		return nil
	}
	return cmdutil.Print(opts.IO.Out, opts.JSON, newStatusResult(teams))
}
