package hubserver_test

import (
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/hubclient"
	"github.com/station-dev/station/internal/hubserver"
	"github.com/station-dev/station/internal/hubserver/hubtest"
)

// testPublicURL is the public URL of the hubs of these tests.
const testPublicURL = "https://hub.example"

// cast is a hub with the accounts of the report tests: dave publishes
// dave/x (1.0.0), erin reports, mallory publishes mallory/y and is a third
// party to dave's reports, root is a hub admin; anon has no token.
type cast struct {
	h                               *hubtest.Hub
	dave, erin, mallory, root, anon *hubclient.Client
	daveKey                         *hubclient.Signer
	tok                             map[string]string
}

func newCast(t *testing.T) *cast {
	t.Helper()
	h := hubtest.StartWith(t, func(o *hubserver.Options) {
		o.PublicURL = testPublicURL + "/"
		o.Limits.RatePerSecond, o.Limits.Burst = 1e6, 1e6 // the refusal tests ask a lot, fast
	})
	c := &cast{h: h, tok: map[string]string{}}
	client := func(name string) *hubclient.Client {
		c.tok[name] = h.Account(t, name)
		return h.Client(t, c.tok[name])
	}
	c.dave, c.erin, c.mallory, c.root = client("dave"), client("erin"), client("mallory"), client("root")
	c.anon = h.Client(t, "")
	if err := h.Store.SetAdmin(ctx, "root", true); err != nil {
		t.Fatal(err)
	}
	for _, p := range []struct {
		c  *hubclient.Client
		id string
	}{{c.dave, "dave/x"}, {c.mallory, "mallory/y"}} {
		s, err := hubclient.GenerateSigner()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.c.AddKey(ctx, s.PublicKey()); err != nil {
			t.Fatal(err)
		}
		publish(t, p.c, s, p.id, "1.0.0")
		if p.id == "dave/x" {
			c.daveKey = s
		}
	}
	return c
}

const cvss = "CVSS:4.0/AV:N/AC:L/AT:N/PR:N/UI:P/VC:H/VI:H/VA:N/SC:N/SI:N/SA:N"

// xss is a report against target.
func xss(target string) hub.FileReportRequest {
	return hub.FileReportRequest{
		Target: target, Introduced: "1.0.0",
		Title:        "Stored XSS in the invoice view",
		Body:         "The `note` field is rendered **unescaped**.\n\n\tSee the reproduction.",
		CWE:          "CWE-79",
		Severity:     hub.Severity{Level: hub.SeverityHigh, CVSS: cvss},
		Reproduction: "curl -d 'note=<script>alert(1)</script>' $HUB/invoices\n",
	}
}

func file(t *testing.T, c *hubclient.Client, req hub.FileReportRequest) hub.Report {
	t.Helper()
	r, err := c.FileReport(ctx, req)
	if err != nil {
		t.Fatalf("file a report against %s: %v", req.Target, err)
	}
	return r
}

func triage(t *testing.T, c *hubclient.Client, id string, req hub.TriageRequest) hub.Report {
	t.Helper()
	r, err := c.Triage(ctx, id, req)
	if err != nil {
		t.Fatalf("triage %s %+v: %v", id, req, err)
	}
	return r
}

func kinds(r hub.Report) []string {
	var out []string
	for _, ev := range r.Thread {
		out = append(out, ev.Kind)
	}
	return out
}

