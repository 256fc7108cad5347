package hubserver

import (
	"cmp"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/station-dev/station/hub"
)

// Advisories are OSV records (hub.OSV). The Store keeps them without the
// hub's URL; the server adds it (render) as it answers, so that a hub
// that moves serves every record with its new address.

// Bounds of an advisory written directly.
const (
	maxAdvisoryRanges  = 16
	maxAdvisoryCredits = 16
)

// maxFeedPageBytes bounds the records of one page of the advisory feed,
// well inside what a station reads of an answer (16 MiB): an advisory is
// up to some 400 KiB as JSON, so that a page of a hundred of them, which
// the owner of any module can write, would not be.
const maxFeedPageBytes = 8 << 20

// newOSV returns the parts every advisory of the hub has.
func newOSV(id, summary, details, cwe string, sev hub.Severity, published, modified time.Time) hub.OSV {
	a := hub.OSV{
		SchemaVersion: hub.OSVSchemaVersion,
		ID:            id,
		Published:     hub.OSVTime{Time: published.UTC()},
		Modified:      hub.OSVTime{Time: modified.UTC()},
		Summary:       summary,
		Details:       details,
		Database:      &hub.OSVDatabase{Severity: strings.ToUpper(sev.Level)},
	}
	if sev.CVSS != "" {
		a.Severity = []hub.OSVScore{{Type: "CVSS_V4", Score: sev.CVSS}}
	}
	if cwe != "" {
		a.Database.CWEIDs = []string{cwe}
	}
	return a
}

// osvRange returns r as an OSV SEMVER range.
func osvRange(r hub.Range) hub.OSVRange {
	events := []hub.OSVEvent{{Introduced: cmp.Or(r.Introduced, "0")}}
	switch {
	case r.Fixed != "":
		events = append(events, hub.OSVEvent{Fixed: r.Fixed})
	case r.LastAffected != "":
		events = append(events, hub.OSVEvent{LastAffected: r.LastAffected})
	}
	return hub.OSVRange{Type: "SEMVER", Events: events}
}

// reportOSV returns the advisory id of report r as r is now: its title and
// body (never its reproduction), the versions from Introduced ("0" when
// not given) to FixedIn when it is fixed, else to LastAffected when given,
// its reporter credited as finder, and the report named once it is
// published.
func reportOSV(r hub.Report, id string, published, modified time.Time) hub.OSV {
	a := newOSV(id, r.Title, r.Body, r.CWE, r.Severity, published, modified)
	rg := hub.Range{Introduced: r.Introduced}
	if r.State == hub.StateFixed {
		rg.Fixed = r.FixedIn
	}
	if rg.Fixed == "" {
		rg.LastAffected = r.LastAffected
	}
	a.Affected = []hub.OSVAffect{{Package: hub.OSVPackage{Ecosystem: hub.Ecosystem, Name: r.Target}, Ranges: []hub.OSVRange{osvRange(rg)}}}
	a.Credits = []hub.OSVCredit{{Name: r.Reporter, Type: "FINDER"}}
	if r.PublishedAt != nil {
		a.Database.Report = r.ID
	}
	return a
}

// directOSV returns the advisory id written directly with req.
func directOSV(req hub.AdvisoryRequest, id string, at time.Time) hub.OSV {
	a := newOSV(id, req.Summary, req.Details, req.CWE, req.Severity, at, at)
	af := hub.OSVAffect{Package: hub.OSVPackage{Ecosystem: hub.Ecosystem, Name: req.Target}}
	for _, r := range req.Ranges {
		af.Ranges = append(af.Ranges, osvRange(r))
	}
	a.Affected = []hub.OSVAffect{af}
	for _, name := range req.Credits {
		a.Credits = append(a.Credits, hub.OSVCredit{Name: name, Type: "FINDER"})
	}
	return a
}

// render returns a as the hub serves it: with the hub's URL in
// database_specific and, for an advisory of a published report, a REPORT
// reference to it. A hub without a public URL (Options.PublicURL) leaves
// both out: OSV references are absolute URLs.
func (s *Server) render(a hub.OSV) hub.OSV {
	if s.publicURL == "" || a.Database == nil {
		return a
	}
	db := *a.Database
	db.Hub = s.publicURL
	a.Database = &db
	if db.Report != "" {
		a.References = append(slices.Clip(a.References), hub.OSVRef{Type: "REPORT", URL: s.publicURL + hub.PathPrefix + "/reports/" + db.Report})
	}
	return a
}

