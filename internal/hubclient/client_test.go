package hubclient_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/hubclient"
	"github.com/station-dev/station/internal/hubserver/hubtest"
)

var ctx = context.Background()

// rewrite is a man in the middle: it passes requests to the hub and lets
// edit change the answer to any path it names.
type rewrite struct {
	next http.RoundTripper
	edit map[string]func(body []byte) []byte // by path suffix
}

func (m *rewrite) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := m.next.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	for suffix, edit := range m.edit {
		if strings.HasSuffix(r.URL.Path, suffix) {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			body = edit(body)
			resp.Body = io.NopCloser(bytes.NewReader(body))
			resp.ContentLength = int64(len(body))
			resp.Header.Del("Content-Length")
		}
	}
	return resp, nil
}

// editJSON decodes into a v, lets change edit it, and encodes it again.
func editJSON[T any](change func(*T)) func([]byte) []byte {
	return func(b []byte) []byte {
		var v T
		if err := json.Unmarshal(b, &v); err != nil {
			panic(err)
		}
		change(&v)
		out, _ := json.Marshal(v)
		return out
	}
}

// TestFetchRefusesTampering: whatever a hostile hub or network changes in
// what a station downloads, the install is refused with the reason.
func TestFetchRefusesTampering(t *testing.T) {
	h := hubtest.Start(t)
	dave, key := h.Publisher(t, "dave")
	man := hubtest.Manifest("dave/x", "1.0.0", "api.stripe.com")
	b100, err := hubclient.NewBundle(man, hubtest.Wasm("1.0.0"), key)
	if err != nil {
		t.Fatal(err)
	}
	v100, err := dave.Publish(ctx, b100)
	if err != nil {
		t.Fatal(err)
	}
	b110, _ := hubclient.NewBundle(hubtest.Manifest("dave/x", "1.1.0", "api.stripe.com"), hubtest.Wasm("1.1.0"), key)
	if _, err := dave.Publish(ctx, b110); err != nil {
		t.Fatal(err)
	}
	evil, _ := hubclient.GenerateSigner()
	resign := func(b *hub.Bundle) {
		nb, err := hubclient.NewBundle(b.Manifest, b.Wasm, evil)
		if err != nil {
			panic(err)
		}
		*b = *nb
	}

	tests := []struct {
		name    string
		version string
		edit    map[string]func([]byte) []byte
		opts    hubclient.FetchOptions
		code    hub.Code
		msg     string
	}{
		{"wasm byte flipped", "1.0.0", map[string]func([]byte) []byte{"/bundle": editJSON(func(b *hub.Bundle) { b.Wasm[len(b.Wasm)-1] ^= 1 })}, hubclient.FetchOptions{}, hub.CodeSignatureInvalid, "does not match"},
		{"permissions widened", "1.0.0", map[string]func([]byte) []byte{"/bundle": editJSON(func(b *hub.Bundle) {
			b.Manifest = bytes.Replace(b.Manifest, []byte("api.stripe.com"), []byte("evil.example.com"), 1)
		})}, hubclient.FetchOptions{}, hub.CodeSignatureInvalid, "does not match"},
		{"an older signed version served for a newer one", "1.1.0", map[string]func([]byte) []byte{"/versions/1.1.0/bundle": func([]byte) []byte {
			out, _ := json.Marshal(b100)
			return out
		}}, hubclient.FetchOptions{}, hub.CodeBundleInvalid, "served dave/x@1.0.0 instead"},
		{"listed digest is not the bundle's", "1.0.0", map[string]func([]byte) []byte{"/versions/1.0.0": editJSON(func(v *hub.Version) { v.WasmDigest = hub.Digest([]byte("other")) })}, hubclient.FetchOptions{}, hub.CodeDigestMismatch, "wasm digest"},
		{"listed version names another module", "1.0.0", map[string]func([]byte) []byte{"/versions/1.0.0": editJSON(func(v *hub.Version) { v.Module = "\x1b[3A\x1b[Jtrusted/tool" })}, hubclient.FetchOptions{}, hub.CodeBundleInvalid, "the hub's record"},
		{"listed version is another version", "1.0.0", map[string]func([]byte) []byte{"/versions/1.0.0": editJSON(func(v *hub.Version) { v.Version = "9.9.9" })}, hubclient.FetchOptions{}, hub.CodeBundleInvalid, "the hub's record"},
		{"listed size is not the bundle's", "1.0.0", map[string]func([]byte) []byte{"/versions/1.0.0": editJSON(func(v *hub.Version) { v.WasmSize++ })}, hubclient.FetchOptions{}, hub.CodeDigestMismatch, "bytes"},
		{"pin differs", "1.0.0", nil, hubclient.FetchOptions{Pin: &hubclient.Pin{ManifestDigest: v100.ManifestDigest, WasmDigest: hub.Digest([]byte("pinned"))}}, hub.CodeDigestMismatch, "the pin is"},
		{"re-signed by the hub with a key it lists, keys pinned", "1.0.0", map[string]func([]byte) []byte{
			"/bundle": editJSON(resign),
			"/keys": func([]byte) []byte {
				out, _ := json.Marshal([]hub.Key{{ID: evil.PublicKey().ID.String(), Account: "dave", PublicKey: evil.PublicKey().String()}})
				return out
			},
		}, hubclient.FetchOptions{TrustedKeys: []hub.PublicKey{key.PublicKey()}}, hub.CodeKeyUnknown, "not one of the keys trusted"},
		{"re-signed by a key the hub does not list", "1.0.0", map[string]func([]byte) []byte{"/bundle": editJSON(resign)}, hubclient.FetchOptions{}, hub.CodeKeyUnknown, "does not list"},
		{"listed key revoked", "1.0.0", map[string]func([]byte) []byte{"/keys": editJSON(func(ks *[]hub.Key) {
			at := (*ks)[0].CreatedAt
			(*ks)[0].RevokedAt = &at
		})}, hubclient.FetchOptions{}, hub.CodeKeyRevoked, "revoked"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hc := &http.Client{Transport: &rewrite{next: &http.Transport{}, edit: tt.edit}}
			c, err := hubclient.New(h.URL, hc, hubclient.Options{})
			if err != nil {
				t.Fatal(err)
			}
			p, err := c.Fetch(ctx, "dave/x", tt.version, tt.opts)
			var ve *hubclient.VerifyError
			if p != nil || !errors.As(err, &ve) || hub.CodeOf(err) != tt.code || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("Fetch = %v (code %d), want a VerifyError with code %d saying %q", err, hub.CodeOf(err), tt.code, tt.msg)
			}
		})
	}
	// Untouched, the same fetch passes, also with dave's key pinned.
	p, err := h.Client(t, "").Fetch(ctx, "dave/x", "1.1.0", hubclient.FetchOptions{TrustedKeys: []hub.PublicKey{key.PublicKey()}})
	if err != nil || p.Version.Version != "1.1.0" {
		t.Errorf("untampered fetch = %v", err)
	}
}

