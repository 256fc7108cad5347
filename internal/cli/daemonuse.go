package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/station-dev/station/internal/daemon"
)

// daemon returns a client of the daemon serving this station home, or nil
// when none runs or --no-daemon is set: the command then runs in process.
func (a *app) daemon(ctx context.Context) *daemon.Client {
	if a.noDaemon || a.io.Getenv("STATION_NO_DAEMON") != "" {
		return nil
	}
	home, err := a.homeDir()
	if err != nil {
		return nil
	}
	c, err := daemon.Dial(ctx, home)
	if err != nil {
		// A program that answers on the daemon's port without proving it
		// knows the token is worth a line: another user's program, or a
		// daemon older than this CLI that wants restarting.
		if !errors.Is(err, daemon.ErrNotRunning) || errors.Is(err, daemon.ErrUnproven) || a.verbose {
			fmt.Fprintf(a.io.Err, "station: %s; running in this process\n", termText(err.Error()))
		}
		return nil
	}
	a.closers = append(a.closers, c)
	return c
}

// reloadInDaemon tells a running daemon that module id changed in the store.
func (a *app) reloadInDaemon(ctx context.Context, id string) {
	c := a.daemon(ctx)
	if c == nil {
		return
	}
	if err := c.Reload(ctx, id); err != nil {
		fmt.Fprintf(a.io.Err, "station: the running daemon could not reload %s: %s (restart it to pick up the change)\n", termText(id), termText(err.Error()))
	}
}
