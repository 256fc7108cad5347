package ui_test

import (
	"bufio"
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/station-dev/station/internal/daemon"
	"github.com/station-dev/station/internal/probe"
	"github.com/station-dev/station/internal/sandbox"
	"github.com/station-dev/station/internal/ui"
)

// TestSignIn: a one-time link opens one session, once; a used, expired or
// made-up code opens none; the cookie is HttpOnly, SameSite=Strict and
// scoped to /ui/; signing out ends the session on the daemon, not only in
// the browser.
func TestSignIn(t *testing.T) {
	u := newUI(t, nil)
	link, err := u.client.UISignIn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(link.URL, u.base+ui.SignInPath+"?code=") || time.Until(link.Expires) > ui.CodeTTL || time.Until(link.Expires) < ui.CodeTTL-time.Minute {
		t.Fatalf("link %+v", link)
	}
	c := browser(t)
	resp, err := c.Get(link.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/ui/modules" {
		t.Fatalf("sign-in: %s to %q", resp.Status, resp.Header.Get("Location"))
	}
	var cookie *http.Cookie
	for _, ck := range resp.Cookies() {
		if ck.Name == ui.CookieName {
			cookie = ck
		}
	}
	if cookie == nil || !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode || cookie.Path != "/ui/" || len(cookie.Value) < 40 {
		t.Fatalf("session cookie %+v: want HttpOnly, SameSite=Strict, Path=/ui/, a long random value", cookie)
	}
	if resp, _ := u.get(t, c, "/ui/modules"); resp.StatusCode != http.StatusOK {
		t.Fatalf("signed in: modules %s", resp.Status)
	}

	// The same link again, in another browser: refused, and it opens
	// nothing.
	other := browser(t)
	resp, body := u.get(t, other, strings.TrimPrefix(link.URL, u.base))
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "already used or has expired") || len(resp.Cookies()) != 0 {
		t.Errorf("reused code: %s, cookies %v\n%s", resp.Status, resp.Cookies(), body)
	}
	// A code made up, or none.
	for _, q := range []string{"?code=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "", "?code="} {
		if resp, _ := u.get(t, other, ui.SignInPath+q); resp.StatusCode != http.StatusUnauthorized || len(resp.Cookies()) != 0 {
			t.Errorf("sign-in %q: %s, cookies %v", q, resp.Status, resp.Cookies())
		}
	}
	// An expired code.
	late, err := u.client.UISignIn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	u.advance(ui.CodeTTL + time.Second)
	if resp, _ := u.get(t, other, strings.TrimPrefix(late.URL, u.base)); resp.StatusCode != http.StatusUnauthorized || len(resp.Cookies()) != 0 {
		t.Errorf("expired code: %s, cookies %v", resp.Status, resp.Cookies())
	}
	// The other browser is still not signed in.
	if resp, body := u.get(t, other, "/ui/modules"); resp.StatusCode != http.StatusUnauthorized || strings.Contains(body, probeID) {
		t.Errorf("not signed in: modules %s", resp.Status)
	}

	// An idle session ends.
	u.advance(ui.SessionIdle + time.Minute)
	if resp, _ := u.get(t, c, "/ui/modules"); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("idle session: modules %s, want 401", resp.Status)
	}
	u.advance(0)

	// Sign out: the cookie's value no longer works, even sent again.
	c, csrf := u.signedIn(t)
	var value string
	for _, ck := range c.Jar.Cookies(mustURL(t, u.base+"/ui/")) {
		value = ck.Value
	}
	if resp, _ := u.post(t, c, "/ui/signout", url.Values{"csrf": {csrf}}, nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("sign out: %s", resp.Status)
	}
	replay := browser(t)
	replay.Jar.SetCookies(mustURL(t, u.base+"/ui/"), []*http.Cookie{{Name: ui.CookieName, Value: value, Path: "/ui/"}})
	if resp, _ := u.get(t, replay, "/ui/modules"); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a signed-out session's cookie: modules %s, want 401", resp.Status)
	}
}

func mustURL(t testing.TB, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestEveryPageNeedsASession: no page, no stream and no action answers
// without a session; the daemon's token is not one.
func TestEveryPageNeedsASession(t *testing.T) {
	u := newUI(t, nil)
	link, _ := u.client.UISignIn(context.Background())
	token := u.daemon.Token()
	for _, p := range []string{"/ui/", "/ui/modules", "/ui/modules/" + probeID, "/ui/audit", "/ui/audit/stream?after=0", "/ui/runs", "/ui/runs/1", "/ui/llm", "/ui/approvals", "/ui/teams", "/ui/advisories"} {
		req, _ := http.NewRequest(http.MethodGet, u.base+p, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := browser(t).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET %s without a session (with the API token): %s, want 401", p, resp.Status)
		}
	}
	for _, p := range []string{"/ui/signout", "/ui/approvals/decide", "/ui/runs/1/resume"} {
		if resp, _ := u.post(t, browser(t), p, url.Values{"csrf": {"x"}}, nil); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("POST %s without a session: %s, want 401", p, resp.Status)
		}
	}
	// The code still works: the refusals used nothing up.
	if resp, err := browser(t).Get(link.URL); err != nil || resp.StatusCode != http.StatusSeeOther {
		t.Errorf("sign-in after the refusals: %v %v", resp, err)
	}
}

