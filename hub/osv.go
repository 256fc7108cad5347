package hub

import (
	"fmt"
	"regexp"
	"strings"
	"time"
)

// The OSV schema (https://ossf.github.io/osv-schema/) is the format the
// hub serves advisories in: the format of osv.dev, GitHub's advisory
// database and the Go vulnerability database, so that existing OSV tooling
// reads the hub's feed. docs/security-reports.md has the mapping.

// OSVSchemaVersion is the version of the OSV schema the hub's records
// follow.
const OSVSchemaVersion = "1.7.0"

// Ecosystem is the OSV ecosystem of everything a hub publishes advisories
// for: modules (the package name is the module id, "owner/slug") and the
// station itself (the package name is Product).
const Ecosystem = "Station"

// Product is the report target and OSV package name that stand for the
// station itself, by its released versions. It can never be a module id
// (those always have a slash).
const Product = "station"

// AdvisoryPrefix starts every advisory id a hub assigns:
// "STATION-2026-0007" (year of publication, then a counter that is
// per hub and year).
const AdvisoryPrefix = "STATION"

// Severity levels, lowest first. A report and an advisory always have one;
// a CVSS 4.0 vector may be given beside it.
const (
	SeverityLow      = "low"
	SeverityMedium   = "medium"
	SeverityHigh     = "high"
	SeverityCritical = "critical"
)

// severityRanks orders the levels.
var severityRanks = map[string]int{SeverityLow: 1, SeverityMedium: 2, SeverityHigh: 3, SeverityCritical: 4}

// SeverityRank returns 1 (low) to 4 (critical), or 0 for anything that is
// not a level.
func SeverityRank(level string) int { return severityRanks[level] }

// SeverityLevels lists the levels, lowest first.
func SeverityLevels() []string {
	return []string{SeverityLow, SeverityMedium, SeverityHigh, SeverityCritical}
}

// cvss4 is the grammar of a CVSS 4.0 vector: the base metrics in order,
// then any of the others in their order (the pattern the OSV schema checks
// CVSS_V4 scores with).
var cvss4 = regexp.MustCompile(`^CVSS:4[.]0/AV:[NALP]/AC:[LH]/AT:[NP]/PR:[NLH]/UI:[NPA]/VC:[HLN]/VI:[HLN]/VA:[HLN]/SC:[HLN]/SI:[HLN]/SA:[HLN](/E:[XAPU])?(/CR:[XHML])?(/IR:[XHML])?(/AR:[XHML])?(/MAV:[XNALP])?(/MAC:[XLH])?(/MAT:[XNP])?(/MPR:[XNLH])?(/MUI:[XNPA])?(/MVC:[XNLH])?(/MVI:[XNLH])?(/MVA:[XNLH])?(/MSC:[XNLH])?(/MSI:[XNLHS])?(/MSA:[XNLHS])?(/S:[XNP])?(/AU:[XNY])?(/R:[XAUI])?(/V:[XDC])?(/RE:[XLMH])?(/U:(X|Clear|Green|Amber|Red))?$`)

// Severity is how bad a reported flaw is: a level (always) and, when the
// reporter or maintainer scored it, a CVSS 4.0 vector. The hub does not
// compute a score from the vector: the level is what stations act on
// (RATIONALE.md, "Why a severity level beside the CVSS vector?").
type Severity struct {
	Level string `json:"level"`
	CVSS  string `json:"cvss,omitempty"`
}

// Check returns "" if s is a valid severity, or what is wrong with it.
func (s Severity) Check() string {
	if SeverityRank(s.Level) == 0 {
		if s.Level == "" {
			return "a severity level is required (low, medium, high or critical); a CVSS vector may be given beside it"
		}
		return fmt.Sprintf("severity level %q is none of low, medium, high, critical", clip(s.Level))
	}
	if s.CVSS != "" && !cvss4.MatchString(s.CVSS) {
		return fmt.Sprintf("%q is not a CVSS 4.0 vector (CVSS:4.0/AV:N/AC:L/AT:N/PR:N/UI:N/VC:H/VI:H/VA:H/SC:N/SI:N/SA:N, base metrics in this order)", clip(s.CVSS))
	}
	return ""
}

