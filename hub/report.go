package hub

import (
	"regexp"
	"time"
)

// Security reports: a reporter files a report against a module or the
// station (Product); the target's owners (for the station: the hub's
// admins) triage it through the states below, award credits, publish it
// and publish an advisory. docs/security-reports.md has who may do what.

// Report states. A report starts new; the arrows a maintainer may follow
// are in ReportTransitions.
const (
	StateNew       = "new"
	StateTriaged   = "triaged"
	StateConfirmed = "confirmed"
	StateFixed     = "fixed"
	StateDuplicate = "duplicate"
	StateWontFix   = "wontfix"
	StateInvalid   = "invalid"
)

// ReportTransitions are the state changes a maintainer may make, from each
// state. A closed report (duplicate, wontfix, invalid) may be reopened as
// triaged; a fixed one back to confirmed (a fix that did not hold on a
// later version).
var ReportTransitions = map[string][]string{
	StateNew:       {StateTriaged, StateConfirmed, StateDuplicate, StateWontFix, StateInvalid},
	StateTriaged:   {StateConfirmed, StateDuplicate, StateWontFix, StateInvalid},
	StateConfirmed: {StateFixed, StateDuplicate, StateWontFix},
	StateFixed:     {StateConfirmed},
	StateDuplicate: {StateTriaged},
	StateWontFix:   {StateTriaged},
	StateInvalid:   {StateTriaged},
}

// ReportStates lists the states in life-cycle order.
func ReportStates() []string {
	return []string{StateNew, StateTriaged, StateConfirmed, StateFixed, StateDuplicate, StateWontFix, StateInvalid}
}

// Bounds of what a report holds.
const (
	MaxTitleBytes        = 200
	MaxReportBodyBytes   = 64 << 10
	MaxReproductionBytes = 256 << 10
	MaxCommentBytes      = 64 << 10
	MaxReasonBytes       = 1 << 10
	// MaxCreditAward bounds one award of credits.
	MaxCreditAward = 1000
)

// Report is a security report as someone allowed to read it sees it.
type Report struct {
	// ID is "R-" and 12 random characters: it says nothing about how many
	// reports there are or against what.
	ID string `json:"id"`
	// Target is the module id ("owner/slug") or Product.
	Target string `json:"target"`
	// Introduced and LastAffected, if set, bound the versions the reporter
	// says are affected ("" and "": every version).
	Introduced   string   `json:"introduced,omitempty"`
	LastAffected string   `json:"last_affected,omitempty"`
	Title        string   `json:"title"`
	Body         string   `json:"body"`
	CWE          string   `json:"cwe,omitempty"`
	Severity     Severity `json:"severity"`
	Reproduction string   `json:"reproduction,omitempty"`
	State        string   `json:"state"`
	Reporter     string   `json:"reporter"`
	// FixedIn is the version the report was fixed in (state fixed).
	FixedIn string `json:"fixed_in,omitempty"`
	// DuplicateOf is the report this one duplicates (state duplicate).
	DuplicateOf string `json:"duplicate_of,omitempty"`
	// Advisory is the id of the advisory published for the report.
	Advisory string `json:"advisory,omitempty"`
	// Credits is what the reporter was awarded for it, in total.
	Credits int64 `json:"credits"`
	// PublishedAt is set once the report is public.
	PublishedAt *time.Time `json:"published_at,omitempty"`
	CreatedAt   time.Time  `json:"created_at"`
	UpdatedAt   time.Time  `json:"updated_at"`
	// Thread is the report's history and conversation, oldest first; a
	// list of reports leaves it out.
	Thread []ReportEvent `json:"thread,omitempty"`
}

// Report event kinds.
const (
	ReportFiled     = "filed"
	ReportComment   = "comment"
	ReportState     = "state"
	ReportCredit    = "credit"
	ReportPublished = "published"
	ReportAdvisory  = "advisory"
	// ReportSeverity is a maintainer's change of the severity (Severity
	// is the new one).
	ReportSeverity = "severity"
)

// ReportEvent is one entry of a report's thread: who did what, when, and
// what they said.
type ReportEvent struct {
	Seq   int64     `json:"seq"`
	Kind  string    `json:"kind"`
	Actor string    `json:"actor"`
	Time  time.Time `json:"time"`
	// Comment is what the actor wrote (a comment, or the note of a change).
	Comment string `json:"comment,omitempty"`
	// From and To are the states of a state change.
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
	// FixedIn and DuplicateOf go with a change to fixed or duplicate.
	FixedIn     string `json:"fixed_in,omitempty"`
	DuplicateOf string `json:"duplicate_of,omitempty"`
	// VerifiedIn is the version a comment says the report was checked on
	// again (still there, or fixed).
	VerifiedIn string `json:"verified_in,omitempty"`
	// Credits and Reason go with an award.
	Credits int64  `json:"credits,omitempty"`
	Reason  string `json:"reason,omitempty"`
	// Advisory names the advisory published.
	Advisory string `json:"advisory,omitempty"`
	// Severity is the new severity of a severity change.
	Severity *Severity `json:"severity,omitempty"`
}

// FileReportRequest is the body of POST /v1/reports.
type FileReportRequest struct {
	Target       string   `json:"target"`
	Introduced   string   `json:"introduced,omitempty"`
	LastAffected string   `json:"last_affected,omitempty"`
	Title        string   `json:"title"`
	Body         string   `json:"body"`
	CWE          string   `json:"cwe,omitempty"`
	Severity     Severity `json:"severity"`
	Reproduction string   `json:"reproduction,omitempty"`
}

