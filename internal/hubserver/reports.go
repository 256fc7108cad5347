package hubserver

import (
	"crypto/rand"
	"encoding/base32"
	"errors"
	"net/http"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/station-dev/station/hub"
)

// Security reports and credits. Who may do what is the Store's to check, in
// its transaction (Store.TriageReport has the rules); the handlers check the
// form of what is asked.

// The bodies of the report endpoints are bounded by what their fields'
// own bounds take in JSON escaped at worst (6 bytes for one), and room for
// the rest.
const (
	maxReportRequestBytes   = 6*(hub.MaxTitleBytes+hub.MaxReportBodyBytes+hub.MaxReproductionBytes) + 64<<10
	maxNoteRequestBytes     = 6*(hub.MaxCommentBytes+hub.MaxReasonBytes) + 64<<10
	maxAdvisoryRequestBytes = 6*(hub.MaxTitleBytes+hub.MaxReportBodyBytes) + 64<<10
)

// maxHallOfFame bounds the hall of fame.
const maxHallOfFame = 100

// errReportNotFound is the answer for a report that does not exist and for
// one the caller may not read alike: the same code and message, so that
// nothing tells them apart.
func errReportNotFound() error {
	return hub.Errorf(hub.CodeReportNotFound, "no such report, or you may not read it: a private report is read only by its reporter, the target's owner and the hub's admins")
}

// mapReportErr turns a Store error about a report, a release or an
// advisory into its wire error. ErrNotFound is a report's.
func mapReportErr(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	var re *RuleError
	if errors.As(err, &re) {
		msg = re.Msg
	}
	for _, m := range []struct {
		err  error
		code hub.Code
	}{
		{ErrNoTarget, hub.CodeTargetNotFound},
		{ErrNotMaintainer, hub.CodeNotMaintainer},
		{ErrNotAdmin, hub.CodeNotAdmin},
		{ErrStateChange, hub.CodeStateChangeInvalid},
		{ErrFixedVersion, hub.CodeFixedVersionNotFound},
		{ErrReportInvalid, hub.CodeReportInvalid},
		{ErrAwardRefused, hub.CodeAwardRefused},
		{ErrNoVersion, hub.CodeVersionNotFound},
		{ErrNoAccount, hub.CodeAccountNotFound},
	} {
		if errors.Is(err, m.err) {
			return hub.Errorf(m.code, "%s", msg)
		}
	}
	if errors.Is(err, ErrNotFound) {
		return errReportNotFound()
	}
	return err
}

// invisibleRune reports the formatting characters of Unicode category
// Cf, invisible all — bidi controls and marks, zero-width spaces, the BOM,
// the tag characters that hide ASCII text — but for the zero-width
// non-joiner and joiner, which scripts such as Persian and emoji sequences
// need.
func invisibleRune(r rune) bool {
	return unicode.Is(unicode.Cf, r) && r != '\u200c' && r != '\u200d'
}

// checkField validates a text field of a report, comment or advisory:
// not empty when required, at most max bytes, without control or
// formatting characters (unsafeRune, invisibleRune; but for newlines and
// tabs when multiline: Markdown).
func checkField(field, s string, required bool, max int, multiline bool) error {
	switch {
	case required && s == "":
		return hub.Errorf(hub.CodeReportInvalid, "%s is required", field)
	case len(s) > max:
		return hub.Errorf(hub.CodeReportInvalid, "%s is %d bytes, longer than the %d allowed", field, len(s), max)
	}
	if i := strings.IndexFunc(s, func(r rune) bool {
		if multiline && (r == '\n' || r == '\t') {
			return false
		}
		return unsafeRune(r) || invisibleRune(r)
	}); i >= 0 {
		r, _ := utf8.DecodeRuneInString(s[i:])
		what := "a control or invisible formatting character"
		if multiline {
			what = "a control or invisible formatting character other than a newline or a tab"
		}
		return hub.Errorf(hub.CodeReportInvalid, "%s contains %s (U+%04X at byte %d)", field, what, r, i)
	}
	return nil
}

// checkTarget checks the form of a report or advisory target.
func checkTarget(target string) error {
	if target == hub.Product || hub.CheckModuleID(target) == "" {
		return nil
	}
	return hub.Errorf(hub.CodeTargetNotFound, "target %q is neither a module id (owner/slug) nor %q", clip(target), hub.Product)
}

// checkVersionField checks an optional version field of a report.
func checkVersionField(field, v string) error {
	if v == "" {
		return nil
	}
	if msg := hub.CheckVersion(v); msg != "" {
		return hub.Errorf(hub.CodeReportInvalid, "%s %q %s", field, clip(v), msg)
	}
	return nil
}

func checkSeverity(sev hub.Severity) error {
	if msg := sev.Check(); msg != "" {
		return hub.Errorf(hub.CodeReportInvalid, "severity: %s", msg)
	}
	return nil
}

