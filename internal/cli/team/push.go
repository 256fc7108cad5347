package team

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/cli/cmdutil"
)

// PushOptions are what `station team push` was asked to do.
type PushOptions struct {
	// Overrides are --allow-advisory (and for push --allow-yanked).
	Overrides cmdutil.Overrides
	IO        *cmdutil.IOStreams
	Session   func(context.Context) (Service, error)
	Reload    func(ctx context.Context, id string)
	Home      func() (string, error)
	Team      string
	IDs       []string // the modules to pin; none: every hub-installed module
	// WorkflowFiles are the --workflow files to share.
	WorkflowFiles []string
	JSON          bool
}

// NewCmdPush returns `station team push`.
func NewCmdPush(f *cmdutil.Factory, runF func(*PushOptions) error) *cobra.Command {
	opts := &PushOptions{IO: &f.IO, Reload: f.ReloadInDaemon, Home: f.HomeDir}
	opts.Session = sessionWith(f, &opts.Overrides)
	c := &cobra.Command{
		Use:   "push TEAM [ID...]",
		Short: "Pin this station's installed versions (and workflows) in the team lockfile (owners)",
		Long: `Push sets the team lockfile's entries for the modules named (every module
this station installed from the hub when none is named) to the versions
installed here, with the permissions approved here, adds or replaces the
--workflow files (named after the file, without .yaml), keeps the rest of the
lockfile, and pushes it as a new revision. Members' daemons apply it as soon
as the hub relays it.

This station then applies the revision it pushed, as 'station team sync'
without --yes would: what the lockfile holds from other owners' pushes is
installed if it asks for nothing beyond what this station approved, and
otherwise waits for approval here (station team status shows it).

Push refuses to pin a version that a security advisory affects (any
severity: every member would install it) or that is yanked on the hub, and
says which fixed version to upgrade to first; --allow-advisory ID and
--allow-yanked pin it anyway, recorded in the audit log.

With --json: {"team", "revision", "modules", "workflows", "applied_here"},
applied_here as one team of 'station team sync --json'.`,
		Example: "  station team push acme dave/stripe-invoicing\n  station team push acme --workflow month-end.yaml",
		Args:    cmdutil.MinArgs(1, "TEAM [ID...]"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Team, opts.IDs = args[0], args[1:]
			if runF != nil {
				return runF(opts)
			}
			return pushRun(cmd.Context(), opts)
		},
	}
	c.Flags().StringArrayVar(&opts.WorkflowFiles, "workflow", nil, "a workflow file to share (repeatable)")
	cmdutil.AddAdvisoryFlag(c, &opts.Overrides)
	cmdutil.AddYankedFlag(c, &opts.Overrides)
	cmdutil.AddJSONFlag(c, &opts.JSON)
	return c
}

// PushResult is the revision pushed and what applying it here did.
type PushResult struct {
	Team     string `json:"team"`
	Revision int64  `json:"revision"`
	// Modules and Workflows are the lockfile's, modules as id@version.
	Modules   []string `json:"modules"`
	Workflows []string `json:"workflows"`
	// AppliedHere is what applying the revision on this station did.
	AppliedHere *TeamSync `json:"applied_here"`
}

// Text implements cmdutil.Texter. The names are the hub's answer.
func (r PushResult) Text(w io.Writer) error {
	fmt.Fprintf(w, "pushed team %s lockfile revision %d: %s", cmdutil.TermText(r.Team), r.Revision, namesText(r.Modules))
	if len(r.Workflows) > 0 {
		fmt.Fprintf(w, "; workflows %s", strings.Join(cmdutil.TermList(r.Workflows), ", "))
	}
	fmt.Fprintln(w)
	if a := r.AppliedHere; a != nil && len(a.Installed)+len(a.Pending)+len(a.Rejected)+len(a.Failed) > 0 {
		fmt.Fprintln(w, "  on this station:")
		a.changes(w, "    ", false)
	}
	return nil
}

// readWorkflows reads the --workflow files, each named after its file.
func readWorkflows(files []string) ([]hub.Workflow, error) {
	var wfs []hub.Workflow
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("team push: %w", err)
		}
		name := strings.TrimSuffix(strings.TrimSuffix(filepath.Base(f), ".yaml"), ".yml")
		wfs = append(wfs, hub.Workflow{Name: name, Digest: hub.Digest(b), Source: string(b)})
	}
	return wfs, nil
}

func pushRun(ctx context.Context, opts *PushOptions) error {
	wfs, err := readWorkflows(opts.WorkflowFiles)
	if err != nil {
		return err
	}
	s, err := opts.Session(ctx)
	if err != nil {
		return err
	}
	tl, rep, err := s.Push(ctx, opts.Team, opts.IDs, wfs)
	if err != nil && tl.Revision == 0 {
		return err // nothing was pushed (a pushed revision is at least 1)
	}
	res := PushResult{Team: tl.Team, Revision: tl.Revision, Modules: lockedNames(tl.Lockfile), Workflows: []string{}}
	for _, w := range tl.Lockfile.Workflows {
		res.Workflows = append(res.Workflows, w.Name)
	}
	if rep != nil {
		home, _ := opts.Home()
		ts := newTeamSync(rep, home)
		res.AppliedHere = &ts
		reload(ctx, opts.Reload, rep)
	}
	if perr := cmdutil.Print(opts.IO.Out, opts.JSON, res); perr != nil {
		return perr
	}
	// The push is done; an error here is applying it on this station.
	return err
}
