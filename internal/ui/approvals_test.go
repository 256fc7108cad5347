package ui_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/station-dev/station/internal/hubsync"
	"github.com/station-dev/station/internal/store"
	"github.com/station-dev/station/internal/ui"
)

// fakeTeams records the decisions the dashboard hands over.
type fakeTeams struct {
	mu    sync.Mutex
	calls []string
	err   error
}

func (f *fakeTeams) Approve(_ context.Context, team, module, version string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "approve "+team+" "+module+" "+version)
	return "approved " + module + "@" + version + " " + hostile, f.err
}

func (f *fakeTeams) Reject(_ context.Context, team, module, version string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "reject "+team+" "+module+" "+version)
	return f.err
}

// pend records a pending change of probeID to 2.0.0 for team acme, as a
// team sync does.
func pend(t *testing.T, u *testUI, escalations ...string) {
	t.Helper()
	ctx := context.Background()
	if err := u.st.Store.PutHubTeam(ctx, store.HubTeam{Name: "acme", HubURL: "http://127.0.0.1:1", Role: "member", Revision: 1, SyncedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if err := u.st.Store.ReplaceHubPendings(ctx, "acme", []store.HubPending{{Team: "acme", Module: probeID, Version: "2.0.0", Revision: 2, FromVersion: "1.0.0", Escalations: escalations, RecordedAt: time.Now()}}); err != nil {
		t.Fatal(err)
	}
}

// TestApprovals: a pending change shows as the difference it asks for,
// with what runs meanwhile; its buttons hand exactly that change to the
// team service (the one station team approve uses) and come back with
// what it did; a form that names no change, or a service that cannot
// decide, says so.
func TestApprovals(t *testing.T) {
	teams := &fakeTeams{}
	u := newUI(t, func(o *ui.Options) { o.Teams = teams })
	c, csrf := u.signedIn(t)
	if _, body := u.get(t, c, "/ui/approvals"); !strings.Contains(body, "Nothing waits for your approval") {
		t.Errorf("empty approvals:\n%s", body)
	}
	pend(t, u, "may now connect to api.github.com", hostile)
	resp, body := u.get(t, c, "/ui/approvals")
	for _, want := range []string{`data-module="test/probe"`, `<li class="add">may now connect to api.github.com</li>`, "1.0.0 → 2.0.0", "1.0.0 keeps running meanwhile",
		"may connect to api.stripe.com (https, port 443)", `value="approve"`, `value="reject"`, "&lt;script&gt;"} {
		if !strings.Contains(body, want) {
			t.Errorf("approvals page (%s) lacks %q:\n%s", resp.Status, want, body)
		}
	}
	if strings.Contains(body, "<script>alert") {
		t.Errorf("an escalation line printed as markup:\n%s", body)
	}
	same := map[string]string{"Origin": u.base}
	form := url.Values{"csrf": {csrf}, "team": {"acme"}, "module": {probeID}, "version": {"2.0.0"}}
	for _, d := range []string{"approve", "reject"} {
		form.Set("decision", d)
		resp, _ := u.post(t, c, "/ui/approvals/decide", form, same)
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/ui/approvals" {
			t.Errorf("%s: %s to %s", d, resp.Status, resp.Header.Get("Location"))
		}
		// The next page says what happened, once.
		_, body := u.get(t, c, "/ui/approvals")
		want := map[string]string{"approve": `<p class="flash" role="status">approved test/probe@2.0.0 &lt;script&gt;`, "reject": `<p class="flash" role="status">rejected: test/probe@2.0.0 for team acme`}[d]
		if !strings.Contains(body, want) {
			t.Errorf("after %s, the page does not say %q:\n%s", d, want, body)
		}
		if _, body := u.get(t, c, "/ui/approvals"); strings.Contains(body, `class="flash"`) {
			t.Errorf("the notice after %s shows twice", d)
		}
	}
	if got := strings.Join(teams.calls, "; "); got != "approve acme test/probe 2.0.0; reject acme test/probe 2.0.0" {
		t.Errorf("decisions handed over: %s", got)
	}
	// No address makes a page say something.
	if _, body := u.get(t, c, "/ui/approvals?flash=your+station+is+compromised"); strings.Contains(body, "compromised") {
		t.Errorf("a notice from the address:\n%s", body)
	}

	// Forms that name no change.
	teams.calls = nil
	for _, bad := range []url.Values{
		{"csrf": {csrf}, "team": {"acme"}, "module": {"../../etc"}, "version": {"2.0.0"}, "decision": {"approve"}},
		{"csrf": {csrf}, "team": {"ACME <b>"}, "module": {probeID}, "version": {"2.0.0"}, "decision": {"approve"}},
		{"csrf": {csrf}, "team": {"acme"}, "module": {probeID}, "version": {""}, "decision": {"approve"}},
		{"csrf": {csrf}, "team": {"acme"}, "module": {probeID}, "version": {"2.0.0"}, "decision": {"maybe"}},
	} {
		if resp, _ := u.post(t, c, "/ui/approvals/decide", bad, same); resp.StatusCode != http.StatusBadRequest {
			t.Errorf("form %v: %s, want 400", bad, resp.Status)
		}
	}
	if len(teams.calls) != 0 {
		t.Errorf("bad forms reached the service: %v", teams.calls)
	}
	// The change moved on meanwhile: 409 with the service's words.
	teams.err = &hubsync.NoPendingError{Team: "acme", Module: probeID, Version: "2.0.0"}
	form.Set("decision", "approve")
	if resp, body := u.post(t, c, "/ui/approvals/decide", form, same); resp.StatusCode != http.StatusConflict || !strings.Contains(body, "station team status") {
		t.Errorf("no such pending change: %s\n%s", resp.Status, body)
	}
	// The hub is down: 502 with the reason.
	teams.err = errors.New("dial tcp 127.0.0.1:1: connection refused")
	if resp, body := u.post(t, c, "/ui/approvals/decide", form, same); resp.StatusCode != http.StatusBadGateway || !strings.Contains(body, "connection refused") {
		t.Errorf("hub down: %s\n%s", resp.Status, body)
	}
}

// TestApprovalsWithoutTeams: a dashboard that cannot reach a hub shows
// the change without buttons and refuses a decision.
func TestApprovalsWithoutTeams(t *testing.T) {
	u := newUI(t, nil)
	c, csrf := u.signedIn(t)
	pend(t, u, "may now connect to api.github.com")
	_, body := u.get(t, c, "/ui/approvals")
	if !strings.Contains(body, "may now connect to api.github.com") || strings.Contains(body, `value="approve"`) || !strings.Contains(body, "station team approve") {
		t.Errorf("approvals without teams:\n%s", body)
	}
	form := url.Values{"csrf": {csrf}, "team": {"acme"}, "module": {probeID}, "version": {"2.0.0"}, "decision": {"approve"}}
	if resp, _ := u.post(t, c, "/ui/approvals/decide", form, map[string]string{"Origin": u.base}); resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("decide without teams: %s", resp.Status)
	}
	// Teams shows the membership and what waits.
	if _, body := u.get(t, c, "/ui/teams"); !strings.Contains(body, "<td>acme</td>") || !strings.Contains(body, `<a href="/ui/approvals">1 change</a>`) {
		t.Errorf("teams page:\n%s", body)
	}
}

