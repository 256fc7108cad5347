// Package serve is `station serve`: the station daemon, a long-lived
// station on a loopback address that keeps modules warm and answers the
// API of docs/api.md (internal/daemon), with the workflow engine
// (internal/workflow) and the hub relay follower (internal/hubsync).
package serve

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/station-dev/station/internal/cli/cmdutil"
	democmd "github.com/station-dev/station/internal/cli/demo"
	hubcmd "github.com/station-dev/station/internal/cli/hub"
	"github.com/station-dev/station/internal/daemon"
	"github.com/station-dev/station/internal/demo"
	"github.com/station-dev/station/internal/hubsync"
	"github.com/station-dev/station/internal/mcpserver"
	"github.com/station-dev/station/internal/station"
	"github.com/station-dev/station/internal/ui"
	"github.com/station-dev/station/internal/workflow"
)

// DefaultAddr is where `station serve` listens unless told otherwise.
const DefaultAddr = "127.0.0.1:7420"

// grace is how long calls in flight may take to finish when the daemon
// stops.
const grace = 30 * time.Second

// ServeOptions are what `station serve` was asked to do, and what it serves
// with.
type ServeOptions struct {
	IO   *cmdutil.IOStreams
	Addr string // --addr
	Demo bool   // --demo
	// Open opens the station home (Factory.Open); StartDemo sets up the
	// demo station instead, for --demo (internal/cli/demo).
	Open      func(context.Context) (*station.Station, error)
	StartDemo func(context.Context) (*demo.Demo, error)
	// Logger is the daemon's log for a station home; FileLogger the hub
	// relay follower's, which goes to station.log only (and to stderr with
	// -v): what it does, the relay's lines say (hub.RelayPrinter).
	Logger, FileLogger func(home string) *slog.Logger
	// Relay, if set, replaces the hub relay follower (tests).
	Relay func(*station.Station, hubsync.FollowOptions) func(context.Context)
}

// NewCmdServe returns `station serve`. runF, when set, is called with the parsed
// options instead of running the command.
func NewCmdServe(f *cmdutil.Factory, runF func(*ServeOptions) error) *cobra.Command {
	opts := &ServeOptions{IO: &f.IO, Open: f.Open, Logger: f.Logger, FileLogger: f.FileLogger,
		StartDemo: func(ctx context.Context) (*demo.Demo, error) { return democmd.StartServe(ctx, f) }}
	c := &cobra.Command{
		Use:   "serve",
		Short: "Run the station daemon: modules stay compiled and warm, the CLI and scripts call it",
		Long: `Serve runs a long-lived station on a loopback address. It keeps modules
compiled and warm, so calls skip the start-up a one-shot 'station run' pays,
and it answers a JSON API (docs/api.md) for scripts. While it runs, the station
commands in other terminals (run, workflow, audit, module install) use it
automatically; with --no-daemon they run in their own process.

Only the station's own user can drive it: every request needs the token the
daemon writes to STATION_HOME/daemon.json (mode 0600), requests from web pages
or through other host names are refused, and (on Linux) so is every connection
another user of the machine opened.

It also serves a dashboard at /ui/ (docs/ui.md): modules and what each may do,
approvals, the audit log with a live tail, workflow runs, LLM spending, teams
and advisories. station ui signs your browser in with a one-time link.

When the station is logged in to a hub (station hub login), the daemon follows
the hub's relay: it prints a line when it applies a team's pushed lockfile,
when it holds a change that asks for more than was approved (station team
status shows it, station team sync approves it), and when it stops following.

--demo serves a demo station instead, in ~/.station-demo (or --home; never
your own STATION_HOME): it builds the example modules from this repository,
starts stand-ins for api.stripe.com and the LLM provider on 127.0.0.1,
installs the examples, and prints commands to try (among them the example
workflow in examples/workflows, run from the checkout).

Stop it with Ctrl-C; calls in flight finish first (up to 30s).`,
		Example: `  station serve
  station serve --addr 127.0.0.1:9000
  go run ./cmd/station serve --demo`,
		Args: cmdutil.ExactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return serveRun(cmd.Context(), opts)
		},
	}
	c.Flags().StringVar(&opts.Addr, "addr", DefaultAddr, "loopback address to listen on (port 0 picks a free one)")
	c.Flags().BoolVar(&opts.Demo, "demo", false, "serve a demo station with the example modules and stand-in APIs")
	return c
}

