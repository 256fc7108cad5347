package report

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/cli/clitest"
	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/hubclient"
	"github.com/station-dev/station/internal/hubsync"
	"github.com/station-dev/station/internal/wasmbuild"
)

// request is a request the canned hub got.
type request struct {
	Method, Path, Query string
	Body                map[string]any
}

// cannedHub is a hub on 127.0.0.1 that answers each "METHOD /path" (under
// /v1) with a canned value, or a hub error, and records every request.
type cannedHub struct {
	mu       sync.Mutex
	answers  map[string]any
	requests []request
	sessions int // how many times a command opened the login
	url      string
}

func newHub(t *testing.T, answers map[string]any) *cannedHub {
	h := &cannedHub{answers: answers}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rq := request{Method: r.Method, Path: strings.TrimPrefix(r.URL.Path, hub.PathPrefix), Query: r.URL.RawQuery}
		if len(b) > 0 {
			if err := json.Unmarshal(b, &rq.Body); err != nil {
				t.Errorf("%s %s: the body is not a JSON object: %v", r.Method, r.URL.Path, err)
			}
		}
		h.mu.Lock()
		h.requests = append(h.requests, rq)
		a, ok := h.answers[rq.Method+" "+rq.Path]
		h.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		var he *hub.Error
		switch {
		case !ok:
			he = hub.Errorf(hub.CodeNoEndpoint, "no %s %s", r.Method, r.URL.Path)
		case errors.As(asError(a), &he):
		default:
			json.NewEncoder(w).Encode(a)
			return
		}
		w.WriteHeader(he.Code.HTTPStatus())
		json.NewEncoder(w).Encode(hub.ErrorResponse{Error: he})
	}))
	t.Cleanup(srv.Close)
	h.url = srv.URL
	return h
}

func asError(a any) error {
	err, _ := a.(error)
	return err
}

// login is the session of bob, logged in to h.
func (h *cannedHub) login(t *testing.T) func(context.Context) (*Login, error) {
	c, err := hubclient.New(h.url, &http.Client{Timeout: 10 * time.Second}, hubclient.Options{Token: "sth_test"})
	if err != nil {
		t.Fatal(err)
	}
	return func(context.Context) (*Login, error) {
		h.mu.Lock()
		h.sessions++
		h.mu.Unlock()
		return &Login{Hub: c, URL: h.url, Account: "bob"}, nil
	}
}

func (h *cannedHub) got() []request {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]request(nil), h.requests...)
}

// run runs `station report ARGS` against h with stdin, and returns what it
// printed.
func (h *cannedHub) run(t *testing.T, stdin string, args ...string) (string, string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	f := cmdutil.New(cmdutil.IOStreams{In: strings.NewReader(stdin), Out: &out, Err: &errb})
	s := h.login(t)
	ctx := context.Background()
	c := &cobra.Command{Use: "report"}
	c.AddCommand(
		NewCmdFile(f, func(o *FileOptions) error { o.Session = s; return fileRun(ctx, o) }),
		NewCmdList(f, func(o *ListOptions) error { o.Session = s; return listRun(ctx, o) }),
		NewCmdShow(f, func(o *ShowOptions) error { o.Session = s; return showRun(ctx, o) }),
		NewCmdComment(f, func(o *CommentOptions) error { o.Session = s; return commentRun(ctx, o) }),
		NewCmdTriage(f, func(o *TriageOptions) error { o.Session = s; return triageRun(ctx, o) }),
		NewCmdCredits(f, func(o *CreditsOptions) error { o.Session = s; return creditsRun(ctx, o) }),
		NewCmdFame(f, func(o *FameOptions) error { o.Session = s; return fameRun(ctx, o) }),
	)
	err := clitest.Parse(c, args...)
	return out.String(), errb.String(), err
}

var (
	filed   = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	updated = filed.Add(26 * time.Hour)
)