func (s *Server) renderAll(as []hub.OSV) []hub.OSV {
	out := make([]hub.OSV, 0, len(as))
	for _, a := range as {
		out = append(out, s.render(a))
	}
	return out
}

// mapAdvisoryErr is mapReportErr for an advisory: ErrNotFound is the
// advisory's.
func mapAdvisoryErr(err error, id string) error {
	if errors.Is(err, ErrNotFound) {
		return hub.Errorf(hub.CodeAdvisoryNotFound, "advisory %s does not exist", id)
	}
	return mapReportErr(err)
}

func (c *call) advisoryID() (string, error) {
	id := c.r.PathValue("id")
	if !hub.ValidAdvisoryID(id) {
		return "", hub.Errorf(hub.CodeInvalidName, "advisory id %q is not one (%s-YEAR-NUMBER)", clip(id), hub.AdvisoryPrefix)
	}
	return id, nil
}

// checkRange checks one range of affected versions.
func checkRange(i int, r hub.Range) error {
	if r.Introduced != "0" {
		if r.Introduced == "" {
			return hub.Errorf(hub.CodeReportInvalid, "ranges[%d]: introduced is required (\"0\" for every version before the fix)", i)
		}
		if err := checkVersionField("introduced", r.Introduced); err != nil {
			return err
		}
	}
	if r.Fixed != "" && r.LastAffected != "" {
		return hub.Errorf(hub.CodeReportInvalid, "ranges[%d]: a range ends at fixed or at last_affected, not both", i)
	}
	if err := checkVersionField("fixed", r.Fixed); err != nil {
		return err
	}
	if err := checkVersionField("last_affected", r.LastAffected); err != nil {
		return err
	}
	switch {
	case r.Introduced == "0":
	case r.Fixed != "" && hub.CompareVersions(r.Fixed, r.Introduced) <= 0:
		return hub.Errorf(hub.CodeReportInvalid, "ranges[%d]: fixed %s is not above introduced %s", i, r.Fixed, r.Introduced)
	case r.LastAffected != "" && hub.CompareVersions(r.LastAffected, r.Introduced) < 0:
		return hub.Errorf(hub.CodeReportInvalid, "ranges[%d]: last_affected %s is below introduced %s", i, r.LastAffected, r.Introduced)
	}
	return nil
}

func (s *Server) publishAdvisory(c *call) error {
	var req hub.AdvisoryRequest
	if err := c.decode(&req); err != nil {
		return err
	}
	if err := checkTarget(req.Target); err != nil {
		return err
	}
	for _, err := range []error{
		checkField("summary", req.Summary, true, hub.MaxTitleBytes, false),
		checkField("details", req.Details, true, hub.MaxReportBodyBytes, true),
		checkSeverity(req.Severity),
	} {
		if err != nil {
			return err
		}
	}
	if msg := hub.CheckCWE(req.CWE); msg != "" {
		return hub.Errorf(hub.CodeReportInvalid, "cwe: %s", msg)
	}
	if len(req.Ranges) == 0 || len(req.Ranges) > maxAdvisoryRanges {
		return hub.Errorf(hub.CodeReportInvalid, "an advisory has 1 to %d ranges of affected versions, not %d", maxAdvisoryRanges, len(req.Ranges))
	}
	for i, r := range req.Ranges {
		if err := checkRange(i, r); err != nil {
			return err
		}
	}
	if len(req.Credits) > maxAdvisoryCredits {
		return hub.Errorf(hub.CodeReportInvalid, "an advisory credits at most %d accounts", maxAdvisoryCredits)
	}
	for i, name := range req.Credits {
		if msg := hub.CheckName(name); msg != "" {
			return hub.Errorf(hub.CodeInvalidName, "credits: account %q %s", clip(name), msg)
		}
		if slices.Contains(req.Credits[:i], name) {
			return hub.Errorf(hub.CodeReportInvalid, "credits: %s is named twice", name)
		}
	}
	a, ev, err := s.store.PublishAdvisory(c.ctx, req, c.account, s.now())
	if err != nil {
		return mapReportErr(err)
	}
	s.relay.notify()
	s.log.Info("advisory published", "account", c.account, "advisory", a.ID, "target", req.Target, "seq", ev.Seq)
	s.reply(c, http.StatusCreated, s.render(a))
	return nil
}

