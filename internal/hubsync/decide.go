package hubsync

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/station-dev/station/internal/station"
	"github.com/station-dev/station/internal/store"
)

// The operator's decision on one pending team change, as the CLI (station
// team approve, station team reject) and the dashboard take it: approving
// re-syncs the team and takes that change alone; rejecting records, on
// this station only, that the change is not wanted, so that later syncs
// and relay events of the same version ask nobody again.

// NoPendingError is a team change asked about that is not pending on this
// station: nothing of Module waits in Team, or another version does.
type NoPendingError struct {
	Team, Module string
	// Version is the version asked about ("": whichever is pending).
	Version string
	// Pending are the team's changes that are pending (or rejected), so
	// that the message can say what there is.
	Pending []PendingChange
}

func (e *NoPendingError) Error() string {
	what := e.Module
	if e.Version != "" {
		what += "@" + e.Version
	}
	var others []string
	for _, p := range e.Pending {
		s := p.Module + "@" + p.Version
		if !p.RejectedAt.IsZero() {
			s += " (rejected)"
		}
		others = append(others, s)
	}
	there := "nothing is pending there"
	if i := slices.IndexFunc(e.Pending, func(p PendingChange) bool { return p.Module == e.Module }); i >= 0 {
		there = "the pending change of " + e.Module + " is to " + e.Pending[i].Version
	} else if len(others) > 0 {
		there = "pending there: " + strings.Join(others, ", ")
	}
	if e.Team == store.UpgradeTeam {
		return fmt.Sprintf("no upgrade of %s waits for approval on this station (%s): station module upgrade %s asks again", what, strings.Replace(there, " there", "", 1), e.Module)
	}
	return fmt.Sprintf("no change to %s is pending in team %s on this station (%s): station team status %s shows what waits for approval", what, e.Team, there, e.Team)
}

// MovedOnError is an approval of a pending change that the team's
// lockfile no longer asks for: by the time the team was synced to take
// it, the lockfile pinned another version of the module (Pinned), or
// none (Pinned ""). What the current lockfile asks for was applied as a
// sync without approval applies it.
type MovedOnError struct {
	Team, Module, Version string
	// Revision is the lockfile revision the sync found.
	Revision int64
	// Pinned is the version of Module that revision pins ("" for none).
	Pinned string
	// State says what became of Pinned: "waits for approval", "was
	// rejected here", "was installed", "is installed", "failed: ...".
	State string
}

func (e *MovedOnError) Error() string {
	if e.Pinned == "" {
		return fmt.Sprintf("approve %s@%s: the lockfile of team %s (revision %d) no longer pins %s; nothing of it was approved (station team status %s)",
			e.Module, e.Version, e.Team, e.Revision, e.Module, e.Team)
	}
	return fmt.Sprintf("approve %s@%s: the lockfile of team %s moved on: revision %d pins %s@%s, which %s; %s is no longer pending, and nothing was approved (review it: station team status %s)",
		e.Module, e.Version, e.Team, e.Revision, e.Module, e.Pinned, e.State, e.Version, e.Team)
}

// FindPending returns team's recorded change of module (pending or
// rejected) on st. version "" means whichever version is recorded;
// another version than the one recorded, or a module with nothing
// recorded, is a *NoPendingError, and a team this station is not in a
// *NotMemberError.
//
// Team store.UpgradeTeam ("") names the upgrades that wait for approval
// (UpgradePendings).
func FindPending(ctx context.Context, st *station.Station, team, module, version string) (PendingChange, error) {
	var all []PendingChange
	if team == store.UpgradeTeam {
		ups, err := UpgradePendings(ctx, st)
		if err != nil {
			return PendingChange{}, err
		}
		all = ups
	} else {
		if _, err := st.Store.HubTeam(ctx, team); errors.Is(err, store.ErrNotFound) {
			return PendingChange{}, &NotMemberError{Team: team}
		} else if err != nil {
			return PendingChange{}, err
		}
		recorded, err := st.Store.HubPendings(ctx, team)
		if err != nil {
			return PendingChange{}, err
		}
		for _, p := range recorded {
			all = append(all, pendingChange(p))
		}
	}
	for _, p := range all {
		if p.Module == module && (version == "" || p.Version == version) {
			return p, nil
		}
	}
	return PendingChange{}, &NoPendingError{Team: team, Module: module, Version: version, Pending: all}
}

