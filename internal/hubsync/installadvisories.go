package hubsync

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/sandbox"
	"github.com/station-dev/station/internal/station"
)

// What install, upgrade, team sync and team push do with a version an
// advisory affects or its hub yanked. Before a version is installed, the
// station asks the hub for the module's advisories (so that what it
// decides on is current, whether or not a relay is followed) and stores
// them; then:
//
//   - an advisory at or above advisories.block that the operator did not
//     allow for this version refuses the install (*AdvisoryBlockedError),
//     unless the session was given its id (Session.AllowAdvisories: the
//     CLI's --allow-advisory), in which case the version is installed, the
//     allowance is stored for it (so the run gate lets it run) and the
//     override is in the audit log;
//   - any other advisory is shown in the plan and makes it one that needs
//     the operator's approval (a daemon records it as pending), unless the
//     operator allowed this version before;
//   - a yank is shown in the plan and stored, so the run gate warns.
//
// Team push refuses to pin a version that any advisory affects or that is
// yanked, unless the session allows that advisory or yanked versions
// (Session.AllowYanked).

// AdvisoryBlockedError refuses to install a version that an advisory at or
// above advisories.block affects. Nothing was installed; the refusal is in
// the audit log.
type AdvisoryBlockedError struct {
	*station.AdvisoryError
	// Block is advisories.block.
	Block string
}

// Error says what the advisory is and how to proceed.
func (e *AdvisoryBlockedError) Error() string {
	a := e.AdvisoryError
	fix := "no fixed version is named"
	if a.FixedIn != "" {
		fix = fmt.Sprintf("install %s@%s instead", a.Module, a.FixedIn)
	}
	return fmt.Sprintf("%s@%s is affected by advisory %s (%s, at or above advisories.block: %s): %s; it was not installed: %s, or pass --allow-advisory %s to install it anyway (recorded in the audit log)",
		a.Module, a.Version, a.ID, cmp.Or(a.Severity, "unknown severity"), e.Block, sandbox.SanitizeLimit(a.Summary, 200), fix, a.ID)
}

// Unwrap returns the station's AdvisoryError (which wraps the sandbox
// denial).
func (e *AdvisoryBlockedError) Unwrap() error { return e.AdvisoryError }

// refreshAdvisoriesOf asks the hub for module id's advisories and stores
// them, so that an install decides on what the hub says now. A hub that
// has no advisory endpoints (an older hub) is logged and skipped.
func (s *Session) refreshAdvisoriesOf(ctx context.Context, id string) error {
	list, err := s.Client.Advisories(ctx, id)
	if hub.CodeOf(err) == hub.CodeNoEndpoint {
		s.log().Warn("the hub serves no advisories (an older hub); installing without checking any", "hub", s.Login.URL, "module", id)
		return nil
	}
	if err != nil {
		return err
	}
	return s.storeAdvisories(ctx, list, nil)
}

// storeAdvisories stores advisories and yanks the hub sent outside the
// feed, leaving the feed's cursor, and when it was last read, as they are.
func (s *Session) storeAdvisories(ctx context.Context, list []hub.OSV, yanks []hub.Yank) error {
	st := s.Station
	usable, yanks, skipped := usableFeed(hub.AdvisoryFeed{Advisories: list, Yanks: yanks})
	for _, why := range skipped {
		s.log().Warn("ignored what the hub sent that the station cannot use: "+why, "hub", s.Login.URL)
	}
	if len(usable)+len(yanks) == 0 {
		return nil
	}
	if err := st.Store.PutAdvisoryRecords(ctx, s.Login.URL, usable, yanks); err != nil {
		return err
	}
	st.AdvisoriesChanged()
	return nil
}

