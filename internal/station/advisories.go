package station

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/config"
	"github.com/station-dev/station/internal/sandbox"
	"github.com/station-dev/station/internal/store"
)

// The run gate of security advisories. Before every call (Run) the station
// looks up what it knows against the module's installed version: the
// advisories of the hub the module was installed from whose affected
// ranges include the version, and whether that hub yanked the version. An
// advisory at or above advisories.block that the operator did not allow
// for this version refuses the call (*AdvisoryError, recorded in the audit
// log); one below it, an allowed one and a yank let the call run, with a
// warning on the station log and an audit record once per process for
// each module version and advisory.
//
// A module installed from a directory is never matched, even under the id
// of a hub's module: an advisory is a statement about the bytes its hub
// served (RATIONALE.md, "Why does an advisory apply only to modules
// installed from the hub that published it?"). The lookup is an in-memory
// index, built on the first call and again after anything it is built from
// changes: a write through the station's store (store.Changes), or
// AdvisoriesChanged for a change the store cannot see (another process's).

// HubInstallDirPrefix names the temporary directories of the station home
// that a hub install writes a verified bundle to before Install reads it
// (internal/hubsync): a module whose recorded source is one came from its
// hub origin.
const HubInstallDirPrefix = ".hub-install-"

// YankTarget is the audit target of a warning about a yanked version.
const YankTarget = "yank"

// InstalledFromHub reports whether installed module rec came from the hub
// its origin o records: o records rec's version and bytes, and Install read
// rec from a hub install's directory (or rec was installed before the
// station recorded sources, when the origin is all there is). A module
// installed from a directory since, even the same bytes, did not. The
// home may be reached by another path than the one it was installed
// through (a symbolic link, or a daemon that names the real directory): it
// is the same directory all the same.
func (s *Station) InstalledFromHub(rec store.Module, o store.HubOrigin) bool {
	if o.HubURL == "" || rec.Version != o.Version || rec.Digest != o.WasmDigest {
		return false
	}
	if rec.Source == "" {
		return true
	}
	if !strings.HasPrefix(filepath.Base(rec.Source), HubInstallDirPrefix) {
		return false
	}
	home, err := filepath.Abs(s.Home)
	if err != nil {
		return false
	}
	if filepath.Dir(rec.Source) == home {
		return true
	}
	a, errA := os.Stat(filepath.Dir(rec.Source))
	b, errB := os.Stat(home)
	return errA == nil && errB == nil && os.SameFile(a, b)
}

// AdvisoryMatch is an advisory that affects a module version (or the
// station itself), as the station decides about it.
type AdvisoryMatch struct {
	// ID, Summary, Aliases and Severity are the advisory's, as its hub
	// sent them (print them sanitised). Severity is hub.SeverityLow to
	// hub.SeverityCritical, or "" when the hub gave none the station knows.
	ID       string
	Summary  string
	Aliases  []string
	Severity string
	// FixedIn is the lowest version above the affected one that the
	// advisory says fixes it; "" when it names none.
	FixedIn string
	// Hub is the hub that published it.
	Hub string
	// Allowed is the operator's allowance for this version, or nil.
	Allowed *store.AdvisoryAllow
	// Blocks is set when the advisory is at or above advisories.block and
	// not allowed: the version is refused.
	Blocks bool
	// OSV is the whole record.
	OSV *hub.OSV
}

// VersionAdvisories is what the station knows against one module version
// (or the station's own version, Module hub.Product) from one hub.
type VersionAdvisories struct {
	Module, Version, Hub string
	// Advisories are those that affect the version, the most severe first
	// (then by id).
	Advisories []AdvisoryMatch
	// Yank is the hub's yank of the version, or nil.
	Yank *store.Yank
}

// Blocking returns the refusal of the first advisory that blocks the
// version, or nil when none does.
func (v *VersionAdvisories) Blocking() *AdvisoryError {
	for i := range v.Advisories {
		if m := &v.Advisories[i]; m.Blocks {
			return &AdvisoryError{Module: v.Module, Version: v.Version, Hub: v.Hub, ID: m.ID, Summary: m.Summary, Severity: m.Severity, FixedIn: m.FixedIn}
		}
	}
	return nil
}

// AdvisoryError is the refusal of a module version that an advisory at or
// above advisories.block affects and the operator did not allow. It wraps
// the *sandbox.Violation of capability sandbox.Advisory that the audit log
// records (so the daemon and the CLI's exit code treat it as a denial).
type AdvisoryError struct {
	Module, Version string
	// Hub is the hub that published the advisory and that the module came
	// from.
	Hub string
	// ID, Summary and Severity are the advisory's (from the hub).
	ID, Summary, Severity string
	// FixedIn is the version that fixes it, "" when none is named.
	FixedIn string
}

