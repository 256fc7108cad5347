package hubsync

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/station-dev/station/internal/station"
)

// RelayEventKind says what a RelayEvent reports.
type RelayEventKind string

// What the relay follower reports to the operator of `station serve`.
const (
	// RelayFollowing: the station follows the relay of Hub as Account.
	RelayFollowing RelayEventKind = "following"
	// RelayApplied: a team lockfile revision was applied (Installed and
	// Failed say what changed and what could not be applied).
	RelayApplied RelayEventKind = "applied"
	// RelayPending: a change of a team lockfile waits for the operator's
	// approval (Asks says what it asks beyond the approval); the approved
	// version keeps running.
	RelayPending RelayEventKind = "pending"
	// RelayStopped: the station stopped following the relay of Hub, or
	// could not start (Reason says why).
	RelayStopped RelayEventKind = "stopped"
	// RelayAdvisories: advisories or yanks arrived and were applied
	// (Advisories and Yanks count them); Affected says which installed
	// versions they affect now.
	RelayAdvisories RelayEventKind = "advisories"
)

// RelayEvent is one thing the relay follower did that its operator
// should see. Every string but Kind may come from the hub: print it
// sanitised.
type RelayEvent struct {
	Kind         RelayEventKind
	Hub, Account string
	// Team and Revision name the lockfile (RelayApplied, RelayPending).
	Team     string
	Revision int64
	// Installed are the modules a RelayApplied installed or changed, as
	// id@version; Failed why others could not be applied.
	Installed, Failed []string
	// Module and Version name a RelayPending's change; FromVersion the
	// version that keeps running ("" when the module is not installed).
	Module, Version, FromVersion string
	// Asks are what a RelayPending's change asks beyond the approval.
	Asks []string
	// Reason is why a RelayStopped stopped.
	Reason string
	// Advisories and Yanks count what a RelayAdvisories applied; Affected
	// are the installed versions affected now, in plain words
	// ("dave/tool@1.0.0: STATION-2026-0001 (critical), does not run").
	Advisories, Yanks int
	Affected          []string
}

// FollowOptions configure Follow.
type FollowOptions struct {
	// Log receives what the follower and the relay runner do (default:
	// nowhere).
	Log *slog.Logger
	// Poll is how often the station's hub login is checked for a change
	// (default 2 s).
	Poll time.Duration
	// OnEvent, if set, is told each RelayEvent, one call at a time, from
	// the follower's goroutines: it should not block for long.
	OnEvent func(RelayEvent)
	// MinBackoff is the relay runner's first wait after a failure (tests).
	MinBackoff time.Duration
}

// DefaultFollowPoll is how often Follow looks for a changed hub login.
const DefaultFollowPoll = 2 * time.Second

