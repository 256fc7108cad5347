package workflow

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/store"
)

// RunsOptions are what `station workflow runs` was asked to do.
type RunsOptions struct {
	IO      *cmdutil.IOStreams
	Service func(context.Context) (Service, error)
	Limit   int
	JSON    bool
}

// NewCmdRuns returns `station workflow runs`. runF, when set, is called
// with the parsed options instead of running the command.
func NewCmdRuns(f *cmdutil.Factory, runF func(*RunsOptions) error) *cobra.Command {
	opts := &RunsOptions{IO: &f.IO, Service: service(f)}
	c := &cobra.Command{
		Use:   "runs",
		Short: "List workflow runs, newest first",
		Long: `Runs lists the recorded workflow runs, newest first: the run's number (what
station workflow show and resume take), the workflow, its status (running,
succeeded, failed, interrupted), when it started, how long it took and the
file it ran. A run whose process is gone is marked interrupted first.`,
		Example: "  station workflow runs\n  station workflow runs --limit 5 --json",
		Args:    cmdutil.ExactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.Limit <= 0 {
				return cmdutil.Usagef("--limit must be positive (got %d)", opts.Limit)
			}
			if runF != nil {
				return runF(opts)
			}
			return runsRun(cmd.Context(), opts)
		},
	}
	c.Flags().IntVar(&opts.Limit, "limit", 50, "at most this many (the newest)")
	cmdutil.AddJSONFlag(c, &opts.JSON)
	return c
}

func runsRun(ctx context.Context, opts *RunsOptions) error {
	svc, err := opts.Service(ctx)
	if err != nil {
		return err
	}
	runs, err := svc.Runs(ctx, opts.Limit)
	if err != nil {
		return err
	}
	if len(runs) == 0 && !opts.JSON {
		fmt.Fprintln(opts.IO.Err, "no workflow runs recorded (station workflow run FILE starts one)")
		return nil
	}
	return cmdutil.Print(opts.IO.Out, opts.JSON, Runs(runs))
}

// Runs is what `workflow runs` prints; in JSON, an array of runs.
type Runs []store.WorkflowRun

// Text prints the runs as a table; the workflow's name, its status and its
// file are the workflow file's and the store's, through TermText.
func (rs Runs) Text(w io.Writer) error {
	tw := cmdutil.NewTable(w)
	fmt.Fprintln(tw, "RUN\tWORKFLOW\tSTATUS\tSTARTED\tTOOK\tFILE")
	for _, r := range rs {
		took := "-"
		if !r.FinishedAt.IsZero() {
			took = cmdutil.Round(r.FinishedAt.Sub(r.StartedAt)).String()
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", r.ID, cmdutil.TermText(r.Workflow), cmdutil.TermText(string(r.Status)), r.StartedAt.Local().Format("2006-01-02 15:04:05"), took, cmdutil.TermText(r.File))
	}
	return tw.Flush()
}