// maxSummary bounds an advisory's summary in messages and the audit log.
const maxSummary = 200

// remedy says how to proceed: upgrade (or remove) or allow.
func (e *AdvisoryError) remedy() string {
	allow := fmt.Sprintf("station advisories allow %s %s@%s --reason TEXT", e.ID, e.Module, e.Version)
	if e.FixedIn != "" {
		return fmt.Sprintf("upgrade to %s (station module upgrade %s), or, if the flaw cannot matter here, allow this version: %s", e.FixedIn, e.Module, allow)
	}
	return fmt.Sprintf("no fixed version is named: remove it (station module remove %s), or, if the flaw cannot matter here, allow this version: %s", e.Module, allow)
}

func (e *AdvisoryError) severity() string { return cmp.Or(e.Severity, "unknown severity") }

// Error says what the advisory is and how to proceed.
func (e *AdvisoryError) Error() string {
	return fmt.Sprintf("%s@%s is affected by advisory %s (%s): %s; the station does not run it: %s",
		e.Module, e.Version, e.ID, e.severity(), sandbox.SanitizeLimit(e.Summary, maxSummary), e.remedy())
}

// Violation is the refusal as a sandbox denial: capability
// sandbox.Advisory, target the advisory id.
func (e *AdvisoryError) Violation() *sandbox.Violation {
	return sandbox.Deny(e.Module, sandbox.Advisory, e.ID, fmt.Sprintf("affects version %s (%s: %s): %s",
		e.Version, e.severity(), sandbox.SanitizeLimit(e.Summary, maxSummary), e.remedy()))
}

// Unwrap returns the Violation.
func (e *AdvisoryError) Unwrap() error { return e.Violation() }

// advisoryIndex is what the run gate looks up, built from the store.
type advisoryIndex struct {
	changes, generation uint64 // store.Changes and advisoryGate.generation when it was built
	block               string // advisories.block
	// advisories are by hub and then by affected package.
	advisories map[string]map[string][]*store.Advisory
	yanks      map[string]*store.Yank                     // by versionKey(hub, module, version)
	allows     map[string]map[string]*store.AdvisoryAllow // by module@version, then advisory id
	// installed are the installed modules' findings, by module id; a
	// module installed from a directory has none (its Hub is "").
	installed map[string]*VersionAdvisories
	// copies are the installed modules' versions and builds, by module
	// id: what Run may run after the gate looked.
	copies map[string]moduleCopy
}

// moduleCopy is one version and build of a module: what the gate looked
// at, or what a copy loaded in the host is. The zero value is none.
type moduleCopy struct{ version, digest string }

func versionKey(hubURL, module, version string) string {
	return hubURL + "\x00" + module + "\x00" + version
}

// advisoryGate is the station's run gate state.
type advisoryGate struct {
	// generation counts AdvisoriesChanged.
	generation atomic.Uint64
	index      atomic.Pointer[advisoryIndex]
	buildMu    sync.Mutex // one build at a time

	warnMu sync.Mutex
	warned map[warning]bool // what this process has warned about
}

// AdvisoriesChanged tells the station that the advisories, yanks or
// allowances it knows may have changed in a way its store did not see
// (another process wrote them): the next call looks them up afresh. The
// advisory sync calls it after storing what a hub's feed brought; writes
// through the station's own store are seen without it.
func (s *Station) AdvisoriesChanged() { s.adv.generation.Add(1) }

// advisoryIndex returns the current index, building it if anything it is
// built from changed.
func (s *Station) advisoryIndex(ctx context.Context) (*advisoryIndex, error) {
	fresh := func(idx *advisoryIndex) bool {
		return idx != nil && idx.changes == s.Store.Changes() && idx.generation == s.adv.generation.Load()
	}
	if idx := s.adv.index.Load(); fresh(idx) {
		return idx, nil
	}
	s.adv.buildMu.Lock()
	defer s.adv.buildMu.Unlock()
	if idx := s.adv.index.Load(); fresh(idx) {
		return idx, nil
	}
	idx, err := s.buildAdvisoryIndex(ctx)
	if err != nil {
		return nil, fmt.Errorf("look up the security advisories: %w", err)
	}
	s.adv.index.Store(idx)
	return idx, nil
}