// TestChangesNeedTheCSRFTokenAndTheSameOrigin: with a live session, a
// change without the page's CSRF token, with another session's, or that a
// browser marks as coming from another site is refused before it is
// looked at; the same change from the dashboard's own page goes through.
func TestChangesNeedTheCSRFTokenAndTheSameOrigin(t *testing.T) {
	u := newUI(t, nil)
	c, csrf := u.signedIn(t)
	_, otherCSRF := u.signedIn(t)
	same := map[string]string{"Origin": u.base, "Sec-Fetch-Site": "same-origin"}
	cases := []struct {
		name   string
		form   url.Values
		header map[string]string
		want   int
	}{
		{"no token", url.Values{}, same, http.StatusForbidden},
		{"empty token", url.Values{"csrf": {""}}, same, http.StatusForbidden},
		{"another session's token", url.Values{"csrf": {otherCSRF}}, same, http.StatusForbidden},
		{"cross-site, with the token", url.Values{"csrf": {csrf}}, map[string]string{"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		{"same-site other origin, with the token", url.Values{"csrf": {csrf}}, map[string]string{"Origin": "http://localhost:1", "Sec-Fetch-Site": "same-site"}, http.StatusForbidden},
		{"an old browser's other Origin, with the token", url.Values{"csrf": {csrf}}, map[string]string{"Origin": "http://evil.example"}, http.StatusForbidden},
		{"null Origin, with the token", url.Values{"csrf": {csrf}}, map[string]string{"Origin": "null"}, http.StatusForbidden},
		{"token in the header, cross-site", url.Values{}, map[string]string{"X-CSRF-Token": csrf, "Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := u.post(t, c, "/ui/signout", tc.form, tc.header)
			if resp.StatusCode != tc.want {
				t.Errorf("%s: want %d\n%s", resp.Status, tc.want, body)
			}
			// Still signed in: the change did not happen.
			if resp, _ := u.get(t, c, "/ui/modules"); resp.StatusCode != http.StatusOK {
				t.Fatalf("the refused sign-out signed out: %s", resp.Status)
			}
		})
	}
	// An oversized form is refused, not read.
	big := url.Values{"csrf": {csrf}, "pad": {strings.Repeat("a", 1<<20)}}
	if resp, _ := u.post(t, c, "/ui/signout", big, same); resp.StatusCode != http.StatusForbidden {
		t.Errorf("1 MiB form: %s, want 403 (the token is not read past the form limit)", resp.Status)
	}
	// The dashboard's own form: signed out.
	if resp, _ := u.post(t, c, "/ui/signout", url.Values{"csrf": {csrf}}, same); resp.StatusCode != http.StatusOK {
		t.Fatalf("own sign-out: %s", resp.Status)
	}
	if resp, _ := u.get(t, c, "/ui/modules"); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("after sign-out: %s", resp.Status)
	}
}

// TestForgedHost: a request through another host name (DNS rebinding: a
// page of evil.example whose name now resolves to 127.0.0.1) is refused by
// the daemon, session or not, and a sign-in through it uses no code.
func TestForgedHost(t *testing.T) {
	u := newUI(t, nil)
	c, csrf := u.signedIn(t)
	_, port, _ := strings.Cut(strings.TrimPrefix(u.base, "http://"), ":")
	link, _ := u.client.UISignIn(context.Background())
	for _, host := range []string{"evil.example:" + port, "evil.example", "127.0.0.1.nip.io:" + port, "127.0.0.1:1"} {
		for _, p := range []string{"/ui/modules", "/ui/audit/stream?after=0", strings.TrimPrefix(link.URL, u.base)} {
			req, _ := http.NewRequest(http.MethodGet, u.base+p, nil)
			req.Host = host
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusForbidden {
				t.Errorf("GET %s with Host %s: %s, want 403", p, host, resp.Status)
			}
		}
		if resp, _ := u.post(t, c, "/ui/signout", url.Values{"csrf": {csrf}}, map[string]string{"Host": host}); resp.StatusCode != http.StatusForbidden {
			t.Errorf("POST with Host %s: %s, want 403", host, resp.Status)
		}
	}
	if resp, err := browser(t).Get(link.URL); err != nil || resp.StatusCode != http.StatusSeeOther {
		t.Errorf("the link after the refusals: %v %v (a refused request must not use the code)", resp, err)
	}
	// localhost is the daemon's own name.
	if resp, _ := u.get(t, c, "/ui/modules"); resp.StatusCode != http.StatusOK {
		t.Errorf("own host: %s", resp.Status)
	}
}

// TestNoFramingAndNoInlineScript: every answer forbids framing by any
// origin and inline script, and sends no Referer; pages are not cached.
func TestNoFramingAndNoInlineScript(t *testing.T) {
	u := newUI(t, nil)
	c, _ := u.signedIn(t)
	for _, p := range []string{"/ui/modules", "/ui/modules/" + probeID, "/ui/audit", "/ui/runs", "/ui/llm", "/ui/approvals", "/ui/teams", "/ui/advisories", "/ui/nope", ui.SignInPath, "/ui/static/ui.css"} {
		resp, body := u.get(t, c, p)
		h := resp.Header
		csp := h.Get("Content-Security-Policy")
		if h.Get("X-Frame-Options") != "DENY" || !strings.Contains(csp, "frame-ancestors 'none'") || !strings.Contains(csp, "script-src 'self'") ||
			strings.Contains(csp, "unsafe-inline") || h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Referrer-Policy") != "no-referrer" {
			t.Errorf("%s: headers %v", p, h)
		}
		if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
			if h.Get("Cache-Control") != "no-store" {
				t.Errorf("%s: Cache-Control %q", p, h.Get("Cache-Control"))
			}
			// No inline script or handler the CSP would have to allow.
			if strings.Contains(body, "<script>") || strings.Contains(body, " onclick=") || strings.Contains(body, "style=\"") {
				t.Errorf("%s has inline script or style:\n%s", p, body)
			}
		}
	}
	// Only the dashboard's own files are served from static/.
	for _, p := range []string{"/ui/static/vendor/PINNED", "/ui/static/vendor/update", "/ui/static/../ui.go"} {
		if resp, _ := u.get(t, c, p); resp.StatusCode == http.StatusOK {
			t.Errorf("%s: %s", p, resp.Status)
		}
	}
}