// sample is a report of alice/hello by bob, confirmed and credited, with a
// thread of every kind of entry.
func sample() hub.Report {
	at := func(h int) time.Time { return filed.Add(time.Duration(h) * time.Hour) }
	return hub.Report{ID: id, Target: "alice/hello", Introduced: "1.2.0", LastAffected: "1.3.0", Title: "greet logs the token",
		Body: "## What\r\nThe token is logged.\r\n", CWE: "CWE-532", Severity: hub.Severity{Level: "high", CVSS: cvss},
		Reproduction: "station run alice/hello greet\n", State: hub.StateConfirmed, Reporter: "bob", Credits: 5,
		Advisory: "STATION-2026-0001", CreatedAt: filed, UpdatedAt: updated,
		Thread: []hub.ReportEvent{
			{Seq: 1, Kind: hub.ReportFiled, Actor: "bob", Time: at(0)},
			{Seq: 2, Kind: hub.ReportState, Actor: "alice", Time: at(1), From: "new", To: "confirmed", Comment: "Reproduced on 1.2.0."},
			{Seq: 3, Kind: hub.ReportCredit, Actor: "alice", Time: at(1), Credits: 5, Reason: "clear reproduction"},
			{Seq: 4, Kind: hub.ReportComment, Actor: "bob", Time: at(25), VerifiedIn: "1.3.0", Comment: "Still there.\nSame log line."},
			{Seq: 5, Kind: hub.ReportComment, Actor: "alice", Time: at(26), Comment: "Thanks."},
			{Seq: 6, Kind: hub.ReportAdvisory, Actor: "alice", Time: at(26), Advisory: "STATION-2026-0001"},
			{Seq: 7, Kind: hub.ReportSeverity, Actor: "alice", Time: at(26), Severity: &hub.Severity{Level: "critical"}},
			{Seq: 8, Kind: "reopened-by-robot", Actor: "hub", Time: at(26)},
		}}
}

// TestFile: the flags and files become the request; stdout is the id, and
// stderr says who reads the report and what happens next.
func TestFile(t *testing.T) {
	dir := t.TempDir()
	repro := filepath.Join(dir, "repro.sh")
	os.WriteFile(repro, []byte("station run alice/hello greet\n"), 0o600)
	answer := hub.Report{ID: id, Target: "alice/hello", Introduced: "1.2.0", LastAffected: "1.3.0", Title: "t", Severity: hub.Severity{Level: "high"}, State: "new", Reporter: "bob"}
	h := newHub(t, map[string]any{"POST /reports": answer})
	out, errb, err := h.run(t, "## What\nThe token is logged.\n", "file", "--target", "alice/hello", "--versions", "1.2.0..1.3.0", "--title", "t",
		"--severity", "high", "--cvss", cvss, "--cwe", "CWE-532", "--body-file", "-", "--reproduction-file", repro)
	if err != nil {
		t.Fatal(err)
	}
	reqs := h.got()
	want := map[string]any{"target": "alice/hello", "introduced": "1.2.0", "last_affected": "1.3.0", "title": "t", "cwe": "CWE-532",
		"body": "## What\nThe token is logged.\n", "reproduction": "station run alice/hello greet\n",
		"severity": map[string]any{"level": "high", "cvss": cvss}}
	if len(reqs) != 1 || reqs[0].Method != "POST" || reqs[0].Path != "/reports" || !equalJSON(reqs[0].Body, want) {
		t.Errorf("requests %+v, want one POST /reports with %v", reqs, want)
	}
	if out != id+"\n" {
		t.Errorf("stdout %q, want the id alone", out)
	}
	for _, s := range []string{"filed report " + id + " against alice/hello (high, 1.2.0 to 1.3.0)",
		"private to you, the owner of alice/hello (alice) and the hub's admins until it is published", "station report show " + id} {
		if !strings.Contains(errb, s) {
			t.Errorf("stderr does not say %q:\n%s", s, errb)
		}
	}

	// Against the station, with --json: the report as the hub answered.
	answer.Target = hub.Product
	h = newHub(t, map[string]any{"POST /reports": answer})
	out, errb, err = h.run(t, "", "file", "--target", "station", "--title", "t", "--severity", "low", "--body", "b", "--json")
	var got map[string]any
	if err != nil || json.Unmarshal([]byte(out), &got) != nil || got["id"] != id || got["last_affected"] != "1.3.0" || errb != "" {
		t.Errorf("file --json: %v\n%s\n%s", err, out, errb)
	}
	h.run(t, "", "file", "--target", "station", "--title", "t", "--severity", "low", "--body", "b")
	if r := h.got(); len(r) != 2 || r[1].Body["target"] != "station" || r[1].Body["introduced"] != nil {
		t.Errorf("file --target station sent %+v", r)
	}
}

