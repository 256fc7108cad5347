package hubsync

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/station"
	"github.com/station-dev/station/internal/store"
)

// The station's side of the hub's advisory feed: SyncAdvisories reads the
// advisories and yanks that changed since the stored cursor into the
// store and tells the station's run gate (station.AdvisoriesChanged); the
// relay runner calls it on every advisory and yank event, so a daemon
// applies them as they are published. CheckAdvisories is what `station
// advisories` lists: what the station knows against every installed
// module version and against the station itself.

// maxFeedPages bounds one sync: a hub whose feed never ends is refused.
const maxFeedPages = 10000

// SyncResult is what a sync of the advisory feed stored.
type SyncResult struct {
	Hub string `json:"hub"`
	// Advisories and Yanks count the records the feed brought (new,
	// changed or withdrawn advisories; yanks and unyanks).
	Advisories int `json:"advisories"`
	Yanks      int `json:"yanks"`
	// Skipped say which records were left out and why (a record the
	// station cannot use: a malformed id, no package, a bad version).
	Skipped []string `json:"skipped"`
	// Cursor is where the next sync starts.
	Cursor int64 `json:"cursor"`
	// Resynced is set when the hub's feed was behind the stored cursor
	// (the hub was restored or replaced) and the sync started again from
	// the beginning.
	Resynced bool `json:"resynced,omitempty"`
}

// SyncAdvisories reads the hub's advisory feed from the stored cursor to
// its end, page by page, and stores each page (advisories, yanks and the
// cursor together) before reading the next: a sync cut short resumes where
// it stopped. Records the station cannot use are left out and named in
// Skipped. The station's run gate is told after each page, so a module
// that a new critical advisory affects is refused on its next call, in
// this process; another process sees it when it next reads the store (a
// daemon also follows the relay, which syncs it).
func (s *Session) SyncAdvisories(ctx context.Context) (SyncResult, error) {
	st := s.Station
	res := SyncResult{Hub: s.Login.URL, Skipped: []string{}}
	feed, err := st.Store.AdvisoryCursor(ctx, s.Login.URL)
	if err != nil {
		return res, err
	}
	cursor := feed.Cursor
	for pages := 0; ; pages++ {
		if pages == maxFeedPages {
			return res, fmt.Errorf("the advisory feed of %s did not end after %d pages; stopped at cursor %d", s.Login.URL, pages, cursor)
		}
		page, err := s.Client.AdvisoryFeed(ctx, cursor, 0)
		if hub.CodeOf(err) == hub.CodeCursorAhead && cursor > 0 && !res.Resynced {
			s.log().Warn("the hub's advisory feed is behind this station's cursor; reading it again from the start", "hub", s.Login.URL, "cursor", cursor)
			if err := st.Store.ResetAdvisoryCursor(ctx, s.Login.URL); err != nil {
				return res, err
			}
			cursor, res.Resynced = 0, true
			continue
		}
		if err != nil {
			return res, err
		}
		if page.More && page.Cursor <= cursor {
			return res, fmt.Errorf("the advisory feed of %s says there is more after cursor %d but did not move past it", s.Login.URL, cursor)
		}
		advs, yanks, skipped := usableFeed(page)
		res.Skipped = append(res.Skipped, skipped...)
		for _, why := range skipped {
			s.log().Warn("advisory feed: left out a record", "hub", s.Login.URL, "why", why)
		}
		next := max(page.Cursor, cursor)
		if err := st.Store.PutAdvisories(ctx, s.Login.URL, advs, yanks, next); err != nil {
			return res, err
		}
		st.AdvisoriesChanged()
		res.Advisories += len(advs)
		res.Yanks += len(yanks)
		cursor, res.Cursor = next, next
		if !page.More {
			break
		}
	}
	if res.Advisories+res.Yanks > 0 {
		s.log().Info("read the advisory feed", "hub", s.Login.URL, "advisories", res.Advisories, "yanks", res.Yanks, "cursor", res.Cursor)
	}
	return res, nil
}

// usableFeed is the page less the records the station cannot store, and
// why each of those was left out.
func usableFeed(page hub.AdvisoryFeed) ([]hub.OSV, []hub.Yank, []string) {
	var advs []hub.OSV
	var yanks []hub.Yank
	var skipped []string
	for _, a := range page.Advisories {
		switch {
		case !hub.ValidAdvisoryID(a.ID):
			skipped = append(skipped, fmt.Sprintf("an advisory with id %q, which is not a hub's", clip(a.ID)))
		case a.Modified.IsZero():
			skipped = append(skipped, fmt.Sprintf("advisory %s, which has no modified time", a.ID))
		case !slices.ContainsFunc(a.Affected, func(af hub.OSVAffect) bool {
			return af.Package.Ecosystem == hub.Ecosystem && (af.Package.Name == hub.Product || hub.CheckModuleID(af.Package.Name) == "")
		}):
			skipped = append(skipped, fmt.Sprintf("advisory %s, which names no module or station of the %s ecosystem", a.ID, hub.Ecosystem))
		default:
			advs = append(advs, a)
		}
	}
	for _, y := range page.Yanks {
		if hub.CheckModuleID(y.Module) != "" || hub.CheckVersion(y.Version) != "" {
			skipped = append(skipped, fmt.Sprintf("a yank of %q@%q, which is not a module version", clip(y.Module), clip(y.Version)))
			continue
		}
		yanks = append(yanks, y)
	}
	return advs, yanks, skipped
}

