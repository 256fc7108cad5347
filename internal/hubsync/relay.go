package hubsync

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/hubclient"
	"github.com/station-dev/station/internal/store"
)

// Runner follows the hub's relay for a station's daemon: it applies a team
// lockfile as soon as a push is relayed (changes within the approval at
// once, escalations recorded as pending), follows the account's
// memberships, and reads the advisory feed (SyncAdvisories) when it starts
// and on every advisory and yank event, so that the station's run gate
// refuses a module a new critical advisory affects on its next call,
// without a restart. The cursor of the last event handled is kept in the
// store, so a restarted daemon resumes where it stopped and misses nothing.
type Runner struct {
	Session *Session
	// OnApplied, if set, is called after each lockfile was applied.
	OnApplied func(*Report)
	// OnAdvisories, if set, is called after an advisory or yank event made
	// the runner store what the advisory feed brought.
	OnAdvisories func(SyncResult)
	// OnConnect, if set, is called each time the relay stream is
	// established, with the cursor it resumes from.
	OnConnect func(cursor int64)
	// MinBackoff is the first wait before re-subscribing after a failure
	// (default 500 ms; it doubles up to 30 s).
	MinBackoff time.Duration
}

// Run follows the relay until ctx ends. It returns early only when the hub
// refuses the token (log in again) or speaks another protocol.
func (r *Runner) Run(ctx context.Context) error {
	s := r.Session
	log := s.log()
	minWait := r.MinBackoff
	if minWait <= 0 {
		minWait = 500 * time.Millisecond
	}
	wait := minWait
	// Catch up on the advisories published before the station followed
	// the relay (or while it was stopped, past the relay's replay): the
	// feed has them all. A failure is retried with the next advisory
	// event.
	if _, err := s.SyncAdvisories(ctx); err != nil && ctx.Err() == nil {
		log.Warn("hub relay: reading the advisory feed failed; it is read again on the next advisory event", "hub", s.Login.URL, "err", err.Error())
	}
	for {
		l, err := s.Station.Store.HubLogin(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		err = s.Client.Subscribe(ctx, hubclient.SubscribeOptions{
			Cursor:     l.Cursor,
			MinBackoff: minWait,
			OnConnect: func(cursor int64) {
				wait = minWait
				log.Info("hub relay connected", "hub", l.URL, "cursor", cursor)
				if r.OnConnect != nil {
					r.OnConnect(cursor)
				}
			},
			OnDisconnect: func(err error) {
				if errors.Is(err, hubclient.ErrReconnect) { // a node drains: routine, not a fault
					log.Info("hub relay: the hub asked this station to reconnect (it drains); reconnecting", "hub", l.URL)
					return
				}
				log.Warn("hub relay disconnected; reconnecting with backoff", "hub", l.URL, "reason", err.Error())
			},
		}, func(ev hub.Event) error { return r.handle(ctx, ev) })
		if ctx.Err() != nil {
			return nil
		}
		switch hub.CodeOf(err) {
		case hub.CodeCursorAhead:
			// The hub was restored or replaced: resynchronise from the start.
			log.Warn("the hub's event log is behind this station's cursor; resynchronising from 0", "hub", l.URL, "cursor", l.Cursor)
			if err := s.Station.Store.SetHubCursor(ctx, 0); err != nil {
				return err
			}
			continue
		case hub.CodeUnauthenticated, hub.CodeProtocolUnsupported:
			log.Error("hub relay stopped", "hub", l.URL, "err", err.Error())
			return err
		}
		log.Warn("hub relay: handling an event failed; retrying", "err", err.Error())
		t := time.NewTimer(wait/2 + rand.N(wait/2+1))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		wait = min(2*wait, 30*time.Second)
	}
}

// handle applies one event and moves the stored cursor past it. An error
// leaves the event unconsumed: the runner retries it.
func (r *Runner) handle(ctx context.Context, ev hub.Event) error {
	s := r.Session
	st := s.Station.Store
	me := s.Login.Account
	if ev.Team != "" && hub.CheckName(ev.Team) != "" {
		// Not a team name: nothing of this station is named by it.
		s.log().Warn("hub relay: ignored an event that names no valid team", "seq", ev.Seq, "kind", ev.Kind)
		return st.SetHubCursor(ctx, ev.Seq)
	}
	var sync bool
	switch ev.Kind {
	case hub.EventTeamCreated, hub.EventMemberJoined:
		if ev.Account == me {
			if _, err := st.HubTeam(ctx, ev.Team); errors.Is(err, store.ErrNotFound) {
				if err := st.PutHubTeam(ctx, store.HubTeam{Name: ev.Team, HubURL: s.Login.URL, Role: ev.Role, Revision: -1}); err != nil {
					return err
				}
			}
			sync = true
		}
	case hub.EventMemberLeft, hub.EventMemberRemoved:
		if ev.Account == me {
			if err := st.DeleteHubTeam(ctx, ev.Team); err != nil {
				return err
			}
			s.log().Info("left team; its modules stay installed", "team", ev.Team)
		}
	case hub.EventMemberRole:
		if t, err := st.HubTeam(ctx, ev.Team); err == nil && ev.Account == me {
			t.Role = ev.Role
			if err := st.PutHubTeam(ctx, t); err != nil {
				return err
			}
		}
	case hub.EventLockfilePushed:
		t, err := st.HubTeam(ctx, ev.Team)
		sync = err == nil && ev.Revision > t.Revision
	}
	if advisoryEvent(ev.Kind) {
		// The feed, not the event, says what changed: it is read from the
		// stored cursor, so an event replayed or relayed twice reads
		// nothing new.
		res, err := s.SyncAdvisories(ctx)
		switch {
		case hub.CodeOf(err) == hub.CodeNoEndpoint:
			// A hub without the advisory feed still relays yanks.
			s.log().Warn("hub relay: the hub has no advisory feed; its yanks and advisories are not applied", "seq", ev.Seq, "kind", ev.Kind)
		case err != nil:
			return err
		case r.OnAdvisories != nil && res.Advisories+res.Yanks > 0:
			r.OnAdvisories(res)
		}
	}
	if sync {
		rep, err := s.Sync(ctx, ev.Team, nil)
		switch {
		case hub.CodeOf(err) == hub.CodeTeamNotFound:
			// Replaying history of a team this account has since left.
		case err != nil:
			return err
		default:
			s.log().Info("applied team lockfile", "team", rep.Team, "revision", rep.Revision,
				"installed", len(rep.Installed), "pending", len(rep.Pending), "rejected", len(rep.Rejected), "failed", len(rep.Failed))
			if r.OnApplied != nil {
				r.OnApplied(rep)
			}
		}
	}
	return st.SetHubCursor(ctx, ev.Seq)
}
