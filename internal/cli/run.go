package cli

import (
	"github.com/spf13/cobra"

	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/station"
)

func (a *app) runCmd() *cobra.Command {
	var input string
	var compact bool
	c := &cobra.Command{
		Use:   "run ID COMMAND",
		Short: "Run a module command and print its JSON result",
		Long: `Run runs COMMAND of the installed module ID with a JSON input and prints the
JSON result. If a station daemon (station serve) is running, the call goes
through it and the module is already warm; otherwise (or with --no-daemon)
the station runs in this process. The module is confined to the permissions approved at install;
if a gate denies an operation and the command fails, the error names the
module, the capability, the target and the reason, and the exit code is 3.

Exit codes: 0 ok, 1 error, 2 usage, 3 sandbox violation, 4 module crashed or
timed out.`,
		Example: `  station run station/hello greet --input '{"name":"Ada"}'
  station run dave/stripe-invoicing create-invoice --input @invoice.json
  echo '{"name":"Ada"}' | station run station/hello greet --input -`,
		Args: cmdutil.ExactArgs(2, "ID", "COMMAND"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			in, err := cmdutil.ReadInput(a.IO.In, input)
			if err != nil {
				return err
			}
			var out []byte
			if c := a.Daemon(ctx); c != nil {
				out, err = c.Run(ctx, args[0], args[1], in, "")
			} else {
				var s *station.Station
				if s, err = a.Open(ctx); err != nil {
					return err
				}
				out, err = s.Run(ctx, args[0], args[1], in)
			}
			if err != nil {
				return err
			}
			cmdutil.PrintResult(a.IO.Out, out, compact)
			return nil
		},
	}
	c.Flags().StringVarP(&input, "input", "i", "", "JSON input: inline JSON, @FILE, or - for standard input (default {})")
	c.Flags().BoolVar(&compact, "compact", false, "print the result without indentation")
	return c
}