func (s *Server) listAdvisories(c *call) error {
	target := c.r.URL.Query().Get("target")
	if target == "" {
		return hub.Errorf(hub.CodeBadRequest, "target is required: a module id or %q (every advisory, as it changes: GET /v1/advisories/feed)", hub.Product)
	}
	if err := checkTarget(target); err != nil {
		return err
	}
	if target != hub.Product {
		if _, err := s.store.Module(c.ctx, target); errors.Is(err, ErrNotFound) {
			return hub.Errorf(hub.CodeTargetNotFound, "%s is neither a module on this hub nor %q", target, hub.Product)
		} else if err != nil {
			return err
		}
	}
	as, err := s.store.Advisories(c.ctx, target)
	if err != nil {
		return err
	}
	s.reply(c, http.StatusOK, hub.AdvisoryList{Advisories: s.renderAll(as)})
	return nil
}

func (s *Server) advisory(c *call) error {
	id, err := c.advisoryID()
	if err != nil {
		return err
	}
	a, err := s.store.Advisory(c.ctx, id)
	if err != nil {
		return mapAdvisoryErr(err, id)
	}
	s.reply(c, http.StatusOK, s.render(a))
	return nil
}

func (s *Server) withdrawAdvisory(c *call) error {
	id, err := c.advisoryID()
	if err != nil {
		return err
	}
	var req hub.WithdrawRequest
	if err := c.decode(&req); err != nil {
		return err
	}
	if err := checkField("reason", req.Reason, true, hub.MaxReasonBytes, false); err != nil {
		return err
	}
	a, ev, err := s.store.WithdrawAdvisory(c.ctx, id, c.account, req.Reason, s.now())
	if err != nil {
		return mapAdvisoryErr(err, id)
	}
	if ev != nil {
		s.relay.notify()
		s.log.Info("advisory withdrawn", "account", c.account, "advisory", id, "seq", ev.Seq)
	}
	s.reply(c, http.StatusOK, s.render(a))
	return nil
}

// advisoryFeed answers GET /v1/advisories/feed: the advisories and yanks
// that changed after the cursor, from the event log. An advisory that
// changed more than once in the page comes once, as it is now, where it
// last changed; each yank change comes as it was. A page ends early
// (More) once its records reach maxFeedPageBytes.
func (s *Server) advisoryFeed(c *call) error {
	q := c.r.URL.Query()
	cursor, last, err := s.position(c, q.Get("after"))
	if err != nil {
		return err
	}
	limit, err := intParam(q.Get("limit"), "limit", 100, 1, 500)
	if err != nil {
		return err
	}
	evs, err := s.store.AdvisoryEvents(c.ctx, cursor, last, limit)
	if err != nil {
		return err
	}
	feed := hub.AdvisoryFeed{Advisories: []hub.OSV{}, Yanks: []hub.Yank{}, Cursor: last}
	if len(evs) == limit {
		feed.Cursor, feed.More = evs[len(evs)-1].Seq, true
	}
	lastChange := map[string]int{}
	for i, ev := range evs {
		if ev.Advisory != "" {
			lastChange[ev.Advisory] = i
		}
	}
	size := 0
	for i, ev := range evs {
		var rec any
		switch ev.Kind {
		case hub.EventModuleYanked, hub.EventModuleUnyanked:
			rec = hub.Yank{Module: ev.Module, Version: ev.Version, Yanked: ev.Kind == hub.EventModuleYanked, Reason: ev.Reason, Time: ev.Time}
		default:
			if ev.Advisory == "" || lastChange[ev.Advisory] != i {
				continue
			}
			a, err := s.store.Advisory(c.ctx, ev.Advisory)
			if err != nil {
				return err
			}
			rec = s.render(a)
		}
		data, err := json.Marshal(rec)
		if err != nil {
			return err
		}
		if size += len(data); size > maxFeedPageBytes && i > 0 {
			// The page is full: the next one starts at this event (an
			// advisory left out of this page changed at it or after).
			feed.Cursor, feed.More = evs[i-1].Seq, true
			break
		}
		switch rec := rec.(type) {
		case hub.Yank:
			feed.Yanks = append(feed.Yanks, rec)
		case hub.OSV:
			feed.Advisories = append(feed.Advisories, rec)
		}
	}
	s.reply(c, http.StatusOK, feed)
	return nil
}
