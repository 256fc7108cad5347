package ui_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/station-dev/station/internal/daemon"
	"github.com/station-dev/station/internal/fixture"
	"github.com/station-dev/station/internal/probe"
	"github.com/station-dev/station/internal/station"
	"github.com/station-dev/station/internal/ui"
	"github.com/station-dev/station/internal/wasmbuild"
	"github.com/station-dev/station/internal/workflow"
)

// hostile is module-controlled text that would run script if a page
// printed it as markup.
const hostile = `<script>alert(1)</script><img src=x onerror=alert(2)>"'&`

// probeID is the module newUI installs: the probe, its description and
// command description hostile.
const probeID = "test/probe"

// testUI is a station home with the probe installed and a daemon serving
// its dashboard on a loopback port, as station serve does.
type testUI struct {
	home   string
	st     *station.Station
	ui     *ui.Server
	daemon *daemon.Server
	base   string // http://127.0.0.1:PORT
	client *daemon.Client

	mu  sync.Mutex
	now time.Time // the dashboard's clock; zero: time.Now

	stop func() // stops the daemon, once
}

// stopDaemon stops u's daemon and waits for Serve to return.
func stopDaemon(t testing.TB, u *testUI) {
	t.Helper()
	u.stop()
}

func (u *testUI) clock() time.Time {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.now.IsZero() {
		return time.Now()
	}
	return u.now
}

// advance moves the dashboard's clock d past the real one.
func (u *testUI) advance(d time.Duration) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.now = time.Now().Add(d)
}

// newUI starts a dashboard; opt, if set, changes its options.
func newUI(t testing.TB, opt func(*ui.Options)) *testUI {
	t.Helper()
	u := &testUI{home: t.TempDir()}
	st, err := station.Open(context.Background(), u.home, station.Options{Cache: wasmbuild.CacheForTest()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close(context.Background()) })
	u.st = st
	installProbe(t, st)
	wfs, err := workflow.NewService(context.Background(), st, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	o := ui.Options{Station: st, Workflows: wfs, Version: "test", Now: u.clock, Poll: 20 * time.Millisecond}
	if opt != nil {
		opt(&o)
	}
	if u.ui, err = ui.New(o); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(u.ui.Close)
	if u.daemon, err = daemon.New(daemon.Options{Station: st, Version: "test", UI: u.ui}); err != nil {
		t.Fatal(err)
	}
	ln, err := daemon.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u.base = "http://" + ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- u.daemon.Serve(ctx, ln, 5*time.Second) }()
	u.stop = sync.OnceFunc(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	t.Cleanup(u.stop)
	fixture.Eventuallyf(t, 10*time.Second, func() bool {
		_, err := os.Stat(filepath.Join(u.home, daemon.StateFile))
		return err == nil
	}, "the state file")
	if u.client, err = daemon.Dial(context.Background(), u.home); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { u.client.Close() })
	return u
}

// installProbe installs the probe as probeID, allowed api.stripe.com,
// with hostile text where a manifest has free text.
func installProbe(t testing.TB, st *station.Station) {
	t.Helper()
	dir := t.TempDir()
	m := fmt.Sprintf("id: %s\nversion: \"1.0.0\"\ndescription: %q\nwasm: module.wasm\ncommands:\n  - name: %s\n    description: %q\nrequires:\n  network:\n    allow: [api.stripe.com]\n",
		probeID, hostile, probe.Command, hostile)
	if err := os.WriteFile(filepath.Join(dir, "module.yaml"), []byte(m), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "module.wasm"), probe.Wasm(t), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Install(context.Background(), dir, func(station.Plan) (bool, error) { return true, nil }); err != nil {
		t.Fatal(err)
	}
}

// browser is an HTTP client that keeps cookies and does not follow
// redirects, so that a test sees each answer.
func browser(t testing.TB) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar, Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// signedIn returns a browser signed in to u's dashboard with a fresh
// one-time link from the API, and the session's CSRF token.
func (u *testUI) signedIn(t testing.TB) (*http.Client, string) {
	t.Helper()
	link, err := u.client.UISignIn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	c := browser(t)
	resp, err := c.Get(link.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-in: %s, want 303", resp.Status)
	}
	_, body := u.get(t, c, "/ui/modules")
	return c, csrfOf(t, body)
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func csrfOf(t testing.TB, page string) string {
	t.Helper()
	m := csrfField.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no CSRF token in the page:\n%s", page)
	}
	return m[1]
}

// get fetches path with c and returns the response and its body.
func (u *testUI) get(t testing.TB, c *http.Client, path string) (*http.Response, string) {
	t.Helper()
	resp, err := c.Get(u.base + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

// post sends a form to path with c, with extra headers.
func (u *testUI) post(t testing.TB, c *http.Client, path string, form url.Values, header map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, u.base+path, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range header {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}