// buildAdvisoryIndex reads what the gate decides from. The counts are read
// first: a write while it reads makes the index stale at once.
func (s *Station) buildAdvisoryIndex(ctx context.Context) (*advisoryIndex, error) {
	idx := &advisoryIndex{changes: s.Store.Changes(), generation: s.adv.generation.Load(), block: s.Config.Advisories.Block,
		advisories: map[string]map[string][]*store.Advisory{}, yanks: map[string]*store.Yank{},
		allows: map[string]map[string]*store.AdvisoryAllow{}, installed: map[string]*VersionAdvisories{}, copies: map[string]moduleCopy{}}
	advs, err := s.Store.Advisories(ctx)
	if err != nil {
		return nil, err
	}
	for i := range advs {
		a := &advs[i]
		byPkg := idx.advisories[a.HubURL]
		if byPkg == nil {
			byPkg = map[string][]*store.Advisory{}
			idx.advisories[a.HubURL] = byPkg
		}
		var seen []string
		for _, af := range a.OSV.Affected {
			if name := af.Package.Name; af.Package.Ecosystem == hub.Ecosystem && !slices.Contains(seen, name) {
				byPkg[name] = append(byPkg[name], a)
				seen = append(seen, name)
			}
		}
	}
	yanks, err := s.Store.Yanks(ctx)
	if err != nil {
		return nil, err
	}
	for i := range yanks {
		y := &yanks[i]
		idx.yanks[versionKey(y.HubURL, y.Module, y.Version)] = y
	}
	allows, err := s.Store.AdvisoryAllows(ctx, "")
	if err != nil {
		return nil, err
	}
	for i := range allows {
		a := &allows[i]
		k := a.Module + "@" + a.Version
		if idx.allows[k] == nil {
			idx.allows[k] = map[string]*store.AdvisoryAllow{}
		}
		idx.allows[k][a.Advisory] = a
	}
	mods, err := s.Store.Modules(ctx)
	if err != nil {
		return nil, err
	}
	origins, err := s.Store.HubOrigins(ctx)
	if err != nil {
		return nil, err
	}
	byModule := map[string]store.HubOrigin{}
	for _, o := range origins {
		byModule[o.Module] = o
	}
	for _, rec := range mods {
		va := &VersionAdvisories{Module: rec.ID, Version: rec.Version}
		if o, ok := byModule[rec.ID]; ok && s.InstalledFromHub(rec, o) {
			*va = idx.match(o.HubURL, rec.ID, rec.Version)
		}
		idx.installed[rec.ID] = va
		idx.copies[rec.ID] = moduleCopy{rec.Version, rec.Digest}
	}
	return idx, nil
}

// match is what idx knows against module@version from hubURL.
func (idx *advisoryIndex) match(hubURL, module, version string) VersionAdvisories {
	va := VersionAdvisories{Module: module, Version: version, Hub: hubURL, Advisories: []AdvisoryMatch{}}
	for _, a := range idx.advisories[hubURL][module] {
		if !a.OSV.AffectsVersion(module, version) {
			continue
		}
		m := AdvisoryMatch{ID: a.OSV.ID, Summary: a.OSV.Summary, Aliases: a.OSV.Aliases, Severity: a.OSV.Level(),
			FixedIn: a.OSV.FixedIn(module, version), Hub: hubURL, OSV: &a.OSV}
		// An allowance of another hub's advisory of the same id (hubs
		// number theirs each on their own) allows nothing here.
		if al := idx.allows[module+"@"+version][a.OSV.ID]; al != nil && al.HubURL == hubURL {
			m.Allowed = al
		}
		m.Blocks = m.Allowed == nil && (config.Advisories{Block: idx.block}).Blocks(m.Severity)
		va.Advisories = append(va.Advisories, m)
	}
	slices.SortFunc(va.Advisories, func(a, b AdvisoryMatch) int {
		return cmp.Or(hub.SeverityRank(b.Severity)-hub.SeverityRank(a.Severity), strings.Compare(a.ID, b.ID))
	})
	va.Yank = idx.yanks[versionKey(hubURL, module, version)]
	return va
}

// AdvisoriesAgainst returns what the station knows against module@version
// from the hub at hubURL: the advisories of that hub that affect the
// version (with the operator's allowances and whether each blocks under
// advisories.block) and that hub's yank of it. It is what install, upgrade
// and team sync ask of a version before they install it (Blocking refuses
// it), and what the run gate asks of an installed one. The version need
// not be installed; a version that is not a semantic version is affected
// by nothing.
func (s *Station) AdvisoriesAgainst(ctx context.Context, hubURL, module, version string) (VersionAdvisories, error) {
	idx, err := s.advisoryIndex(ctx)
	if err != nil {
		return VersionAdvisories{}, err
	}
	return idx.match(hubURL, module, version), nil
}

