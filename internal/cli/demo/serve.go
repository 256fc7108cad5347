package demo

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/demo"
)

// StartServe sets up the demo station that station serve --demo serves:
// in --home, else ~/.station-demo (never $STATION_HOME), with this very
// binary copied into it for the commands PrintTry prints, and the steps
// printed as they go. Close the demo when the daemon stops.
func StartServe(ctx context.Context, f *cmdutil.Factory) (*demo.Demo, error) {
	home, err := demo.DefaultHome(f.Home)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(f.IO.Out, "station serve --demo — STATION_HOME=%s\n", cmdutil.TermText(home))
	exe, err := os.Executable()
	if err != nil {
		exe = "" // PrintTry falls back to go run
	}
	return demo.Start(ctx, demo.Options{Home: home, Logger: f.Logger(home), Cache: f.IO.Cache, Executable: exe,
		Progress: newProgress(f.IO.Out, f.StartProgress)})
}

// PrintTry prints the commands to try against the served demo from another
// terminal.
func PrintTry(w io.Writer, d *demo.Demo) {
	fmt.Fprintln(w, "\nIn another terminal, try:")
	for _, c := range d.Try() {
		if c.Note == "" {
			fmt.Fprintf(w, "  %s\n", cmdutil.TermText(c.Line))
			continue
		}
		fmt.Fprintf(w, "  %s   # %s\n", cmdutil.TermText(c.Line), c.Note)
	}
}