// reportIDEncoding is base32 with its alphabet in lower case: a-z, 2-7.
var reportIDEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// newReportID returns "R-" and 12 random characters (60 bits).
func newReportID() string {
	var b [8]byte
	rand.Read(b[:])
	return "R-" + reportIDEncoding.EncodeToString(b[:])[:12]
}

func (c *call) reportID() (string, error) {
	id := c.r.PathValue("id")
	if !hub.ValidReportID(id) {
		return "", hub.Errorf(hub.CodeInvalidName, "report id %q is not one (R- and 12 letters a-z or digits 2-7)", clip(id))
	}
	return id, nil
}

func (s *Server) fileReport(c *call) error {
	var req hub.FileReportRequest
	if err := c.decode(&req); err != nil {
		return err
	}
	if err := checkTarget(req.Target); err != nil {
		return err
	}
	for _, err := range []error{
		checkField("title", req.Title, true, hub.MaxTitleBytes, false),
		checkField("body", req.Body, true, hub.MaxReportBodyBytes, true),
		checkField("reproduction", req.Reproduction, false, hub.MaxReproductionBytes, true),
		checkSeverity(req.Severity),
		checkVersionField("introduced", req.Introduced),
		checkVersionField("last_affected", req.LastAffected),
	} {
		if err != nil {
			return err
		}
	}
	if msg := hub.CheckCWE(req.CWE); msg != "" {
		return hub.Errorf(hub.CodeReportInvalid, "cwe: %s", msg)
	}
	if req.Introduced != "" && req.LastAffected != "" && hub.CompareVersions(req.Introduced, req.LastAffected) > 0 {
		return hub.Errorf(hub.CodeReportInvalid, "introduced %s is above last_affected %s", req.Introduced, req.LastAffected)
	}
	r := hub.Report{Target: req.Target, Introduced: req.Introduced, LastAffected: req.LastAffected, Title: req.Title, Body: req.Body,
		CWE: req.CWE, Severity: req.Severity, Reproduction: req.Reproduction, Reporter: c.account, CreatedAt: s.now().UTC()}
	var out hub.Report
	var err error
	for range 3 { // 60 random bits: a collision is for the tests of this loop
		r.ID = newReportID()
		if out, err = s.store.FileReport(c.ctx, r); !errors.Is(err, ErrExists) {
			break
		}
	}
	if err != nil {
		return mapReportErr(err)
	}
	s.log.Info("report filed", "account", c.account, "report", out.ID, "target", out.Target)
	s.reply(c, http.StatusCreated, out)
	return nil
}

func (s *Server) listReports(c *call) error {
	q := c.r.URL.Query()
	f := ReportFilter{Viewer: c.account, Target: q.Get("target"), State: q.Get("state")}
	if f.Target != "" {
		if err := checkTarget(f.Target); err != nil {
			return err
		}
	}
	if f.State != "" && !slices.Contains(hub.ReportStates(), f.State) {
		return hub.Errorf(hub.CodeBadRequest, "state %q is none of %s", clip(f.State), strings.Join(hub.ReportStates(), ", "))
	}
	switch mine := q.Get("mine"); mine {
	case "", "false":
	case "true":
		if c.account == "" {
			return hub.Errorf(hub.CodeUnauthenticated, "mine=true lists the reports you filed: it needs a token (log in with `station hub login`)")
		}
		f.Mine = true
	default:
		return hub.Errorf(hub.CodeBadRequest, "mine must be true or false")
	}
	var err error
	if f.Limit, err = intParam(q.Get("limit"), "limit", 20, 1, 100); err != nil {
		return err
	}
	if f.Offset, err = intParam(q.Get("offset"), "offset", 0, 0, 10_000); err != nil {
		return err
	}
	reports, err := s.store.Reports(c.ctx, f)
	if err != nil {
		return err
	}
	resp := hub.ReportList{Reports: reports}
	if len(reports) == f.Limit {
		resp.Next = f.Offset + f.Limit
	}
	s.reply(c, http.StatusOK, resp)
	return nil
}

func (s *Server) report(c *call) error {
	id, err := c.reportID()
	if err != nil {
		return err
	}
	r, err := s.store.Report(c.ctx, id, c.account)
	if err != nil {
		return mapReportErr(err)
	}
	s.reply(c, http.StatusOK, r)
	return nil
}

func (s *Server) comment(c *call) error {
	id, err := c.reportID()
	if err != nil {
		return err
	}
	var req hub.CommentRequest
	if err := c.decode(&req); err != nil {
		return err
	}
	if err := checkField("body", req.Body, true, hub.MaxCommentBytes, true); err != nil {
		return err
	}
	if err := checkVersionField("verified_in", req.VerifiedIn); err != nil {
		return err
	}
	r, err := s.store.CommentReport(c.ctx, id, c.account, hub.ReportEvent{Comment: req.Body, VerifiedIn: req.VerifiedIn, Time: s.now()})
	if err != nil {
		return mapReportErr(err)
	}
	s.reply(c, http.StatusOK, r)
	return nil
}