// TestFileRefusedBeforeAnyRequest: a body or a reproduction too large for
// the hub, a missing file, a file that is not text, are errors before the
// login is even opened.
func TestFileRefusedBeforeAnyRequest(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	big := write("big.md", bytes.Repeat([]byte("a"), hub.MaxReportBodyBytes+1))
	exact := write("exact.md", bytes.Repeat([]byte("a"), hub.MaxReportBodyBytes))
	bigRepro := write("big.log", bytes.Repeat([]byte("a"), hub.MaxReproductionBytes+1))
	binary := write("core", []byte{0x7f, 'E', 'L', 'F', 0xff, 0xfe})
	empty := write("empty.md", []byte("\n\n"))
	escape := write("escape.md", []byte("fine\nfine\n\x1b]0;title\x07\n"))
	base := []string{"file", "--target", "alice/hello", "--title", "t", "--severity", "high"}
	for _, tc := range []struct {
		stdin string
		args  []string
		want  string
	}{
		{"", []string{"--body-file", big}, "--body-file: " + big + " is larger than 64KiB, the most a report's body may be"},
		{strings.Repeat("a", hub.MaxReportBodyBytes+1), []string{"--body-file", "-"}, "--body-file: standard input is larger than 64KiB"},
		{"", []string{"--body", strings.Repeat("a", hub.MaxReportBodyBytes+1)}, "--body is larger than 64KiB"},
		{"", []string{"--body", "b", "--reproduction-file", bigRepro}, "is larger than 256KiB, the most a report's reproduction may be"},
		{"", []string{"--body-file", filepath.Join(dir, "missing.md")}, "no such file or directory"},
		{"", []string{"--body", "b", "--reproduction-file", filepath.Join(dir, "missing.sh")}, "--reproduction-file: open"},
		{"", []string{"--body-file", binary}, "is not UTF-8 text"},
		{"", []string{"--body-file", empty}, "is empty"},
		{"", []string{"--body-file", escape}, "line 3 holds U+001B, a control or formatting character the hub refuses"},
		{"", []string{"--body", "a\u202eb"}, "--body: line 1 holds U+202E"},
		{"a\rb", []string{"--body", "b", "--reproduction-file", "-"}, "holds U+000D"},
		{"", []string{"--body-file", dir}, "is a directory"},
	} {
		h := newHub(t, map[string]any{"POST /reports": sample()})
		_, _, err := h.run(t, tc.stdin, append(append([]string{}, base...), tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("file %.60q: %v, want %q", tc.args, err, tc.want)
		}
		if len(h.got()) != 0 || h.sessions != 0 {
			t.Errorf("file %.60q: %d request(s), %d session(s) before the refusal", tc.args, len(h.got()), h.sessions)
		}
	}
	// CRLF line ends are read as LF, tabs kept.
	h0 := newHub(t, map[string]any{"POST /reports": sample()})
	if _, _, err := h0.run(t, "a\r\n\tb\r\n", append(base, "--body-file", "-")...); err != nil || h0.got()[0].Body["body"] != "a\n\tb\n" {
		t.Errorf("a CRLF body: %v, sent %+v", err, h0.got())
	}
	// Exactly the bound is sent.
	h := newHub(t, map[string]any{"POST /reports": sample()})
	if _, _, err := h.run(t, "", append(base, "--body-file", exact)...); err != nil || len(h.got()) != 1 || len(h.got()[0].Body["body"].(string)) != hub.MaxReportBodyBytes {
		t.Errorf("a body of exactly the bound: %v", err)
	}
}

// TestShow: the header, the body as text, the reproduction and the thread
// as a conversation.
func TestShow(t *testing.T) {
	h := newHub(t, map[string]any{"GET /reports/" + id: sample()})
	out, _, err := h.run(t, "", "show", id)
	if err != nil {
		t.Fatal(err)
	}
	local := func(hours int) string { return filed.Add(time.Duration(hours) * time.Hour).Local().Format(timeFormat) }
	for _, re := range []string{
		`^` + id + `: greet logs the token\n`,
		`target:\s+alice/hello\n`, `state:\s+confirmed\n`, `severity:\s+high \(CVSS:4\.0/AV:N/`, `versions:\s+1\.2\.0 to 1\.3\.0\n`,
		`weakness:\s+CWE-532\n`, `advisory:\s+STATION-2026-0001\n`, `credits:\s+5\n`,
		`private:\s+read only by bob, the owner of alice/hello \(alice\) and the hub's admins\n`,
		`\n    ## What\n    The token is logged\.\n`,
		`\nreproduction:\n    station run alice/hello greet\n`,
		`\nthread:\n  ` + local(0) + `  bob  filed the report\n`,
		`  ` + local(1) + `  alice  new → confirmed\n    Reproduced on 1\.2\.0\.\n`,
		`  alice  \+5 credits: clear reproduction\n`,
		`  ` + local(25) + `  bob  verified on 1\.3\.0\n    Still there\.\n    Same log line\.\n`,
		`  alice  commented\n    Thanks\.\n`,
		`  alice  published advisory STATION-2026-0001\n`,
		`  alice  severity set to critical\n`,
		`  hub  reopened-by-robot\n`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("show does not match %s:\n%s", re, out)
		}
	}
	if strings.Contains(out, "\r") {
		t.Errorf("show printed a carriage return: %q", out)
	}

	// --json is the report exactly, thread and all.
	out, _, err = h.run(t, "", "show", id, "--json")
	var got hub.Report
	if err != nil || json.Unmarshal([]byte(out), &got) != nil || got.Body != sample().Body || len(got.Thread) != 8 || got.Thread[3].VerifiedIn != "1.3.0" {
		t.Errorf("show --json: %v\n%s", err, out)
	}

	// Published, it says so; a report the hub does not show is its error.
	pub := sample()
	pub.PublishedAt = &updated
	h = newHub(t, map[string]any{"GET /reports/" + id: pub, "GET /reports/" + other: hub.Errorf(hub.CodeReportNotFound, "no report %s", other)})
	if out, _, _ := h.run(t, "", "show", id); !regexp.MustCompile(`published:\s+`+updated.Local().Format(timeFormat)).MatchString(out) || strings.Contains(out, "private:") {
		t.Errorf("show of a published report:\n%s", out)
	}
	if _, _, err := h.run(t, "", "show", other); hub.CodeOf(err) != hub.CodeReportNotFound {
		t.Errorf("show of a report the hub hides: %v", err)
	}
}

