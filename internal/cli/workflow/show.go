package workflow

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/store"
	"github.com/station-dev/station/internal/workflow"
)

// ShowOptions are what `station workflow show` was asked to do.
type ShowOptions struct {
	IO      *cmdutil.IOStreams
	Service func(context.Context) (Service, error)
	RunID   int64
	JSON    bool
}

// NewCmdShow returns `station workflow show`. runF, when set, is called
// with the parsed options instead of running the command.
func NewCmdShow(f *cmdutil.Factory, runF func(*ShowOptions) error) *cobra.Command {
	opts := &ShowOptions{IO: &f.IO, Service: service(f)}
	c := &cobra.Command{
		Use:   "show RUN",
		Short: "Show a run: its steps, their inputs, outputs, errors, timings and sandbox decisions",
		Long: `Show prints a run: its steps, their inputs, outputs, errors, timings and the
sandbox decisions of each attempt. What modules and the workflow file supplied
is shown escaped (control characters as \xNN), and a document longer than
` + strconv.Itoa(cmdutil.MaxTermText) + ` bytes is cut; --json prints everything as it was recorded. RUN is a
number that station workflow runs lists.`,
		Example: "  station workflow show 12\n  station workflow show 12 --json",
		Args:    cmdutil.ExactArgs(1, "RUN"),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseRunID(args[0])
			if err != nil {
				return err
			}
			opts.RunID = id
			if runF != nil {
				return runF(opts)
			}
			return showRun(cmd.Context(), opts)
		},
	}
	cmdutil.AddJSONFlag(c, &opts.JSON)
	return c
}

func showRun(ctx context.Context, opts *ShowOptions) error {
	svc, err := opts.Service(ctx)
	if err != nil {
		return err
	}
	shown, err := svc.Show(ctx, opts.RunID)
	if err != nil {
		return err
	}
	return cmdutil.Print(opts.IO.Out, opts.JSON, Shown{shown})
}

// Shown is what `workflow show` prints: the run, and the audit records of
// each attempt's module call by trace.
type Shown struct{ *workflow.ShownRun }

// Text prints the run: the workflow's and steps' names from its file,
// inputs, outputs and errors from the caller, modules and the engine, audit
// records from the gates — all through TermText (the JSON documents on one
// line each).
func (r Shown) Text(w io.Writer) error {
	fmt.Fprintf(w, "run %d: workflow %s — %s\n", r.ID, cmdutil.TermText(r.Workflow), cmdutil.TermText(string(r.Status)))
	fmt.Fprintf(w, "  file     %s (%s)\n", cmdutil.TermText(r.File), cmdutil.TermText(r.Digest))
	fmt.Fprintf(w, "  started  %s", r.StartedAt.Local().Format("2006-01-02 15:04:05.000"))
	if !r.FinishedAt.IsZero() {
		fmt.Fprintf(w, ", took %s", cmdutil.Round(r.FinishedAt.Sub(r.StartedAt)))
	}
	if r.Resumes > 0 {
		fmt.Fprintf(w, ", resumed %d time(s)", r.Resumes)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "  inputs   %s\n", cmdutil.TermText(string(r.Inputs)))
	if len(r.Output) > 0 {
		fmt.Fprintf(w, "  output   %s\n", cmdutil.TermText(string(r.Output)))
	}
	if r.Error != "" {
		fmt.Fprintf(w, "  error    %s\n", cmdutil.TermText(r.Error))
	}
	for _, st := range r.Steps {
		status := cmdutil.TermText(string(st.Status))
		if st.Continued {
			status += " (continued)"
		}
		took := ""
		if !st.FinishedAt.IsZero() && !st.StartedAt.IsZero() {
			took = ", " + cmdutil.Round(st.FinishedAt.Sub(st.StartedAt)).String()
		}
		fmt.Fprintf(w, "step %s (%s): %s%s\n", cmdutil.TermText(st.Step), cmdutil.TermText(st.Uses), status, took)
		if len(st.Input) > 0 {
			fmt.Fprintf(w, "  input    %s\n", cmdutil.TermText(string(st.Input)))
		}
		if len(st.Output) > 0 {
			fmt.Fprintf(w, "  output   %s\n", cmdutil.TermText(string(st.Output)))
		}
		for _, at := range st.AttemptLog {
			line := fmt.Sprintf("  attempt %d: %s", at.Attempt, cmdutil.TermText(string(at.Status)))
			if !at.FinishedAt.IsZero() {
				line += " after " + cmdutil.Round(at.FinishedAt.Sub(at.StartedAt)).String()
			}
			if at.Error != "" {
				line += ": " + cmdutil.TermText(at.Error)
			}
			fmt.Fprintln(w, line)
			recs := slices.Clone(r.Audit[at.Trace])
			slices.SortStableFunc(recs, func(x, y store.AuditRecord) int { return cmp.Compare(x.ID, y.ID) })
			for _, rec := range recs {
				fmt.Fprintf(w, "    %s %s %s %s %s\n", cmdutil.Decision(rec), cmdutil.TermText(rec.Module), cmdutil.TermText(string(rec.Capability)), cmdutil.TermText(rec.Target), cmdutil.TermText(rec.Reason))
			}
		}
	}
	return nil
}