// checkAdvisories returns what the station knows against version of id
// after asking the hub, or the refusal of a version that an unallowed
// advisory at or above advisories.block affects and the session does not
// allow. overrides are the advisories the session's allowance let through.
func (s *Session) checkAdvisories(ctx context.Context, v hub.Version) (va station.VersionAdvisories, overrides []string, err error) {
	st := s.Station
	if err := s.refreshAdvisoriesOf(ctx, v.Module); err != nil {
		return va, nil, err
	}
	if v.Yanked {
		if err := s.storeAdvisories(ctx, nil, []hub.Yank{{Module: v.Module, Version: v.Version, Yanked: true, Reason: v.YankReason, Time: s.now()}}); err != nil {
			return va, nil, err
		}
	}
	va, err = st.AdvisoriesAgainst(ctx, s.Login.URL, v.Module, v.Version)
	if err != nil {
		return va, nil, err
	}
	for i := range va.Advisories {
		m := &va.Advisories[i]
		if !m.Blocks {
			continue
		}
		if slices.Contains(s.AllowAdvisories, m.ID) {
			overrides = append(overrides, m.ID)
			continue
		}
		e := &AdvisoryBlockedError{AdvisoryError: &station.AdvisoryError{Module: v.Module, Version: v.Version, Hub: s.Login.URL,
			ID: m.ID, Summary: m.Summary, Severity: m.Severity, FixedIn: m.FixedIn}, Block: st.Config.Advisories.Block}
		st.Audit.Record(sandbox.Decision{Time: s.now(), Module: v.Module, Capability: sandbox.Advisory, Target: m.ID,
			Reason: sandbox.SanitizeLimit(fmt.Sprintf("install of %s refused: %s (%s): %s", v.Version, m.ID, cmp.Or(m.Severity, "unknown severity"), m.Summary), 512)})
		return va, nil, e
	}
	return va, overrides, nil
}

// recordOverrides stores the allowances the session's --allow-advisory
// gave an installed version, each in the audit log.
func (s *Session) recordOverrides(ctx context.Context, id, version string, overrides []string) error {
	for _, a := range overrides {
		if _, err := s.Station.AllowAdvisory(ctx, a, id, version, "allowed at install with --allow-advisory", s.now()); err != nil {
			return fmt.Errorf("%s@%s is installed, but recording the allowance of %s failed (station advisories allow %s %s@%s records it): %w", id, version, a, a, id, version, err)
		}
	}
	return nil
}

// AdvisoryNotes are the plan's advisories that are not allowed for its
// version, in plain words: what the operator is asked to accept (the last
// lines of Differences).
func (p Plan) AdvisoryNotes() []string { return advisoryLines(p.Advisories) }

// advisoryLines say in plain words the advisories that are not allowed for
// their version.
func advisoryLines(ms []station.AdvisoryMatch) []string {
	var out []string
	for _, m := range ms {
		if m.Allowed != nil {
			continue
		}
		line := fmt.Sprintf("IS AFFECTED BY ADVISORY %s (%s): %s", m.ID, cmp.Or(m.Severity, "unknown severity"), sandbox.SanitizeLimit(m.Summary, 200))
		if m.FixedIn != "" {
			line += "; fixed in " + m.FixedIn
		}
		out = append(out, line)
	}
	return out
}

// checkPinnable refuses to pin in a team lockfile a version that an
// advisory affects or that its hub yanked, unless the session allows it.
func (s *Session) checkPinnable(ctx context.Context, e hub.LockedModule) error {
	v, err := s.Client.Version(ctx, e.ID, e.Version)
	if err != nil {
		return fmt.Errorf("push %s: %w", e.ID, err)
	}
	if v.Yanked && !s.AllowYanked {
		return fmt.Errorf("push %s: %s@%s is yanked on %s (%s): pin a version that is not (station module upgrade %s, then push), or pass --allow-yanked to pin it anyway",
			e.ID, e.ID, e.Version, s.Login.URL, sandbox.SanitizeLimit(cmp.Or(v.YankReason, "no reason given"), 200), e.ID)
	}
	va, _, err := s.checkAdvisories(ctx, v)
	var blocked *AdvisoryBlockedError
	if err != nil && !errors.As(err, &blocked) {
		return fmt.Errorf("push %s: %w", e.ID, err)
	}
	var refused []string
	for _, m := range va.Advisories {
		if !slices.Contains(s.AllowAdvisories, m.ID) {
			refused = append(refused, m.ID)
		}
	}
	if len(refused) > 0 {
		return fmt.Errorf("push %s: %s@%s is affected by %s: every member would install it; pin a fixed version (station module upgrade %s, then push), or pass --allow-advisory for each to pin it anyway: %s",
			e.ID, e.ID, e.Version, strings.Join(advisoryLines(va.Advisories), "; "), e.ID, strings.Join(refused, ", "))
	}
	for _, m := range va.Advisories {
		s.Station.Audit.Record(sandbox.Decision{Time: s.now(), Module: e.ID, Capability: sandbox.Advisory, Target: m.ID, Allowed: true,
			Reason: sandbox.SanitizeLimit("pinned in a team lockfile with --allow-advisory at version "+e.Version, 512)})
	}
	return nil
}
