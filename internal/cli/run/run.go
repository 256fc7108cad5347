// Package run is `station run`: one call of a module's command.
package run

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/station-dev/station/internal/cli/cmdutil"
)

// RunOptions are what `station run` was asked to do.
type RunOptions struct {
	IO      *cmdutil.IOStreams
	Caller  func(context.Context) (cmdutil.Caller, error)
	Module  string
	Command string
	Input   string // --input: inline JSON, @FILE or -
	Compact bool   // --compact
	JSON    bool   // --json: the result in an envelope, for scripts
}

// NewCmdRun returns `station run`. runF, when set, is called with the parsed
// options instead of running the command (tests check flag parsing with it).
func NewCmdRun(f *cmdutil.Factory, runF func(*RunOptions) error) *cobra.Command {
	opts := &RunOptions{IO: &f.IO, Caller: f.Caller}
	c := &cobra.Command{
		Use:   "run ID COMMAND",
		Short: "Run a module command and print its JSON result",
		Long: `Run runs COMMAND of the installed module ID with a JSON input and prints the
JSON result. If a station daemon (station serve) is running, the call goes
through it and the module is already warm; otherwise (or with --no-daemon)
the station runs in this process. The module is confined to the permissions
approved at install; if a gate denies an operation and the command fails, the
error names the module, the capability, the target and the reason, and the
exit code is 3.

With --json the output is an object for scripts: {"module", "command",
"result"} on success; a failure is still an exit code and a message on
stderr.

Exit codes: 0 ok, 1 error, 2 usage, 3 sandbox violation, 4 module crashed or
timed out.`,
		Example: `  station run station/hello greet --input '{"name":"Ada"}'
  station run dave/stripe-invoicing create-invoice --input @invoice.json
  echo '{"name":"Ada"}' | station run station/hello greet --input -`,
		Args: cmdutil.ExactArgs(2, "ID", "COMMAND"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Module, opts.Command = args[0], args[1]
			if runF != nil {
				return runF(opts)
			}
			return runRun(cmd.Context(), opts)
		},
	}
	c.Flags().StringVarP(&opts.Input, "input", "i", "", "JSON input: inline JSON, @FILE, or - for standard input (default {})")
	c.Flags().BoolVar(&opts.Compact, "compact", false, "print the result without indentation")
	cmdutil.AddJSONFlag(c, &opts.JSON)
	return c
}

// RunResult is what --json prints.
type RunResult struct {
	Module  string                 `json:"module"`
	Command string                 `json:"command"`
	Result  cmdutil.ModuleDocument `json:"result"`
}

// runRun calls the command and prints its result.
func runRun(ctx context.Context, opts *RunOptions) error {
	in, err := cmdutil.ReadInput(opts.IO.In, opts.Input)
	if err != nil {
		return err
	}
	caller, err := opts.Caller(ctx)
	if err != nil {
		return err
	}
	out, err := caller.Run(ctx, opts.Module, opts.Command, in)
	if err != nil {
		return err
	}
	if opts.JSON {
		return cmdutil.WriteJSON(opts.IO.Out, RunResult{Module: opts.Module, Command: opts.Command, Result: cmdutil.ModuleDocument(out)})
	}
	cmdutil.PrintResult(opts.IO.Out, out, opts.Compact)
	return nil
}