// InstalledAdvisories returns what the station knows against every
// installed module's version, by module id: the advisories and the yank
// of the hub each module was installed from. A module installed from a
// directory is listed with no Hub and nothing against it.
func (s *Station) InstalledAdvisories(ctx context.Context) ([]VersionAdvisories, error) {
	idx, err := s.advisoryIndex(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]VersionAdvisories, 0, len(idx.installed))
	for _, va := range idx.installed {
		out = append(out, *va)
	}
	slices.SortFunc(out, func(a, b VersionAdvisories) int { return strings.Compare(a.Module, b.Module) })
	return out, nil
}

// gateAdvisories is the run gate: it refuses a call of module id whose
// installed version an unallowed advisory at or above advisories.block
// affects, and warns once per process about the rest. It returns the
// version it looked at, which is all the call may run; none for a module
// that was not installed when the station last looked (the load says
// whether it is now).
func (s *Station) gateAdvisories(ctx context.Context, id, command string) (moduleCopy, error) {
	idx, err := s.advisoryIndex(ctx)
	if err != nil {
		return moduleCopy{}, err
	}
	looked := idx.copies[id]
	va := idx.installed[id]
	if va == nil || va.Hub == "" || (len(va.Advisories) == 0 && va.Yank == nil) {
		return looked, nil
	}
	d := sandbox.Decision{Module: id, Command: command, Capability: sandbox.Advisory, Trace: sandbox.TraceFrom(ctx)}
	if e := va.Blocking(); e != nil {
		v := e.Violation()
		d.Time, d.Target, d.Reason = time.Now(), v.Target, v.Reason
		s.Audit.Record(d)
		return moduleCopy{}, e
	}
	for i := range va.Advisories {
		m := &va.Advisories[i]
		if !s.firstWarning(va, m.ID) {
			continue
		}
		why := fmt.Sprintf("it is below advisories.block (%s)", idx.block)
		switch {
		case m.Allowed != nil:
			why = "the operator allowed this version: " + sandbox.SanitizeLimit(cmp.Or(m.Allowed.Reason, "(no reason given)"), maxSummary)
		case idx.block == config.AdvisoryBlockNone:
			why = "advisories.block is none"
		case m.Severity == "":
			why = "its hub gave it no severity this station knows"
		}
		fix := ""
		if m.FixedIn != "" {
			fix = fmt.Sprintf("; fixed in %s (station module upgrade %s)", m.FixedIn, id)
		}
		msg := fmt.Sprintf("module %s@%s is affected by advisory %s (%s): %s; it runs because %s%s",
			id, va.Version, m.ID, cmp.Or(m.Severity, "unknown severity"), sandbox.SanitizeLimit(m.Summary, maxSummary), why, fix)
		s.log.Warn(msg, "module", id, "advisory", m.ID)
		d.Time, d.Target, d.Allowed, d.Reason = time.Now(), m.ID, true, "ran although affected: "+why
		s.Audit.Record(d)
	}
	if y := va.Yank; y != nil && s.firstWarning(va, YankTarget) {
		reason := sandbox.SanitizeLimit(cmp.Or(y.Reason, "(no reason given)"), maxSummary)
		s.log.Warn(fmt.Sprintf("module %s@%s is yanked on %s: %s; it runs, but its publisher asks that it not be used (station module upgrade %s)",
			id, va.Version, va.Hub, reason, id), "module", id)
		d.Time, d.Target, d.Allowed, d.Reason = time.Now(), YankTarget, true, "ran although yanked on its hub: "+reason
		s.Audit.Record(d)
	}
	return looked, nil
}

// warning is a module version and what the station warned about it: an
// advisory id or YankTarget.
type warning struct{ module, version, what string }

// firstWarning reports whether this process has not yet warned about
// va's version and what (an advisory id or YankTarget), and records that
// it now has.
func (s *Station) firstWarning(va *VersionAdvisories, what string) bool {
	k := warning{va.Module, va.Version, what} // a key of strings: nothing allocated per call
	s.adv.warnMu.Lock()
	defer s.adv.warnMu.Unlock()
	if s.adv.warned[k] {
		return false
	}
	if s.adv.warned == nil {
		s.adv.warned = map[warning]bool{}
	}
	s.adv.warned[k] = true
	return true
}