// TestReportLifeCycle files a report, triages and confirms it with an
// award and an advisory, fixes it in a new version and publishes it,
// following the advisory through every answer that serves it, and the
// event stream of a station that is no party to the report.
func TestReportLifeCycle(t *testing.T) {
	c := newCast(t)
	sub := subscribe(t, c.mallory, lastSeq(t, c.h))
	within(t, sub.connected, "connection")
	sch := osvSchema(t)
	// stage validates the record of id as GET /v1/advisories/{id} serves
	// it at this stage of its life.
	stage := func(what, id string) {
		t.Helper()
		a := send(t, c.h, "GET", "/v1/advisories/"+id, "", nil)
		if a.status != 200 {
			t.Fatalf("GET advisory %s = %d %s", id, a.status, a.body)
		}
		validateOSV(t, sch, "the advisory "+what, a.body)
	}

	r := file(t, c.erin, xss("dave/x"))
	if !hub.ValidReportID(r.ID) || r.State != hub.StateNew || r.Reporter != "erin" || r.Reproduction == "" || r.PublishedAt != nil ||
		!slices.Equal(kinds(r), []string{hub.ReportFiled}) || r.Thread[0].Seq != 1 || r.Thread[0].Actor != "erin" {
		t.Fatalf("filed report = %+v", r)
	}
	r = triage(t, c.dave, r.ID, hub.TriageRequest{State: hub.StateTriaged, Comment: "Looking into it."})
	if got, _ := c.erin.Comment(ctx, r.ID, hub.CommentRequest{Body: "Still there in 1.0.0.", VerifiedIn: "1.0.0"}); len(got.Thread) != 3 || got.Thread[2].VerifiedIn != "1.0.0" {
		t.Errorf("comment: thread %+v", got.Thread)
	}
	r = triage(t, c.dave, r.ID, hub.TriageRequest{State: hub.StateConfirmed, Comment: "Confirmed, thank you.",
		Award: &hub.Award{Amount: 5, Reason: "stored XSS"}, Advisory: true})
	if want := []string{"filed", "state", "comment", "state", "credit", "advisory"}; !slices.Equal(kinds(r), want) {
		t.Errorf("thread = %v, want %v", kinds(r), want)
	}
	last := r.Thread[len(r.Thread)-1]
	if r.State != hub.StateConfirmed || r.Credits != 5 || !hub.ValidAdvisoryID(r.Advisory) || last.Advisory != r.Advisory || last.Actor != "dave" ||
		r.Thread[3].Comment != "Confirmed, thank you." || r.Thread[4].Comment != "" || r.Thread[4].Credits != 5 {
		t.Fatalf("confirmed report = %+v", r)
	}
	ev := sub.next(t, hub.EventAdvisoryPublished)
	if ev.Advisory != r.Advisory || ev.Module != "dave/x" || ev.Actor != "dave" {
		t.Errorf("advisory.published = %+v", ev)
	}
	a, err := c.anon.Advisory(ctx, r.Advisory)
	if err != nil {
		t.Fatal(err)
	}
	if a.Summary != r.Title || a.Details != r.Body || strings.Contains(string(mustJSON(t, a)), "<script>") ||
		a.Database.Severity != "HIGH" || !slices.Equal(a.Database.CWEIDs, []string{"CWE-79"}) || a.Database.Hub != testPublicURL ||
		a.Database.Report != "" || len(a.References) != 0 || len(a.Severity) != 1 || a.Severity[0].Score != cvss ||
		len(a.Credits) != 1 || a.Credits[0] != (hub.OSVCredit{Name: "erin", Type: "FINDER"}) {
		t.Errorf("advisory of a private report = %s", mustJSON(t, a))
	}
	if rs := a.Ranges("dave/x"); len(rs) != 1 || rs[0] != (hub.Range{Introduced: "1.0.0"}) || !a.AffectsVersion("dave/x", "1.0.0") {
		t.Errorf("ranges = %+v", rs)
	}
	stage("of a confirmed private report, with a CVSS vector", r.Advisory)

	publish(t, c.dave, c.daveKey, "dave/x", "1.0.1")
	sub.next(t, hub.EventModulePublished)
	r = triage(t, c.dave, r.ID, hub.TriageRequest{State: hub.StateFixed, FixedIn: "1.0.1"})
	if r.State != hub.StateFixed || r.FixedIn != "1.0.1" || !slices.Equal(kinds(r)[6:], []string{"state", "advisory"}) {
		t.Errorf("fixed report = %+v", r)
	}
	sub.next(t, hub.EventAdvisoryUpdated)
	fixed, _ := c.anon.Advisory(ctx, r.Advisory)
	if rs := fixed.Ranges("dave/x"); len(rs) != 1 || rs[0] != (hub.Range{Introduced: "1.0.0", Fixed: "1.0.1"}) || !fixed.Modified.After(a.Modified.Time) ||
		!fixed.Published.Equal(a.Published.Time) || fixed.AffectsVersion("dave/x", "1.0.1") || fixed.FixedIn("dave/x", "1.0.0") != "1.0.1" {
		t.Errorf("advisory after the fix = %s", mustJSON(t, fixed))
	}
	stage("with its fixed event", r.Advisory)
	feed, err := c.anon.AdvisoryFeed(ctx, 0, 0)
	if err != nil || len(feed.Advisories) != 1 || feed.Advisories[0].ID != r.Advisory || feed.Advisories[0].FixedIn("dave/x", "1.0.0") != "1.0.1" ||
		feed.More || feed.Cursor != lastSeq(t, c.h) {
		t.Errorf("feed = %+v, %v", feed, err)
	}

	// The credit is public, but not what it was for until the report is.
	cr, err := c.anon.Credits(ctx, "erin")
	if err != nil || cr.Balance != 5 || len(cr.History) != 1 || cr.History[0] != (hub.CreditEntry{Amount: 5, Time: cr.History[0].Time}) {
		t.Errorf("credits of erin before publishing = %+v, %v", cr, err)
	}
	r = triage(t, c.dave, r.ID, hub.TriageRequest{Publish: true})
	if r.PublishedAt == nil || !slices.Equal(kinds(r)[8:], []string{"published", "advisory"}) {
		t.Errorf("published report = %+v", r)
	}
	sub.next(t, hub.EventAdvisoryUpdated)
	pub, _ := c.anon.Advisory(ctx, r.Advisory)
	if pub.Database.Report != r.ID || len(pub.References) != 1 || pub.References[0] != (hub.OSVRef{Type: "REPORT", URL: testPublicURL + "/v1/reports/" + r.ID}) {
		t.Errorf("advisory of the published report = %s", mustJSON(t, pub))
	}
	stage("of the published report, with its REPORT reference", r.Advisory)
	seen, err := c.mallory.Report(ctx, r.ID)
	if err != nil || seen.Body != r.Body || seen.Reproduction != "" || len(seen.Thread) != len(r.Thread) {
		t.Errorf("a third party reads the published report: %+v, %v (the reproduction stays with the participants)", seen, err)
	}
	if got, _ := c.anon.Report(ctx, r.ID); got.Reproduction != "" || got.Title != r.Title {
		t.Errorf("anonymous read of the published report: %+v", got)
	}
	if got, _ := c.erin.Report(ctx, r.ID); got.Reproduction == "" {
		t.Error("the reporter lost the reproduction once the report was published")
	}

	cr, _ = c.anon.Credits(ctx, "erin")
	if len(cr.History) != 1 || cr.History[0].Report != r.ID || cr.History[0].Target != "dave/x" || cr.History[0].Reason != "stored XSS" || cr.History[0].AwardedBy != "dave" {
		t.Errorf("credits of erin after publishing = %+v", cr)
	}
	fame, err := c.anon.HallOfFame(ctx)
	if err != nil || len(fame.Reporters) != 1 || fame.Reporters[0] != (hub.Reporter{Account: "erin", Credits: 5, Awards: 1}) {
		t.Errorf("hall of fame = %+v, %v", fame, err)
	}
	list, err := c.anon.Reports(ctx, hubclient.ReportListOptions{})
	if err != nil || len(list.Reports) != 1 || list.Reports[0].ID != r.ID || list.Reports[0].Thread != nil || list.Reports[0].Reproduction != "" {
		t.Errorf("anonymous list = %+v, %v", list, err)
	}

	// The fix did not hold: back to confirmed, and the advisory says every
	// version from 1.0.0 is affected again.
	triage(t, c.dave, r.ID, hub.TriageRequest{State: hub.StateConfirmed, Comment: "1.0.1 is still affected."})
	sub.next(t, hub.EventAdvisoryUpdated)
	again, _ := c.anon.Advisory(ctx, r.Advisory)
	if !again.AffectsVersion("dave/x", "1.0.1") || again.FixedIn("dave/x", "1.0.0") != "" {
		t.Errorf("advisory after reopening = %s", mustJSON(t, again))
	}

	// Every record the hub serves is valid OSV: this one, a station
	// advisory with last_affected, a direct one, a withdrawn one.
	station := stationAdvisory(t, c)
	if ev := sub.next(t, hub.EventAdvisoryPublished); ev.Module != hub.Product || ev.Actor != "root" {
		t.Errorf("advisory.published of the station = %+v", ev)
	}
	direct, err := c.dave.PublishAdvisory(ctx, hub.AdvisoryRequest{Target: "dave/x", Summary: "Token in the log", Details: "The API token was logged at debug level.",
		Severity: hub.Severity{Level: hub.SeverityMedium}, Ranges: []hub.Range{{Introduced: "0", LastAffected: "1.0.0"}}, Credits: []string{"erin", "mallory"}})
	if err != nil {
		t.Fatal(err)
	}
	sub.next(t, hub.EventAdvisoryPublished)
	if _, err := c.dave.WithdrawAdvisory(ctx, direct.ID, "not a flaw: debug logging is off in every build"); err != nil {
		t.Fatal(err)
	}
	wev := sub.next(t, hub.EventAdvisoryWithdrawn)
	if wev.Advisory != direct.ID || wev.Reason == "" {
		t.Errorf("advisory.withdrawn = %+v", wev)
	}
	if again, err := c.dave.WithdrawAdvisory(ctx, direct.ID, "again"); err != nil || again.Withdrawn == nil {
		t.Errorf("withdrawing twice = %+v, %v", again, err)
	}
	served := map[string]int{}
	check := func(what string, raw json.RawMessage) {
		t.Helper()
		validateOSV(t, sch, what, raw)
		var a hub.OSV
		json.Unmarshal(raw, &a)
		served[a.ID]++
	}
	for _, id := range []string{r.Advisory, station.ID, direct.ID} {
		a := send(t, c.h, "GET", "/v1/advisories/"+id, "", nil)
		check("GET /v1/advisories/"+id, a.body)
	}
	for _, target := range []string{"dave/x", hub.Product} {
		var list struct{ Advisories []json.RawMessage }
		json.Unmarshal(send(t, c.h, "GET", "/v1/advisories?target="+url.QueryEscape(target), "", nil).body, &list)
		for i, raw := range list.Advisories {
			check("advisory list of "+target+" #"+string(rune('0'+i)), raw)
		}
	}
	var fd struct{ Advisories []json.RawMessage }
	json.Unmarshal(send(t, c.h, "GET", "/v1/advisories/feed?after=0", "", nil).body, &fd)
	for _, raw := range fd.Advisories {
		check("the feed", raw)
	}
	if served[r.Advisory] != 3 || served[station.ID] != 3 || served[direct.ID] != 3 {
		t.Errorf("records validated: %v; want each of the three from GET, the list and the feed", served)
	}
	withdrawn, _ := c.anon.Advisory(ctx, direct.ID)
	if withdrawn.Withdrawn == nil || withdrawn.AffectsVersion("dave/x", "1.0.0") || len(withdrawn.Credits) != 2 || withdrawn.Severity != nil {
		t.Errorf("withdrawn advisory = %s", mustJSON(t, withdrawn))
	}

	// A withdrawn advisory of a report stays withdrawn: the report's
	// changes leave it be, and asking for it again is refused.
	if _, err := c.root.WithdrawAdvisory(ctx, r.Advisory, "superseded"); err != nil {
		t.Fatal(err)
	}
	sub.next(t, hub.EventAdvisoryWithdrawn)
	stage("withdrawn, of a report", r.Advisory)
	before, _ := c.dave.Report(ctx, r.ID)
	if last := before.Thread[len(before.Thread)-1]; last.Kind != hub.ReportAdvisory || last.Reason != "superseded" || last.Actor != "root" {
		t.Errorf("the withdrawal in the thread: %+v", last)
	}
	wantCode(t, "an advisory again after its withdrawal", triageErr(c.dave, r.ID, hub.TriageRequest{State: hub.StateFixed, FixedIn: "1.0.1", Advisory: true}), hub.CodeStateChangeInvalid)
	if after, _ := c.dave.Report(ctx, r.ID); after.State != hub.StateConfirmed || len(after.Thread) != len(before.Thread) {
		t.Errorf("the refused triage changed the report: %+v", after)
	}
	seq := lastSeq(t, c.h)
	triage(t, c.dave, r.ID, hub.TriageRequest{State: hub.StateFixed, FixedIn: "1.0.1"})
	if w, _ := c.anon.Advisory(ctx, r.Advisory); w.Withdrawn == nil || w.FixedIn("dave/x", "1.0.0") != "" || lastSeq(t, c.h) != seq {
		t.Errorf("a fix changed the withdrawn advisory: %s", mustJSON(t, w))
	}
}