// advisoryEvent reports whether a relay event kind changes what the
// advisory feed holds.
func advisoryEvent(kind string) bool {
	switch kind {
	case hub.EventAdvisoryPublished, hub.EventAdvisoryUpdated, hub.EventAdvisoryWithdrawn, hub.EventModuleYanked, hub.EventModuleUnyanked:
		return true
	}
	return false
}

// Statuses of a finding (Finding.Status, AdvisoryFinding.Status).
const (
	// StatusBlocked: an advisory at or above advisories.block that the
	// operator did not allow; the version does not run.
	StatusBlocked = "blocked"
	// StatusAllowed: the operator allowed the version despite the
	// advisory; it runs, with a warning.
	StatusAllowed = "allowed"
	// StatusWarn: an advisory below advisories.block; it runs, with a
	// warning.
	StatusWarn = "warn"
	// StatusYanked: its hub yanked the version; it runs, with a warning.
	StatusYanked = "yanked"
	// StatusOK: nothing the station knows affects it.
	StatusOK = "ok"
	// StatusUnknown: the station's own version is not a release, so which
	// advisories affect it is not known.
	StatusUnknown = "unknown"
)

// AdvisoryFinding is one advisory that affects a version.
type AdvisoryFinding struct {
	ID      string   `json:"id"`
	Aliases []string `json:"aliases"`
	Summary string   `json:"summary"`
	// Severity is low, medium, high or critical; "" when the hub gave none
	// the station knows.
	Severity string `json:"severity"`
	// FixedIn is the lowest version above this one that fixes it ("" if
	// none is named).
	FixedIn string `json:"fixed_in"`
	Hub     string `json:"hub"`
	// Allowed is set when the operator allowed the version (AllowReason is
	// why).
	Allowed     bool   `json:"allowed"`
	AllowReason string `json:"allow_reason,omitempty"`
	// Status is StatusBlocked, StatusAllowed or StatusWarn.
	Status string `json:"status"`
}

// Finding is what the station knows against one installed module
// version, or against the station itself (Module hub.Product).
type Finding struct {
	Module  string `json:"module"`
	Version string `json:"version"`
	// Origin is where the module came from (FromHub, FromDirectory,
	// FromUnknown; "" for the station itself), and Hub which hub.
	// Advisories apply only to a module from a hub, from that hub.
	Origin string `json:"origin,omitempty"`
	Hub    string `json:"hub,omitempty"`
	// Advisories affect the version, the most severe first.
	Advisories []AdvisoryFinding `json:"advisories"`
	// Yanked is set when its hub yanked the version (YankReason is the
	// publisher's reason).
	Yanked     bool   `json:"yanked"`
	YankReason string `json:"yank_reason,omitempty"`
	// Status is the worst of the above: StatusBlocked, StatusAllowed,
	// StatusWarn, StatusYanked or StatusOK; for the station itself,
	// StatusUnknown when its version is not a release.
	Status string `json:"status"`
	// Note says why a status is what it is where that is not plain (a
	// station version that is not a release; a module from a directory).
	Note string `json:"note,omitempty"`
}

// Affected reports whether anything the station knows affects the
// version: an advisory or a yank.
func (f Finding) Affected() bool { return len(f.Advisories) > 0 || f.Yanked }

// Findings is what CheckAdvisories found.
type Findings struct {
	// Hub is the hub the station is logged in to ("" if none); SyncedAt is
	// when its advisory feed was last stored (zero: never).
	Hub      string    `json:"hub,omitempty"`
	SyncedAt time.Time `json:"synced_at,omitzero"`
	// Modules are the installed modules, by id.
	Modules []Finding `json:"modules"`
	// Station is the station itself, at the version it was given.
	Station Finding `json:"station"`
}

// Affected reports whether any installed module version or the station
// itself is affected by an advisory or yanked.
func (f *Findings) Affected() bool {
	return f.Station.Affected() || slices.ContainsFunc(f.Modules, Finding.Affected)
}

// pseudoVersion matches the tail of a Go pseudo-version
// (v0.0.0-20261201123456-abcdefabcdef, v1.2.4-0.2026..., v1.2.3-pre.0.2026...).
var pseudoVersion = regexp.MustCompile(`(^|[-.])[0-9]{14}-[0-9a-f]{12}$`)