// TestList: a table, the next page named, and filters as the query.
func TestList(t *testing.T) {
	r := sample()
	r.Thread, r.Body, r.Reproduction = nil, "", ""
	pub := r
	pub.ID, pub.Target, pub.State, pub.PublishedAt = other, "station", "fixed", &updated
	h := newHub(t, map[string]any{"GET /reports": hub.ReportList{Reports: []hub.Report{r, pub}, Next: 2}})
	out, errb, err := h.run(t, "", "list", "--target", "alice/hello", "--state", "confirmed", "--mine", "--limit", "2")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !regexp.MustCompile(`^ID\s+TARGET\s+STATE\s+SEVERITY\s+TITLE\s+REPORTER\s+UPDATED$`).MatchString(lines[0]) ||
		!regexp.MustCompile(`^`+id+`\s+alice/hello\s+confirmed\s+high\s+greet logs the token\s+bob\s+`+updated.Local().Format(timeFormat)+`$`).MatchString(lines[1]) ||
		!regexp.MustCompile(`^`+other+`\s+station\s+fixed \(public\)\s+high`).MatchString(lines[2]) {
		t.Errorf("list:\n%s", out)
	}
	if !strings.Contains(errb, "more reports: station report list --target alice/hello --state confirmed --mine --limit 2 --offset 2") {
		t.Errorf("list does not name the next page: %s", errb)
	}
	if q := h.got()[0].Query; q != "limit=2&mine=true&state=confirmed&target=alice%2Fhello" {
		t.Errorf("list query %q", q)
	}

	h = newHub(t, map[string]any{"GET /reports": hub.ReportList{}})
	if out, errb, err := h.run(t, "", "list"); err != nil || out != "" || !strings.Contains(errb, "no reports") {
		t.Errorf("empty list: %q %q %v", out, errb, err)
	}
	if out, _, err := h.run(t, "", "list", "--json"); err != nil || strings.TrimSpace(out) != "{\n  \"reports\": []\n}" {
		t.Errorf("empty list --json: %q %v", out, err)
	}
}

