package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/hubclient"
	"github.com/station-dev/station/internal/hubsync"
	"github.com/station-dev/station/internal/station"
)

// hubSession opens the station and its hub login. Its log goes to
// station.log only: what the command did is printed by the command.
func (a *app) hubSession(ctx context.Context) (*hubsync.Session, error) {
	s, err := a.open(ctx)
	if err != nil {
		return nil, err
	}
	return hubsync.Open(ctx, s, a.fileLogger(s.Home))
}

// fileLogger logs to STATION_HOME/station.log (and to stderr with -v).
func (a *app) fileLogger(home string) *slog.Logger {
	var hs []slog.Handler
	if a.verbose {
		hs = append(hs, newLineHandler(a.io.Err, slog.LevelDebug))
	}
	if f := openLog(home); f != nil {
		a.closers = append(a.closers, f)
		hs = append(hs, slog.NewTextHandler(f, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	switch len(hs) {
	case 0:
		return slog.New(slog.DiscardHandler)
	case 1:
		return slog.New(hs[0])
	}
	return slog.New(teeHandler{hs[0], hs[1]})
}

// approvalMode says what happens when a hub install needs approval.
type approvalMode int

const (
	// askOrUsage: --yes approves, a terminal asks, otherwise the command
	// fails asking for --yes (as a local install does).
	askOrUsage approvalMode = iota
	// askOrDecline: --yes approves, a terminal asks, otherwise the change
	// is declined (exit 5) with the difference shown.
	askOrDecline
)

// hubApprover returns the approver of hub installs for a command: it
// shows the plan (with what it asks beyond the approval), then approves
// with --yes, asks on a terminal, or declines.
func (a *app) hubApprover(yes bool, mode approvalMode, verb string) hubsync.Approver {
	return func(p hubsync.Plan) (bool, error) {
		printHubPlan(a.io.Err, p)
		ref := termText(p.Version.Module + "@" + p.Version.Version)
		if yes {
			return true, nil
		}
		if !a.io.IsTerminal {
			if mode == askOrUsage {
				return false, usageError{fmt.Errorf("%s %s needs approval: review the permissions above and rerun with --yes", verb, ref)}
			}
			return false, fmt.Errorf("%s %s: it %s; review it and rerun with --yes (the installed version keeps running): %w", verb, ref, strings.Join(termList(p.Differences()), "; "), station.ErrNotApproved)
		}
		return a.confirm(fmt.Sprintf("%s %s?", capitalize(verb), ref)), nil
	}
}

// confirm asks a yes/no question on the terminal; anything but y or yes is
// no. Callers decide first what --yes and a missing terminal mean.
func (a *app) confirm(question string) bool {
	fmt.Fprintf(a.io.Err, "%s [y/N] ", question)
	line, _ := bufio.NewReader(a.io.In).ReadString('\n')
	ans := strings.ToLower(strings.TrimSpace(line))
	return ans == "y" || ans == "yes"
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// printHubPlan shows a hub install: where it comes from, who signed it,
// what the module may do and, for an upgrade or a team change, what it asks
// beyond what was approved. What the hub and the manifest supplied goes
// through termText.
func printHubPlan(w io.Writer, p hubsync.Plan) {
	printPlan(w, p.Plan)
	from := termText(p.Hub)
	if p.Team != "" {
		from += ", for team " + termText(p.Team)
	}
	fmt.Fprintf(w, "  from      %s\n", from)
	owner, _, _ := strings.Cut(p.Version.Module, "/")
	fmt.Fprintf(w, "  signed by key %s of %s (signature and digests verified)\n", p.Key.ID, termText(owner))
	if p.Version.Yanked {
		fmt.Fprintf(w, "  YANKED by its publisher: %s\n", termText(p.Version.YankReason))
	}
	diff := termList(p.Differences())
	switch {
	case p.Approved != nil && len(diff) > 0:
		fmt.Fprintf(w, "  Compared with what you approved for %s %s, this version:\n", termText(p.Plan.Replaces.ID), termText(p.Plan.Replaces.Version))
		for _, d := range diff {
			fmt.Fprintf(w, "    + %s\n", d)
		}
	case p.Approved != nil:
		fmt.Fprintln(w, "  It asks for nothing beyond what you approved for the installed version.")
	case p.KeyChange:
		for _, d := range diff[len(p.Escalations):] {
			fmt.Fprintf(w, "    + %s\n", d)
		}
	}
}

// refMaybe reports whether arg should be installed from the hub: it is not
// an existing directory and reads as owner/slug[@version].
func refMaybe(arg string, isDir func(string) bool) bool {
	if isDir(arg) {
		return false
	}
	_, _, err := hubclient.ParseRef(arg)
	return err == nil
}

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
		fmt.Fprintf(a.io.Out, "following the hub relay at %s as %s\n", termText(sess.Login.URL), termText(sess.Login.Account))
	} else if !errors.Is(err, hubsync.ErrNotLoggedIn) {
		fmt.Fprintf(a.io.Err, "station: warning: not following the hub's relay yet: %s\n", termText(err.Error()))
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