// TestOversizedAnswerRefused: the client reads no more than it expects.
func TestOversizedAnswerRefused(t *testing.T) {
	h := hubtest.Start(t)
	dave, key := h.Publisher(t, "dave")
	b, _ := hubclient.NewBundle(hubtest.Manifest("dave/x", "1.0.0"), hubtest.Wasm("x"), key)
	dave.Publish(ctx, b)
	huge := map[string]func([]byte) []byte{"/bundle": func([]byte) []byte { return bytes.Repeat([]byte(" "), 2<<20) }}
	c, _ := hubclient.New(h.URL, &http.Client{Transport: &rewrite{next: &http.Transport{}, edit: huge}}, hubclient.Options{})
	if _, err := c.Fetch(ctx, "dave/x", "1.0.0", hubclient.FetchOptions{}); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("Fetch of a 2 MiB answer for a 1-byte module = %v", err)
	}
}

// TestNoRedirects: a token is sent only to the hub the client was given,
// never to where a redirect points.
func TestNoRedirects(t *testing.T) {
	var leaked atomic.Bool
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			leaked.Store(true)
		}
	}))
	defer elsewhere.Close()
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, elsewhere.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	defer redirector.Close()
	token := hub.TokenPrefix + strings.Repeat("S", 43)
	c, err := hubclient.New(redirector.URL, &http.Client{Transport: &http.Transport{}}, hubclient.Options{Token: token})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.WhoAmI(ctx)
	if err == nil || !strings.Contains(err.Error(), "redirect") {
		t.Errorf("WhoAmI through a redirect = %v", err)
	}
	if leaked.Load() {
		t.Error("the token was sent to the redirect's target")
	}
	if strings.Contains(err.Error(), token) {
		t.Error("the error repeats the token")
	}
}

// failing is a transport that must never be used.
type failing struct{ used atomic.Bool }