// ApprovePending approves team's pending change of module to version
// ("": the version pending), and only it: the team is synced (its current
// lockfile applied, as Sync does) with an approver that takes exactly
// module@version and keeps every other change that needs approval
// pending. A change the operator rejected is taken too: approving it is
// changing one's mind.
//
// With nothing of the kind pending it is a *NoPendingError and nothing is
// synced. When the lockfile moved on (it pins another version of module
// now, or none) it is a *MovedOnError, with the report of the sync, which
// applied the new revision without approving anything. When the module
// could not be installed, the error says why. Otherwise the report's
// Installed lists module@version.
//
// For team store.UpgradeTeam it is the held upgrade of module: the upgrade
// to exactly that version is made (Upgrade), approved; the report names no
// team.
func (s *Session) ApprovePending(ctx context.Context, team, module, version string) (*Report, error) {
	p, err := FindPending(ctx, s.Station, team, module, version)
	if err != nil {
		return nil, err
	}
	if team == store.UpgradeTeam {
		return s.approveUpgrade(ctx, p)
	}
	take := change{p.Module, p.Version}
	rep, err := s.sync(ctx, team, func(pl Plan) (bool, error) {
		if pl.Team == team && pl.Version.Module == take.module && pl.Version.Version == take.version {
			return true, nil
		}
		return keepPending(pl)
	}, take)
	if err != nil {
		return rep, err
	}
	moved := &MovedOnError{Team: team, Module: p.Module, Version: p.Version, Revision: rep.Revision}
	for _, r := range rep.Installed {
		if r.ID == p.Module {
			if r.Version == p.Version {
				s.log().Info("approved team change", "team", team, "module", p.Module, "version", p.Version)
				return rep, nil
			}
			moved.Pinned, moved.State = r.Version, "was installed (it asks nothing beyond your approval)"
			return rep, moved
		}
	}
	for _, f := range rep.Failed {
		if f.ID == p.Module {
			if f.Version == p.Version {
				return rep, fmt.Errorf("approve %s@%s of team %s: %w", p.Module, p.Version, team, f)
			}
			moved.Pinned, moved.State = f.Version, "failed: "+f.Err.Error()
			return rep, moved
		}
	}
	for _, list := range []struct {
		plans []Plan
		state string
	}{{rep.Pending, "waits for approval"}, {rep.Rejected, "was rejected here"}} {
		for _, pl := range list.plans {
			if pl.Version.Module == p.Module {
				moved.Pinned, moved.State = pl.Version.Version, list.state
				return rep, moved
			}
		}
	}
	if slices.Contains(rep.Unchanged, p.Module) {
		rec, err := s.Station.Store.Module(ctx, p.Module)
		if err != nil {
			return rep, err
		}
		if rec.Version == p.Version {
			return rep, nil // installed meanwhile (another sync took it)
		}
		moved.Pinned, moved.State = rec.Version, "is installed"
		return rep, moved
	}
	return rep, moved
}

// RejectPending rejects team's pending change of module to version ("":
// the version pending) on st: the approved version keeps running, and the
// change stays rejected — later syncs and relay events of the same team
// lockfile version neither ask about it nor report it as waiting — until
// the lockfile pins another version of the module (which waits for
// approval afresh) or ApprovePending takes it after all. No hub is asked.
// Nothing of the kind pending is a *NoPendingError; rejecting a rejected
// change again changes nothing.
func RejectPending(ctx context.Context, st *station.Station, team, module, version string) error {
	p, err := FindPending(ctx, st, team, module, version)
	if err != nil {
		return err
	}
	if !p.RejectedAt.IsZero() {
		return nil
	}
	return st.Store.RejectHubPending(ctx, team, p.Module, p.Version, time.Now().UTC())
}

// approveUpgrade makes the held upgrade p, approved.
func (s *Session) approveUpgrade(ctx context.Context, p PendingChange) (*Report, error) {
	rs, err := s.Upgrade(ctx, []string{p.Module + "@" + p.Version}, func(pl Plan) (bool, error) {
		return pl.Version.Module == p.Module && pl.Version.Version == p.Version, nil
	})
	rep := &Report{Revision: -1, Previous: -1}
	for _, r := range rs {
		switch r.Status {
		case Upgraded:
			rep.Installed = append(rep.Installed, Result{ID: r.Module, Version: r.To, Changed: true})
			s.log().Info("approved upgrade", "module", p.Module, "version", p.Version)
		case UpToDate:
			rep.Unchanged = append(rep.Unchanged, r.Module)
		}
	}
	if err != nil {
		return rep, fmt.Errorf("approve the upgrade of %s to %s: %w", p.Module, p.Version, err)
	}
	return rep, nil
}
