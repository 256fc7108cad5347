package cli_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/station-dev/station/internal/cli"
	"github.com/station-dev/station/internal/wasmbuild"
)

// envRequireBrowser set to 1 makes a machine without Chromium fail the
// dashboard's browser test instead of skipping it (.ci/run sets it).
const envRequireBrowser = "STATION_REQUIRE_BROWSER"

// envScreenshots, if set, is the directory the dashboard test writes its
// screenshots to (make screenshots: docs/images); else a temporary one.
const envScreenshots = "STATION_SCREENSHOTS"

// dashboardTimeout bounds the browser's part of TestDashboard; a wait for
// something on a page is bounded by pageWait, and a page load by loadWait
// (an approval installs the new version). The race detector makes the
// station several times slower.
const pageWait = 10 * time.Second

var dashboardTimeout, loadWait = 2 * time.Minute, pageWait

func init() {
	if raceDetector {
		dashboardTimeout, loadWait = 5*time.Minute, time.Minute
	}
}

// The viewports of the screenshots: a laptop, and a phone for the
// narrow check.
const (
	wideWidth, wideHeight     = 1280, 800
	narrowWidth, narrowHeight = 390, 844
)

// chromiumPath finds the browser: $STATION_CHROMIUM, else Debian's
// /usr/bin/chromium, else chromium on PATH. Without one the test skips,
// or fails with STATION_REQUIRE_BROWSER=1.
func chromiumPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("STATION_CHROMIUM"); p != "" {
		if _, err := exec.LookPath(p); err != nil {
			t.Fatalf("STATION_CHROMIUM=%s: %v", p, err)
		}
		return p
	}
	for _, p := range []string{"/usr/bin/chromium", "chromium"} {
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	msg := "no Chromium (STATION_CHROMIUM, /usr/bin/chromium or chromium on PATH); the dashboard's browser test needs one (Debian: apt-get install chromium)"
	if os.Getenv(envRequireBrowser) == "1" {
		t.Fatal(msg + "; " + envRequireBrowser + "=1 makes that a failure")
	}
	t.Skip(msg)
	return ""
}

// greetWorkflow is the run the Runs pages show: two steps of alice/hello.
const greetWorkflow = `name: greet-twice
steps:
  - id: greet
    uses: alice/hello greet
    with: {name: Bob}
  - id: again
    uses: alice/hello greet
    with: {name: "${{ steps.greet.output.greeting }}"}
output:
  greeting: ${{ steps.again.output.greeting }}
`

