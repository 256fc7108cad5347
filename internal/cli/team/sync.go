package team

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/hubsync"
	"github.com/station-dev/station/internal/station"
)

// SyncOptions are what `station team sync` was asked to do.
type SyncOptions struct {
	// Overrides are --allow-advisory (and for push --allow-yanked).
	Overrides cmdutil.Overrides
	IO        *cmdutil.IOStreams
	Session   func(context.Context) (Service, error)
	// Approver is how changes that need approval are asked about: nil
	// leaves them pending.
	Approver func(yes bool) hubsync.Approver
	// Reload tells a running daemon that a module changed.
	Reload func(ctx context.Context, id string)
	// Home is the station home (where the team workflows are written).
	Home func() (string, error)
	Team string // "" for every team of the account
	Yes  bool   // --yes
	JSON bool
}

// NewCmdSync returns `station team sync`.
func NewCmdSync(f *cmdutil.Factory, runF func(*SyncOptions) error) *cobra.Command {
	opts := &SyncOptions{IO: &f.IO, Approver: approver(f), Reload: f.ReloadInDaemon, Home: f.HomeDir}
	opts.Session = sessionWith(f, &opts.Overrides)
	c := &cobra.Command{
		Use:   "sync [TEAM]",
		Short: "Apply the team lockfile on this station",
		Long: `Sync applies the current lockfile of TEAM (or of every team this account
belongs to): modules are installed at their pinned versions and digests, and
the team's workflows are written to STATION_HOME/teams/TEAM/workflows/.
Changes within what this station approved apply at once. Changes that ask for
more are shown with the difference and approved on a terminal or with --yes;
otherwise they stay pending (exit code 5) and the approved version keeps
running. To take or refuse one change at a time: station team approve TEAM ID,
station team reject TEAM ID. A change you rejected is not asked about again
(not even with --yes) while the lockfile pins that version; it is listed as
REJECTED. Modules installed here but absent from the lockfile are left alone.

With --json: {"teams": [{"team", "revision", "installed", "unchanged",
"pending", "rejected", "failed", "workflows", "workflow_dir"}]}; the exit code
still says whether everything was applied (a rejected change is your
decision, not a failure).`,
		Example: "  station team sync\n  station team sync acme --yes",
		Args:    cmdutil.MaxArgs(1, "TEAM"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.Team = args[0]
			}
			if runF != nil {
				return runF(opts)
			}
			return syncRun(cmd.Context(), opts)
		},
	}
	c.Flags().BoolVarP(&opts.Yes, "yes", "y", false, "approve what the lockfile asks for without asking")
	cmdutil.AddAdvisoryFlag(c, &opts.Overrides)
	cmdutil.AddJSONFlag(c, &opts.JSON)
	return c
}

// SyncResult is what a sync did, team by team.
type SyncResult struct {
	Teams []TeamSync `json:"teams"`
}

// Text implements cmdutil.Texter.
func (r SyncResult) Text(w io.Writer) error {
	for _, t := range r.Teams {
		t.text(w, "")
	}
	return nil
}

func syncRun(ctx context.Context, opts *SyncOptions) error {
	s, err := opts.Session(ctx)
	if err != nil {
		return err
	}
	reps, err := s.SyncTeams(ctx, opts.Team, opts.Approver(opts.Yes))
	if err != nil {
		return err
	}
	home, _ := opts.Home()
	res := SyncResult{Teams: []TeamSync{}}
	for _, rep := range reps {
		res.Teams = append(res.Teams, newTeamSync(rep, home))
		reload(ctx, opts.Reload, rep)
	}
	if len(res.Teams) == 0 && !opts.JSON {
		fmt.Fprintln(opts.IO.Err, "this account belongs to no team (station team create NAME, station team join CODE)")
		return nil
	}
	if err := cmdutil.Print(opts.IO.Out, opts.JSON, res); err != nil {
		return err
	}
	return outcome(res.Teams...)
}

