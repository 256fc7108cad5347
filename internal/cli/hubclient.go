package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/hubsync"
	"github.com/station-dev/station/internal/station"
)

// hubError adds what to do to the errors a person meets most.
func hubError(err error) error {
	switch hub.CodeOf(err) {
	case hub.CodeUnauthenticated:
		return fmt.Errorf("%w (log in again: station hub login --url URL)", err)
	case hub.CodeNotTeamOwner:
		return fmt.Errorf("%w (ask an owner of the team to push, or to make you an owner)", err)
	}
	return err
}

// hubRelay returns the daemon's hub relay runner when the station is
// logged in to a hub, or nil. A running daemon applies team lockfile pushes
// as the hub relays them (hubsync.Runner).
func (a *app) hubRelay(ctx context.Context, s *station.Station, log *slog.Logger) func(context.Context) {
	if sess, err := hubsync.Open(ctx, s, log); err == nil {
		fmt.Fprintf(a.IO.Out, "following the hub relay at %s as %s\n", cmdutil.TermText(sess.Login.URL), cmdutil.TermText(sess.Login.Account))
	} else if !errors.Is(err, hubsync.ErrNotLoggedIn) {
		fmt.Fprintf(a.IO.Err, "station: warning: not following the hub's relay yet: %s\n", cmdutil.TermText(err.Error()))
	}
	return func(ctx context.Context) { followLogin(ctx, s, log, relayPoll) }
}

// relayPoll is how often the daemon looks for a changed hub login.
const relayPoll = 2 * time.Second

// followLogin follows the relay of whatever hub the station is logged in
// to, for as long as ctx lasts: a `station hub login` or `logout` made while
// the daemon runs (in another process) starts, switches or stops the relay
// within poll, without a restart.
func followLogin(ctx context.Context, s *station.Station, log *slog.Logger, poll time.Duration) {
	var (
		current string // the login being followed: URL, account and when it was made
		cancel  context.CancelFunc
		done    chan struct{}
	)
	stop := func() {
		if cancel != nil {
			cancel()
			<-done
			cancel = nil
		}
	}
	defer stop()
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		sig := ""
		if l, err := s.Store.HubLogin(ctx); err == nil {
			sig = l.URL + "\x00" + l.Account + "\x00" + l.LoggedIn.String()
		}
		if sig != current {
			if cancel != nil {
				stop()
				log.Info("stopped following the hub relay: the hub login changed")
			}
			current = sig
			if sig != "" {
				if sess, err := hubsync.Open(ctx, s, log); err != nil {
					log.Warn("hub relay: cannot follow the login", "err", err.Error())
				} else {
					rctx, c := context.WithCancel(ctx)
					cancel, done = c, make(chan struct{})
					log.Info("following the hub relay", "hub", sess.Login.URL, "account", sess.Login.Account)
					go func() {
						defer close(done)
						if err := (&hubsync.Runner{Session: sess}).Run(rctx); err != nil {
							log.Error("hub relay stopped", "err", err.Error())
						}
					}()
				}
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