// ReportList is the answer to GET /v1/reports: the reports the caller may
// read, newest first.
type ReportList struct {
	Reports []Report `json:"reports"`
	// Next is the offset of the next page; 0 when this is the last page.
	Next int `json:"next,omitempty"`
}

// CommentRequest is the body of POST /v1/reports/{id}/comments.
type CommentRequest struct {
	Body string `json:"body"`
	// VerifiedIn, if set, is the version the commenter checked the report
	// on again; it must exist.
	VerifiedIn string `json:"verified_in,omitempty"`
}

// TriageRequest is the body of POST /v1/reports/{id}/triage: one state
// change, with what goes with it, applied together or not at all.
type TriageRequest struct {
	// State is the new state ("" to change nothing but publish, award or
	// publish an advisory).
	State   string `json:"state,omitempty"`
	Comment string `json:"comment,omitempty"`
	// FixedIn is required for fixed: a published, not yanked version of
	// the module, or a recorded station release.
	FixedIn string `json:"fixed_in,omitempty"`
	// DuplicateOf is required for duplicate: another report of the same
	// target.
	DuplicateOf string `json:"duplicate_of,omitempty"`
	// Severity, if set, replaces the report's (the maintainer's score).
	Severity *Severity `json:"severity,omitempty"`
	// Award, if set, awards credits to the reporter: only on a report that
	// is (or becomes) confirmed or fixed, never to oneself.
	Award *Award `json:"award,omitempty"`
	// Advisory publishes an advisory for the report (or updates the one it
	// has): only on a confirmed or fixed report.
	Advisory bool `json:"advisory,omitempty"`
	// Publish makes the report readable by everyone.
	Publish bool `json:"publish,omitempty"`
}

// Award is credits awarded to a reporter.
type Award struct {
	Amount int64  `json:"amount"`
	Reason string `json:"reason"`
}

// Credits is an account's public credit record (GET
// /v1/accounts/{account}/credits).
type Credits struct {
	Account string        `json:"account"`
	Balance int64         `json:"balance"`
	History []CreditEntry `json:"history"`
}

// CreditEntry is one award. Report and Target are set only once the report
// is published: a private report's existence is not leaked by its credit.
type CreditEntry struct {
	Amount    int64     `json:"amount"`
	Reason    string    `json:"reason"`
	AwardedBy string    `json:"awarded_by"`
	Time      time.Time `json:"time"`
	Report    string    `json:"report,omitempty"`
	Target    string    `json:"target,omitempty"`
}

// HallOfFame is the answer to GET /v1/credits: reporters by credits,
// highest first (ties by name).
type HallOfFame struct {
	Reporters []Reporter `json:"reporters"`
}

// Reporter is one line of the hall of fame.
type Reporter struct {
	Account string `json:"account"`
	Credits int64  `json:"credits"`
	// Awards is how many awards make up Credits.
	Awards int `json:"awards"`
}

// Release is a recorded release of the station itself.
type Release struct {
	// Version is the semantic version ("0.72.0"); the release's name is
	// "station-v" and the version.
	Version    string    `json:"version"`
	RecordedBy string    `json:"recorded_by"`
	RecordedAt time.Time `json:"recorded_at"`
}

// ReleaseRequest is the body of POST /v1/station/releases.
type ReleaseRequest struct {
	Version string `json:"version"`
}

// ReleaseList is the answer to GET /v1/station/releases, highest first.
type ReleaseList struct {
	Releases []Release `json:"releases"`
}

// AdvisoryRequest is the body of POST /v1/advisories: an advisory written
// directly by the module's owner (for the station: an admin).
type AdvisoryRequest struct {
	Target string `json:"target"`
	// Ranges are the affected versions (at least one).
	Ranges   []Range  `json:"ranges"`
	Summary  string   `json:"summary"`
	Details  string   `json:"details"`
	CWE      string   `json:"cwe,omitempty"`
	Severity Severity `json:"severity"`
	// Credits name the accounts to credit as finders.
	Credits []string `json:"credits,omitempty"`
}

// AdvisoryList is the answer to GET /v1/advisories?target=: every
// advisory of a target, withdrawn ones included.
type AdvisoryList struct {
	Advisories []OSV `json:"advisories"`
}

// AdvisoryFeed is the answer to GET /v1/advisories?after=N: the advisories
// and yanks that changed after cursor N, in the order they changed (an
// advisory changed twice comes once, as it is now).
type AdvisoryFeed struct {
	Advisories []OSV  `json:"advisories"`
	Yanks      []Yank `json:"yanks"`
	Cursor     int64  `json:"cursor"`
	More       bool   `json:"more"`
}

// Yank is a version's yank state as it changed: a yank (with its reason)
// or an unyank.
type Yank struct {
	Module  string    `json:"module"`
	Version string    `json:"version"`
	Yanked  bool      `json:"yanked"`
	Reason  string    `json:"reason,omitempty"`
	Time    time.Time `json:"time"`
}

// WithdrawRequest is the body of POST /v1/advisories/{id}/withdraw.
type WithdrawRequest struct {
	Reason string `json:"reason"`
}

// ValidReportID reports whether id has the form of a report id.
func ValidReportID(id string) bool { return reportID.MatchString(id) }

var reportID = regexp.MustCompile(`^R-[a-z2-7]{12}$`)
