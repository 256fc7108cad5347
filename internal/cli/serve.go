package cli

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/station-dev/station/internal/cli/cmdutil"
	democmd "github.com/station-dev/station/internal/cli/demo"
	hubcmd "github.com/station-dev/station/internal/cli/hub"
	"github.com/station-dev/station/internal/daemon"
	demodata "github.com/station-dev/station/internal/demo"
	"github.com/station-dev/station/internal/hubsync"
	"github.com/station-dev/station/internal/station"
	"github.com/station-dev/station/internal/workflow"
)

// DefaultDaemonAddr is where `station serve` listens unless told otherwise.
const DefaultDaemonAddr = "127.0.0.1:7420"

func (a *app) serveCmd() *cobra.Command {
	var addr string
	var demo bool
	c := &cobra.Command{
		Use:   "serve",
		Short: "Run the station daemon: modules stay compiled and warm, the CLI and scripts call it",
		Long: `Serve runs a long-lived station on a loopback address. It keeps modules
compiled and warm, so calls skip the start-up a one-shot 'station run' pays,
and it answers a JSON API (docs/api.md) for scripts. While it runs, the station
commands in other terminals (run, workflow, audit, module install) use it
automatically; with --no-daemon they run in their own process.

Only the station's own user can drive it: every request needs the token the
daemon writes to STATION_HOME/daemon.json (mode 0600), and requests from web
pages or through other host names are refused.

--demo serves a demo station instead, in ~/.station-demo (or --home; never
your own STATION_HOME): it builds the example modules from this repository, starts
stand-ins for api.stripe.com and the LLM provider on 127.0.0.1, installs the
examples and an example workflow, and prints commands to try.

Stop it with Ctrl-C; calls in flight finish first.`,
		Example: `  station serve
  station serve --addr 127.0.0.1:9000
  go run ./cmd/station serve --demo`,
		Args: cmdutil.ExactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.serve(cmd.Context(), addr, demo)
		},
	}
	c.Flags().StringVar(&addr, "addr", DefaultDaemonAddr, "loopback address to listen on (port 0 picks a free one)")
	c.Flags().BoolVar(&demo, "demo", false, "serve a demo station with the example modules and stand-in APIs")
	return c
}

func (a *app) serve(ctx context.Context, addr string, demo bool) error {
	ln, err := daemon.Listen(addr)
	if err != nil {
		return err
	}
	defer ln.Close()

	var s *station.Station
	var home string
	var dm *demodata.Demo
	if demo {
		if dm, err = democmd.StartServe(ctx, a.Factory); err != nil {
			return err
		}
		defer dm.Close(ctx)
		s, home = dm.Station, dm.Home
	} else {
		s, err = a.Open(ctx)
		if err != nil {
			return err
		}
		home = s.Home
	}
	if c, err := daemon.Dial(ctx, home); err == nil {
		h, _ := c.Health(ctx)
		c.Close()
		pid := 0
		if h != nil {
			pid = h.PID
		}
		return fmt.Errorf("a daemon (pid %d) already serves %s; stop it first", pid, home)
	}

	wfs, err := workflow.NewService(ctx, s, a.IO.Getenv)
	if err != nil {
		return err
	}
	log := a.Logger(home)
	var background []func(context.Context)
	if relay := hubsync.Follower(s, hubsync.FollowOptions{Log: log, OnEvent: hubcmd.RelayPrinter(a.IO.Out)}); relay != nil {
		background = append(background, relay)
	}
	ready := func() {
		fmt.Fprintf(a.IO.Out, "\nstation daemon listening on http://%s (STATION_HOME=%s)\n", ln.Addr(), home)
		fmt.Fprintf(a.IO.Out, "token in %s; API reference: docs/api.md\n", filepath.Join(home, daemon.StateFile))
		if dm != nil {
			democmd.PrintTry(a.IO.Out, dm)
		}
		fmt.Fprintln(a.IO.Out, "Ctrl-C stops it.")
	}
	srv, err := daemon.New(daemon.Options{Station: s, Logger: log, Version: versionString(), Workflows: wfs.Daemon(), Background: background, Ready: ready})
	if err != nil {
		return err
	}
	return srv.Serve(ctx, ln, 30*time.Second)
}