// TestDashboard is the dashboard as a user sees it, in headless Chromium
// driven over the DevTools protocol: station B (a member of team acme, whose
// owner station A pushed an escalating alice/hello 1.1.0) runs a workflow
// and has a module call denied; its user signs in with station ui's
// one-time link (the cookie is HttpOnly and SameSite=Strict, the link works
// once), sees the modules and what they may do, filters the audit log to
// denials and watches a new denial arrive through the live tail without a
// reload, approves the pending change (which then runs) and opens the
// run's timeline. Every page is screenshotted at 1280×800 (the modules at
// 390 px too) and does not scroll sideways at 390 px, and no page logs a
// JavaScript error, a CSP violation or a failed load. Without JavaScript
// the audit page still shows its rows and its filter (a GET form) works.
func TestDashboard(t *testing.T) {
	chromium := chromiumPath(t)
	shots := os.Getenv(envScreenshots)
	switch {
	case shots == "":
		shots = t.TempDir()
	case !filepath.IsAbs(shots): // from the repository's root, not the package's
		root, err := wasmbuild.RepoRoot()
		if err != nil {
			t.Fatal(err)
		}
		shots = filepath.Join(root, shots)
	}
	if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}

	// The stations: A owns team acme, B is a member with a pending change.
	h, hubLog := startHub(t)
	tr := &transcript{}
	homeA, homeB := t.TempDir(), t.TempDir()
	alice, bob := h.Account(t, "alice"), h.Account(t, "bob")
	login(t, tr, h, homeA, alice)
	login(t, tr, h, homeB, bob)
	tr.add(station(t, homeA, "", "hub", "key", "create")).want(t, 0)
	tr.add(station(t, homeA, "", "module", "publish", moduleAs(t, "hello", "alice/hello", "1.0.0"))).want(t, 0)
	tr.add(station(t, homeA, "", "module", "install", "--yes", "alice/hello@1.0.0")).want(t, 0)
	tr.add(station(t, homeA, "", "team", "create", "acme", "--from-installed")).want(t, 0)
	code := strings.TrimSpace(station(t, homeA, "", "team", "invite", "acme", "--account", "bob").want(t, 0).out)
	tr.add(station(t, homeB, code+"\n", "team", "join", "-")).want(t, 0)
	tr.add(station(t, homeA, "", "module", "publish", moduleAs(t, "hello", "alice/hello", "1.1.0", "api.stripe.com"))).want(t, 0)
	tr.add(station(t, homeA, "", "module", "upgrade", "--yes", "alice/hello")).want(t, 0)
	tr.add(station(t, homeA, "", "team", "push", "acme")).want(t, 0)
	// B's sync records the escalation as pending; 1.0.0 keeps running.
	tr.add(station(t, homeB, "", "team", "sync")).want(t, cli.ExitDeclined)
	tr.add(station(t, homeB, "", "module", "install", "--yes", moduleDir(t, "stripe-invoicing"))).want(t, 0)
	c, _ := serve(t, homeB)

	// B's history: a workflow run (through its daemon) and a denial.
	wf := filepath.Join(t.TempDir(), "greet.yaml")
	if err := os.WriteFile(wf, []byte(greetWorkflow), 0o600); err != nil {
		t.Fatal(err)
	}
	r := tr.add(station(t, homeB, "", "workflow", "run", wf)).want(t, 0)
	m := regexp.MustCompile(`(?m)^run (\d+): workflow greet-twice`).FindStringSubmatch(r.err)
	if m == nil || !strings.Contains(r.out, "Hello, Hello, Bob!!") {
		t.Fatalf("workflow run:\n%s%s", r.out, r.err)
	}
	runID := m[1]
	deny := func(target string) {
		t.Helper()
		out, err := c.Run(context.Background(), "dave/stripe-invoicing", "fetch", []byte(`{"url":"https://`+target+`/"}`), "")
		if err == nil || !strings.Contains(err.Error(), "is not in its allowlist") {
			t.Fatalf("fetch of %s: %s, %v; want a sandbox violation", target, out, err)
		}
	}
	deny("evil.example")

	began := time.Now()
	b := startBrowser(t, chromium)
	ctx := b.ctx
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(wideWidth, wideHeight)); err != nil {
		t.Fatal(err)
	}

	// a. Sign in with station ui's one-time link.
	var link struct {
		URL     string    `json:"url"`
		Expires time.Time `json:"expires"`
	}
	if err := json.Unmarshal([]byte(tr.add(station(t, homeB, "", "ui", "--json")).want(t, 0).out), &link); err != nil || link.URL == "" {
		t.Fatalf("station ui --json: %v", err)
	}
	u, err := url.Parse(link.URL)
	if err != nil {
		t.Fatal(err)
	}
	base := u.Scheme + "://" + u.Host
	b.open(t, link.URL, 200)
	if loc := b.location(t); loc != base+"/ui/modules" {
		t.Fatalf("the sign-in link landed on %s, want %s/ui/modules", loc, base)
	}
	cookies, err := chromedp.Call(ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{base + "/ui/modules"}})
	if err != nil {
		t.Fatal(err)
	}
	var session *network.Cookie
	for _, ck := range cookies.Cookies {
		if ck.Name == "station_session" {
			session = ck
		}
	}
	if session == nil || !session.HTTPOnly || session.SameSite != network.CookieSameSiteStrict || session.Path != "/ui/" {
		t.Fatalf("session cookie %+v: want station_session, HttpOnly, SameSite=Strict, path /ui/ (all: %+v)", session, cookies.Cookies)
	}
	if jsCookies := evaluate[string](t, ctx, `document.cookie`); strings.Contains(jsCookies, "station_session") {
		t.Errorf("the page's script sees the session cookie: %q", jsCookies)
	}
	// The same link again is refused: a code works once.
	b.open(t, link.URL, 401)
	if msg := b.text(t, "main p.error"); !strings.Contains(msg, "already used or has expired") {
		t.Errorf("a reused sign-in link says %q", msg)
	}

	// b. Modules: alice/hello 1.0.0 and what it may do, then its page.
	b.open(t, base+"/ui/modules", 200)
	card := `li.card[id="m-alice/hello"]`
	if v := b.text(t, card+" .version"); v != "1.0.0" {
		t.Errorf("alice/hello's card shows version %q, want 1.0.0", v)
	}
	if perms := evaluate[[]string](t, ctx, `Array.from(document.querySelectorAll('li.card[id="m-alice/hello"] ul.perms li'), li => li.textContent.trim())`); !slices.Contains(perms, "may not connect to the network") {
		t.Errorf("alice/hello's permissions on its card: %q", perms)
	}
	b.shot(t, shots, "modules")
	b.click(t, card+` h2 a[href="/ui/modules/alice/hello"]`, 200)
	if loc, h1 := b.location(t), b.text(t, "main h1"); loc != base+"/ui/modules/alice/hello" || !strings.Contains(h1, "alice/hello") || !strings.Contains(h1, "1.0.0") {
		t.Errorf("the module page is %s with heading %q", loc, h1)
	}
	b.shot(t, shots, "module")

	// c. Audit: the denials, and a new one arriving through the live tail.
	b.open(t, base+"/ui/audit", 200)
	if err := chromedp.Do(ctx, chromedp.SetValue(chromedp.CSS(`select[name=result]`), "denied")); err != nil {
		t.Fatal(err)
	}
	// With JavaScript, htmx swaps the results in and pushes the filter's
	// address; the live tail then follows the new filter.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`form.filters button[type=submit]`))); err != nil {
		t.Fatal(err)
	}
	b.wait(t, `p#live.on[data-stream*="result=denied"]`)
	if q := b.query(t); q.Get("result") != "denied" {
		t.Errorf("the filter went to %s", b.location(t))
	}
	classes := evaluate[[]string](t, ctx, `Array.from(document.querySelectorAll('tbody#audit-rows tr'), tr => tr.className)`)
	if len(classes) == 0 || !allContain(classes, "deny") {
		t.Errorf("rows with result=denied have classes %q, want deny only (and at least one)", classes)
	}
	if !strings.Contains(b.text(t, "tbody#audit-rows tr.deny"), "evil.example") {
		t.Errorf("the denial of evil.example is not on the page: %s", b.text(t, "tbody#audit-rows"))
	}
	// A mark in the page's own state: it is gone if the page reloads.
	evaluate[bool](t, ctx, `window.stationTestMark = true`)
	deny("late.example")
	b.wait(t, "tbody#audit-rows > tr.fresh:first-child")
	first := evaluate[struct {
		Class, Text string
		Mark        bool
	}](t, ctx, `(() => { const tr = document.querySelector('tbody#audit-rows > tr'); return {Class: tr.className, Text: tr.textContent, Mark: window.stationTestMark === true}; })()`)
	if !strings.Contains(first.Class, "deny") || !strings.Contains(first.Text, "late.example") || !strings.Contains(first.Text, "dave/stripe-invoicing") {
		t.Errorf("the live row at the top is %q: %s", first.Class, first.Text)
	}
	if !first.Mark {
		t.Errorf("the audit page reloaded instead of receiving the new decision live")
	}
	b.shot(t, shots, "audit")

	// d. Approvals: the pending 1.1.0 and what it asks; approve it.
	b.open(t, base+"/ui/approvals", 200)
	pending := `li.pending[data-module="alice/hello"]`
	if v := b.text(t, pending+" .version"); !strings.Contains(v, "1.1.0") {
		t.Errorf("the pending change shows version %q, want 1.1.0", v)
	}
	diff := evaluate[[]string](t, ctx, `Array.from(document.querySelectorAll('li.pending[data-module="alice/hello"] ul.diff li.add'),
		li => getComputedStyle(li, '::before').content.replace(/^"|"$/g, '') + li.textContent.trim())`)
	if !slices.Contains(diff, "+ may now connect to api.stripe.com") {
		t.Errorf("the pending change's diff reads %q", diff)
	}
	b.shot(t, shots, "approvals")
	b.click(t, pending+` button[name=decision][value=approve]`, 200)
	if loc := b.location(t); !strings.HasPrefix(loc, base+"/ui/approvals") {
		t.Errorf("after approving, the browser is on %s", loc)
	}
	if flash := b.text(t, "p.flash"); !strings.Contains(flash, "alice/hello@1.1.0") {
		t.Errorf("the flash after approving says %q", flash)
	}
	if n := evaluate[int](t, ctx, `document.querySelectorAll('li.pending').length`); n != 0 {
		t.Errorf("%d changes still wait after the approval", n)
	}
	ms, err := c.Modules(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if m.ID == "alice/hello" && (m.Version != "1.1.0" || strings.Join(m.Permissions.Network, ",") != "api.stripe.com") {
			t.Errorf("after the approval B runs alice/hello %s with network %v", m.Version, m.Permissions.Network)
		}
	}
	if out, err := c.Run(context.Background(), "alice/hello", "greet", []byte(`{"name":"Bob"}`), ""); err != nil || !strings.Contains(string(out), "Hello, Bob!") {
		t.Errorf("greet after the approval: %s, %v", out, err)
	}

	// e. Runs: the run, and its timeline of steps.
	b.open(t, base+"/ui/runs", 200)
	b.shot(t, shots, "runs")
	b.click(t, `main a[href="/ui/runs/`+runID+`"]`, 200)
	b.wait(t, "ol.timeline > li")
	steps := evaluate[[]string](t, ctx, `Array.from(document.querySelectorAll('ol.timeline > li'), li => li.textContent)`)
	if len(steps) != 2 || !strings.Contains(steps[0], "greet") || !strings.Contains(steps[1], "again") {
		t.Errorf("run %s's timeline: %q, want the steps greet and again", runID, steps)
	}
	b.shot(t, shots, "run")

	// f. The other pages, and every page on a phone.
	b.open(t, base+"/ui/llm", 200)
	b.shot(t, shots, "llm")
	b.open(t, base+"/ui/teams", 200)
	if teams := b.text(t, "main table tbody"); !strings.Contains(teams, "acme") {
		t.Errorf("the teams page does not list acme: %s", teams)
	}
	b.shot(t, shots, "teams")
	b.open(t, base+"/ui/advisories", 200)
	b.shot(t, shots, "advisories")
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(narrowWidth, narrowHeight)); err != nil {
		t.Fatal(err)
	}
	for _, page := range []string{"modules", "modules/alice/hello", "audit", "approvals", "runs", "runs/" + runID, "llm", "teams", "advisories"} {
		b.open(t, base+"/ui/"+page, 200)
		if w := evaluate[struct{ Scroll, Inner int }](t, ctx, `({Scroll: document.documentElement.scrollWidth, Inner: window.innerWidth})`); w.Scroll > w.Inner+1 {
			t.Errorf("/ui/%s at %d px is %d px wide: it scrolls sideways", page, w.Inner, w.Scroll)
		}
		if page == "modules" {
			b.shot(t, shots, "modules-narrow")
		}
	}

	// g. Without JavaScript, in a tab of its own: the rows are there and
	// the filter (a GET form) works.
	nojs := b.tab(t)
	if _, err := chromedp.Call(nojs.ctx, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true}); err != nil {
		t.Fatal(err)
	}
	nojs.open(t, base+"/ui/audit", 200)
	if n := evaluate[int](t, nojs.ctx, `document.querySelectorAll('tbody#audit-rows tr.allow, tbody#audit-rows tr.deny').length`); n < 2 {
		t.Errorf("without JavaScript the audit page shows %d decisions", n)
	}
	if on := evaluate[bool](t, nojs.ctx, `document.getElementById('live').classList.contains('on')`); on {
		t.Errorf("without JavaScript the live tail says it is on")
	}
	if err := chromedp.Do(nojs.ctx, chromedp.SendKeys(chromedp.CSS(`input[name=module]`), "dave/stripe-invoicing")); err != nil {
		t.Fatal(err)
	}
	nojs.click(t, `form.filters button[type=submit]`, 200)
	if q := nojs.query(t); q.Get("module") != "dave/stripe-invoicing" {
		t.Errorf("without JavaScript the filter went to %s", nojs.location(t))
	}
	mods := evaluate[[]string](t, nojs.ctx, `Array.from(document.querySelectorAll('tbody#audit-rows tr td:nth-child(2)'), td => td.textContent.trim())`)
	if len(mods) < 2 || !allContain(mods, "dave/stripe-invoicing") {
		t.Errorf("without JavaScript, module=dave/stripe-invoicing shows the decisions of %q", mods)
	}

	// h. A page of another origin (another port of 127.0.0.1: the same
	// site, so the browser would send the session cookie to a frame of
	// it) frames the signed-in dashboard: the browser refuses to show it.
	framer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><title>not the station</title><iframe id="f" src="%s/ui/approvals" width="900" height="600"></iframe>`, base)
	}))
	defer framer.Close()
	b.open(t, framer.URL, 200)
	b.expectProblem(t, "frame-ancestors")
	tree, err := chromedp.Call(ctx, page.GetFrameTree, cdp.Empty{})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range tree.FrameTree.ChildFrames {
		if f.Frame.URL == base+"/ui/approvals" && f.Frame.UnreachableURL == "" {
			t.Errorf("another origin's page shows the dashboard in a frame (%s)", f.Frame.URL)
		}
	}

	// Nothing logged an error: the collector sees one (a refused inline
	// script), so its silence about the pages means something.
	b.open(t, base+"/ui/modules", 200)
	evaluate[bool](t, ctx, `(() => { const s = document.createElement('script'); s.textContent = 'window.inlineRan = true'; document.head.append(s); return true; })()`)
	b.expectProblem(t, "Content Security Policy")
	if evaluate[bool](t, ctx, `window.inlineRan === true`) {
		t.Errorf("an inline script ran despite the Content-Security-Policy")
	}
	for _, p := range append(b.problems(), nojs.problems()...) {
		t.Errorf("the browser logged: %s", p)
	}
	noSecrets(t, tr, hubLog, []string{homeA, homeB}, alice, bob, code)
	t.Logf("the browser's part took %s; screenshots in %s", time.Since(began).Round(time.Millisecond), shots)
}

// allContain reports whether every element of list contains s.
func allContain(list []string, s string) bool {
	for _, l := range list {
		if !strings.Contains(l, s) {
			return false
		}
	}
	return true
}

// tab is one browser tab of the test and what its pages logged.
type tab struct {
	ctx     context.Context
	mu      sync.Mutex
	logged  []chromedp.ConsoleMessage
	arrived chan struct{} // a message arrived
	// expected are the addresses that answered an error on purpose: the
	// browser's "failed to load resource" for them is no problem.
	expected map[string]bool
}

// startBrowser starts Chromium, headless, with a new empty profile (the
// allocator's own temporary user data directory) and no background
// traffic (the sandbox refuses connections to Google), for at most
// dashboardTimeout.
func startBrowser(t *testing.T, path string) *tab {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), dashboardTimeout)
	t.Cleanup(cancel)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-sync", true),
		chromedp.WindowSize(wideWidth, wideHeight),
	)
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox) // Chromium refuses its sandbox to root
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(cancelAlloc)
	bctx, cancelBrowser := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	t.Cleanup(cancelBrowser)
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("starting %s: %v (not as root, Chromium needs its sandbox: user namespaces)", path, err)
	}
	return newTab(bctx)
}

// tab opens another tab of the browser of b.
func (b *tab) tab(t *testing.T) *tab {
	t.Helper()
	ctx, cancel := chromedp.NewContext(b.ctx)
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatal(err)
	}
	return newTab(ctx)
}

func newTab(ctx context.Context) *tab {
	b := &tab{ctx: ctx, arrived: make(chan struct{}, 1), expected: map[string]bool{}}
	msgs := chromedp.Console(ctx)
	go func() {
		for m, err := range msgs {
			if err != nil {
				return
			}
			if m.Type != chromedp.ConsoleError && m.Type != chromedp.ConsoleException {
				continue
			}
			b.mu.Lock()
			b.logged = append(b.logged, m)
			b.mu.Unlock()
			select {
			case b.arrived <- struct{}{}:
			default:
			}
		}
	}()
	return b
}

// problems are the errors the tab's pages logged, but for the failed loads
// of pages that answered an error on purpose.
func (b *tab) problems() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	times := map[string]int{}
	for _, m := range b.logged {
		if m.Source == "network" && b.expected[m.URL] {
			continue
		}
		p := fmt.Sprintf("%s (%s:%d, source %q)", m, m.URL, m.Line+1, m.Source)
		if strings.HasSuffix(m.URL, "/favicon.ico") {
			p += ` (no page names an icon, so the browser asks for /favicon.ico, outside /ui/: <link rel="icon" href="data:,"> in the layout stops that)`
		}
		if times[p]++; times[p] == 1 {
			out = append(out, p)
		}
	}
	for i, p := range out {
		if n := times[p]; n > 1 {
			out[i] = fmt.Sprintf("%s, %d times", p, n)
		}
	}
	return out
}

// expectProblem waits for a logged error that contains text and takes it
// off the list.
func (b *tab) expectProblem(t *testing.T, text string) {
	t.Helper()
	timeout := time.After(pageWait)
	for {
		b.mu.Lock()
		for i, m := range b.logged {
			if strings.Contains(m.Text, text) {
				b.logged = append(b.logged[:i], b.logged[i+1:]...)
				b.mu.Unlock()
				return
			}
		}
		b.mu.Unlock()
		select {
		case <-b.arrived:
		case <-timeout:
			t.Fatalf("the browser logged no error containing %q within %s: the error collector does not work", text, pageWait)
		}
	}
}

// open navigates to addr and fails unless the page answers one of want;
// it returns the status.
func (b *tab) open(t *testing.T, addr string, want ...int64) int64 {
	t.Helper()
	return b.await(t, addr, want, chromedp.Navigate(addr))
}

// click clicks the element of sel and waits for the page it loads, which
// must answer one of want.
func (b *tab) click(t *testing.T, sel string, want ...int64) {
	t.Helper()
	b.await(t, sel, want, chromedp.Click(chromedp.CSS(sel)))
}

func (b *tab) await(t *testing.T, what string, want []int64, act chromedp.Action[chromedp.Void]) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, loadWait)
	defer cancel()
	resp, err := chromedp.RunResponse(ctx, act)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if resp == nil { // the navigation stayed in the document
		t.Fatalf("%s loaded no page but changed the one shown (htmx?) to %s", what, b.location(t))
	}
	for _, w := range want {
		if resp.Status == w {
			if w >= 400 {
				b.mu.Lock()
				b.expected[resp.URL] = true
				b.mu.Unlock()
			}
			return w
		}
	}
	t.Fatalf("%s: %s answered %d %s, want %v", what, resp.URL, resp.Status, resp.StatusText, want)
	return 0
}

// wait waits until an element of sel is visible.
func (b *tab) wait(t *testing.T, sel string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, pageWait)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(sel))); err != nil {
		t.Fatalf("waiting %s for %s on %s: %v", pageWait, sel, b.location(t), err)
	}
}

// text is the visible text of the first element of sel.
func (b *tab) text(t *testing.T, sel string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, pageWait)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("%s on %s: %v", sel, b.location(t), err)
	}
	return strings.TrimSpace(s)
}

func (b *tab) location(t *testing.T) string {
	t.Helper()
	loc, err := chromedp.Run(b.ctx, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func (b *tab) query(t *testing.T) url.Values {
	t.Helper()
	u, err := url.Parse(b.location(t))
	if err != nil {
		t.Fatal(err)
	}
	return u.Query()
}

// shot writes a full-page PNG of the page to dir/dashboard-NAME.png.
func (b *tab) shot(t *testing.T, dir, name string) {
	t.Helper()
	png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100)) // 100: PNG
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "dashboard-"+name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// evaluate runs expr in the page of ctx and decodes its value.
func evaluate[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		var ex *chromedp.ExceptionError
		if errors.As(err, &ex) {
			t.Fatalf("%s: the page threw %v", expr, ex)
		}
		t.Fatalf("%s: %v", expr, err)
	}
	return v
}
