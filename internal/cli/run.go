package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

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
		Args: exactArgs(2, "ID", "COMMAND"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			in, err := a.readInput(input)
			if err != nil {
				return err
			}
			var out []byte
			if c := a.daemon(ctx); c != nil {
				out, err = c.Run(ctx, args[0], args[1], in, "")
			} else {
				var s *station.Station
				if s, err = a.open(ctx); err != nil {
					return err
				}
				out, err = s.Run(ctx, args[0], args[1], in)
			}
			if err != nil {
				return err
			}
			printResult(a.io.Out, out, compact)
			return nil
		},
	}
	c.Flags().StringVarP(&input, "input", "i", "", "JSON input: inline JSON, @FILE, or - for standard input (default {})")
	c.Flags().BoolVar(&compact, "compact", false, "print the result without indentation")
	return c
}

// printResult prints a module's (or a workflow's) JSON result: indented, or
// compacted with --compact (which also drops whitespace such as a carriage
// return between tokens), through jsonText, so that it is the same JSON
// value and nothing in it acts on the terminal. A result that is not JSON
// (the station checks that it is) is printed as text, through termText.
func printResult(w io.Writer, out []byte, compact bool) {
	var buf bytes.Buffer
	var err error
	if compact {
		err = json.Compact(&buf, out)
	} else {
		err = json.Indent(&buf, bytes.TrimSpace(out), "", "  ")
	}
	if err != nil {
		fmt.Fprintln(w, termText(string(out)))
		return
	}
	w.Write(jsonText(buf.Bytes()))
	fmt.Fprintln(w)
}

// readInput resolves --input and checks that it is JSON.
func (a *app) readInput(spec string) ([]byte, error) {
	var in []byte
	switch {
	case spec == "":
		in = []byte("{}")
	case spec == "-":
		b, err := io.ReadAll(io.LimitReader(a.io.In, 64<<20))
		if err != nil {
			return nil, fmt.Errorf("read input from stdin: %w", err)
		}
		in = b
	case strings.HasPrefix(spec, "@"):
		b, err := os.ReadFile(spec[1:])
		if err != nil {
			return nil, fmt.Errorf("read input: %w", err)
		}
		in = b
	default:
		in = []byte(spec)
	}
	in = bytes.TrimSpace(in)
	if !json.Valid(in) {
		return nil, usageError{fmt.Errorf("--input is not valid JSON (use '{\"key\":\"value\"}', @file.json or - for stdin)")}
	}
	return in, nil
}