// TestModuleTextIsEscaped: a module's description, its commands'
// descriptions and the targets and reasons of its decisions are text on
// every page and in the live tail, never markup.
func TestModuleTextIsEscaped(t *testing.T) {
	u := newUI(t, nil)
	ctx := context.Background()
	// A denial whose target is the module's own choice.
	// (The probe reports the refusal in its output; the call succeeds.)
	if _, err := u.client.Run(ctx, probeID, probe.Command, probe.Run(probe.HTTP("GET", "https://xaaa.example/<script>alert(3)</script>")), hostile); err != nil {
		t.Fatal(err)
	}
	if err := u.st.Store.AppendAudit(ctx, []sandbox.Decision{{Time: time.Now(), Module: probeID, Command: hostile, Capability: sandbox.Network, Target: hostile, Reason: hostile, Trace: hostile}}); err != nil {
		t.Fatal(err)
	}
	c, _ := u.signedIn(t)
	for _, p := range []string{"/ui/modules", "/ui/modules/" + probeID, "/ui/audit", "/ui/audit?module=" + url.QueryEscape(probeID) + "&result=denied"} {
		resp, body := u.get(t, c, p)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %s", p, resp.Status)
		}
		if strings.Contains(body, "<script>alert") || strings.Contains(body, "<img src=x") {
			t.Errorf("%s prints module text as markup:\n%s", p, body)
		}
		if !strings.Contains(body, "&lt;script&gt;alert(") {
			t.Errorf("%s does not show the module's text (escaped):\n%s", p, body)
		}
	}
	// The live tail: the row arrives escaped too.
	req, _ := http.NewRequest(http.MethodGet, u.base+"/ui/audit/stream?after=0", nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("stream: %s %s", resp.Status, resp.Header.Get("Content-Type"))
	}
	sc := bufio.NewScanner(resp.Body)
	var data strings.Builder
	for sc.Scan() && !strings.Contains(data.String(), "alert(1)") {
		if l, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			data.WriteString(l + "\n")
		}
	}
	if d := data.String(); strings.Contains(d, "<script>alert") || !strings.Contains(d, "&lt;script&gt;alert(1)") {
		t.Errorf("stream data:\n%s", d)
	}
}

// TestSignInLinkNeedsTheToken: only a caller with the daemon's token gets
// a link; a web page cannot ask for one.
func TestSignInLinkNeedsTheToken(t *testing.T) {
	u := newUI(t, nil)
	for _, h := range []map[string]string{nil, {"Authorization": "Bearer wrong"}, {"Authorization": "Bearer " + u.daemon.Token(), "Origin": "http://evil.example"}} {
		resp, body := u.post(t, browser(t), "/v1/ui/signin", nil, h)
		if resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden || strings.Contains(body, "code=") {
			t.Errorf("POST /v1/ui/signin with %v: %s %s", h, resp.Status, body)
		}
	}
	var _ daemon.UI = u.ui // the dashboard is what the daemon serves
}