// CheckCWE returns "" if s is "" or a CWE id ("CWE-200"), or what is wrong.
func CheckCWE(s string) string {
	if s == "" {
		return ""
	}
	n, ok := strings.CutPrefix(s, "CWE-")
	if !ok || n == "" || len(n) > 6 || strings.TrimLeft(n, "0123456789") != "" || n[0] == '0' {
		return fmt.Sprintf("%q is not a CWE id (CWE- and a number, e.g. CWE-200)", clip(s))
	}
	return ""
}

// OSV is one advisory in the OSV format. Times are UTC and serialised as
// RFC 3339 with a "Z" (OSV requires it).
type OSV struct {
	SchemaVersion string       `json:"schema_version"`
	ID            string       `json:"id"`
	Modified      OSVTime      `json:"modified"`
	Published     OSVTime      `json:"published"`
	Withdrawn     *OSVTime     `json:"withdrawn,omitempty"`
	Aliases       []string     `json:"aliases,omitempty"`
	Related       []string     `json:"related,omitempty"`
	Summary       string       `json:"summary"`
	Details       string       `json:"details"`
	Severity      []OSVScore   `json:"severity,omitempty"`
	Affected      []OSVAffect  `json:"affected"`
	References    []OSVRef     `json:"references,omitempty"`
	Credits       []OSVCredit  `json:"credits,omitempty"`
	Database      *OSVDatabase `json:"database_specific,omitempty"`
}

// OSVTime is a time in the form OSV requires: RFC 3339, UTC, "Z".
type OSVTime struct{ time.Time }

// MarshalJSON writes the time in UTC with a Z.
func (t OSVTime) MarshalJSON() ([]byte, error) {
	return []byte(`"` + t.UTC().Format("2006-01-02T15:04:05.999999999Z") + `"`), nil
}

// UnmarshalJSON reads an RFC 3339 time.
func (t *OSVTime) UnmarshalJSON(b []byte) error {
	var tm time.Time
	if err := tm.UnmarshalJSON(b); err != nil {
		return err
	}
	t.Time = tm.UTC()
	return nil
}

// OSVScore is a severity score: type "CVSS_V4" and the vector.
type OSVScore struct {
	Type  string `json:"type"`
	Score string `json:"score"`
}

// OSVAffect is one affected package with its version ranges.
type OSVAffect struct {
	Package OSVPackage `json:"package"`
	Ranges  []OSVRange `json:"ranges"`
}

// OSVPackage names a package: Ecosystem and the module id or Product.
type OSVPackage struct {
	Ecosystem string `json:"ecosystem"`
	Name      string `json:"name"`
}

// OSVRange is a SEMVER range: events "introduced" (always first), then
// "fixed" or "last_affected".
type OSVRange struct {
	Type   string     `json:"type"`
	Events []OSVEvent `json:"events"`
}

// OSVEvent is one range event; exactly one field is set.
type OSVEvent struct {
	Introduced   string `json:"introduced,omitempty"`
	Fixed        string `json:"fixed,omitempty"`
	LastAffected string `json:"last_affected,omitempty"`
}

// OSVRef is a reference: type ("REPORT", "ADVISORY", "FIX", "WEB",
// "PACKAGE") and a URL.
type OSVRef struct {
	Type string `json:"type"`
	URL  string `json:"url"`
}

// OSVCredit credits a person: their hub account name and type ("FINDER",
// "REPORTER", "REMEDIATION_DEVELOPER").
type OSVCredit struct {
	Name string `json:"name"`
	Type string `json:"type,omitempty"`
}

// OSVDatabase is the hub's database_specific block: the severity level
// (upper case, as GitHub's advisory database writes it), the CWE ids, the
// report the advisory came from, and the hub that published it.
type OSVDatabase struct {
	Severity string   `json:"severity"`
	CWEIDs   []string `json:"cwe_ids,omitempty"`
	Report   string   `json:"report,omitempty"`
	Hub      string   `json:"hub,omitempty"`
}