// TestComment: the body and --verified-in are sent; the answer says where
// the thread is.
func TestComment(t *testing.T) {
	r := sample()
	h := newHub(t, map[string]any{"POST /reports/" + id + "/comments": r})
	out, _, err := h.run(t, "Still there.\n", "comment", id, "--body-file", "-", "--verified-in", "station-v1.3.0")
	if err != nil {
		t.Fatal(err)
	}
	if g := h.got(); len(g) != 1 || !equalJSON(g[0].Body, map[string]any{"body": "Still there.\n", "verified_in": "1.3.0"}) {
		t.Errorf("comment sent %+v", g)
	}
	if !strings.Contains(out, "commented on report "+id+" (alice/hello, confirmed); the thread: station report show "+id) {
		t.Errorf("comment printed %q", out)
	}
	// A comment over the bound is refused before the request.
	h = newHub(t, map[string]any{})
	if _, _, err := h.run(t, strings.Repeat("x", hub.MaxCommentBytes+1), "comment", id, "--body-file", "-"); err == nil || !strings.Contains(err.Error(), "larger than 64KiB") || len(h.got()) != 0 {
		t.Errorf("an oversized comment: %v (%d requests)", err, len(h.got()))
	}
}

// TestTriage: the flags become one request; the answer is said as the
// state change and each thing done.
func TestTriage(t *testing.T) {
	r := sample()
	r.PublishedAt = &updated
	h := newHub(t, map[string]any{"POST /reports/" + id + "/triage": r})
	out, errb, err := h.run(t, "", "triage", id, "--state", "confirmed", "--comment", "Reproduced.", "--severity", "high", "--cvss", cvss,
		"--award", "5", "--reason", "clear reproduction", "--advisory", "--publish")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"state": "confirmed", "comment": "Reproduced.", "severity": map[string]any{"level": "high", "cvss": cvss},
		"award": map[string]any{"amount": 5.0, "reason": "clear reproduction"}, "advisory": true, "publish": true}
	if g := h.got(); len(g) != 1 || !equalJSON(g[0].Body, want) {
		t.Errorf("triage sent %+v, want %v", g, want)
	}
	for _, s := range []string{id + ": new → confirmed\n", "  severity now high (CVSS:4.0/", "  awarded 5 credits to bob: clear reproduction (5 for this report in all)\n",
		"  advisory STATION-2026-0001 published", "  published: everyone may read the report"} {
		if !strings.Contains(out, s) {
			t.Errorf("triage does not say %q:\n%s", s, out)
		}
	}
	if !strings.Contains(errb, "--state fixed --fixed-in VERSION") {
		t.Errorf("triage to confirmed does not say what comes next: %s", errb)
	}

	// Only a publish: the state is unchanged and said so.
	h = newHub(t, map[string]any{"POST /reports/" + id + "/triage": r})
	out, _, err = h.run(t, "", "triage", id, "--publish", "--json")
	var got map[string]any
	if err != nil || json.Unmarshal([]byte(out), &got) != nil || got["state"] != "confirmed" || got["id"] != id {
		t.Errorf("triage --json: %v\n%s", err, out)
	}
	if _, ok := got["asked"]; ok {
		t.Errorf("triage --json has the request in it: %s", out)
	}
	if g := h.got(); len(g) != 1 || !equalJSON(g[0].Body, map[string]any{"publish": true}) {
		t.Errorf("triage --publish sent %+v", g)
	}
	if out, _, _ := h.run(t, "", "triage", id, "--publish"); !strings.HasPrefix(out, id+": still confirmed\n") {
		t.Errorf("triage --publish printed %q", out)
	}

	// The hub's refusal is the command's error.
	h = newHub(t, map[string]any{"POST /reports/" + id + "/triage": hub.Errorf(hub.CodeNotMaintainer, "only alice triages reports of alice/hello")})
	if _, _, err := h.run(t, "", "triage", id, "--state", "triaged"); hub.CodeOf(err) != hub.CodeNotMaintainer {
		t.Errorf("a triage the hub refuses: %v", err)
	}
}