// stationAdvisory takes a report against the station to an advisory: an
// admin records the release, confirms, publishes the advisory.
func stationAdvisory(t *testing.T, c *cast) hub.OSV {
	t.Helper()
	if _, err := c.root.RecordRelease(ctx, "0.72.0"); err != nil {
		t.Fatal(err)
	}
	req := xss(hub.Product)
	req.Introduced, req.LastAffected, req.Severity = "0.70.0", "0.72.0", hub.Severity{Level: hub.SeverityCritical}
	r := file(t, c.erin, req)
	r = triage(t, c.root, r.ID, hub.TriageRequest{State: hub.StateConfirmed, Advisory: true})
	a, err := c.anon.Advisory(ctx, r.Advisory)
	if err != nil {
		t.Fatal(err)
	}
	if rs := a.Ranges(hub.Product); len(rs) != 1 || rs[0] != (hub.Range{Introduced: "0.70.0", LastAffected: "0.72.0"}) || a.Database.Severity != "CRITICAL" || a.Severity != nil {
		t.Errorf("station advisory = %s", mustJSON(t, a))
	}
	return a
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestPrivateReportIsInvisible: a private report does not exist for a
// third account, the owner of another module, or no account: not to read,
// list, comment, triage, in the credit history, the event log or the
// feed, and its 404 is the one of an id nobody filed, to the byte.
func TestPrivateReportIsInvisible(t *testing.T) {
	c := newCast(t)
	seq := lastSeq(t, c.h)
	r := file(t, c.erin, xss("dave/x"))
	triage(t, c.dave, r.ID, hub.TriageRequest{State: hub.StateConfirmed, Award: &hub.Award{Amount: 5, Reason: "stored XSS in dave/x"}})
	if got := lastSeq(t, c.h); got != seq {
		t.Errorf("a private report appended %d events to the public log", got-seq)
	}

	nobody := "R-" + strings.Repeat("a", 12)
	if nobody == r.ID {
		nobody = "R-" + strings.Repeat("b", 12)
	}
	for _, who := range []string{"mallory", ""} {
		for _, call := range []struct {
			method, suffix string
			body           any
		}{
			{"GET", "", nil},
			{"POST", "/comments", hub.CommentRequest{Body: "hello?"}},
			{"POST", "/triage", hub.TriageRequest{State: hub.StateWontFix}},
			{"POST", "/triage", hub.TriageRequest{Publish: true}},
		} {
			if who == "" && call.method == "POST" {
				continue // no token: unauthenticated before anything else
			}
			real := send(t, c.h, call.method, "/v1/reports/"+r.ID+call.suffix, c.tok[who], call.body)
			none := send(t, c.h, call.method, "/v1/reports/"+nobody+call.suffix, c.tok[who], call.body)
			if real.status != 404 || real.code() != hub.CodeReportNotFound || string(real.body) != string(none.body) {
				t.Errorf("%q: %s %s = %d %s; for an id nobody filed: %s", who, call.method, call.suffix, real.status, real.body, none.body)
			}
		}
		for _, o := range []hubclient.ReportListOptions{{}, {Target: "dave/x"}, {State: hub.StateConfirmed}} {
			list, err := c.h.Client(t, c.tok[who]).Reports(ctx, o)
			if err != nil || len(list.Reports) != 0 {
				t.Errorf("%q lists %+v (%v)", who, list, err)
			}
		}
	}
	if got, _ := c.dave.Report(ctx, r.ID); got.State != hub.StateConfirmed || len(got.Thread) != 3 || got.Reproduction == "" {
		t.Errorf("the attempts changed the report: %+v", got)
	}
	// The reporter sees it but may not triage it; the owner and the admin
	// see it, reproduction included.
	wantCode(t, "the reporter triaging", triageErr(c.erin, r.ID, hub.TriageRequest{State: hub.StateFixed, FixedIn: "1.0.0"}), hub.CodeNotMaintainer)
	for name, cl := range map[string]*hubclient.Client{"erin": c.erin, "dave": c.dave, "root": c.root} {
		if got, err := cl.Report(ctx, r.ID); err != nil || got.Reproduction == "" {
			t.Errorf("%s reads %+v, %v", name, got, err)
		}
		if list, _ := cl.Reports(ctx, hubclient.ReportListOptions{}); len(list.Reports) != 1 {
			t.Errorf("%s lists %d reports, want 1", name, len(list.Reports))
		}
	}
	if list, _ := c.dave.Reports(ctx, hubclient.ReportListOptions{Mine: true}); len(list.Reports) != 0 {
		t.Errorf("mine=true for dave lists erin's report")
	}
	if a := send(t, c.h, "GET", "/v1/reports?mine=true", "", nil); a.code() != hub.CodeUnauthenticated {
		t.Errorf("mine=true without a token = %s", a.body)
	}

	cr, err := c.mallory.Credits(ctx, "erin")
	if err != nil || cr.Balance != 5 || len(cr.History) != 1 || cr.History[0].Report != "" || cr.History[0].Target != "" ||
		cr.History[0].Reason != "" || cr.History[0].AwardedBy != "" {
		t.Errorf("erin's public credits name the private report: %+v, %v", cr, err)
	}
	raw := send(t, c.h, "GET", "/v1/accounts/erin/credits", "", nil)
	if strings.Contains(string(raw.body), r.ID) || strings.Contains(string(raw.body), "dave") {
		t.Errorf("erin's credits: %s", raw.body)
	}
	feed, err := c.anon.AdvisoryFeed(ctx, 0, 0)
	if err != nil || len(feed.Advisories) != 0 || len(feed.Yanks) != 0 {
		t.Errorf("feed = %+v, %v", feed, err)
	}
	sync, err := c.mallory.Sync(ctx, 0, 0)
	if err != nil || strings.Contains(string(mustJSON(t, sync)), r.ID) || strings.Contains(string(mustJSON(t, sync)), "XSS") {
		t.Errorf("mallory's sync: %+v, %v", sync, err)
	}
}

func triageErr(c *hubclient.Client, id string, req hub.TriageRequest) error {
	_, err := c.Triage(ctx, id, req)
	return err
}

// TestTriageIsTheMaintainers: the owner of another module gets the 404 of a
// private report (and 403 once it is public), the reporter 403; an admin
// triages any report; only admins triage the station's.
func TestTriageIsTheMaintainers(t *testing.T) {
	c := newCast(t)
	r := file(t, c.erin, xss("dave/x"))
	wantCode(t, "mallory triaging dave's private report", triageErr(c.mallory, r.ID, hub.TriageRequest{State: hub.StateTriaged}), hub.CodeReportNotFound)
	wantCode(t, "erin triaging her report", triageErr(c.erin, r.ID, hub.TriageRequest{State: hub.StateTriaged}), hub.CodeNotMaintainer)
	triage(t, c.root, r.ID, hub.TriageRequest{State: hub.StateTriaged, Publish: true})
	wantCode(t, "mallory triaging dave's public report", triageErr(c.mallory, r.ID, hub.TriageRequest{State: hub.StateConfirmed}), hub.CodeNotMaintainer)
	_, err := c.mallory.Comment(ctx, r.ID, hub.CommentRequest{Body: "me too"})
	wantCode(t, "mallory commenting on dave's public report", err, hub.CodeNotMaintainer)

	s := file(t, c.dave, xss(hub.Product))
	wantCode(t, "dave triaging a station report he filed", triageErr(c.dave, s.ID, hub.TriageRequest{State: hub.StateTriaged}), hub.CodeNotMaintainer)
	s2 := file(t, c.erin, xss(hub.Product))
	wantCode(t, "dave triaging erin's station report", triageErr(c.dave, s2.ID, hub.TriageRequest{State: hub.StateTriaged}), hub.CodeReportNotFound)
	triage(t, c.root, s2.ID, hub.TriageRequest{State: hub.StateTriaged})
	if got, _ := c.dave.Report(ctx, r.ID); got.State != hub.StateTriaged || len(got.Thread) != 3 {
		t.Errorf("report after the refusals = %+v", got)
	}
}

// snapshot is everything a refused request must leave as it was: the
// report with its thread (as its maintainer sees it), the event log, the
// credits.
func snapshot(t *testing.T, c *cast, id string) string {
	t.Helper()
	r, err := c.root.Report(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	cr, err := c.root.Credits(ctx, r.Reporter)
	if err != nil {
		t.Fatal(err)
	}
	list, err := c.root.Reports(ctx, hubclient.ReportListOptions{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	return string(mustJSON(t, []any{r, cr, len(list.Reports), lastSeq(t, c.h)}))
}

// TestReportRefusalsChangeNothing: every refused request is refused with
// its code, and leaves the report, its thread, the credits and the event
// log as they were.
func TestReportRefusalsChangeNothing(t *testing.T) {
	c := newCast(t)
	r := file(t, c.erin, xss("dave/x"))
	own := file(t, c.dave, xss("dave/x"))
	other := file(t, c.erin, xss("mallory/y"))
	station := file(t, c.erin, xss(hub.Product))
	publish(t, c.dave, c.daveKey, "dave/x", "1.1.0")
	if _, err := c.dave.Yank(ctx, "dave/x", "1.1.0", "broken build"); err != nil {
		t.Fatal(err)
	}
	big := func(n int) string { return strings.Repeat("a", n) }
	fileWith := func(edit func(*hub.FileReportRequest)) hub.FileReportRequest {
		req := xss("dave/x")
		edit(&req)
		return req
	}

	for _, tc := range []struct {
		name string
		do   func() error
		code hub.Code
	}{
		{"unknown target", func() error { _, err := c.erin.FileReport(ctx, xss("dave/nope")); return err }, hub.CodeTargetNotFound},
		{"malformed target", func() error { _, err := c.erin.FileReport(ctx, xss("Dave")); return err }, hub.CodeTargetNotFound},
		{"empty title", fileErr(c, fileWith(func(r *hub.FileReportRequest) { r.Title = "" })), hub.CodeReportInvalid},
		{"oversized title", fileErr(c, fileWith(func(r *hub.FileReportRequest) { r.Title = big(hub.MaxTitleBytes + 1) })), hub.CodeReportInvalid},
		{"oversized body", fileErr(c, fileWith(func(r *hub.FileReportRequest) { r.Body = big(hub.MaxReportBodyBytes + 1) })), hub.CodeReportInvalid},
		{"oversized reproduction", fileErr(c, fileWith(func(r *hub.FileReportRequest) { r.Reproduction = big(hub.MaxReproductionBytes + 1) })), hub.CodeReportInvalid},
		{"newline in title", fileErr(c, fileWith(func(r *hub.FileReportRequest) { r.Title = "a\nb" })), hub.CodeReportInvalid},
		{"escape in title", fileErr(c, fileWith(func(r *hub.FileReportRequest) { r.Title = "a\x1b[31mb" })), hub.CodeReportInvalid},
		{"bidi override in body", fileErr(c, fileWith(func(r *hub.FileReportRequest) { r.Body = "a\u202eb" })), hub.CodeReportInvalid},
		{"bad CWE", fileErr(c, fileWith(func(r *hub.FileReportRequest) { r.CWE = "CWE-079" })), hub.CodeReportInvalid},
		{"no severity", fileErr(c, fileWith(func(r *hub.FileReportRequest) { r.Severity = hub.Severity{} })), hub.CodeReportInvalid},
		{"bad severity", fileErr(c, fileWith(func(r *hub.FileReportRequest) { r.Severity.Level = "urgent" })), hub.CodeReportInvalid},
		{"bad CVSS vector", fileErr(c, fileWith(func(r *hub.FileReportRequest) { r.Severity.CVSS = "CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:H/A:H" })), hub.CodeReportInvalid},
		{"bad version", fileErr(c, fileWith(func(r *hub.FileReportRequest) { r.Introduced = "v1" })), hub.CodeReportInvalid},
		{"introduced above last_affected", fileErr(c, fileWith(func(r *hub.FileReportRequest) { r.LastAffected = "0.9.0" })), hub.CodeReportInvalid},

		{"new to fixed", triageFn(c.dave, r.ID, hub.TriageRequest{State: hub.StateFixed, FixedIn: "1.0.0"}), hub.CodeStateChangeInvalid},
		{"new to new", triageFn(c.dave, r.ID, hub.TriageRequest{State: hub.StateNew}), hub.CodeStateChangeInvalid},
		{"unknown state", triageFn(c.dave, r.ID, hub.TriageRequest{State: "closed"}), hub.CodeReportInvalid},
		{"credits on a new report", triageFn(c.dave, r.ID, hub.TriageRequest{Award: &hub.Award{Amount: 5, Reason: "x"}}), hub.CodeAwardRefused},
		{"credits with a change to triaged", triageFn(c.dave, r.ID, hub.TriageRequest{State: hub.StateTriaged, Award: &hub.Award{Amount: 5, Reason: "x"}}), hub.CodeAwardRefused},
		{"credits to oneself", triageFn(c.dave, own.ID, hub.TriageRequest{State: hub.StateConfirmed, Award: &hub.Award{Amount: 5, Reason: "x"}}), hub.CodeAwardRefused},
		{"zero credits", triageFn(c.dave, r.ID, hub.TriageRequest{State: hub.StateConfirmed, Award: &hub.Award{Amount: 0, Reason: "x"}}), hub.CodeReportInvalid},
		{"too many credits", triageFn(c.dave, r.ID, hub.TriageRequest{State: hub.StateConfirmed, Award: &hub.Award{Amount: hub.MaxCreditAward + 1, Reason: "x"}}), hub.CodeReportInvalid},
		{"credits without a reason", triageFn(c.dave, r.ID, hub.TriageRequest{State: hub.StateConfirmed, Award: &hub.Award{Amount: 5}}), hub.CodeReportInvalid},
		{"advisory on a new report", triageFn(c.dave, r.ID, hub.TriageRequest{State: hub.StateTriaged, Advisory: true}), hub.CodeStateChangeInvalid},
		{"duplicate of itself", triageFn(c.dave, r.ID, hub.TriageRequest{State: hub.StateDuplicate, DuplicateOf: r.ID}), hub.CodeReportInvalid},
		{"duplicate of another target's report", triageFn(c.dave, r.ID, hub.TriageRequest{State: hub.StateDuplicate, DuplicateOf: other.ID}), hub.CodeReportInvalid},
		{"duplicate of nothing", triageFn(c.dave, r.ID, hub.TriageRequest{State: hub.StateDuplicate, DuplicateOf: "R-" + big(12)}), hub.CodeReportInvalid},
		{"duplicate without duplicate_of", triageFn(c.dave, r.ID, hub.TriageRequest{State: hub.StateDuplicate}), hub.CodeReportInvalid},
		{"fixed_in without fixed", triageFn(c.dave, r.ID, hub.TriageRequest{State: hub.StateTriaged, FixedIn: "1.0.0"}), hub.CodeReportInvalid},
		{"bad severity change", triageFn(c.dave, r.ID, hub.TriageRequest{Severity: &hub.Severity{Level: "high", CVSS: "CVSS:4.0/AV:N"}}), hub.CodeReportInvalid},
		{"oversized comment", triageFn(c.dave, r.ID, hub.TriageRequest{State: hub.StateTriaged, Comment: big(hub.MaxCommentBytes + 1)}), hub.CodeReportInvalid},
		{"nothing asked", triageFn(c.dave, r.ID, hub.TriageRequest{Comment: "hm"}), hub.CodeBadRequest},
		{"comment verified in a version that does not exist", func() error {
			_, err := c.erin.Comment(ctx, r.ID, hub.CommentRequest{Body: "still there", VerifiedIn: "9.9.9"})
			return err
		}, hub.CodeVersionNotFound},
		{"empty comment", func() error { _, err := c.erin.Comment(ctx, r.ID, hub.CommentRequest{}); return err }, hub.CodeReportInvalid},
		{"oversized comment body", func() error {
			_, err := c.erin.Comment(ctx, r.ID, hub.CommentRequest{Body: big(hub.MaxCommentBytes + 1)})
			return err
		}, hub.CodeReportInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := snapshot(t, c, r.ID)
			wantCode(t, tc.name, tc.do(), tc.code)
			if after := snapshot(t, c, r.ID); after != before {
				t.Errorf("the refusal changed something:\nbefore %s\nafter  %s", before, after)
			}
		})
	}

	// Refusals by what the fix names, on a confirmed report; and a request
	// whose state change is allowed but whose award is not changes nothing
	// either.
	triage(t, c.dave, r.ID, hub.TriageRequest{State: hub.StateConfirmed})
	triage(t, c.root, station.ID, hub.TriageRequest{State: hub.StateConfirmed})
	for _, tc := range []struct {
		name string
		do   func() error
		code hub.Code
	}{
		{"fixed in a version that does not exist", triageFn(c.dave, r.ID, hub.TriageRequest{State: hub.StateFixed, FixedIn: "1.0.9"}), hub.CodeFixedVersionNotFound},
		{"fixed in a yanked version", triageFn(c.dave, r.ID, hub.TriageRequest{State: hub.StateFixed, FixedIn: "1.1.0"}), hub.CodeFixedVersionNotFound},
		{"fixed in the first affected version", triageFn(c.dave, r.ID, hub.TriageRequest{State: hub.StateFixed, FixedIn: "1.0.0"}), hub.CodeReportInvalid},
		{"fixed, with credits to oneself", triageFn(c.dave, own.ID, hub.TriageRequest{State: hub.StateConfirmed, Advisory: true, Award: &hub.Award{Amount: 1, Reason: "x"}}), hub.CodeAwardRefused},
		{"station fixed in an unrecorded release", triageFn(c.root, station.ID, hub.TriageRequest{State: hub.StateFixed, FixedIn: "1.0.1"}), hub.CodeFixedVersionNotFound},
		{"state change out of order", triageFn(c.dave, r.ID, hub.TriageRequest{State: hub.StateTriaged}), hub.CodeStateChangeInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := snapshot(t, c, r.ID) + snapshot(t, c, station.ID) + snapshot(t, c, own.ID)
			err := tc.do()
			wantCode(t, tc.name, err, tc.code)
			if after := snapshot(t, c, r.ID) + snapshot(t, c, station.ID) + snapshot(t, c, own.ID); after != before {
				t.Errorf("the refusal changed something:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
	err := triageErr(c.dave, r.ID, hub.TriageRequest{State: hub.StateTriaged})
	if msg := err.Error(); !strings.Contains(msg, "is confirmed") || !strings.Contains(msg, "fixed, duplicate, wontfix") {
		t.Errorf("a refused state change does not name the state and the allowed ones: %v", err)
	}

	// Malformed ids in the path are refused before anything is looked up.
	for _, p := range []string{"/v1/reports/R-1", "/v1/reports/r-aaaaaaaaaaaa", "/v1/reports/R-AAAAAAAAAAAA/comments", "/v1/reports/R-aaaaaaaaaaa1/triage"} {
		method := "GET"
		if strings.Count(p, "/") > 3 {
			method = "POST"
		}
		before := lastSeq(t, c.h)
		if a := send(t, c.h, method, p, c.tok["dave"], hub.TriageRequest{State: hub.StateTriaged}); a.status != 400 || a.code() != hub.CodeInvalidName {
			t.Errorf("%s %s = %d %s", method, p, a.status, a.body)
		}
		if lastSeq(t, c.h) != before {
			t.Errorf("%s appended events", p)
		}
	}
}

func fileErr(c *cast, req hub.FileReportRequest) func() error {
	return func() error { _, err := c.erin.FileReport(ctx, req); return err }
}

func triageFn(cl *hubclient.Client, id string, req hub.TriageRequest) func() error {
	return func() error { return triageErr(cl, id, req) }
}

// TestStationReleases: only admins record releases, each once (by
// precedence); anyone lists them, highest first; a station report is fixed
// only in a recorded one.
func TestStationReleases(t *testing.T) {
	c := newCast(t)
	_, err := c.dave.RecordRelease(ctx, "0.72.0")
	wantCode(t, "a release recorded by a non-admin", err, hub.CodeNotAdmin)
	for _, v := range []string{"0.9.0", "0.72.0", "0.10.0"} {
		if rel, err := c.root.RecordRelease(ctx, v); err != nil || rel.RecordedBy != "root" {
			t.Fatalf("record %s: %+v, %v", v, rel, err)
		}
	}
	for _, v := range []string{"0.72.0", "0.72.0+build.7"} {
		_, err := c.root.RecordRelease(ctx, v)
		wantCode(t, "recording "+v+" again", err, hub.CodeReleaseExists)
	}
	if a := send(t, c.h, "POST", "/v1/station/releases", c.tok["root"], hub.ReleaseRequest{Version: "v1"}); a.code() != hub.CodeInvalidName {
		t.Errorf("a malformed release = %s", a.body)
	}
	rs, err := c.anon.Releases(ctx)
	var got []string
	for _, r := range rs {
		got = append(got, r.Version)
	}
	if err != nil || !slices.Equal(got, []string{"0.72.0", "0.10.0", "0.9.0"}) {
		t.Errorf("releases = %v, %v", got, err)
	}

	req := xss(hub.Product)
	req.Introduced = "0.9.0"
	r := file(t, c.erin, req)
	triage(t, c.root, r.ID, hub.TriageRequest{State: hub.StateConfirmed, Advisory: true, Award: &hub.Award{Amount: 3, Reason: "sandbox escape"}})
	if _, err := c.erin.Comment(ctx, r.ID, hub.CommentRequest{Body: "Also in 0.10.0.", VerifiedIn: "0.10.0"}); err != nil {
		t.Errorf("a comment verified in a recorded release: %v", err)
	}
	_, err = c.erin.Comment(ctx, r.ID, hub.CommentRequest{Body: "And 0.11.0.", VerifiedIn: "0.11.0"})
	wantCode(t, "a comment verified in an unrecorded release", err, hub.CodeVersionNotFound)
	r = triage(t, c.root, r.ID, hub.TriageRequest{State: hub.StateFixed, FixedIn: "0.72.0"})
	a, _ := c.anon.Advisory(ctx, r.Advisory)
	if a.FixedIn(hub.Product, "0.9.0") != "0.72.0" {
		t.Errorf("station advisory = %s", mustJSON(t, a))
	}
	if who, err := c.root.WhoAmI(ctx); err != nil || !who.Admin {
		t.Errorf("whoami of an admin = %+v, %v", who, err)
	}
	if who, _ := c.dave.WhoAmI(ctx); who.Admin {
		t.Error("dave is an admin")
	}
}

// TestAdvisoriesWrittenDirectly: the target's owner (or an admin) writes,
// lists and withdraws advisories; anyone else is refused, and so are
// advisories that name versions the hub does not have.
func TestAdvisoriesWrittenDirectly(t *testing.T) {
	c := newCast(t)
	good := hub.AdvisoryRequest{Target: "dave/x", Summary: "Path traversal", Details: "`../` in the name escapes the data directory.",
		CWE: "CWE-22", Severity: hub.Severity{Level: hub.SeverityLow}, Ranges: []hub.Range{{Introduced: "0", Fixed: "1.0.0"}}}
	edit := func(f func(*hub.AdvisoryRequest)) hub.AdvisoryRequest {
		r := good
		r.Ranges = slices.Clone(good.Ranges)
		f(&r)
		return r
	}
	for _, tc := range []struct {
		name string
		c    *hubclient.Client
		req  hub.AdvisoryRequest
		code hub.Code
	}{
		{"another account", c.mallory, good, hub.CodeNotMaintainer},
		{"unknown target", c.dave, edit(func(r *hub.AdvisoryRequest) { r.Target = "dave/nope" }), hub.CodeTargetNotFound},
		{"the station, by a non-admin", c.dave, edit(func(r *hub.AdvisoryRequest) { r.Target = hub.Product; r.Ranges = []hub.Range{{Introduced: "0"}} }), hub.CodeNotMaintainer},
		{"fixed in a version that does not exist", c.dave, edit(func(r *hub.AdvisoryRequest) { r.Ranges[0].Fixed = "2.0.0" }), hub.CodeFixedVersionNotFound},
		{"no ranges", c.dave, edit(func(r *hub.AdvisoryRequest) { r.Ranges = nil }), hub.CodeReportInvalid},
		{"no introduced", c.dave, edit(func(r *hub.AdvisoryRequest) { r.Ranges[0].Introduced = "" }), hub.CodeReportInvalid},
		{"fixed and last_affected", c.dave, edit(func(r *hub.AdvisoryRequest) { r.Ranges[0].LastAffected = "1.0.0" }), hub.CodeReportInvalid},
		{"fixed below introduced", c.dave, edit(func(r *hub.AdvisoryRequest) { r.Ranges[0].Introduced = "1.0.0" }), hub.CodeReportInvalid},
		{"no summary", c.dave, edit(func(r *hub.AdvisoryRequest) { r.Summary = "" }), hub.CodeReportInvalid},
		{"credit to nobody", c.dave, edit(func(r *hub.AdvisoryRequest) { r.Credits = []string{"nobody"} }), hub.CodeAccountNotFound},
		{"credit twice", c.dave, edit(func(r *hub.AdvisoryRequest) { r.Credits = []string{"erin", "erin"} }), hub.CodeReportInvalid},
	} {
		before := lastSeq(t, c.h)
		_, err := tc.c.PublishAdvisory(ctx, tc.req)
		wantCode(t, tc.name, err, tc.code)
		if lastSeq(t, c.h) != before {
			t.Errorf("%s: the refusal appended events", tc.name)
		}
	}
	if as, err := c.anon.Advisories(ctx, "dave/x"); err != nil || len(as) != 0 {
		t.Errorf("advisories after the refusals = %+v, %v", as, err)
	}
	a, err := c.dave.PublishAdvisory(ctx, good)
	if err != nil || !strings.HasPrefix(a.ID, hub.AdvisoryPrefix+"-") || !strings.HasSuffix(a.ID, "-0001") || a.Database.Hub != testPublicURL || a.References != nil {
		t.Fatalf("advisory = %+v, %v", a, err)
	}
	b, err := c.root.PublishAdvisory(ctx, edit(func(r *hub.AdvisoryRequest) { r.Ranges = []hub.Range{{Introduced: "1.0.0"}} }))
	if err != nil || !strings.HasSuffix(b.ID, "-0002") {
		t.Fatalf("an admin's advisory = %+v, %v", b, err)
	}
	_, err = c.mallory.WithdrawAdvisory(ctx, a.ID, "mine now")
	wantCode(t, "another account withdrawing", err, hub.CodeNotMaintainer)
	_, err = c.dave.WithdrawAdvisory(ctx, "STATION-2026-9999", "gone")
	wantCode(t, "withdrawing an advisory that does not exist", err, hub.CodeAdvisoryNotFound)
	if a := send(t, c.h, "GET", "/v1/advisories/GHSA-1", "", nil); a.code() != hub.CodeInvalidName {
		t.Errorf("a malformed advisory id = %s", a.body)
	}
	if a := send(t, c.h, "POST", "/v1/advisories/"+b.ID+"/withdraw", c.tok["dave"], hub.WithdrawRequest{}); a.code() != hub.CodeReportInvalid {
		t.Errorf("a withdrawal without a reason = %s", a.body)
	}
	if as, _ := c.anon.Advisories(ctx, "dave/x"); len(as) != 2 || as[0].ID != a.ID || as[1].Withdrawn != nil {
		t.Errorf("advisories = %+v", as)
	}
	if a := send(t, c.h, "GET", "/v1/advisories?target=dave/nope", "", nil); a.code() != hub.CodeTargetNotFound {
		t.Errorf("advisories of a module that does not exist = %s", a.body)
	}
	if a := send(t, c.h, "GET", "/v1/advisories", "", nil); a.code() != hub.CodeBadRequest {
		t.Errorf("advisories without a target = %s", a.body)
	}
}

// TestAdvisoryFeed: the feed pages through the advisory and yank events
// from a cursor; an advisory that changed twice comes once, as it is now.
func TestAdvisoryFeed(t *testing.T) {
	c := newCast(t)
	start := lastSeq(t, c.h)
	publish(t, c.dave, c.daveKey, "dave/x", "1.0.1")
	r := file(t, c.erin, xss("dave/x"))
	triage(t, c.dave, r.ID, hub.TriageRequest{State: hub.StateConfirmed, Advisory: true})
	triage(t, c.dave, r.ID, hub.TriageRequest{State: hub.StateFixed, FixedIn: "1.0.1"})
	if _, err := c.dave.Yank(ctx, "dave/x", "1.0.0", "affected by "+r.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := c.dave.Unyank(ctx, "dave/x", "1.0.0"); err != nil {
		t.Fatal(err)
	}
	feed, err := c.anon.AdvisoryFeed(ctx, start, 0)
	if err != nil || len(feed.Advisories) != 1 || feed.Advisories[0].FixedIn("dave/x", "1.0.0") != "1.0.1" || len(feed.Yanks) != 2 ||
		!feed.Yanks[0].Yanked || feed.Yanks[0].Reason == "" || feed.Yanks[1].Yanked || feed.Yanks[1].Module != "dave/x" || feed.More {
		t.Fatalf("feed = %+v, %v", feed, err)
	}
	var pages []hub.AdvisoryFeed
	for cursor := start; ; {
		p, err := c.anon.AdvisoryFeed(ctx, cursor, 1)
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, p)
		if !p.More {
			break
		}
		cursor = p.Cursor
	}
	if len(pages) != 5 || len(pages[0].Advisories) != 1 || len(pages[2].Yanks) != 1 || len(pages[4].Advisories)+len(pages[4].Yanks) != 0 || pages[4].Cursor != lastSeq(t, c.h) {
		t.Errorf("pages of one event: %+v", pages)
	}
	if a := send(t, c.h, "GET", "/v1/advisories/feed?after=999999", "", nil); a.code() != hub.CodeCursorAhead {
		t.Errorf("a cursor past the log = %s", a.body)
	}
	if a := send(t, c.h, "GET", "/v1/advisories/feed?after=0&limit=0", "", nil); a.code() != hub.CodeBadRequest {
		t.Errorf("limit 0 = %s", a.body)
	}
}

// TestHallOfFame orders reporters by credits, then name, and leaves out
// the accounts that have none.
func TestHallOfFame(t *testing.T) {
	c := newCast(t)
	award := func(reporter *hubclient.Client, n int64) {
		r := file(t, reporter, xss("dave/x"))
		triage(t, c.dave, r.ID, hub.TriageRequest{State: hub.StateConfirmed, Award: &hub.Award{Amount: n, Reason: "thanks"}})
	}
	award(c.erin, 3)
	award(c.mallory, 5)
	award(c.root, 2)
	award(c.root, 3)
	fame, err := c.anon.HallOfFame(ctx)
	want := []hub.Reporter{{Account: "mallory", Credits: 5, Awards: 1}, {Account: "root", Credits: 5, Awards: 2}, {Account: "erin", Credits: 3, Awards: 1}}
	if err != nil || !slices.Equal(fame.Reporters, want) {
		t.Errorf("hall of fame = %+v, %v; want %+v", fame, err, want)
	}
	_, err = c.anon.Credits(ctx, "nobody")
	wantCode(t, "credits of nobody", err, hub.CodeAccountNotFound)
}