// Follow follows the relay of whatever hub st is logged in to, for as
// long as ctx lasts, and is what `station serve` runs: a `station hub
// login` or `logout` made while it runs (in another process) starts,
// switches or stops the relay within o.Poll, without a restart. Each
// lockfile the relay brings is applied (Runner), changes that ask for
// more than this station approved are recorded as pending, and each of
// these is reported to o.OnEvent.
func Follow(ctx context.Context, st *station.Station, o FollowOptions) {
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	poll := o.Poll
	if poll <= 0 {
		poll = DefaultFollowPoll
	}
	var mu sync.Mutex
	report := func(e RelayEvent) {
		if o.OnEvent != nil {
			mu.Lock()
			defer mu.Unlock()
			o.OnEvent(e)
		}
	}
	var (
		current  string // the login being followed: URL, account and when it was made
		followed RelayEvent
		cancel   context.CancelFunc
		done     chan struct{}
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
		if l, err := st.Store.HubLogin(ctx); err == nil {
			sig = l.URL + "\x00" + l.Account + "\x00" + l.LoggedIn.String()
		}
		if sig != current {
			if cancel != nil {
				ended := false // the runner stopped by itself, and said why
				select {
				case <-done:
					ended = true
				default:
				}
				stop()
				log.Info("stopped following the hub relay: the hub login changed")
				if !ended {
					report(RelayEvent{Kind: RelayStopped, Hub: followed.Hub, Account: followed.Account, Reason: "the hub login changed"})
				}
			}
			current = sig
			if sig != "" {
				if sess, err := Open(ctx, st, log); err != nil {
					log.Warn("hub relay: cannot follow the login", "err", err.Error())
					if ctx.Err() == nil {
						report(RelayEvent{Kind: RelayStopped, Reason: "cannot follow the hub login: " + err.Error()})
					}
				} else {
					rctx, c := context.WithCancel(ctx)
					cancel, done = c, make(chan struct{})
					followed = RelayEvent{Kind: RelayFollowing, Hub: sess.Login.URL, Account: sess.Login.Account}
					log.Info("following the hub relay", "hub", sess.Login.URL, "account", sess.Login.Account)
					report(followed)
					r := &Runner{Session: sess, MinBackoff: o.MinBackoff, OnApplied: func(rep *Report) {
						for _, e := range relayEvents(followed, rep) {
							report(e)
						}
					}, OnAdvisories: func(res SyncResult) {
						report(advisoriesEvent(ctx, st, followed, res))
					}}
					go func(ev RelayEvent) {
						defer close(done)
						if err := r.Run(rctx); err != nil {
							log.Error("hub relay stopped", "err", err.Error())
							ev.Kind, ev.Reason = RelayStopped, err.Error()
							report(ev)
						}
					}(followed)
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

// relayEvents are the events of an applied lockfile: the revision with
// what changed, then each change that waits for approval. A revision this
// station had applied already (the relay replaying a join after a restart,
// or relaying a push this station made and applied itself) that changed
// nothing is no event: nothing was pushed, and nothing happened.
func relayEvents(from RelayEvent, rep *Report) []RelayEvent {
	applied := RelayEvent{Kind: RelayApplied, Hub: from.Hub, Account: from.Account, Team: rep.Team, Revision: rep.Revision}
	for _, r := range rep.Installed {
		applied.Installed = append(applied.Installed, r.ID+"@"+r.Version)
	}
	for _, f := range rep.Failed {
		applied.Failed = append(applied.Failed, f.Error())
	}
	var out []RelayEvent
	if rep.Revision > rep.Previous || len(applied.Installed)+len(applied.Failed) > 0 {
		out = append(out, applied)
	}
	for _, p := range rep.Pending {
		e := RelayEvent{Kind: RelayPending, Hub: from.Hub, Account: from.Account, Team: rep.Team, Revision: rep.Revision,
			Module: p.Version.Module, Version: p.Version.Version, Asks: p.Differences()}
		if p.Plan.Replaces != nil {
			e.FromVersion = p.Plan.Replaces.Version
		}
		out = append(out, e)
	}
	return out
}

// Follower is Follow as a task for the daemon to run while it serves
// (daemon.Options.Background).
func Follower(st *station.Station, o FollowOptions) func(context.Context) {
	return func(ctx context.Context) { Follow(ctx, st, o) }
}

// advisoriesEvent is the event of advisories or yanks the relay brought:
// how many, and which installed versions they affect now.
func advisoriesEvent(ctx context.Context, st *station.Station, from RelayEvent, res SyncResult) RelayEvent {
	e := RelayEvent{Kind: RelayAdvisories, Hub: from.Hub, Account: from.Account, Advisories: res.Advisories, Yanks: res.Yanks}
	installed, err := st.InstalledAdvisories(ctx)
	if err != nil {
		e.Affected = append(e.Affected, "which installed versions are affected could not be read: "+err.Error())
		return e
	}
	for _, va := range installed {
		f := finding(va)
		for _, a := range f.Advisories {
			what := "runs, with a warning"
			switch a.Status {
			case StatusBlocked:
				what = "DOES NOT RUN"
			case StatusAllowed:
				what = "allowed by you"
			}
			e.Affected = append(e.Affected, fmt.Sprintf("%s@%s: %s (%s), %s", va.Module, va.Version, a.ID, cmp.Or(a.Severity, "unknown severity"), what))
		}
		if f.Yanked {
			e.Affected = append(e.Affected, fmt.Sprintf("%s@%s: yanked on its hub", va.Module, va.Version))
		}
	}
	return e
}
