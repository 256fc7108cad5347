package hubsync

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/hubclient"
	"github.com/station-dev/station/internal/station"
	"github.com/station-dev/station/internal/store"
)

// ErrNotFromHub is the error of an upgrade of a module that was not
// installed from a hub (or was installed from a directory since): `station
// module install OWNER/SLUG@VERSION` replaces it with the hub's version,
// after asking.
var ErrNotFromHub = errors.New("it was not installed from a hub")

// UpgradeStatus says what an upgrade did to one module.
type UpgradeStatus string

const (
	// Upgraded: the version asked for is installed now.
	Upgraded UpgradeStatus = "upgraded"
	// UpToDate: the installed version is the latest (or the one asked for).
	UpToDate UpgradeStatus = "up_to_date"
	// Declined: the version asks for something new and was not approved
	// (or, with a nil Approver, waits for approval: Err is a
	// *PendingError); the installed version keeps running.
	Declined UpgradeStatus = "declined"
	// Failed: the upgrade could not be made (Err says why).
	Failed UpgradeStatus = "failed"
)

// UpgradeResult is what an upgrade did to one module.
type UpgradeResult struct {
	// Module is the module's id.
	Module string
	// From is the version installed before; To the version installed
	// now, or for a declined or failed upgrade the version it was to be
	// ("" when not known).
	From, To string
	Status   UpgradeStatus
	// Err is why a declined or failed upgrade did not happen.
	Err error
}

// Upgrade upgrades modules installed from the hub: refs are "owner/slug"
// (to its latest version not yanked) or "owner/slug@version" (to exactly
// that version; an older one than installed is a downgrade, which is asked
// about); no refs means every module installed from a hub, each to its
// latest version. Each upgrade is an Install: one within what was approved
// and signed by a pinned key applies at once, anything else goes to
// approve, and without approval nothing changes. A module that was not
// installed from this session's hub fails (ErrNotFromHub, or the hub it
// came from). Upgrade returns a result for every module it looked at and
// the errors of those declined or failed, joined.
func (s *Session) Upgrade(ctx context.Context, refs []string, approve Approver) ([]*UpgradeResult, error) {
	type target struct {
		id, version string
		origin      store.HubOrigin
		err         error
	}
	var targets []target
	if len(refs) == 0 {
		origins, err := s.Station.Store.HubOrigins(ctx)
		if err != nil {
			return nil, err
		}
		for _, o := range origins {
			rec, err := s.Station.Store.Module(ctx, o.Module)
			if err != nil || !sameVersion(rec, o) {
				continue // removed, or replaced by a local install
			}
			targets = append(targets, target{id: o.Module, origin: o})
		}
	}
	for _, ref := range refs {
		id, version, err := hubclient.ParseRef(ref)
		if err != nil {
			return nil, err
		}
		t := target{id: id, version: version}
		t.origin, t.err = s.Station.Store.HubOrigin(ctx, id)
		if errors.Is(t.err, store.ErrNotFound) {
			t.err = ErrNotFromHub
		}
		targets = append(targets, t)
	}

	var results []*UpgradeResult
	var errs []error
	for _, t := range targets {
		r := s.upgrade(ctx, t.id, t.version, t.origin, t.err, approve)
		results = append(results, r)
		if r.Err != nil {
			errs = append(errs, r.Err)
		}
	}
	return results, errors.Join(errs...)
}