func (s *Server) triage(c *call) error {
	id, err := c.reportID()
	if err != nil {
		return err
	}
	var req hub.TriageRequest
	if err := c.decode(&req); err != nil {
		return err
	}
	if err := checkTriage(req); err != nil {
		return err
	}
	r, evs, err := s.store.TriageReport(c.ctx, id, c.account, req, s.now())
	if err != nil {
		return mapReportErr(err)
	}
	if len(evs) > 0 {
		s.relay.notify()
	}
	for _, ev := range evs {
		s.log.Info(ev.Kind, "account", c.account, "report", id, "advisory", ev.Advisory, "seq", ev.Seq)
	}
	s.log.Info("report triaged", "account", c.account, "report", id, "state", r.State)
	s.reply(c, http.StatusOK, r)
	return nil
}

// checkTriage checks the form of a triage request; the Store checks what
// it asks against the report.
func checkTriage(req hub.TriageRequest) error {
	if req.State == "" && req.Severity == nil && req.Award == nil && !req.Advisory && !req.Publish {
		return hub.Errorf(hub.CodeBadRequest, "the triage asks for nothing: set state, severity, award, advisory or publish (a comment alone is POST /v1/reports/{id}/comments)")
	}
	if req.State != "" && !slices.Contains(hub.ReportStates(), req.State) {
		return hub.Errorf(hub.CodeReportInvalid, "state %q is none of %s", clip(req.State), strings.Join(hub.ReportStates(), ", "))
	}
	if err := checkField("comment", req.Comment, false, hub.MaxCommentBytes, true); err != nil {
		return err
	}
	switch {
	case req.FixedIn != "" && req.State != hub.StateFixed:
		return hub.Errorf(hub.CodeReportInvalid, "fixed_in goes only with state %q", hub.StateFixed)
	case req.State == hub.StateFixed && req.FixedIn == "":
		return hub.Errorf(hub.CodeReportInvalid, "state fixed needs fixed_in: the published version with the fix")
	case req.DuplicateOf != "" && req.State != hub.StateDuplicate:
		return hub.Errorf(hub.CodeReportInvalid, "duplicate_of goes only with state %q", hub.StateDuplicate)
	case req.State == hub.StateDuplicate && req.DuplicateOf == "":
		return hub.Errorf(hub.CodeReportInvalid, "state duplicate needs duplicate_of: the report this one duplicates")
	case req.DuplicateOf != "" && !hub.ValidReportID(req.DuplicateOf):
		return hub.Errorf(hub.CodeReportInvalid, "duplicate_of %q is not a report id (R- and 12 letters a-z or digits 2-7)", clip(req.DuplicateOf))
	}
	if err := checkVersionField("fixed_in", req.FixedIn); err != nil {
		return err
	}
	if req.Severity != nil {
		if err := checkSeverity(*req.Severity); err != nil {
			return err
		}
	}
	if a := req.Award; a != nil {
		if a.Amount < 1 || a.Amount > hub.MaxCreditAward {
			return hub.Errorf(hub.CodeReportInvalid, "award amount %d: an award is 1 to %d credits", a.Amount, hub.MaxCreditAward)
		}
		if err := checkField("award reason", a.Reason, true, hub.MaxReasonBytes, false); err != nil {
			return err
		}
	}
	return nil
}

func (s *Server) credits(c *call) error {
	name, err := c.name("account")
	if err != nil {
		return err
	}
	cr, err := s.store.Credits(c.ctx, name)
	if errors.Is(err, ErrNotFound) {
		return hub.Errorf(hub.CodeAccountNotFound, "account %q does not exist", name)
	}
	if err != nil {
		return err
	}
	s.reply(c, http.StatusOK, cr)
	return nil
}

func (s *Server) hallOfFame(c *call) error {
	rs, err := s.store.HallOfFame(c.ctx, maxHallOfFame)
	if err != nil {
		return err
	}
	s.reply(c, http.StatusOK, hub.HallOfFame{Reporters: rs})
	return nil
}

func (s *Server) recordRelease(c *call) error {
	var req hub.ReleaseRequest
	if err := c.decode(&req); err != nil {
		return err
	}
	if msg := hub.CheckVersion(req.Version); msg != "" {
		return hub.Errorf(hub.CodeInvalidName, "version %q %s", clip(req.Version), msg)
	}
	rel, err := s.store.RecordRelease(c.ctx, req.Version, c.account, s.now())
	switch {
	case errors.Is(err, ErrNotAdmin):
		return hub.Errorf(hub.CodeNotAdmin, "only a hub admin records station releases (the operator makes one: station hub user admin NAME)")
	case errors.Is(err, ErrExists):
		return hub.Errorf(hub.CodeReleaseExists, "station %s (or a version of equal precedence) is recorded already", req.Version)
	case err != nil:
		return err
	}
	s.log.Info("station release recorded", "account", c.account, "version", rel.Version)
	s.reply(c, http.StatusCreated, rel)
	return nil
}

func (s *Server) listReleases(c *call) error {
	rs, err := s.store.Releases(c.ctx)
	if err != nil {
		return err
	}
	s.reply(c, http.StatusOK, hub.ReleaseList{Releases: rs})
	return nil
}
