package cli_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/cli"
	"github.com/station-dev/station/internal/hubserver"
	"github.com/station-dev/station/internal/hubserver/hubtest"
	"github.com/station-dev/station/internal/hubsync"
)

// transcript collects every output of the CLI runs of a test, so that a
// test can check that no secret ever appeared in any of them.
type transcript struct {
	mu  sync.Mutex
	all strings.Builder
}

func (tr *transcript) add(r result) result {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.all.WriteString(r.out)
	tr.all.WriteString(r.err)
	return r
}

func (tr *transcript) String() string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.all.String()
}

// noSecrets fails if any secret appears in the transcript, in what the hub
// logged, or in the station logs of homes.
func noSecrets(t *testing.T, tr *transcript, hubLog *lockedBuffer, homes []string, secrets ...string) {
	t.Helper()
	texts := map[string]string{"command output": tr.String()}
	if hubLog != nil {
		texts["hub log"] = hubLog.String()
	}
	for _, h := range homes {
		b, _ := os.ReadFile(filepath.Join(h, "station.log"))
		texts[filepath.Join(h, "station.log")] = string(b)
	}
	for name, text := range texts {
		for _, s := range secrets {
			if s != "" && strings.Contains(text, s) {
				t.Errorf("a secret (%.8s…) appears in the %s", s, name)
			}
		}
	}
}

// startHub runs a hub on 127.0.0.1 whose request log the test can read.
func startHub(t *testing.T) (*hubtest.Hub, *lockedBuffer) {
	var log lockedBuffer
	h := hubtest.StartWith(t, func(o *hubserver.Options) {
		o.Logger = slog.New(slog.NewTextHandler(&log, nil))
	})
	return h, &log
}

// login logs home in to the hub with token, read from stdin.
func login(t *testing.T, tr *transcript, h *hubtest.Hub, home, token string) {
	t.Helper()
	r := tr.add(station(t, home, token+"\n", "hub", "login", "--url", h.URL, "--token-stdin")).want(t, 0)
	if !strings.Contains(r.out, "logged in to "+h.URL) {
		t.Fatalf("hub login: %s", r.out)
	}
}