// TestPagesRender: every page answers 200 on a station with one module
// and nothing else, and the layout marks the current section.
func TestPagesRender(t *testing.T) {
	u := newUI(t, nil)
	c, _ := u.signedIn(t)
	for _, p := range []string{"/ui/modules", "/ui/modules/" + probeID, "/ui/audit", "/ui/runs", "/ui/llm", "/ui/approvals", "/ui/teams", "/ui/advisories"} {
		resp, body := u.get(t, c, p)
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s: %s\n%s", p, resp.Status, body)
		}
		section := strings.Split(strings.TrimPrefix(p, "/ui/"), "/")[0]
		if !strings.Contains(body, `<a href="/ui/`+section+`" aria-current="page">`) {
			t.Errorf("%s: the menu does not mark %s as current", p, section)
		}
	}
	if resp, _ := u.get(t, c, "/ui/modules/nobody/none"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("an unknown module: %s", resp.Status)
	}
	if resp, body := u.get(t, c, "/ui/audit?result=maybe"); resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "want all, allowed or denied") {
		t.Errorf("a bad filter: %s", resp.Status)
	}
	if resp, _ := u.get(t, c, "/ui/"); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("/ui/: %s", resp.Status)
	}
}

// TestVendoredFilesArePinned: each vendored file is the one PINNED names,
// byte for byte (static/vendor/update re-fetches it from npm and checks
// the registry's integrity).
func TestVendoredFilesArePinned(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("static", "vendor", "PINNED"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, l := range strings.Split(string(raw), "\n") {
		f := strings.Fields(l)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		if len(f) != 4 {
			t.Fatalf("PINNED line %q: want file, package@version, integrity, sha256", l)
		}
		b, err := os.ReadFile(filepath.Join("static", "vendor", f[0]))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		if got := hex.EncodeToString(sum[:]); got != f[3] {
			t.Errorf("%s: sha256 %s, PINNED says %s", f[0], got, f[3])
		}
		n++
	}
	if n == 0 {
		t.Fatal("PINNED lists nothing")
	}
}

// TestApprovalsOfAnUpgrade: an upgrade the operator ran that asks for
// more waits beside the team changes, and its buttons hand it over as an
// upgrade (team "").
func TestApprovalsOfAnUpgrade(t *testing.T) {
	teams := &fakeTeams{}
	u := newUI(t, func(o *ui.Options) { o.Teams = teams })
	if err := u.st.Store.PutHubPending(context.Background(), store.HubPending{Team: store.UpgradeTeam, Module: probeID, Version: "2.0.0", FromVersion: "1.0.0",
		Escalations: []string{"may now connect to api.github.com"}, RecordedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	c, csrf := u.signedIn(t)
	_, body := u.get(t, c, "/ui/approvals")
	for _, want := range []string{`data-module="test/probe" data-team=""`, "an upgrade from the hub; 1.0.0 keeps running meanwhile", `<li class="add">may now connect to api.github.com</li>`} {
		if !strings.Contains(body, want) {
			t.Errorf("approvals page lacks %q:\n%s", want, body)
		}
	}
	form := url.Values{"csrf": {csrf}, "team": {""}, "module": {probeID}, "version": {"2.0.0"}, "decision": {"reject"}}
	if resp, _ := u.post(t, c, "/ui/approvals/decide", form, map[string]string{"Origin": u.base}); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("reject the upgrade: %s", resp.Status)
	}
	if got := strings.Join(teams.calls, "; "); got != "reject  test/probe 2.0.0" {
		t.Errorf("decisions handed over: %q", got)
	}
}