// reload tells a running daemon about each module rep installed.
func reload(ctx context.Context, fn func(context.Context, string), rep *hubsync.Report) {
	if rep == nil || fn == nil {
		return
	}
	for _, r := range rep.Installed {
		fn(ctx, r.ID)
	}
}

// TeamSync is what applying one team's lockfile on this station did. The
// names, versions, differences and failures came from the hub and its
// lockfile.
type TeamSync struct {
	Team      string          `json:"team"`
	Revision  int64           `json:"revision"`
	Installed []ModuleVersion `json:"installed"`
	Unchanged []string        `json:"unchanged"`
	Pending   []Pending       `json:"pending"`
	// Rejected are the changes rejected here (station team reject) that
	// the lockfile still pins: nobody was asked about them.
	Rejected  []Pending `json:"rejected"`
	Failed    []Failure `json:"failed"`
	Workflows []string  `json:"workflows"`
	// WorkflowDir is where the team's workflows are.
	WorkflowDir string `json:"workflow_dir"`
	// SecretsNeeded are the secrets the team's modules need that this
	// station has no value for (the lockfile never carries values).
	SecretsNeeded []SecretNeed `json:"secrets_needed"`
}

// SecretNeed is a secret a module needs, where it goes, and how to set it.
type SecretNeed struct {
	Module  string   `json:"module"`
	Name    string   `json:"name"`
	Hosts   []string `json:"hosts"`
	Command string   `json:"command"`
}

// ModuleVersion is a module at a version.
type ModuleVersion struct {
	ID      string `json:"id"`
	Version string `json:"version"`
}

// Pending is a change that waits for the operator's approval: what it
// asks beyond what was approved.
type Pending struct {
	Module  string `json:"module"`
	Version string `json:"version"`
	// FromVersion is the installed version, which keeps running
	// meanwhile; "" when the module is not installed.
	FromVersion string   `json:"from_version,omitempty"`
	Asks        []string `json:"asks"`
	// Revision is the lockfile revision that asked for it, RecordedAt
	// when this station recorded it (team status).
	Revision   int64     `json:"revision,omitempty"`
	RecordedAt time.Time `json:"recorded_at,omitzero"`
	// RejectedAt is when the operator rejected it here (station team
	// reject); absent while it waits for approval (team status).
	RejectedAt time.Time `json:"rejected_at,omitzero"`
}

// Failure is a module of the lockfile that could not be applied.
type Failure struct {
	Module  string `json:"module"`
	Version string `json:"version"`
	Error   string `json:"error"`
	err     error  // as the sync returned it, for the exit code
}

func newTeamSync(rep *hubsync.Report, home string) TeamSync {
	t := TeamSync{Team: rep.Team, Revision: rep.Revision, Installed: []ModuleVersion{}, Unchanged: []string{}, Pending: []Pending{}, Rejected: []Pending{}, Failed: []Failure{},
		Workflows: []string{}, WorkflowDir: hubsync.WorkflowDir(home, rep.Team)}
	for _, r := range rep.Installed {
		t.Installed = append(t.Installed, ModuleVersion{ID: r.ID, Version: r.Version})
	}
	t.Unchanged = append(t.Unchanged, rep.Unchanged...)
	t.Pending = append(t.Pending, pendings(rep.Pending)...)
	t.Rejected = append(t.Rejected, pendings(rep.Rejected)...)
	for _, f := range rep.Failed {
		t.Failed = append(t.Failed, Failure{Module: f.ID, Version: f.Version, Error: f.Error(), err: f})
	}
	t.Workflows = append(t.Workflows, rep.Workflows...)
	t.SecretsNeeded = []SecretNeed{}
	for _, n := range rep.SecretsNeeded {
		t.SecretsNeeded = append(t.SecretsNeeded, SecretNeed{Module: n.Module, Name: n.Name, Hosts: n.Hosts,
			Command: "station secret set " + n.Name + " --module " + n.Module})
	}
	return t
}