// TestCreditsAndFame: the logged-in account by default; a private
// report's award does not name it.
func TestCreditsAndFame(t *testing.T) {
	credits := hub.Credits{Account: "bob", Balance: 7, History: []hub.CreditEntry{
		{Amount: 5, Reason: "clear reproduction", AwardedBy: "alice", Time: filed, Report: id, Target: "alice/hello"},
		{Amount: 2, Time: updated},
	}}
	h := newHub(t, map[string]any{"GET /accounts/bob/credits": credits, "GET /accounts/erin/credits": hub.Credits{Account: "erin"},
		"GET /credits": hub.HallOfFame{Reporters: []hub.Reporter{{Account: "bob", Credits: 7, Awards: 2}, {Account: "erin", Credits: 7, Awards: 1}, {Account: "zed", Credits: 1, Awards: 1}}}})
	out, _, err := h.run(t, "", "credits")
	if err != nil {
		t.Fatal(err)
	}
	for _, re := range []string{`^bob: 7 credits from 2 award\(s\)\n`, `WHEN\s+CREDITS\s+REASON\s+AWARDED BY\s+REPORT\n`,
		`\+5\s+clear reproduction\s+alice\s+` + id + ` \(alice/hello\)\n`, `\+2\s+-\s+-\s+a private report\n`} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("credits does not match %s:\n%s", re, out)
		}
	}
	if out, _, err := h.run(t, "", "credits", "erin", "--json"); err != nil || !strings.Contains(out, `"history": []`) {
		t.Errorf("credits erin --json: %v\n%s", err, out)
	}
	if g := h.got(); len(g) != 2 || g[0].Path != "/accounts/bob/credits" || g[1].Path != "/accounts/erin/credits" {
		t.Errorf("credits asked %+v", g)
	}

	out, _, err = h.run(t, "", "fame")
	if err != nil || !regexp.MustCompile(`RANK\s+ACCOUNT\s+CREDITS\s+AWARDS\n1\s+bob\s+7\s+2\n1\s+erin\s+7\s+1\n3\s+zed\s+1\s+1\n$`).MatchString(out) {
		t.Errorf("fame: %v\n%s", err, out)
	}
	h = newHub(t, map[string]any{"GET /credits": hub.HallOfFame{}})
	if out, errb, err := h.run(t, "", "fame"); err != nil || out != "" || !strings.Contains(errb, "no credits awarded") {
		t.Errorf("empty fame: %q %q %v", out, errb, err)
	}
}

