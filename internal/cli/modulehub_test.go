package cli_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/cli"
)

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
// for a new host, is older, or is signed by a key not pinned, waits for
// approval with the difference shown while the old version keeps running.
// show says where the module came from; a module installed from a directory
// is replaced by the hub's version with one install.
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
	from := func(want string) {
		t.Helper()
		if r := station(t, home, "", "module", "show", "dave/hello").want(t, 0); !strings.Contains(r.out, "\nfrom       "+want) {
			t.Errorf("module show does not say it is from %s:\n%s", want, r.out)
		}
	}
	from("hub " + h.URL + ", signed by key ")
	var shown struct{ Source map[string]string }
	json.Unmarshal([]byte(station(t, home, "", "module", "show", "--json", "dave/hello").want(t, 0).out), &shown)
	if shown.Source["kind"] != "hub" || shown.Source["hub"] != h.URL || len(shown.Source["key_id"]) != 16 {
		t.Errorf("module show --json source: %v", shown.Source)
	}
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
	// To exactly a version: an older one asks first (a downgrade).
	r = tr.add(station(t, home, "", "module", "upgrade", "dave/hello@1.1.0")).want(t, cli.ExitDeclined)
	if !strings.Contains(r.err, "IS AN OLDER VERSION (1.1.0) than the installed 1.2.0") {
		t.Errorf("downgrade without approval:\n%s", r.err)
	}
	if r := tr.add(station(t, home, "", "module", "upgrade", "--yes", "dave/hello@1.1.0")).want(t, 0); !strings.Contains(r.out, "downgraded dave/hello 1.2.0 -> 1.1.0") {
		t.Errorf("approved downgrade: %s", r.out)
	}
	var ups []map[string]string
	json.Unmarshal([]byte(tr.add(station(t, home, "", "module", "upgrade", "--json", "--yes", "dave/hello@1.2.0")).want(t, 0).out), &ups)
	if len(ups) != 1 || ups[0]["status"] != "upgraded" || ups[0]["from"] != "1.1.0" || ups[0]["to"] != "1.2.0" {
		t.Errorf("upgrade --json to exactly 1.2.0: %v", ups)
	}

	// A new publisher key (the old one lost, or stolen and replaced):
	// asks, even with nothing else new.
	other := filepath.Join(t.TempDir(), "other.pem")
	tr.add(station(t, home, "", "hub", "key", "create", "--key", other)).want(t, 0)
	publish("1.3.0", []string{"--key", other}, "api.stripe.com")
	r = tr.add(station(t, home, "", "module", "upgrade")).want(t, cli.ExitDeclined)
	if !strings.Contains(r.err, "IS SIGNED BY KEY") || !strings.Contains(r.err, "not the key pinned for dave") {
		t.Errorf("upgrade signed by another key:\n%s", r.err)
	}
	if v := version(); v != "1.2.0" {
		t.Errorf("after a declined key change the installed version is %s, want 1.2.0", v)
	}
	greets()

	// A module installed from a directory is not upgraded; one install of
	// the hub's version replaces it, asking first.
	dir := moduleAs(t, "hello", "dave/hello", "9.9.9")
	tr.add(station(t, home, "", "module", "install", "--yes", dir)).want(t, 0)
	from("directory " + dir + "\n")
	r = tr.add(station(t, home, "", "module", "upgrade", "dave/hello")).want(t, cli.ExitError)
	if !strings.Contains(r.err, "it was not installed from a hub") || !strings.Contains(r.err, "station module install OWNER/SLUG@VERSION") {
		t.Errorf("upgrade of a directory install:\n%s", r.err)
	}
	r = tr.add(station(t, home, "", "module", "install", "dave/hello@1.2.0")).want(t, cli.ExitUsage)
	if !strings.Contains(r.err, "REPLACES dave/hello@9.9.9, which was not installed from "+h.URL) || version() != "9.9.9" {
		t.Errorf("the hub's version in place of a directory's, without --yes:\n%s", r.err)
	}
	if r := tr.add(station(t, home, "", "module", "install", "--yes", "dave/hello@1.2.0")).want(t, 0); !strings.Contains(r.out, "installed dave/hello@1.2.0") || !strings.Contains(r.out, "replacing 9.9.9") {
		t.Errorf("the hub's version in place of a directory's: %s", r.out)
	}
	from("hub " + h.URL)
	if v := version(); v != "1.2.0" {
		t.Errorf("after the replacing install the installed version is %s, want 1.2.0", v)
	}
	noSecrets(t, tr, hubLog, []string{home}, token)
}