func (f *failing) RoundTrip(*http.Request) (*http.Response, error) {
	f.used.Store(true)
	return nil, errors.New("http.DefaultTransport must not be used")
}

// TestUsesOnlyTheGivenClient: every request, the event stream included,
// goes through the client the caller gave — never http.DefaultTransport or
// any other process-wide client.
func TestUsesOnlyTheGivenClient(t *testing.T) {
	h := hubtest.Start(t)
	tok := h.Account(t, "dave")
	def := &failing{}
	saved := http.DefaultTransport
	http.DefaultTransport = def
	t.Cleanup(func() { http.DefaultTransport = saved })

	var n atomic.Int64
	counting := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		n.Add(1)
		return saved.RoundTrip(r)
	})
	c, err := hubclient.New(h.URL, &http.Client{Transport: counting}, hubclient.Options{Token: tok})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateTeam(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Sync(ctx, 0, 0); err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithCancel(ctx)
	got := make(chan hub.Event, 1)
	go c.Subscribe(sctx, hubclient.SubscribeOptions{}, func(ev hub.Event) error { got <- ev; cancel(); return nil })
	if ev := <-got; ev.Kind != hub.EventTeamCreated {
		t.Errorf("stream event = %+v", ev)
	}
	if def.used.Load() {
		t.Error("a request went through http.DefaultTransport")
	}
	if n.Load() < 3 {
		t.Errorf("%d requests went through the given client, want 3", n.Load())
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestSignerFile(t *testing.T) {
	dir := t.TempDir()
	s, err := hubclient.GenerateSigner()
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "hub.key")
	if err := s.Save(file); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(file); fi.Mode().Perm() != 0o600 {
		t.Errorf("key file mode %04o, want 0600", fi.Mode().Perm())
	}
	if err := s.Save(file); err == nil {
		t.Error("Save overwrote an existing key file")
	}
	got, err := hubclient.LoadSigner(file)
	if err != nil || got.PublicKey().String() != s.PublicKey().String() {
		t.Fatalf("LoadSigner = %v, %v", got, err)
	}
	os.Chmod(file, 0o644)
	if _, err := hubclient.LoadSigner(file); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("LoadSigner of a world-readable key = %v", err)
	}
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, _ := x509.MarshalPKCS8PrivateKey(ec)
	if _, err := hubclient.ParseSigner(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})); err == nil {
		t.Error("ParseSigner accepted an ECDSA key")
	}
	if _, err := hubclient.ParseSigner([]byte("not pem")); err == nil {
		t.Error("ParseSigner accepted garbage")
	}
}