// ErrAdvisoryNotApplicable is matched by AllowAdvisory's refusal of an
// advisory the station does not know, or that does not affect the version.
var ErrAdvisoryNotApplicable = errors.New("the advisory does not apply")

// notApplicable is such a refusal: its message says what, and it matches
// ErrAdvisoryNotApplicable.
type notApplicable struct{ msg string }

func (e *notApplicable) Error() string        { return e.msg }
func (e *notApplicable) Is(target error) bool { return target == ErrAdvisoryNotApplicable }

// AllowAdvisory records the operator's allowance to install and run
// module@version although advisory id affects it, and records it in the
// audit log. The station must know the advisory, from the hub the module
// was installed from when it is installed from one (from any hub
// otherwise, the one the station is logged in to first), and the advisory
// must affect that version: anything else is an error wrapping
// ErrAdvisoryNotApplicable, and nothing is recorded. The allowance is for
// that hub's advisory (the match's Hub): hubs number their advisories each
// on their own, and another hub's of the same id is not allowed by it.
func (s *Station) AllowAdvisory(ctx context.Context, id, module, version, reason string, now time.Time) (AdvisoryMatch, error) {
	known, err := s.Store.AdvisoryByID(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return AdvisoryMatch{}, &notApplicable{fmt.Sprintf("allow %s for %s@%s: this station knows no advisory %s (station advisories reads them from the hub and lists those that affect this station)",
			id, module, version, id)}
	}
	if err != nil {
		return AdvisoryMatch{}, err
	}
	hubs := []string{}
	for _, a := range known {
		hubs = append(hubs, a.HubURL)
	}
	if l, err := s.Store.HubLogin(ctx); err == nil {
		if i := slices.Index(hubs, l.URL); i > 0 {
			hubs = append([]string{l.URL}, slices.Delete(hubs, i, i+1)...)
		}
	} else if !errors.Is(err, store.ErrNotFound) {
		return AdvisoryMatch{}, err
	}
	if rec, err := s.Store.Module(ctx, module); err == nil && rec.Version == version {
		if o, err := s.Store.HubOrigin(ctx, module); err == nil && s.InstalledFromHub(rec, o) {
			hubs = []string{o.HubURL}
		}
	}
	var match *AdvisoryMatch
	for _, h := range hubs {
		va, err := s.AdvisoriesAgainst(ctx, h, module, version)
		if err != nil {
			return AdvisoryMatch{}, err
		}
		if i := slices.IndexFunc(va.Advisories, func(m AdvisoryMatch) bool { return m.ID == id }); i >= 0 {
			match = &va.Advisories[i]
			break
		}
	}
	if match == nil {
		return AdvisoryMatch{}, &notApplicable{fmt.Sprintf("allow %s for %s@%s: the advisory does not affect %s@%s (station advisories show %s says what it affects)",
			id, module, version, module, version, id)}
	}
	a := store.AdvisoryAllow{Module: module, Version: version, Advisory: id, HubURL: match.Hub, Reason: reason, AllowedAt: now.UTC()}
	if err := s.Store.PutAdvisoryAllow(ctx, a); err != nil {
		return AdvisoryMatch{}, err
	}
	s.AdvisoriesChanged()
	s.Audit.Record(sandbox.Decision{Time: now, Module: module, Capability: sandbox.Advisory, Target: id, Allowed: true,
		Reason: sandbox.SanitizeLimit(fmt.Sprintf("the operator allowed version %s: %s", version, cmp.Or(reason, "(no reason given)")), 512)})
	match.Allowed, match.Blocks = &a, false
	return *match, nil
}

// RevokeAdvisory withdraws the operator's allowance to run module@version
// although advisory id affects it, and records that in the audit log: from
// the module's next call the advisory decides again. An allowance that does
// not exist is an error matching store.ErrNotFound.
func (s *Station) RevokeAdvisory(ctx context.Context, id, module, version string, now time.Time) error {
	if err := s.Store.DeleteAdvisoryAllow(ctx, module, version, id); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("%s is not allowed for %s@%s on this station (station advisories lists the allowances): %w", id, module, version, err)
		}
		return err
	}
	s.AdvisoriesChanged()
	s.Audit.Record(sandbox.Decision{Time: now, Module: module, Capability: sandbox.Advisory, Target: id,
		Reason: fmt.Sprintf("the operator withdrew the allowance of version %s", version)})
	return nil
}
