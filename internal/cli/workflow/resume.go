package workflow

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/station-dev/station/internal/cli/cmdutil"
)

// ResumeOptions are what `station workflow resume` was asked to do.
type ResumeOptions struct {
	IO     *cmdutil.IOStreams
	Runner func(context.Context) (Runner, error)
	RunID  int64
	File   string // --file; "" is the path the run started from
	// Inputs are the --input NAME=VALUE pairs; InputsJSON is --inputs:
	// the run's secret inputs, given again.
	Inputs     []string
	InputsJSON string
	JSON       bool // --json: events as JSON lines on stdout
	// Compact is --compact.
	Compact bool
}

// NewCmdResume returns `station workflow resume`. runF, when set, is called
// with the parsed options instead of running the command.
func NewCmdResume(f *cmdutil.Factory, runF func(*ResumeOptions) error) *cobra.Command {
	opts := &ResumeOptions{IO: &f.IO, Runner: runner(f)}
	c := &cobra.Command{
		Use:   "resume RUN",
		Short: "Resume an interrupted or failed run from its first unfinished step",
		Long: `Resume runs again the steps of RUN that did not finish; steps that did
(succeeded, skipped, or failed with continue_on_error) keep their recorded
outputs and are not run again. The run keeps its inputs. The workflow file
must be the one the run started with: a changed file is refused (start a new
run instead). RUN is a number that station workflow runs lists.

The values of secret inputs (secret: true) are not stored: give them again
with --input NAME=VALUE or --inputs, as to station workflow run. Nothing
else may be given.

Progress and output are printed as by station workflow run, and --json,
--compact and the exit codes are the same.`,
		Example: "  station workflow resume 12\n  station workflow resume 12 --file moved/invoice.yaml\n  station workflow resume 12 --inputs @secret-inputs.json",
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
			return resumeRun(cmd.Context(), opts)
		},
	}
	c.Flags().StringVarP(&opts.File, "file", "f", "", "the workflow file (default: the path the run was started from)")
	c.Flags().StringArrayVarP(&opts.Inputs, "input", "i", nil, "a secret input given again, NAME=VALUE (repeatable)")
	c.Flags().StringVar(&opts.InputsJSON, "inputs", "", "the secret inputs given again, as one JSON object: inline, @FILE, or - for standard input")
	cmdutil.AddJSONFlag(c, &opts.JSON)
	c.Flags().Lookup("json").Usage = "print JSON events (snake_case keys), one per line, instead of progress lines and the output"
	c.Flags().BoolVar(&opts.Compact, "compact", false, "print the output without indentation")
	return c
}

func resumeRun(ctx context.Context, opts *ResumeOptions) error {
	var given map[string]any
	if len(opts.Inputs) > 0 || opts.InputsJSON != "" {
		var err error
		if given, err = inputs(opts.IO.In, nil, opts.Inputs, opts.InputsJSON); err != nil {
			return err
		}
	}
	r, err := opts.Runner(ctx)
	if err != nil {
		return err
	}
	p := newProgress(opts.IO, opts.JSON, 0)
	res, err := r.Resume(ctx, opts.RunID, opts.File, given, p.event)
	return p.finish(res, err, opts.Compact)
}
