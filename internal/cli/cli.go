// Package cli is the station command line. Main runs it with injected
// arguments and streams, so the whole CLI runs in tests with buffers; errors
// become exit codes, and get their hints, in exactly one place (Run).
//
// Each command lives under internal/cli/<noun> (module, team, hub, ...)
// with its options, its constructor and its run function; what they share
// is in internal/cli/cmdutil.
package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/station-dev/station/internal/cli/advisories"
	"github.com/station-dev/station/internal/cli/audit"
	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/cli/demo"
	"github.com/station-dev/station/internal/cli/hub"
	"github.com/station-dev/station/internal/cli/llm"
	mcpcmd "github.com/station-dev/station/internal/cli/mcp"
	"github.com/station-dev/station/internal/cli/module"
	reportcmd "github.com/station-dev/station/internal/cli/report"
	"github.com/station-dev/station/internal/cli/run"
	"github.com/station-dev/station/internal/cli/secret"
	"github.com/station-dev/station/internal/cli/serve"
	"github.com/station-dev/station/internal/cli/team"
	"github.com/station-dev/station/internal/cli/uicmd"
	"github.com/station-dev/station/internal/cli/version"
	"github.com/station-dev/station/internal/cli/workflow"
)

// Exit codes, as cmdutil defines them: part of the CLI's contract with
// scripts.
const (
	ExitOK        = cmdutil.ExitOK
	ExitError     = cmdutil.ExitError
	ExitUsage     = cmdutil.ExitUsage
	ExitViolation = cmdutil.ExitViolation
	ExitCrash     = cmdutil.ExitCrash
	ExitDeclined  = cmdutil.ExitDeclined
)

// IO is the environment a command runs in.
type IO = cmdutil.IOStreams

// Main runs the station CLI and returns its exit code.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, unix.SIGTERM)
	defer stop()
	return Run(ctx, args, IO{In: stdin, Out: stdout, Err: stderr, Getenv: os.Getenv, IsTerminal: isTerminal(stdin), ErrIsTerminal: isTerminal(stderr)})
}

// isTerminal reports whether v is a terminal: a terminal answers TCGETS;
// /dev/null, files and pipes do not.
func isTerminal(v any) bool {
	f, ok := v.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// Run is Main with an explicit context and IO.
func Run(ctx context.Context, args []string, streams IO) int {
	f := cmdutil.New(streams)
	root := NewCmdRoot(f)
	root.SetArgs(args)
	root.SetIn(f.IO.In)
	root.SetOut(f.IO.Out)
	root.SetErr(f.IO.Err)
	cmd, err := root.ExecuteContextC(ctx)
	if cerr := f.Close(ctx); err == nil {
		err = cerr
	}
	if err == nil {
		return ExitOK
	}
	return report(f.IO.Err, cmd, err)
}

// report prints err (with its hint, and for a usage error where to read
// the command's help) and returns its exit code.
func report(w io.Writer, cmd *cobra.Command, err error) int {
	code := cmdutil.ExitCode(err)
	// An error may quote a hub, a module or a workflow file, and may join
	// several (one per line).
	fmt.Fprintln(w, "station: "+cmdutil.TermBlock(err.Error(), "  "))
	if hint := cmdutil.Hint(err); hint != "" {
		fmt.Fprintln(w, "  ("+hint+")")
	}
	if code == ExitUsage {
		path := "station"
		if cmd != nil {
			path = cmd.CommandPath()
		}
		fmt.Fprintf(w, "Run '%s --help' for usage.\n", path)
	}
	return code
}

// NewCmdRoot returns the station command with every subcommand.
func NewCmdRoot(f *cmdutil.Factory) *cobra.Command {
	root := &cobra.Command{
		Use:   "station",
		Short: "Run third-party modules, each confined to what its manifest declares",
		Long: `Station installs modules (WebAssembly, built from Go or any language that
targets the station ABI) and runs their commands. Every module is confined to
what its manifest declares: the hosts it may reach, whether it may start
programs, and where it may write. Every decision is recorded in the audit log.

The station keeps its state in STATION_HOME (default ~/.station).`,
		Example: `  station module build examples/hello
  station module install examples/hello
  station run station/hello greet --input '{"name":"Ada"}'
  station audit --denied`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().BoolVarP(&f.Verbose, "verbose", "v", false, "log what the station does (module gates, guest log lines) to stderr")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return cmdutil.UsageError{Err: err} })
	v := version.Current()
	root.Version = v.Version
	root.SetVersionTemplate(v.String())
	for _, c := range []*cobra.Command{run.NewCmdRun(f, nil), audit.NewCmdAudit(f, nil), workflow.NewCmdWorkflow(f), team.NewCmdTeam(f), reportcmd.NewCmdReport(f), llm.NewCmdLLM(f), advisories.NewCmdAdvisories(f)} {
		cmdutil.StationFlags(c, f)
		root.AddCommand(c)
	}
	sv := serve.NewCmdServe(f, nil)
	cmdutil.HomeFlag(sv, f)
	uc := uicmd.NewCmdUI(f, nil)
	cmdutil.HomeFlag(uc, f)
	// module and hub give the station's flags to the subcommands that use
	// a station home; demo has a --home of its own.
	root.AddCommand(sv, module.NewCmdModule(f), version.NewCmdVersion(f, nil), hub.NewCmdHub(f), demo.NewCmdDemo(f, nil), mcpcmd.NewCmdMCP(f, nil), secret.NewCmdSecret(f), uc)
	return cmdutil.Group(root)
}