// moduleAs builds examples/name as a module with another id, version and
// network allowlist.
func moduleAs(t *testing.T, name, id, version string, allow ...string) string {
	t.Helper()
	dir := moduleDir(t, name)
	raw, err := os.ReadFile(filepath.Join(dir, "module.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(string(raw), "\n") {
		switch {
		case strings.HasPrefix(l, "id: "):
			l = "id: " + id
		case strings.HasPrefix(l, "version: "):
			l = fmt.Sprintf("version: %q", version)
		case strings.HasPrefix(strings.TrimSpace(l), "allow: ") && allow != nil:
			l = "    allow: [" + strings.Join(allow, ", ") + "]"
		}
		lines = append(lines, l)
	}
	if err := os.WriteFile(filepath.Join(dir, "module.yaml"), []byte(strings.Join(lines, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestHubLoginBadInput: every bad input gets a clear error and changes
// nothing; the token is never echoed.
func TestHubLoginBadInput(t *testing.T) {
	h, hubLog := startHub(t)
	home := t.TempDir()
	tr := &transcript{}
	good := h.Account(t, "dave")
	bogus := hub.TokenPrefix + strings.Repeat("A", 43)
	cases := []struct {
		name  string
		stdin string
		args  []string
		code  int
		want  string
	}{
		{"no url", good, []string{"hub", "login", "--token-stdin"}, cli.ExitUsage, "--url is required"},
		{"no token", "", []string{"hub", "login", "--url", h.URL}, cli.ExitError, "no token given"},
		{"not a token", "hunter2", []string{"hub", "login", "--url", h.URL, "--token-stdin"}, cli.ExitError, "not a hub token"},
		{"revoked or unknown token", bogus, []string{"hub", "login", "--url", h.URL, "--token-stdin"}, cli.ExitError, "unauthenticated"},
		{"plain http elsewhere", good, []string{"hub", "login", "--url", "http://hub.example.com", "--token-stdin"}, cli.ExitError, "plain http is allowed only to a loopback address"},
		{"not logged in: search", "", []string{"module", "search"}, cli.ExitError, "not logged in to a hub"},
		{"not logged in: install", "", []string{"module", "install", "dave/nothing"}, cli.ExitError, "not logged in to a hub"},
		{"not logged in: team sync", "", []string{"team", "sync"}, cli.ExitError, "not logged in to a hub"},
		{"no team status", "", []string{"team", "status", "acme"}, cli.ExitError, "not a member of team acme"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := tr.add(station(t, home, c.stdin, c.args...)).want(t, c.code)
			if !strings.Contains(r.err, c.want) {
				t.Errorf("stderr does not contain %q:\n%s", c.want, r.err)
			}
			if _, err := os.Stat(filepath.Join(home, hubsync.TokenFile)); !os.IsNotExist(err) {
				t.Errorf("a refused login left %s: %v", hubsync.TokenFile, err)
			}
		})
	}

	login(t, tr, h, home, good)
	fi, err := os.Stat(filepath.Join(home, hubsync.TokenFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("token file: %v, mode %v; want 0600", err, fi.Mode().Perm())
	}
	if r := tr.add(station(t, home, "", "hub", "whoami")).want(t, 0); !strings.Contains(r.out, "dave on "+h.URL) {
		t.Errorf("whoami: %s", r.out)
	}
	// Not a module id and not a directory: a clear error, nothing installed.
	for _, ref := range []string{"dave/nothing", "dave/nothing@1.0.0"} {
		args := []string{"module", "install", "--yes", ref}
		if !strings.Contains(ref, "@") {
			args = []string{"module", "install", ref} // --yes needs the version named
		}
		r := tr.add(station(t, home, "", args...)).want(t, cli.ExitError)
		if !strings.Contains(r.err, "module_not_found") && !strings.Contains(r.err, "version_not_found") {
			t.Errorf("install %s: %s", ref, r.err)
		}
	}
	// A token file others may read is refused, not used.
	os.Chmod(filepath.Join(home, hubsync.TokenFile), 0o644)
	if r := tr.add(station(t, home, "", "hub", "whoami")).want(t, cli.ExitError); !strings.Contains(r.err, "may be read by others") {
		t.Errorf("whoami with a 0644 token file: %s", r.err)
	}
	os.Chmod(filepath.Join(home, hubsync.TokenFile), 0o600)
	tr.add(station(t, home, "", "hub", "logout")).want(t, 0)
	if _, err := os.Stat(filepath.Join(home, hubsync.TokenFile)); !os.IsNotExist(err) {
		t.Errorf("logout left the token file: %v", err)
	}
	noSecrets(t, tr, hubLog, []string{home}, good, bogus)
}

// tamper is a man in the middle between a station and the hub that
// rewrites bundles on their way to the station.
func tamper(t *testing.T, hubURL string, edit func(*hub.Bundle)) string {
	u, _ := url.Parse(hubURL)
	p := httputil.NewSingleHostReverseProxy(u)
	p.ModifyResponse = func(resp *http.Response) error {
		if !strings.HasSuffix(resp.Request.URL.Path, "/bundle") || resp.StatusCode != http.StatusOK {
			return nil
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		var b hub.Bundle
		if err := json.Unmarshal(body, &b); err != nil {
			return err
		}
		edit(&b)
		out, _ := json.Marshal(&b)
		resp.Body = io.NopCloser(bytes.NewReader(out))
		resp.ContentLength = int64(len(out))
		resp.Header.Set("Content-Length", fmt.Sprint(len(out)))
		return nil
	}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestHubInstallRefusesTamperedBundles: a bundle changed on the way is
// refused with the reason, and nothing is installed, recorded or written.
func TestHubInstallRefusesTamperedBundles(t *testing.T) {
	h, _ := startHub(t)
	pubHome := t.TempDir()
	tr := &transcript{}
	login(t, tr, h, pubHome, h.Account(t, "dave"))
	tr.add(station(t, pubHome, "", "hub", "key", "create")).want(t, 0)
	tr.add(station(t, pubHome, "", "module", "publish", moduleAs(t, "hello", "dave/hello", "1.0.0"))).want(t, 0)
	reader := h.Account(t, "erin")

	cases := []struct {
		name string
		edit func(*hub.Bundle)
		want string
	}{
		{"one wasm byte", func(b *hub.Bundle) { b.Wasm[len(b.Wasm)-1] ^= 1 }, "signature_invalid"},
		{"a wider manifest", func(b *hub.Bundle) {
			b.Manifest = bytes.Replace(b.Manifest, []byte("allow: []"), []byte("allow: [evil.example]"), 1)
		}, "signature_invalid"},
		{"another signature", func(b *hub.Bundle) { b.Signature = strings.Replace(b.Signature, "station module", "station mod", 1) }, "signature_invalid"},
		{"not a bundle", func(b *hub.Bundle) { b.Format = 2 }, "bundle_invalid"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mitm := tamper(t, h.URL, c.edit)
			home := t.TempDir()
			r := tr.add(station(t, home, reader+"\n", "hub", "login", "--url", mitm, "--token-stdin")).want(t, 0)
			r = tr.add(station(t, home, "", "module", "install", "--yes", "dave/hello@1.0.0")).want(t, cli.ExitError)
			if !strings.Contains(r.err, "refusing dave/hello@1.0.0") || !strings.Contains(r.err, c.want) {
				t.Errorf("install of a tampered bundle: stderr does not name the refusal and %s:\n%s", c.want, r.err)
			}
			if r := station(t, home, "", "module", "list", "--json").want(t, 0); strings.TrimSpace(r.out) != "[]" {
				t.Errorf("something was installed: %s", r.out)
			}
			if m, _ := filepath.Glob(filepath.Join(home, "modules", "*")); len(m) != 0 {
				t.Errorf("files were written: %v", m)
			}
			if m, _ := filepath.Glob(filepath.Join(home, ".hub-install-*")); len(m) != 0 {
				t.Errorf("a temporary install directory was left: %v", m)
			}
		})
	}
	// Through the hub itself, the same version installs.
	home := t.TempDir()
	login(t, tr, h, home, reader)
	tr.add(station(t, home, "", "module", "install", "--yes", "dave/hello@1.0.0")).want(t, 0)
}

// TestModuleUpgrade: an upgrade within the approval applies; one that asks
// for a new host, or is signed by a key not pinned, waits for approval with
// the difference shown while the old version keeps running.
func TestModuleUpgrade(t *testing.T) {
	h, hubLog := startHub(t)
	tr := &transcript{}
	token := h.Account(t, "dave")
	home := t.TempDir()
	login(t, tr, h, home, token)
	tr.add(station(t, home, "", "hub", "key", "create")).want(t, 0)
	publish := func(version string, extra []string, allow ...string) {
		t.Helper()
		args := append([]string{"module", "publish", moduleAs(t, "hello", "dave/hello", version, allow...)}, extra...)
		tr.add(station(t, home, "", args...)).want(t, 0)
	}
	version := func() string {
		t.Helper()
		var list []map[string]any
		json.Unmarshal([]byte(station(t, home, "", "module", "list", "--json").want(t, 0).out), &list)
		if len(list) != 1 {
			t.Fatalf("installed: %v", list)
		}
		return list[0]["version"].(string)
	}
	greets := func() {
		t.Helper()
		if r := station(t, home, "", "run", "dave/hello", "greet", "--input", `{"name":"Ada"}`).want(t, 0); !strings.Contains(r.out, "Hello, Ada!") {
			t.Errorf("greet: %s", r.out)
		}
	}

	publish("1.0.0", nil)
	r := tr.add(station(t, home, "", "module", "install", "dave/hello")).want(t, cli.ExitUsage)
	if !strings.Contains(r.err, "may not connect to the network") || !strings.Contains(r.err, "rerun with --yes") {
		t.Errorf("install without approval:\n%s", r.err)
	}
	tr.add(station(t, home, "", "module", "install", "--yes", "dave/hello@1.0.0")).want(t, 0)
	tr.add(station(t, home, "", "module", "upgrade")).want(t, 0)
	publish("1.1.0", nil)
	if r := tr.add(station(t, home, "", "module", "upgrade")).want(t, 0); !strings.Contains(r.out, "upgraded dave/hello 1.0.0 -> 1.1.0") {
		t.Errorf("upgrade within the approval: %s", r.out)
	}

	publish("1.2.0", nil, "api.stripe.com")
	r = tr.add(station(t, home, "", "module", "upgrade", "dave/hello")).want(t, cli.ExitDeclined)
	for _, want := range []string{"Compared with what you approved for dave/hello 1.1.0", "+ may now connect to api.stripe.com", "the installed version keeps running"} {
		if !strings.Contains(r.err, want) {
			t.Errorf("escalating upgrade: stderr does not contain %q:\n%s", want, r.err)
		}
	}
	if v := version(); v != "1.1.0" {
		t.Errorf("after a declined upgrade the installed version is %s, want 1.1.0", v)
	}
	greets()
	tr.add(station(t, home, "", "module", "upgrade", "--yes", "dave/hello")).want(t, 0)
	if v := version(); v != "1.2.0" {
		t.Errorf("after an approved upgrade the installed version is %s, want 1.2.0", v)
	}

	// A new publisher key (the old one lost, or stolen and replaced):
	// asks, even with nothing else new.
	other := filepath.Join(t.TempDir(), "other.pem")
	tr.add(station(t, home, "", "hub", "key", "create", "--file", other)).want(t, 0)
	publish("1.3.0", []string{"--key", other}, "api.stripe.com")
	r = tr.add(station(t, home, "", "module", "upgrade")).want(t, cli.ExitDeclined)
	if !strings.Contains(r.err, "IS SIGNED BY KEY") || !strings.Contains(r.err, "not the key pinned for dave") {
		t.Errorf("upgrade signed by another key:\n%s", r.err)
	}
	if v := version(); v != "1.2.0" {
		t.Errorf("after a declined key change the installed version is %s, want 1.2.0", v)
	}
	greets()
	noSecrets(t, tr, hubLog, []string{home}, token)
}