// ReleaseVersion returns the station version v as a release's semantic
// version ("v0.72.0" is "0.72.0"), or "" and why not when v is not a
// release: "(devel)" (a build from a checkout), a Go pseudo-version (a
// build of a commit), or a version with build metadata ("+dirty": a build
// of a modified tree). Which advisories affect such a build is not known.
func ReleaseVersion(v string) (string, string) {
	s := strings.TrimPrefix(v, "v")
	switch {
	case v == "" || v == "(devel)":
		return "", "a development build, not a release"
	case hub.CheckVersion(s) != "":
		return "", "not a release version"
	case strings.Contains(s, "+"):
		return "", "a build of a modified tree, not a release"
	case pseudoVersion.MatchString(s):
		return "", "a build of a commit between releases (a Go pseudo-version), not a release"
	}
	return s, ""
}

// CheckAdvisories lists what the station knows against every installed
// module version and against the station itself at stationVersion (what
// cmdutil.Version returns): the advisories that affect each, whether the
// operator allowed each, and its hub's yank. It reads only the station's
// store (SyncAdvisories refreshes it) and needs no login. A module is
// matched only against the hub it was installed from, by the same rule as
// the run gate; the station itself against the advisories of every hub
// the station has read (target hub.Product). A station version that is
// not a release is StatusUnknown: the station does not guess.
func CheckAdvisories(ctx context.Context, st *station.Station, stationVersion string) (*Findings, error) {
	out := &Findings{Modules: []Finding{}}
	if l, err := st.Store.HubLogin(ctx); err == nil {
		out.Hub = l.URL
		feed, err := st.Store.AdvisoryCursor(ctx, l.URL)
		if err != nil {
			return nil, err
		}
		out.SyncedAt = feed.SyncedAt
	} else if !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	installed, err := st.InstalledAdvisories(ctx)
	if err != nil {
		return nil, err
	}
	for _, va := range installed {
		rec, err := st.Store.Module(ctx, va.Module)
		if err != nil {
			return nil, err
		}
		o, err := OriginOf(ctx, st, rec)
		if err != nil {
			return nil, err
		}
		f := finding(va)
		f.Origin = o.Kind
		if o.Kind != FromHub {
			f.Note = "installed from a directory: advisories apply only to modules installed from the hub that published them"
		}
		out.Modules = append(out.Modules, f)
	}

	out.Station = Finding{Module: hub.Product, Version: stationVersion, Advisories: []AdvisoryFinding{}, Status: StatusOK}
	release, why := ReleaseVersion(stationVersion)
	if release == "" {
		out.Station.Status = StatusUnknown
		out.Station.Note = fmt.Sprintf("station %s is %s: which advisories affect it is unknown", stationVersion, why)
		return out, nil
	}
	advs, err := st.Store.AdvisoriesFor(ctx, hub.Product)
	if err != nil {
		return nil, err
	}
	hubs := []string{}
	for _, a := range advs {
		if !slices.Contains(hubs, a.HubURL) {
			hubs = append(hubs, a.HubURL)
		}
	}
	for _, h := range hubs {
		va, err := st.AdvisoriesAgainst(ctx, h, hub.Product, release)
		if err != nil {
			return nil, err
		}
		out.Station.Advisories = append(out.Station.Advisories, finding(va).Advisories...)
	}
	// The station never refuses itself: an advisory against it is for the
	// operator to act on (upgrade the station).
	for i := range out.Station.Advisories {
		if a := &out.Station.Advisories[i]; a.Status == StatusBlocked {
			a.Status = StatusWarn
		}
	}
	out.Station.Status = worst(out.Station)
	return out, nil
}

// finding is va as a Finding.
func finding(va station.VersionAdvisories) Finding {
	f := Finding{Module: va.Module, Version: va.Version, Hub: va.Hub, Advisories: []AdvisoryFinding{}}
	for _, m := range va.Advisories {
		a := AdvisoryFinding{ID: m.ID, Aliases: nonNil(m.Aliases), Summary: m.Summary, Severity: m.Severity, FixedIn: m.FixedIn, Hub: m.Hub, Status: StatusWarn}
		switch {
		case m.Blocks:
			a.Status = StatusBlocked
		case m.Allowed != nil:
			a.Status, a.Allowed, a.AllowReason = StatusAllowed, true, m.Allowed.Reason
		}
		f.Advisories = append(f.Advisories, a)
	}
	if va.Yank != nil {
		f.Yanked, f.YankReason = true, va.Yank.Reason
	}
	f.Status = worst(f)
	return f
}

// worst is f's status: blocked over warn over allowed over yanked over
// ok.
func worst(f Finding) string {
	rank := map[string]int{StatusBlocked: 4, StatusWarn: 3, StatusAllowed: 2}
	s := StatusOK
	if f.Yanked {
		s = StatusYanked
	}
	for _, a := range f.Advisories {
		if rank[a.Status] > rank[s] {
			s = a.Status
		}
	}
	return s
}
