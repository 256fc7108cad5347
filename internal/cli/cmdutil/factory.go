// Package cmdutil is what every station command shares, in the manner of
// gh's pkg/cmdutil: the Factory a command gets its streams, its station and
// its daemon from; the one output path (a typed result printed as text or,
// with --json, as snake_case JSON); the errors that carry a usage mistake or
// a hint; the sanitizer everything a hub or a module supplies passes on its
// way to the terminal; approval prompts and progress lines.
//
// A command lives in its own file under internal/cli/<noun>: an options
// struct (XxxOptions), a NewCmdXxx constructor that takes a run hook (so a
// test checks flag parsing without running anything), and a run function
// (xxxRun) that calls one service method and prints what it returns.
package cmdutil

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"

	"github.com/tetratelabs/wazero"

	"github.com/station-dev/station/internal/config"
	"github.com/station-dev/station/internal/daemon"
	"github.com/station-dev/station/internal/hubsync"
	"github.com/station-dev/station/internal/station"
)

// IOStreams is the environment a command runs in.
type IOStreams struct {
	In       io.Reader
	Out, Err io.Writer
	// Getenv reads the environment (os.Getenv in production).
	Getenv func(string) string
	// IsTerminal reports whether In is interactive (for approval prompts).
	IsTerminal bool
	// ErrIsTerminal reports whether Err is a terminal (for progress lines
	// that redraw themselves).
	ErrIsTerminal bool
	// Cache, if set, replaces each station home's on-disk compilation
	// cache (tests share one, so that a module is compiled once per test
	// binary rather than once per home).
	Cache wazero.CompilationCache
}

// Factory gives a command what it needs from its environment, opening
// each thing when first asked and closing all of it when the command
// returns (Close). The station's flags (--verbose, and where a command uses
// a station home --home and --no-daemon: StationFlags) are bound to its
// fields.
type Factory struct {
	IO       IOStreams
	Home     string // --home
	Verbose  bool   // --verbose
	NoDaemon bool   // --no-daemon

	mu       sync.Mutex
	stations []*station.Station
	closers  []io.Closer

	daemonMu    sync.Mutex
	daemonDone  bool           // Daemon has looked for the daemon
	daemonFound *daemon.Client // what it found (nil: none, or not to be used)
}

// New returns a Factory for streams.
func New(streams IOStreams) *Factory {
	if streams.Getenv == nil {
		streams.Getenv = func(string) string { return "" }
	}
	if streams.In == nil {
		streams.In = strings.NewReader("")
	}
	// A command writes from several goroutines at once (a workflow's
	// progress beside its modules' log lines, which have locks of their
	// own): each stream takes one lock per write, so that no writer —
	// a file, a pipe, a test's buffer — sees two at once.
	streams.Out, streams.Err = lockWriter(streams.Out), lockWriter(streams.Err)
	return &Factory{IO: streams}
}

// lockedWriter serializes the writes to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func lockWriter(w io.Writer) io.Writer {
	if w == nil {
		return nil
	}
	if _, ok := w.(*lockedWriter); ok {
		return w
	}
	return &lockedWriter{w: w}
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Close closes every station the command opened (flushing its audit log)
// and then the log files and clients.
func (f *Factory) Close(ctx context.Context) error {
	f.mu.Lock()
	stations, closers := f.stations, f.closers
	f.stations, f.closers = nil, nil
	f.mu.Unlock()
	var err error
	for _, s := range stations {
		err = errors.Join(err, s.Close(context.WithoutCancel(ctx)))
	}
	for _, c := range closers {
		c.Close()
	}
	return err
}

// onClose registers c to be closed when the command returns.
func (f *Factory) onClose(c io.Closer) {
	f.mu.Lock()
	f.closers = append(f.closers, c)
	f.mu.Unlock()
}

// HomeDir is the station home: --home, $STATION_HOME or ~/.station.
func (f *Factory) HomeDir() (string, error) {
	if f.Home != "" {
		return f.Home, nil
	}
	if h := f.IO.Getenv("STATION_HOME"); h != "" {
		return h, nil
	}
	return config.Home()
}

// Open opens the station for a command; Close closes it (flushing the
// audit log) before the log file.
func (f *Factory) Open(ctx context.Context) (*station.Station, error) {
	home, err := f.HomeDir()
	if err != nil {
		return nil, err
	}
	s, err := station.Open(ctx, home, station.Options{Logger: f.Logger(home), Getenv: f.IO.Getenv, Cache: f.IO.Cache})
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.stations = append(f.stations, s)
	f.mu.Unlock()
	return s, nil
}

// Logger returns the station logger: warnings (everything with -v) to
// stderr, and info and above to $STATION_HOME/station.log, so the gates each
// module was loaded with are always on record.
func (f *Factory) Logger(home string) *slog.Logger {
	level := slog.LevelWarn
	if f.Verbose {
		level = slog.LevelDebug
	}
	hs := []slog.Handler{NewLineHandler(f.IO.Err, level)}
	if h := f.fileHandler(home); h != nil {
		hs = append(hs, h)
	}
	return slog.New(slog.NewMultiHandler(hs...))
}

