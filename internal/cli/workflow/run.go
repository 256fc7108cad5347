package workflow

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/workflow"
)

// RunOptions are what `station workflow run` was asked to do.
type RunOptions struct {
	IO     *cmdutil.IOStreams
	Runner func(context.Context) (Runner, error)
	File   string
	// Inputs are the --input NAME=VALUE pairs; InputsJSON is --inputs.
	Inputs     []string
	InputsJSON string
	JSON       bool // --json: events as JSON lines on stdout
	Compact    bool // --compact
}

// NewCmdRun returns `station workflow run`. runF, when set, is called with
// the parsed options instead of running the command.
func NewCmdRun(f *cmdutil.Factory, runF func(*RunOptions) error) *cobra.Command {
	opts := &RunOptions{IO: &f.IO, Runner: runner(f)}
	c := &cobra.Command{
		Use:   "run FILE",
		Short: "Run a workflow, showing each step, and print its output",
		Long: `Run checks the workflow (every module installed and runnable as approved, an
LLM provider for llm steps), records a new run, and runs its steps: each step
starts as soon as the steps it depends on have finished, up to max_parallel
at once. Progress goes to standard error; the workflow's output (JSON) to
standard output. With --json, standard output is a stream of JSON events, one
per line, the last one run_finished with the output.

Each input the workflow declares is given with --input NAME=VALUE (VALUE is
JSON unless the input is a string), or all at once with --inputs as a JSON
object; --input wins over --inputs. An input that is missing, undeclared or
of the wrong type is a usage error (exit code 2) that names it, before
anything runs. If a station daemon (station serve)
is running, the run goes through it; otherwise it runs in this process.

An input declared secret: true is passed to the steps that use it and reads
` + workflow.Redacted + ` in what the run records and prints (its value is not stored; give
it again to station workflow resume). Prefer --inputs @FILE or --inputs - for
it: a value on the command line is seen by other users of the machine and
kept in the shell's history. A stored secret (station secret set) is better
still: a step passes it as ${{ secrets.NAME }} and its module never sees it.

A run stopped by Ctrl-C or a crash can be resumed with station workflow
resume RUN.

Exit codes: 0 ok, 1 error or failed step, 2 usage, 3 a step failed on a
sandbox violation, 4 a step's module crashed or timed out.`,
		Example: `  station secret set STRIPE_KEY --module dave/stripe-invoicing
  station workflow run examples/workflows/invoice.yaml --input customer=cus_42
  station workflow run nightly.yaml --inputs @inputs.json --json
  echo '{"customer":"cus_42"}' | station workflow run examples/workflows/invoice.yaml --inputs -`,
		Args: cmdutil.ExactArgs(1, "FILE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.File = args[0]
			if runF != nil {
				return runF(opts)
			}
			return runRun(cmd.Context(), opts)
		},
	}
	c.Flags().StringArrayVarP(&opts.Inputs, "input", "i", nil, "an input, NAME=VALUE (repeatable; VALUE is JSON unless the input is a string)")
	c.Flags().StringVar(&opts.InputsJSON, "inputs", "", "all inputs as one JSON object: inline, @FILE, or - for standard input")
	cmdutil.AddJSONFlag(c, &opts.JSON)
	c.Flags().Lookup("json").Usage = "print JSON events (snake_case keys), one per line, instead of progress lines and the output"
	c.Flags().BoolVar(&opts.Compact, "compact", false, "print the output without indentation")
	return c
}

// runRun reads the workflow and its inputs, runs it, and prints its
// progress and its output.
func runRun(ctx context.Context, opts *RunOptions) error {
	wf, err := workflow.LoadFile(opts.File)
	if err != nil {
		return err
	}
	given, err := inputs(opts.IO.In, wf, opts.Inputs, opts.InputsJSON)
	if err != nil {
		return err
	}
	// Wrong or missing inputs are a usage error, reported before a
	// station opens (the engine checks them again when it starts), as a
	// mistyped --input is.
	if _, err := wf.ResolveInputs(given); err != nil {
		return cmdutil.UsageError{Err: err}
	}
	r, err := opts.Runner(ctx)
	if err != nil {
		return err
	}
	p := newProgress(opts.IO, opts.JSON, len(wf.Steps))
	res, err := r.Start(ctx, wf, given, p.event)
	return p.finish(res, err, opts.Compact)
}
