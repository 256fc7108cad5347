// Package cli is the station command line. Main runs it with injected
// arguments and streams, so the whole CLI runs in tests with buffers; errors
// become exit codes in exactly one place (exitCode).
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"

	"github.com/spf13/cobra"
	"github.com/tetratelabs/wazero"
	"golang.org/x/sys/unix"

	"github.com/station-dev/station/internal/config"
	"github.com/station-dev/station/internal/host"
	"github.com/station-dev/station/internal/sandbox"
	"github.com/station-dev/station/internal/station"
)

// Exit codes. They are part of the CLI's contract with scripts.
const (
	ExitOK        = 0
	ExitError     = 1 // anything else: bad input, a command that returned an error, ...
	ExitUsage     = 2 // wrong flags or arguments
	ExitViolation = 3 // a sandbox gate denied an operation and the command failed
	ExitCrash     = 4 // the module trapped, crashed or ran out of time
	ExitDeclined  = 5 // the operator declined an approval
)

// IO is the environment a command runs in.
type IO struct {
	In       io.Reader
	Out, Err io.Writer
	// Getenv reads the environment (os.Getenv in production).
	Getenv func(string) string
	// IsTerminal reports whether In is interactive (for approval prompts).
	IsTerminal bool
	// Cache, if set, replaces each station home's on-disk compilation
	// cache (tests share one, so that a module is compiled once per test
	// binary rather than once per home).
	Cache wazero.CompilationCache
}

type app struct {
	stations []*station.Station // opened by commands; closed by Run
	closers  []io.Closer
	io       IO
	home     string
	verbose  bool
	noDaemon bool
	opener   func(ctx context.Context, home string, opts station.Options) (*station.Station, error)
}

// Main runs the station CLI and returns its exit code.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, unix.SIGTERM)
	defer stop()
	isTerm := false
	if f, ok := stdin.(*os.File); ok {
		// A terminal answers TCGETS; /dev/null and pipes do not.
		_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
		isTerm = err == nil
	}
	return Run(ctx, args, IO{In: stdin, Out: stdout, Err: stderr, Getenv: os.Getenv, IsTerminal: isTerm})
}

// Run is Main with an explicit context and IO.
func Run(ctx context.Context, args []string, iostreams IO) int {
	if iostreams.Getenv == nil {
		iostreams.Getenv = func(string) string { return "" }
	}
	a := &app{io: iostreams, opener: station.Open}
	root := a.rootCmd()
	root.SetArgs(args)
	root.SetIn(iostreams.In)
	root.SetOut(iostreams.Out)
	root.SetErr(iostreams.Err)
	err := root.ExecuteContext(ctx)
	for _, s := range a.stations {
		err = errors.Join(err, s.Close(context.WithoutCancel(ctx)))
	}
	for _, c := range a.closers {
		c.Close()
	}
	if err == nil {
		return ExitOK
	}
	code := exitCode(err)
	if !errors.Is(err, errSilent) {
		// An error may quote a hub, a module or a workflow file, and may
		// join several (one per line).
		fmt.Fprintln(iostreams.Err, "station: "+termBlock(err.Error(), "  "))
	}
	if code == ExitUsage {
		fmt.Fprintln(iostreams.Err, "Run 'station --help' for usage.")
	}
	return code
}

// errSilent marks an error already reported to the user.
var errSilent = errors.New("reported")

type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// exitCode maps an error to the process exit code. It is the only place
// that does.
func exitCode(err error) int {
	var v *sandbox.Violation
	var ce *host.CallError
	var ue usageError
	switch {
	case errors.As(err, &ue):
		return ExitUsage
	case errors.As(err, &v):
		return ExitViolation
	case errors.As(err, &ce) && (ce.Kind == host.KindCrash || ce.Kind == host.KindTimeout || ce.Kind == host.KindFault):
		return ExitCrash
	case errors.Is(err, station.ErrNotApproved):
		return ExitDeclined
	}
	return ExitError
}

func (a *app) rootCmd() *cobra.Command {
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
	root.PersistentFlags().StringVar(&a.home, "home", "", "station home directory (default $STATION_HOME or ~/.station)")
	root.PersistentFlags().BoolVarP(&a.verbose, "verbose", "v", false, "log what the station does (module gates, guest log lines) to stderr")
	root.PersistentFlags().BoolVar(&a.noDaemon, "no-daemon", false, "run in this process even if a station daemon (station serve) is running")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(a.moduleCmd(), a.runCmd(), a.auditCmd(), a.demoCmd(), a.serveCmd(), a.versionCmd(), a.workflowCmd(), a.hubCmd(), a.teamCmd(), a.llmCmd())
	return root
}

func (a *app) homeDir() (string, error) {
	if a.home != "" {
		return a.home, nil
	}
	if h := a.io.Getenv("STATION_HOME"); h != "" {
		return h, nil
	}
	return config.Home()
}

// logger returns the station logger: warnings (everything with -v) to
// stderr, and info and above to $STATION_HOME/station.log, so the gates each
// module was loaded with are always on record.
func (a *app) logger(home string) *slog.Logger {
	level := slog.LevelWarn
	if a.verbose {
		level = slog.LevelDebug
	}
	h := slog.Handler(newLineHandler(a.io.Err, level))
	if home != "" {
		if f := openLog(home); f != nil {
			a.closers = append(a.closers, f)
			h = teeHandler{h, slog.NewTextHandler(f, &slog.HandlerOptions{Level: slog.LevelInfo})}
		}
	}
	return slog.New(h)
}

// open opens the station for a command. Run closes it (flushing the audit
// log) when the command returns, before the log file.
func (a *app) open(ctx context.Context) (*station.Station, error) {
	home, err := a.homeDir()
	if err != nil {
		return nil, err
	}
	s, err := a.opener(ctx, home, station.Options{Logger: a.logger(home), Getenv: a.io.Getenv, Cache: a.io.Cache})
	if err != nil {
		return nil, err
	}
	a.stations = append(a.stations, s)
	return s, nil
}

func exactArgs(n int, names ...string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usageError{fmt.Errorf("%s needs %d argument(s): %s (got %d)", cmd.CommandPath(), n, strings.Join(names, " "), len(args))}
		}
		return nil
	}
}