// Level returns the advisory's severity level (lower case), "" if it has
// none the hub knows.
func (a *OSV) Level() string {
	if a.Database == nil {
		return ""
	}
	l := strings.ToLower(a.Database.Severity)
	if SeverityRank(l) == 0 {
		return ""
	}
	return l
}

// Range is a range of affected versions of one package, as the hub and
// stations work with it: Introduced ("0" for every version before Fixed),
// and at most one of Fixed and LastAffected.
type Range struct {
	Introduced   string `json:"introduced"`
	Fixed        string `json:"fixed,omitempty"`
	LastAffected string `json:"last_affected,omitempty"`
}

// Ranges returns the SEMVER ranges of the affected entry of pkg (module id
// or Product) in a, in the hub's form. A bound that is not a semantic
// version is no bound, so that the range is wider, never narrower: an
// introduced that does not parse is "0", a fixed or last_affected that does
// not parse is left out. A range whose first event is not introduced is
// none.
func (a *OSV) Ranges(pkg string) []Range {
	var out []Range
	for _, af := range a.Affected {
		if af.Package.Ecosystem != Ecosystem || af.Package.Name != pkg {
			continue
		}
		for _, r := range af.Ranges {
			if r.Type != "SEMVER" {
				continue
			}
			var cur *Range
			for _, e := range r.Events {
				switch {
				case e.Introduced != "":
					out = append(out, Range{Introduced: e.Introduced})
					cur = &out[len(out)-1]
					if CheckVersion(cur.Introduced) != "" {
						cur.Introduced = "0"
					}
				case cur != nil && e.Fixed != "" && CheckVersion(e.Fixed) == "" && cur.Fixed == "" && cur.LastAffected == "":
					cur.Fixed = e.Fixed
				case cur != nil && e.LastAffected != "" && CheckVersion(e.LastAffected) == "" && cur.Fixed == "" && cur.LastAffected == "":
					cur.LastAffected = e.LastAffected
				}
			}
		}
	}
	return out
}

// Affects reports whether version is in r: at or after Introduced ("0":
// from the first) and before Fixed, or at most LastAffected. A bound that
// is not a semantic version is no bound (the range is wider, never
// narrower, as Ranges reads it). A version that is not a semantic version
// is never affected (the caller says the version is unknown).
func (r Range) Affects(version string) bool {
	if CheckVersion(version) != "" {
		return false
	}
	if CheckVersion(r.Introduced) == "" && CompareVersions(version, r.Introduced) < 0 {
		return false
	}
	switch {
	case r.Fixed != "" && CheckVersion(r.Fixed) == "":
		return CompareVersions(version, r.Fixed) < 0
	case r.LastAffected != "" && CheckVersion(r.LastAffected) == "":
		return CompareVersions(version, r.LastAffected) <= 0
	}
	return true
}

// AffectsVersion reports whether version of pkg is affected by a (a
// withdrawn advisory affects nothing).
func (a *OSV) AffectsVersion(pkg, version string) bool {
	if a.Withdrawn != nil {
		return false
	}
	for _, r := range a.Ranges(pkg) {
		if r.Affects(version) {
			return true
		}
	}
	return false
}

// FixedIn returns the lowest fixed version of pkg above version, or "" if
// no range names one.
func (a *OSV) FixedIn(pkg, version string) string {
	best := ""
	for _, r := range a.Ranges(pkg) {
		if r.Fixed != "" && CheckVersion(r.Fixed) == "" && (version == "" || CompareVersions(r.Fixed, version) > 0) &&
			(best == "" || CompareVersions(r.Fixed, best) < 0) {
			best = r.Fixed
		}
	}
	return best
}

// ValidAdvisoryID reports whether id has the form of a hub advisory id:
// AdvisoryPrefix, a year and a number ("STATION-2026-0007").
func ValidAdvisoryID(id string) bool {
	return advisoryID.MatchString(id)
}

var advisoryID = regexp.MustCompile(`^` + AdvisoryPrefix + `-[0-9]{4}-[0-9]{4,9}$`)