// upgrade upgrades one module whose hub origin is o (or whose origin
// could not be read: err).
func (s *Session) upgrade(ctx context.Context, id, version string, o store.HubOrigin, err error, approve Approver) *UpgradeResult {
	r := &UpgradeResult{Module: id, To: version, Status: Failed}
	// fail records err, which names the module (the hub client's and
	// Install's errors do).
	fail := func(err error) *UpgradeResult {
		r.Err = err
		var pending *PendingError
		if errors.Is(err, station.ErrNotApproved) || errors.As(err, &pending) {
			r.Status = Declined
		}
		return r
	}
	rec, rerr := s.Station.Store.Module(ctx, id)
	switch {
	case errors.Is(rerr, store.ErrNotFound):
		return fail(fmt.Errorf("upgrade %s: it is not installed", id))
	case rerr != nil:
		return fail(rerr)
	}
	r.From = rec.Version
	switch {
	case err != nil:
		return fail(fmt.Errorf("upgrade %s: %w", id, err))
	case !sameVersion(rec, o):
		return fail(fmt.Errorf("upgrade %s: %w (%s was installed from elsewhere since)", id, ErrNotFromHub, rec.Version))
	case o.HubURL != s.Login.URL:
		return fail(fmt.Errorf("upgrade %s: it came from %s, and this station is logged in to %s", id, o.HubURL, s.Login.URL))
	}
	if version == "" {
		latest, err := s.Client.Resolve(ctx, id)
		if err != nil {
			return fail(err)
		}
		r.To = latest.Version
		if hub.CompareVersions(latest.Version, rec.Version) <= 0 {
			r.To, r.Status = rec.Version, UpToDate
			return r
		}
	}
	// What was asked, so that a declined upgrade can wait for approval.
	var asked *Plan
	ask := approve
	if approve != nil {
		ask = func(p Plan) (bool, error) { asked = &p; return approve(p) }
	}
	res, err := s.Install(ctx, Request{ID: id, Version: r.To}, ask)
	if res.Version != "" {
		r.To = res.Version
	}
	if err != nil {
		var pending *PendingError
		if errors.As(err, &pending) {
			asked = &pending.Plan
		}
		if asked != nil && (pending != nil || errors.Is(err, station.ErrNotApproved)) {
			s.holdUpgrade(ctx, *asked, rec.Version)
		}
		return fail(err)
	}
	r.Status = UpToDate
	if res.Changed {
		r.Status = Upgraded
	}
	if err := s.Station.Store.DeleteHubPending(ctx, store.UpgradeTeam, id); err != nil {
		s.log().Warn("forget a held upgrade", "module", id, "err", err)
	}
	return r
}

// holdUpgrade records a declined upgrade that asked for more than was
// approved as pending (store.UpgradeTeam): the dashboard's Approvals shows
// it, and ApprovePending takes it. An upgrade the operator was asked about
// and declined is recorded the same way; it was not approved, and it still
// is what the hub offers.
func (s *Session) holdUpgrade(ctx context.Context, p Plan, from string) {
	if !p.NeedsApproval() {
		return
	}
	hp := store.HubPending{Team: store.UpgradeTeam, Module: p.Version.Module, Version: p.Version.Version, FromVersion: from,
		Escalations: p.Differences(), RecordedAt: s.now()}
	if err := s.Station.Store.PutHubPending(ctx, hp); err != nil {
		s.log().Warn("record a held upgrade", "module", hp.Module, "version", hp.Version, "err", err)
		return
	}
	s.log().Info("upgrade waits for approval", "module", hp.Module, "version", hp.Version, "asks", strings.Join(hp.Escalations, "; "))
}

// UpgradePendings returns the upgrades that wait for approval (or were
// rejected), by module: the ones whose module is still installed at the
// version they would replace.
func UpgradePendings(ctx context.Context, st *station.Station) ([]PendingChange, error) {
	all, err := st.Store.HubPendings(ctx, "")
	if err != nil {
		return nil, err
	}
	out := []PendingChange{}
	for _, p := range all {
		if p.Team != store.UpgradeTeam {
			continue
		}
		if rec, err := st.Store.Module(ctx, p.Module); err != nil || rec.Version != p.FromVersion {
			continue // removed, or replaced since by other means
		}
		out = append(out, pendingChange(p))
	}
	return out, nil
}

// sameVersion reports whether the installed module rec is the version its
// hub origin o records (same version, same bytes).
func sameVersion(rec store.Module, o store.HubOrigin) bool {
	return rec.Version == o.Version && rec.Digest == o.WasmDigest
}