// pendings are plans that wait (or were rejected) as the JSON says them.
func pendings(plans []hubsync.Plan) []Pending {
	var out []Pending
	for _, p := range plans {
		pd := Pending{Module: p.Version.Module, Version: p.Version.Version, Asks: append([]string{}, p.Differences()...)}
		if p.Plan.Replaces != nil {
			pd.FromVersion = p.Plan.Replaces.Version
		}
		out = append(out, pd)
	}
	return out
}

// text prints the sync, each line after indent.
func (t TeamSync) text(w io.Writer, indent string) {
	fmt.Fprintf(w, "%steam %s: lockfile revision %d\n", indent, cmdutil.TermText(t.Team), t.Revision)
	t.changes(w, indent+"  ", true)
}

// changes prints what the sync changed (and, with unchanged, what it left
// as it was), each line after indent.
func (t TeamSync) changes(w io.Writer, indent string, unchanged bool) {
	for _, r := range t.Installed {
		fmt.Fprintf(w, "%sinstalled %s@%s\n", indent, cmdutil.TermText(r.ID), cmdutil.TermText(r.Version))
	}
	if unchanged {
		for _, id := range t.Unchanged {
			fmt.Fprintf(w, "%sup to date %s\n", indent, cmdutil.TermText(id))
		}
	}
	for _, p := range t.Pending {
		fmt.Fprintf(w, "%sPENDING %s@%s needs your approval; it:\n", indent, cmdutil.TermText(p.Module), cmdutil.TermText(p.Version))
		for _, d := range p.Asks {
			fmt.Fprintf(w, "%s  + %s\n", indent, cmdutil.TermText(d))
		}
	}
	for _, p := range t.Rejected {
		fmt.Fprintf(w, "%sREJECTED %s@%s stays rejected (you rejected it here; %s): station team approve %s %s takes it after all\n", indent,
			cmdutil.TermText(p.Module), cmdutil.TermText(p.Version), keeps(p.FromVersion), cmdutil.TermText(t.Team), cmdutil.TermText(p.Module))
	}
	for _, f := range t.Failed {
		fmt.Fprintf(w, "%sFAILED %s\n", indent, cmdutil.TermText(f.Error))
	}
	for _, n := range t.SecretsNeeded {
		fmt.Fprintf(w, "%sSECRET %s needs %s (sent only to %s): %s\n", indent, cmdutil.TermText(n.Module), cmdutil.TermText(n.Name),
			cmdutil.TermText(strings.Join(n.Hosts, ", ")), cmdutil.TermText(n.Command))
	}
	if unchanged && len(t.Workflows) > 0 {
		fmt.Fprintf(w, "%sworkflows: %s (in %s)\n", indent, strings.Join(cmdutil.TermList(t.Workflows), ", "), cmdutil.TermText(t.WorkflowDir))
	}
}

// keeps says what runs instead of a change: the version installed, or
// nothing.
func keeps(from string) string {
	if from == "" {
		return "not installed"
	}
	return cmdutil.TermText(from) + " keeps running"
}

// outcome is the error of syncs: each module that failed, and the changes
// left pending (exit code 5).
func outcome(syncs ...TeamSync) error {
	var errs []error
	pending := 0
	for _, t := range syncs {
		for _, f := range t.Failed {
			if f.err != nil {
				errs = append(errs, f.err)
			} else {
				errs = append(errs, errors.New(f.Error))
			}
		}
		pending += len(t.Pending)
	}
	if pending > 0 {
		errs = append(errs, fmt.Errorf("%d team change(s) wait for your approval; the approved versions keep running (review them, then: station team sync --yes, or one at a time: station team approve TEAM ID, station team reject TEAM ID): %w", pending, station.ErrNotApproved))
	}
	return errors.Join(errs...)
}