// FileLogger logs to $STATION_HOME/station.log (and to stderr with -v):
// for work whose outcome the command prints itself.
func (f *Factory) FileLogger(home string) *slog.Logger {
	var hs []slog.Handler
	if f.Verbose {
		hs = append(hs, NewLineHandler(f.IO.Err, slog.LevelDebug))
	}
	if h := f.fileHandler(home); h != nil {
		hs = append(hs, h)
	}
	return slog.New(slog.NewMultiHandler(hs...))
}

func (f *Factory) fileHandler(home string) slog.Handler {
	if home == "" {
		return nil
	}
	lf := openLog(home)
	if lf == nil {
		return nil
	}
	f.onClose(lf)
	return slog.NewTextHandler(lf, &slog.HandlerOptions{Level: slog.LevelInfo})
}

// Daemon returns a client of the daemon serving this station home, or nil
// when none runs or --no-daemon is set: the command then runs in process.
func (f *Factory) Daemon(ctx context.Context) *daemon.Client {
	f.daemonMu.Lock()
	defer f.daemonMu.Unlock()
	if !f.daemonDone {
		// Once per command: a command that runs and then reloads dials and
		// proves the daemon once, and warns about it once.
		f.daemonFound, f.daemonDone = f.dialDaemon(ctx), true
	}
	return f.daemonFound
}

func (f *Factory) dialDaemon(ctx context.Context) *daemon.Client {
	if f.NoDaemon || f.IO.Getenv("STATION_NO_DAEMON") != "" {
		return nil
	}
	home, err := f.HomeDir()
	if err != nil {
		return nil
	}
	c, err := daemon.Dial(ctx, home)
	if err != nil {
		// A program that answers on the daemon's port without proving it
		// knows the token is worth a line: another user's program, or a
		// daemon older than this CLI that wants restarting.
		if !errors.Is(err, daemon.ErrNotRunning) || errors.Is(err, daemon.ErrUnproven) || f.Verbose {
			fmt.Fprintf(f.IO.Err, "station: %s; running in this process\n", TermText(err.Error()))
		}
		return nil
	}
	f.onClose(c)
	return c
}

// ReloadInDaemon tells a running daemon that module id changed in the store.
func (f *Factory) ReloadInDaemon(ctx context.Context, id string) {
	c := f.Daemon(ctx)
	if c == nil {
		return
	}
	if err := c.Reload(ctx, id); err != nil {
		fmt.Fprintf(f.IO.Err, "station: the running daemon could not reload %s: %s (restart it to pick up the change)\n", TermText(id), TermText(err.Error()))
	}
}

// HubSession opens the station and its hub login. Its log goes to
// station.log only: what the command did is printed by the command.
func (f *Factory) HubSession(ctx context.Context) (*hubsync.Session, error) {
	s, err := f.Open(ctx)
	if err != nil {
		return nil, err
	}
	return hubsync.Open(ctx, s, f.FileLogger(s.Home))
}

// Confirm asks a yes/no question on the terminal; anything but y or yes is
// no. Callers decide first what --yes and a missing terminal mean.
func (f *Factory) Confirm(question string) bool {
	fmt.Fprintf(f.IO.Err, "%s [y/N] ", question)
	line, _ := bufio.NewReader(f.IO.In).ReadString('\n')
	ans := strings.ToLower(strings.TrimSpace(line))
	return ans == "y" || ans == "yes"
}

// Ask decides a confirmation: with --yes (yes) it is given without asking;
// on a terminal it is the operator's answer to question (confirm, which
// may print what the question is about first); without a terminal it is
// the usage error refusal, which says to rerun with --yes (exit 2): a
// script states that it means it.
func Ask(yes, terminal bool, confirm func(question string) bool, question, refusal string) (bool, error) {
	switch {
	case yes:
		return true, nil
	case !terminal:
		return false, UsageError{errors.New(refusal)}
	}
	return confirm(question), nil
}

// A Caller runs module commands: the daemon when one serves this home, or
// the station in this process.
type Caller interface {
	Run(ctx context.Context, module, command string, input []byte) ([]byte, error)
}

type daemonCaller struct{ c *daemon.Client }

func (d daemonCaller) Run(ctx context.Context, module, command string, input []byte) ([]byte, error) {
	return d.c.Run(ctx, module, command, input, "")
}

// Caller returns the daemon serving this station home, or else the
// station opened in this process.
func (f *Factory) Caller(ctx context.Context) (Caller, error) {
	if c := f.Daemon(ctx); c != nil {
		return daemonCaller{c}, nil
	}
	s, err := f.Open(ctx)
	if err != nil {
		return nil, err
	}
	return s, nil
}