// TestModuleDirRoundTrip: a fetched package written with WriteDir reads
// back as the same module; ReadModuleDir does not leave the directory.
func TestModuleDirRoundTrip(t *testing.T) {
	h := hubtest.Start(t)
	dave, key := h.Publisher(t, "dave")
	man := []byte(strings.Replace(string(hubtest.Manifest("dave/x", "1.0.0")), "wasm: module.wasm", "wasm: build/out/x.wasm", 1))
	b, err := hubclient.NewBundle(man, hubtest.Wasm("x"), key)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dave.Publish(ctx, b); err != nil {
		t.Fatal(err)
	}
	p, err := h.Client(t, "").Fetch(ctx, "dave/x", "1.0.0", hubclient.FetchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := p.WriteDir(dir); err != nil {
		t.Fatal(err)
	}
	gotMan, gotWasm, err := hubclient.ReadModuleDir(dir)
	if err != nil || !bytes.Equal(gotMan, man) || !bytes.Equal(gotWasm, p.Wasm) {
		t.Fatalf("ReadModuleDir after WriteDir = %v", err)
	}

	// A wasm path that is a symlink out of the directory is not followed.
	outside := filepath.Join(t.TempDir(), "secret.wasm")
	os.WriteFile(outside, hubtest.Wasm("secret"), 0o600)
	esc := t.TempDir()
	os.WriteFile(filepath.Join(esc, "module.yaml"), hubtest.Manifest("dave/x", "1.0.0"), 0o600)
	os.Symlink(outside, filepath.Join(esc, "module.wasm"))
	if _, _, err := hubclient.ReadModuleDir(esc); err == nil {
		t.Error("ReadModuleDir followed a symlink out of the module directory")
	}
	empty := t.TempDir()
	os.WriteFile(filepath.Join(empty, "module.yaml"), hubtest.Manifest("dave/x", "1.0.0"), 0o600)
	if _, _, err := hubclient.ReadModuleDir(empty); err == nil || !strings.Contains(err.Error(), "station module build") {
		t.Errorf("ReadModuleDir without a wasm = %v, want a hint to build", err)
	}
}

// TestParseRef covers owner/slug[@version].
func TestParseRef(t *testing.T) {
	tests := []struct{ in, id, version string }{
		{"dave/x", "dave/x", ""},
		{"dave/x@1.2.3", "dave/x", "1.2.3"},
		{"dave/x@v1", "", ""},
		{"dave", "", ""},
		{"dave/x@", "", ""},
	}
	for _, tt := range tests {
		id, v, err := hubclient.ParseRef(tt.in)
		if fmt.Sprint(id, v) != fmt.Sprint(tt.id, tt.version) || (tt.id == "") != (err != nil) {
			t.Errorf("ParseRef(%q) = %q, %q, %v", tt.in, id, v, err)
		}
	}
}

// BenchmarkFetch4MiB measures a station's download and verification of a
// 4 MiB module (version, bundle, keys, signature and digests).
func BenchmarkFetch4MiB(b *testing.B) {
	h := hubtest.Start(b)
	dave, key := h.Publisher(b, "dave")
	wasm := hubtest.Module(hubtest.WasmSpec{Pad: 4 << 20})
	bundle, _ := hubclient.NewBundle(hubtest.Manifest("dave/big", "1.0.0"), wasm, key)
	if _, err := dave.Publish(ctx, bundle); err != nil {
		b.Fatal(err)
	}
	c := h.Client(b, "")
	b.SetBytes(int64(len(wasm)))
	b.ResetTimer()
	for range b.N {
		if _, err := c.Fetch(ctx, "dave/big", "1.0.0", hubclient.FetchOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestPathSegmentsEscaped: a value with a slash stays one path segment.
func TestPathSegmentsEscaped(t *testing.T) {
	h := hubtest.Start(t)
	c := h.Client(t, h.Account(t, "dave"))
	err := c.RevokeToken(ctx, "../keys/0000000000000000")
	if hub.CodeOf(err) != hub.CodeTokenNotFound {
		t.Errorf("RevokeToken(a path) = %v, want token_not_found", err)
	}
	_, err = c.Keys(ctx, "dave/../../v1/whoami")
	if hub.CodeOf(err) != hub.CodeInvalidName {
		t.Errorf("Keys(a path) = %v, want invalid_name", err)
	}
}

// TestPlainHTTPOnlyToLoopback: plain http is accepted only for a hub on
// this machine (stationhttp.IsLoopback), however localhost is spelled.
func TestPlainHTTPOnlyToLoopback(t *testing.T) {
	hc := &http.Client{}
	for url, ok := range map[string]bool{
		"http://127.0.0.1:7777":    true,
		"http://LOCALHOST.:7777":   true,
		"http://[::1]:7777/hub":    true,
		"http://0.0.0.0:7777":      false,
		"http://hub.example.com":   false,
		"http://localhost.example": false,
		"https://hub.example.com":  true,
	} {
		_, err := hubclient.New(url, hc, hubclient.Options{})
		if (err == nil) != ok {
			t.Errorf("New(%s) = %v, want accepted %v", url, err, ok)
		}
	}
}

// TestURLIsOneSpelling: the hub's URL is its identity on a station (its
// advisories, the origins of the modules installed from it and the keys
// pinned for it are stored under it), so every spelling of one hub is one
// URL: the host in lower case, no default port, no trailing slash. A
// login typed another way would otherwise store the hub's advisories
// apart from the modules they are about, and run those unchecked.
func TestURLIsOneSpelling(t *testing.T) {
	hc := &http.Client{}
	for in, want := range map[string]string{
		"https://HUB.Example.COM":           "https://hub.example.com",
		"HTTPS://hub.example.com:443//":     "https://hub.example.com",
		"https://hub.example.com:8443/Hub/": "https://hub.example.com:8443/Hub",
		"http://127.0.0.1:80/":              "http://127.0.0.1",
		"http://LocalHost:7777":             "http://localhost:7777",
		"https://[::1]:443/":                "https://[::1]",
	} {
		c, err := hubclient.New(in, hc, hubclient.Options{})
		if err != nil || c.URL() != want {
			var got string
			if c != nil {
				got = c.URL()
			}
			t.Errorf("New(%s).URL() = %q, %v; want %q", in, got, err, want)
		}
	}
}