// serveRun serves the station until ctx ends.
func serveRun(ctx context.Context, opts *ServeOptions) error {
	ln, err := daemon.Listen(opts.Addr)
	if err != nil {
		return err
	}
	defer ln.Close()

	var s *station.Station
	var dm *demo.Demo
	if opts.Demo {
		if dm, err = opts.StartDemo(ctx); err != nil {
			return err
		}
		defer dm.Close(ctx)
		s = dm.Station
	} else if s, err = opts.Open(ctx); err != nil {
		return err
	}
	if err := refuseSecond(ctx, s.Home); err != nil {
		return err
	}

	wfs, err := workflow.NewService(ctx, s, opts.IO.Getenv)
	if err != nil {
		return err
	}
	log := opts.Logger(s.Home)
	relay := opts.Relay
	if relay == nil {
		relay = hubsync.Follower
	}
	follow := relay(s, hubsync.FollowOptions{Log: opts.FileLogger(s.Home), OnEvent: hubcmd.RelayPrinter(opts.IO.Out)})
	out := opts.IO.Out
	ready := func() {
		fmt.Fprintf(out, "\nstation daemon listening on http://%s (STATION_HOME=%s)\n", ln.Addr(), cmdutil.TermText(s.Home))
		fmt.Fprintf(out, "token in %s; API reference: docs/api.md\n", cmdutil.TermText(filepath.Join(s.Home, daemon.StateFile)))
		fmt.Fprintf(out, "MCP (streamable HTTP, the same token as a bearer token): http://%s%s\n", ln.Addr(), daemon.MCPPath)
		fmt.Fprintf(out, "dashboard: http://%s%s (station ui signs you in)\n", ln.Addr(), daemon.UIPrefix)
		if dm != nil {
			democmd.PrintTry(out, dm)
		}
		fmt.Fprintln(out, "Ctrl-C stops it.")
	}
	tools, err := mcpserver.New(ctx, s, mcpserver.Options{Expose: s.Config.MCP.Expose, Version: cmdutil.Version(), Logger: log, Workflows: wfs})
	if err != nil {
		return err
	}
	dash, err := ui.New(ui.Options{Station: s, Workflows: wfs, Teams: teamDecider{st: s, log: opts.FileLogger(s.Home)}, Version: cmdutil.Version(), Logger: log})
	if err != nil {
		return err
	}
	defer dash.Close()
	srv, err := daemon.New(daemon.Options{Station: s, Logger: log, Version: cmdutil.Version(), Workflows: wfs.Daemon(),
		Background: []func(context.Context){follow, tools.Watch}, Ready: ready, MCP: tools.Handler(), UI: dash})
	if err != nil {
		return err
	}
	start := time.Now()
	if err := srv.Serve(ctx, ln, grace); err != nil {
		return err
	}
	fmt.Fprintf(out, "station daemon stopped after %s (STATION_HOME=%s)\n", cmdutil.Round(time.Since(start)), cmdutil.TermText(s.Home))
	return nil
}

// refuseSecond fails when a daemon already serves home.
func refuseSecond(ctx context.Context, home string) error {
	c, err := daemon.Dial(ctx, home)
	if err != nil {
		return nil
	}
	h, _ := c.Health(ctx)
	c.Close()
	pid := 0
	if h != nil {
		pid = h.PID
	}
	return fmt.Errorf("a daemon (pid %d) already serves %s; stop it first, or use it: the station commands in this home go through it", pid, home)
}