// TestHostileHub: every string a hostile hub sends, in every answer of
// every command, reaches the terminal escaped, and no line of it passes
// for the station's.
func TestHostileHub(t *testing.T) {
	x := clitest.Hostile
	r := hub.Report{ID: x, Target: x, Introduced: x, LastAffected: x, Title: x, Body: x, CWE: x, Severity: hub.Severity{Level: x, CVSS: x},
		Reproduction: x, State: x, Reporter: x, FixedIn: x, DuplicateOf: x, Advisory: x, PublishedAt: &updated}
	for _, k := range []string{hub.ReportFiled, hub.ReportState, hub.ReportCredit, hub.ReportComment, hub.ReportPublished, hub.ReportAdvisory, hub.ReportSeverity, x} {
		r.Thread = append(r.Thread, hub.ReportEvent{Kind: k, Actor: x, Comment: x, From: x, To: x, FixedIn: x, DuplicateOf: x, VerifiedIn: x, Credits: 1, Reason: x, Advisory: x,
			Severity: &hub.Severity{Level: x, CVSS: x}})
	}
	private := r
	private.PublishedAt = nil
	h := newHub(t, map[string]any{
		"POST /reports":                     r,
		"GET /reports":                      hub.ReportList{Reports: []hub.Report{r, private}, Next: 1},
		"GET /reports/" + id:                r,
		"GET /reports/" + other:             private,
		"POST /reports/" + id + "/comments": r,
		"POST /reports/" + id + "/triage":   r,
		"GET /accounts/bob/credits":         hub.Credits{Account: x, History: []hub.CreditEntry{{Reason: x, AwardedBy: x, Report: x, Target: x}, {Reason: x, AwardedBy: x}}},
		"GET /credits":                      hub.HallOfFame{Reporters: []hub.Reporter{{Account: x}}},
	})
	for _, args := range [][]string{
		{"file", "--target", "alice/hello", "--title", "t", "--severity", "low", "--body", "b"},
		{"list"},
		{"show", id},
		{"show", other},
		{"comment", id, "--body", "b"},
		{"comment", id, "--body", "b", "--verified-in", "1.0.0"},
		{"triage", id, "--state", "fixed", "--fixed-in", "1.0.0", "--severity", "low", "--award", "1", "--reason", "r", "--advisory", "--publish"},
		{"credits"},
		{"fame"},
	} {
		out, errb, err := h.run(t, "", args...)
		if err != nil {
			t.Errorf("%q: %v", args, err)
			continue
		}
		clitest.CheckPrinted(t, strings.Join(args, " "), out+errb)
	}
	// With --json the text is exact JSON, escaped only where a terminal
	// would act on it.
	out, _, err := h.run(t, "", "show", id, "--json")
	var got hub.Report
	sent := strings.ToValidUTF8(x, "\ufffd") // what the hub's JSON carried
	if err != nil || json.Unmarshal([]byte(out), &got) != nil || got.Title != sent || got.Thread[0].Comment != sent {
		t.Errorf("show --json of hostile text is not exact: %v\n%s", err, out)
	}
	if c := clitest.RawControl(out); c != "" {
		t.Errorf("show --json: %s reaches the terminal", c)
	}
}

// TestJSONKeys: every result's JSON keys are snake_case.
func TestJSONKeys(t *testing.T) {
	for _, v := range []any{FileResult{}, ListResult{}, ShowResult{}, CommentResult{}, TriageResult{}, CreditsResult{}, FameResult{}} {
		if err := cmdutil.CheckJSONNames(v); err != nil {
			t.Errorf("%T: %v", v, err)
		}
	}
}

// TestNotLoggedIn: a station with no hub login says how to log in, before
// anything is sent.
func TestNotLoggedIn(t *testing.T) {
	f := cmdutil.New(cmdutil.IOStreams{Out: &bytes.Buffer{}, Err: &bytes.Buffer{}, Cache: wasmbuild.CacheForTest()})
	f.Home = t.TempDir()
	t.Cleanup(func() { f.Close(context.Background()) })
	for _, args := range [][]string{{"list"}, {"show", id}, {"credits"}, {"fame"}, {"triage", id, "--publish"}} {
		err := clitest.Parse(NewCmdReport(f), args...)
		if !errors.Is(err, hubsync.ErrNotLoggedIn) || !strings.Contains(cmdutil.Hint(err), "station hub login --url URL") {
			t.Errorf("%q not logged in: %v (hint %q)", args, err, cmdutil.Hint(err))
		}
	}
}

// equalJSON reports whether the decoded JSON got is want.
func equalJSON(got, want map[string]any) bool {
	a, _ := json.Marshal(got)
	b, _ := json.Marshal(want)
	return bytes.Equal(a, b)
}
