package hubserver

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/hubserver/ocitest"
)

// blobsContract checks what every Blobs promises (blobs.go), on a store
// of its own that open returns.
func blobsContract(t *testing.T, open func(t *testing.T) Blobs) {
	ctx := context.Background()
	t.Run("put and get", func(t *testing.T) {
		t.Parallel()
		b := open(t)
		data := []byte("a manifest")
		d := hub.Digest(data)
		if err := b.Put(ctx, hub.Digest([]byte("other")), data); err == nil {
			t.Error("Put with another blob's digest succeeded")
		}
		for _, bad := range []string{"sha256:../../etc/passwd", "sha512:" + strings.Repeat("a", 128), "", strings.TrimPrefix(d, "sha256:")} {
			if err := b.Put(ctx, bad, data); err == nil {
				t.Errorf("Put(%q) succeeded", bad)
			}
			if _, err := b.Get(ctx, bad, 100); err == nil || errors.Is(err, ErrNotFound) {
				t.Errorf("Get(%q) = %v, want an error other than not found", bad, err)
			}
		}
		if _, err := b.Get(ctx, d, 100); !errors.Is(err, ErrNotFound) {
			t.Errorf("Get before Put = %v, want ErrNotFound", err)
		}
		if err := b.Put(ctx, d, data); err != nil {
			t.Fatal(err)
		}
		if err := b.Put(ctx, d, data); err != nil {
			t.Errorf("Put again: %v", err)
		}
		got, err := b.Get(ctx, d, int64(len(data)))
		if err != nil || !bytes.Equal(got, data) {
			t.Errorf("Get = %q, %v", got, err)
		}
		if _, err := b.Get(ctx, d, int64(len(data))-1); err == nil {
			t.Error("Get of a blob larger than maxSize succeeded")
		}
		r, err := b.Open(ctx, d)
		if err != nil {
			t.Fatal(err)
		}
		got, err = io.ReadAll(r)
		r.Close()
		if err != nil || !bytes.Equal(got, data) {
			t.Errorf("Open = %q, %v", got, err)
		}
		if _, err := b.Open(ctx, hub.Digest([]byte("missing"))); !errors.Is(err, ErrNotFound) {
			t.Errorf("Open(missing) = %v, want ErrNotFound", err)
		}
		empty := hub.Digest(nil)
		if err := b.Put(ctx, empty, nil); err != nil {
			t.Errorf("Put of the empty blob: %v", err)
		}
		if got, err := b.Get(ctx, empty, 0); err != nil || len(got) != 0 {
			t.Errorf("Get of the empty blob = %q, %v", got, err)
		}
	})
	t.Run("streams", func(t *testing.T) {
		t.Parallel()
		b := open(t)
		data := []byte("streamed blob")
		for i, finish := range []func(BlobWriter) error{
			func(w BlobWriter) error { w.Abort(); return nil },
			func(w BlobWriter) error { return w.Commit(hub.Digest([]byte("other"))) },
			func(w BlobWriter) error { return w.Commit("sha256:../../x") },
		} {
			w, err := b.Create(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.Write(data); err != nil {
				t.Fatal(err)
			}
			if err := finish(w); i > 0 && err == nil {
				t.Errorf("finish %d: Commit with a wrong digest succeeded", i)
			}
			w.Abort()
			if _, err := b.Get(ctx, hub.Digest(data), 100); !errors.Is(err, ErrNotFound) {
				t.Errorf("finish %d: a blob not committed is visible (%v)", i, err)
			}
			if _, err := b.Get(ctx, hub.Digest([]byte("other")), 100); !errors.Is(err, ErrNotFound) {
				t.Errorf("finish %d: a blob is visible under a digest that is not its own (%v)", i, err)
			}
		}
		w, err := b.Create(ctx)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(data[:5])
		w.Write(data[5:])
		if err := w.Commit(hub.Digest(data)); err != nil {
			t.Fatal(err)
		}
		w.Abort() // after a commit: nothing
		if err := w.Commit(hub.Digest(data)); err == nil {
			t.Error("a second Commit succeeded")
		}
		if _, err := w.Write(data); err == nil {
			t.Error("a Write after Commit succeeded")
		}
		if got, err := b.Get(ctx, hub.Digest(data), 100); err != nil || !bytes.Equal(got, data) {
			t.Errorf("committed blob = %q, %v", got, err)
		}
		// Nothing written at all is the empty blob.
		w, _ = b.Create(ctx)
		if err := w.Commit(hub.Digest(nil)); err != nil {
			t.Errorf("commit of nothing: %v", err)
		}
	})
	t.Run("large stream", func(t *testing.T) {
		t.Parallel()
		b := open(t)
		big := make([]byte, 6<<20+123)
		rand.Read(big)
		w, err := b.Create(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for p := big; len(p) > 0; {
			n := min(len(p), 32<<10)
			if _, err := w.Write(p[:n]); err != nil {
				t.Fatal(err)
			}
			p = p[n:]
		}
		if err := w.Commit(hub.Digest(big)); err != nil {
			t.Fatal(err)
		}
		r, err := b.Open(ctx, hub.Digest(big))
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(r)
		r.Close()
		if err != nil || !bytes.Equal(got, big) {
			t.Errorf("Open of a %d-byte blob: %d bytes, %v", len(big), len(got), err)
		}
	})
}

func TestBlobDirContract(t *testing.T) {
	blobsContract(t, func(t *testing.T) Blobs {
		b, err := OpenBlobDir(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return b
	})
}

// openOCI opens a repository of t's own in the test registry.
func openOCI(t *testing.T) *OCIRegistry {
	t.Helper()
	r, err := OpenOCI(context.Background(), ocitest.URL(t), OCIOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestOCIContract(t *testing.T) {
	blobsContract(t, func(t *testing.T) Blobs { return openOCI(t) })
}

// TestOpenBlobs: a directory, a registry, and what is neither.
func TestOpenBlobs(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir() + "/blobs"
	if b, err := OpenBlobs(ctx, dir); err != nil {
		t.Error(err)
	} else if _, ok := b.(*BlobDir); !ok {
		t.Errorf("OpenBlobs(%s) = %T", dir, b)
	}
	if b, err := OpenBlobs(ctx, ocitest.URL(t)); err != nil {
		t.Error(err)
	} else if _, ok := b.(*OCIRegistry); !ok {
		t.Errorf("OpenBlobs(oci) = %T", b)
	}
	for _, spec := range []string{"", "s3://bucket/x", "https://registry.example.com/x"} {
		if _, err := OpenBlobs(ctx, spec); err == nil {
			t.Errorf("OpenBlobs(%q) succeeded", spec)
		}
	}
	// A registry that is not there says so, and what to check.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	_, err := OpenBlobs(ctx, "oci+http://"+addr+"/station/modules")
	if err == nil || !strings.Contains(err.Error(), "unreachable") || !strings.Contains(err.Error(), "is it running") {
		t.Errorf("an absent registry = %v", err)
	}
}

func TestParseOCIURL(t *testing.T) {
	for _, tt := range []struct{ url, origin, repo, err string }{
		{"oci://registry.example.com/station/modules", "https://registry.example.com", "station/modules", ""},
		{"oci://registry.example.com:5000/modules/", "https://registry.example.com:5000", "modules", ""},
		{"oci+http://127.0.0.1:5000/a.b/c__d/e-f", "http://127.0.0.1:5000", "a.b/c__d/e-f", ""},
		{"oci://u:p@ghcr.io/dave/modules", "https://ghcr.io", "dave/modules", ""},
		{"http://127.0.0.1:5000/x", "", "", "want oci://"},
		{"oci:///x", "", "", "no host"},
		{"oci:registry/x", "", "", "no host"},
		{"oci://registry.example.com", "", "", "no repository"},
		{"oci://registry.example.com/Station", "", "", "not a valid name"},
		{"oci://registry.example.com/a//b", "", "", "not a valid name"},
		{"oci://registry.example.com/-a", "", "", "not a valid name"},
		{"oci://registry.example.com/x?insecure=1", "", "", "takes no ?query"},
		{"oci://registry.example.com/" + strings.Repeat("a", 256), "", "", "not a valid name"},
	} {
		origin, repo, _, err := parseOCIURL(tt.url)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("parseOCIURL(%q) = %v, want an error saying %q", tt.url, err, tt.err)
			}
			continue
		}
		if err != nil || origin != tt.origin || repo != tt.repo {
			t.Errorf("parseOCIURL(%q) = %q, %q, %v; want %q, %q", tt.url, origin, repo, err, tt.origin, tt.repo)
		}
	}
	// The password never reaches a message, also from a URL that does
	// not parse (url.Parse's error quotes its input).
	for _, raw := range []string{"oci://dave:hunter2@registry.example.com", "oci://dave:hunter2%zz@registry.example.com/m", "oci://dave:hunter2@registry.example.com:port/m"} {
		if _, _, _, err := parseOCIURL(raw); err == nil || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("parseOCIURL(%q): an error shows the password: %v", raw, err)
		}
	}
}

// TestArtifactTag: every tag is valid, and distinct versions (even of
// equal precedence) and modules get distinct tags, also when cut short.
func TestArtifactTag(t *testing.T) {
	valid := regexp.MustCompile(`^[a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}$`)
	long := strings.Repeat("x", 64)
	pre := "1.0.0-" + strings.Repeat("a", 100)
	cases := []struct{ id, version, want string }{
		{"dave/stripe-invoicing", "1.4.0", "dave_stripe-invoicing_1.4.0"},
		{"dave/x", "1.0.0+rebuild", "dave_x_1.0.0_rebuild"},
		{"dave/x", "1.0.0-rc.1+exp.sha.5114f85", "dave_x_1.0.0-rc.1_exp.sha.5114f85"},
		{"dave/x", "1.0.0", "dave_x_1.0.0"},
		{"dave/x-1", "0.0.0", "dave_x-1_0.0.0"},
		{"dave-x/1", "0.0.0", "dave-x_1_0.0.0"},
		{"a/" + long, pre, ""},
		{"a/" + long, pre + "+b", ""},
		{"a/" + long, pre + "+c", ""},
	}
	seen := map[string]string{}
	for _, c := range cases {
		tag := ArtifactTag(c.id, c.version)
		if c.want != "" && tag != c.want {
			t.Errorf("ArtifactTag(%s, %s) = %s, want %s", c.id, c.version, tag, c.want)
		}
		if !valid.MatchString(tag) {
			t.Errorf("ArtifactTag(%s, %s) = %q: not a valid tag", c.id, c.version, tag)
		}
		if prev, ok := seen[tag]; ok {
			t.Errorf("%s@%s and %s share the tag %s", c.id, c.version, prev, tag)
		}
		seen[tag] = c.id + "@" + c.version
	}
}

// TestOCIArtifact: the artifact of a version, straight from the registry:
// untagged after PutArtifact, under its tag after TagArtifact, with the
// media types and annotations documented, and layers that are the
// version's blobs.
func TestOCIArtifact(t *testing.T) {
	ctx := context.Background()
	r := openOCI(t)
	man, wasm := []byte("id: dave/x\nversion: \"1.0.0+b\"\n"), []byte(hub.WasmMagic+"x")
	sig := "untrusted comment: signature\nAAAA\ntrusted comment: x\nBBBB\n"
	for _, b := range [][]byte{man, wasm} {
		if err := r.Put(ctx, hub.Digest(b), b); err != nil {
			t.Fatal(err)
		}
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 678, time.UTC)
	v := Version{Version: hub.Version{Module: "dave/x", Version: "1.0.0+b", ManifestDigest: hub.Digest(man), WasmDigest: hub.Digest(wasm),
		WasmSize: int64(len(wasm)), KeyID: "0123456789ABCDEF", PublishedAt: at}, Signature: sig}
	if err := r.PutArtifact(ctx, v); err != nil {
		t.Fatal(err)
	}
	tag := ArtifactTag(v.Module, v.Version.Version)
	if code, _ := registryGet(t, r, "/manifests/"+tag); code != http.StatusNotFound {
		t.Errorf("the artifact is tagged before TagArtifact (%d)", code)
	}
	if err := r.TagArtifact(ctx, v); err != nil {
		t.Fatal(err)
	}
	if err := r.TagArtifact(ctx, v); err != nil {
		t.Errorf("TagArtifact again: %v", err)
	}
	code, body := registryGet(t, r, "/manifests/"+tag)
	if code != http.StatusOK {
		t.Fatalf("GET the tag: %d %s", code, body)
	}
	// Tagging stored the same manifest PutArtifact did.
	if code, _ := registryGet(t, r, "/manifests/"+hub.Digest(body)); code != http.StatusOK {
		t.Errorf("the tagged manifest is not the one PutArtifact stored (%d)", code)
	}
	var m ociManifest
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	if m.MediaType != "application/vnd.oci.image.manifest.v1+json" || m.ArtifactType != "application/vnd.station.module.v1" ||
		m.Config.MediaType != "application/vnd.oci.empty.v1+json" || m.Config.Digest != hub.Digest([]byte("{}")) || m.Config.Size != 2 {
		t.Errorf("manifest = %s", body)
	}
	want := []struct{ mediaType, digest string }{
		{"application/vnd.station.module.manifest.v1+yaml", hub.Digest(man)},
		{"application/wasm", hub.Digest(wasm)},
		{"application/vnd.station.module.signature.v1+minisign", hub.Digest([]byte(sig))},
	}
	if len(m.Layers) != len(want) {
		t.Fatalf("layers = %+v", m.Layers)
	}
	for i, l := range m.Layers {
		if l.MediaType != want[i].mediaType || l.Digest != want[i].digest {
			t.Errorf("layer %d = %s %s, want %s %s", i, l.MediaType, l.Digest, want[i].mediaType, want[i].digest)
		}
		code, blob := registryGet(t, r, "/blobs/"+l.Digest)
		if code != http.StatusOK || hub.Digest(blob) != l.Digest || int64(len(blob)) != l.Size {
			t.Errorf("layer %d's blob: %d, %d bytes (descriptor: %d)", i, code, len(blob), l.Size)
		}
	}
	for k, v := range map[string]string{
		"org.opencontainers.image.title":   "dave/x",
		"org.opencontainers.image.version": "1.0.0+b",
		"org.opencontainers.image.created": "2026-01-02T03:04:05Z",
		"dev.station.module.id":            "dave/x",
		"dev.station.module.key-id":        "0123456789ABCDEF",
	} {
		if m.Annotations[k] != v {
			t.Errorf("annotation %s = %q, want %q", k, m.Annotations[k], v)
		}
	}
}

// registryGet GETs path under the repository straight from the registry,
// past the code under test.
func registryGet(t *testing.T, r *OCIRegistry, path string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, r.origin+"/v2/"+r.repo+path, nil)
	req.Header.Set("Accept", "application/vnd.oci.image.manifest.v1+json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	return resp.StatusCode, body
}

// fakeRegistry is a registry in memory for the hostile cases: each test
// changes what it answers.
type fakeRegistry struct {
	mu      sync.Mutex
	blobs   map[string][]byte
	uploads map[string]*bytes.Buffer
	n       int
	// handle, when set, answers first (a true return ends the request).
	handle func(w http.ResponseWriter, r *http.Request) bool
	// auth, when set, checks a request's Authorization header.
	auth func(h string) bool
}

func newFakeRegistry(t *testing.T) (*fakeRegistry, *httptest.Server) {
	f := &fakeRegistry{blobs: map[string][]byte{}, uploads: map[string]*bytes.Buffer{}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv
}

func (f *fakeRegistry) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	handle, auth := f.handle, f.auth
	f.mu.Unlock()
	if handle != nil && handle(w, r) {
		return
	}
	if auth != nil && !auth(r.Header.Get("Authorization")) {
		w.Header().Set("WWW-Authenticate", `Basic realm="fake"`)
		http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`, http.StatusUnauthorized)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	p := r.URL.Path
	switch {
	case p == "/v2/":
		w.WriteHeader(http.StatusOK)
	case strings.HasSuffix(p, "/blobs/uploads/") && r.Method == http.MethodPost:
		f.n++
		id := strconv.Itoa(f.n)
		f.uploads[id] = &bytes.Buffer{}
		w.Header().Set("Location", strings.TrimSuffix(p, "/")+"/"+id)
		w.WriteHeader(http.StatusAccepted)
	case strings.Contains(p, "/blobs/uploads/"):
		id := p[strings.LastIndex(p, "/")+1:]
		up, ok := f.uploads[id]
		if !ok {
			http.Error(w, `{"errors":[{"code":"BLOB_UPLOAD_UNKNOWN"}]}`, http.StatusNotFound)
			return
		}
		switch r.Method {
		case http.MethodPatch, http.MethodPut:
			io.Copy(up, r.Body)
			if r.Method == http.MethodPatch {
				w.Header().Set("Location", p)
				w.WriteHeader(http.StatusAccepted)
				return
			}
			d := r.URL.Query().Get("digest")
			if hub.Digest(up.Bytes()) != d {
				http.Error(w, `{"errors":[{"code":"DIGEST_INVALID"}]}`, http.StatusBadRequest)
				return
			}
			f.blobs[d] = up.Bytes()
			delete(f.uploads, id)
			w.Header().Set("Docker-Content-Digest", d)
			w.WriteHeader(http.StatusCreated)
		case http.MethodDelete:
			delete(f.uploads, id)
			w.WriteHeader(http.StatusNoContent)
		}
	case strings.Contains(p, "/blobs/"):
		b, ok := f.blobs[p[strings.LastIndex(p, "/")+1:]]
		if !ok {
			http.Error(w, `{"errors":[{"code":"BLOB_UNKNOWN"}]}`, http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		w.Write(b)
	default:
		http.NotFound(w, r)
	}
}

// openFake opens the fake registry's repository "station/modules".
func openFake(t *testing.T, srv *httptest.Server, o OCIOptions) (*OCIRegistry, error) {
	t.Helper()
	u := "oci+http://" + srv.Listener.Addr().String() + "/station/modules"
	if strings.HasPrefix(srv.URL, "https:") {
		u = "oci://" + srv.Listener.Addr().String() + "/station/modules"
	}
	return OpenOCI(context.Background(), u, o)
}

// TestOCIRefusesWhatTheRegistryGetsWrong: a registry that sends other
// bytes, too many bytes, a digest that is not the upload's, or an endless
// answer never gets the hub to return wrong or unbounded data.
func TestOCIRefusesWhatTheRegistryGetsWrong(t *testing.T) {
	ctx := context.Background()
	data := []byte("the real blob")
	d := hub.Digest(data)
	tests := []struct {
		name   string
		handle func(w http.ResponseWriter, r *http.Request) bool
		check  func(t *testing.T, r *OCIRegistry)
	}{
		{"other bytes", func(w http.ResponseWriter, r *http.Request) bool {
			if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/blobs/"+d) {
				w.Write([]byte("the fake blob"))
				return true
			}
			return false
		}, func(t *testing.T, r *OCIRegistry) {
			if got, err := r.Get(ctx, d, 100); err == nil || !strings.Contains(err.Error(), "other bytes") {
				t.Errorf("Get = %q, %v", got, err)
			}
			rc, err := r.Open(ctx, d)
			if err != nil {
				t.Fatal(err)
			}
			defer rc.Close()
			if _, err := io.ReadAll(rc); err == nil || !strings.Contains(err.Error(), "other bytes") {
				t.Errorf("reading Open's stream to its end = %v, want an error", err)
			}
		}},
		{"endless body", func(w http.ResponseWriter, r *http.Request) bool {
			if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/blobs/") {
				for buf := make([]byte, 32<<10); ; {
					if _, err := w.Write(buf); err != nil {
						return true
					}
				}
			}
			return false
		}, func(t *testing.T, r *OCIRegistry) {
			if _, err := r.Get(ctx, d, 1<<20); err == nil || !strings.Contains(err.Error(), "larger than") {
				t.Errorf("Get of an endless body = %v", err)
			}
		}},
		{"declared too large", func(w http.ResponseWriter, r *http.Request) bool {
			if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/blobs/") {
				w.Header().Set("Content-Length", strconv.Itoa(1<<30))
				w.WriteHeader(http.StatusOK)
				return true
			}
			return false
		}, func(t *testing.T, r *OCIRegistry) {
			if _, err := r.Get(ctx, d, 1<<20); err == nil || !strings.Contains(err.Error(), "more than") {
				t.Errorf("Get of a body declared too large = %v", err)
			}
		}},
		{"endless error", func(w http.ResponseWriter, r *http.Request) bool {
			if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/blobs/") {
				w.WriteHeader(http.StatusInternalServerError)
				for buf := bytes.Repeat([]byte("x"), 32<<10); ; {
					if _, err := w.Write(buf); err != nil {
						return true
					}
				}
			}
			return false
		}, func(t *testing.T, r *OCIRegistry) {
			_, err := r.Get(ctx, d, 1<<20)
			if err == nil || !strings.Contains(err.Error(), "500") || len(err.Error()) > 1000 {
				t.Errorf("Get answered by an endless error = %.300v (%d bytes)", err, len(fmt.Sprint(err)))
			}
		}},
		{"lying digest", func(w http.ResponseWriter, r *http.Request) bool {
			if r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/blobs/uploads/") {
				io.Copy(io.Discard, r.Body)
				w.Header().Set("Docker-Content-Digest", hub.Digest([]byte("something else")))
				w.WriteHeader(http.StatusCreated)
				return true
			}
			return false
		}, func(t *testing.T, r *OCIRegistry) {
			fresh := []byte("a blob the registry does not have")
			if err := r.Put(ctx, hub.Digest(fresh), fresh); err == nil || !strings.Contains(err.Error(), "does not keep the bytes") {
				t.Errorf("Put to a registry that reports another digest = %v", err)
			}
			w, err := r.Create(ctx)
			if err != nil {
				t.Fatal(err)
			}
			w.Write(fresh)
			if err := w.Commit(hub.Digest(fresh)); err == nil {
				t.Error("Commit to a registry that reports another digest succeeded")
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, srv := newFakeRegistry(t)
			r, err := openFake(t, srv, OCIOptions{})
			if err != nil {
				t.Fatal(err)
			}
			f.blobs[d] = data
			f.handle = tt.handle
			done := make(chan struct{})
			go func() { defer close(done); tt.check(t, r) }()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("the registry's answer was read without a bound")
			}
		})
	}
}

// TestOCIRedirects: a blob GET follows the registry's redirect to its
// storage without the registry's credentials, never from https to http,
// and not forever.
func TestOCIRedirects(t *testing.T) {
	ctx := context.Background()
	data := []byte("blob in storage")
	d := hub.Digest(data)
	var storageAuth atomic.Value
	storage := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		storageAuth.Store(r.Header.Get("Authorization"))
		w.Write(data)
	}))
	defer storage.Close()
	f, srv := newFakeRegistry(t)
	f.auth = func(h string) bool { return h == "Basic "+base64.StdEncoding.EncodeToString([]byte("hub:s3cret")) }
	f.handle = func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/blobs/"+d) && f.auth(r.Header.Get("Authorization")) {
			http.Redirect(w, r, storage.URL+"/bucket/"+d+"?X-Signature=abc", http.StatusTemporaryRedirect)
			return true
		}
		return false
	}
	r, err := openFake(t, srv, OCIOptions{Username: "hub", Password: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := r.Get(ctx, d, 100)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("Get through a redirect = %q, %v", got, err)
	}
	if a, _ := storageAuth.Load().(string); a != "" {
		t.Errorf("the registry's credentials went to its storage: %q", a)
	}

	// From https to http: refused.
	tlsReg := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "/blobs/") && r.Method == http.MethodGet {
			http.Redirect(w, r, storage.URL+"/bucket/"+d, http.StatusFound)
			return
		}
		if strings.Contains(r.URL.Path, "/blobs/") {
			http.NotFound(w, r)
		}
	}))
	defer tlsReg.Close()
	r, err = openFake(t, tlsReg, OCIOptions{Client: tlsReg.Client()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Get(ctx, d, 100); err == nil || !strings.Contains(err.Error(), "from https to plain http") {
		t.Errorf("a redirect from https to http = %v", err)
	}

	// A loop ends.
	var hops atomic.Int32
	f.handle = func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/blobs/") {
			hops.Add(1)
			http.Redirect(w, r, r.URL.Path, http.StatusFound)
			return true
		}
		return false
	}
	r, _ = openFake(t, srv, OCIOptions{Username: "hub", Password: "s3cret"})
	if _, err := r.Get(ctx, d, 100); err == nil || !strings.Contains(err.Error(), "redirects") || hops.Load() > 10 {
		t.Errorf("a redirect loop = %v after %d hops", err, hops.Load())
	}
}

// TestOCIBasicAuth: credentials are sent once the registry asks, and what
// is wrong with them is said.
func TestOCIBasicAuth(t *testing.T) {
	f, srv := newFakeRegistry(t)
	f.auth = func(h string) bool { return h == "Basic "+base64.StdEncoding.EncodeToString([]byte("hub:s3cret")) }
	if _, err := openFake(t, srv, OCIOptions{}); err == nil || !strings.Contains(err.Error(), "STATION_HUB_OCI_USERNAME") {
		t.Errorf("no credentials = %v", err)
	}
	_, err := openFake(t, srv, OCIOptions{Username: "hub", Password: "wrong"})
	if err == nil || !strings.Contains(err.Error(), `refused the credentials of "hub"`) || strings.Contains(err.Error(), "wrong") {
		t.Errorf("wrong credentials = %v", err)
	}
	// From the URL, before the options.
	u := "oci+http://hub:s3cret@" + srv.Listener.Addr().String() + "/station/modules"
	r, err := OpenOCI(context.Background(), u, OCIOptions{Username: "other", Password: "other"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(r.String(), "s3cret") {
		t.Errorf("String() shows the password: %s", r)
	}
	data := []byte("x")
	if err := r.Put(context.Background(), hub.Digest(data), data); err != nil {
		t.Fatal(err)
	}
}

// tokenServer is the distribution token flow: a realm that hands out
// tokens for the scopes asked, to the account with the right password.
type tokenServer struct {
	srv    *httptest.Server
	mu     sync.Mutex
	scopes []string
	issued map[string]string // token → scope
}

func newTokenServer(t *testing.T, user, pass string) *tokenServer {
	ts := &tokenServer{issued: map[string]string{}}
	ts.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		if !ok || u != user || p != pass || r.URL.Query().Get("service") != "fake-registry" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		scope := r.URL.Query().Get("scope")
		ts.mu.Lock()
		tok := fmt.Sprintf("tok%d", len(ts.issued))
		ts.issued[tok] = scope
		ts.scopes = append(ts.scopes, scope)
		ts.mu.Unlock()
		json.NewEncoder(w).Encode(map[string]any{"token": tok, "expires_in": 300})
	}))
	t.Cleanup(ts.srv.Close)
	return ts
}

// allows reports whether an Authorization header carries a token that
// allows push (or only pull).
func (ts *tokenServer) allows(h string, push bool) bool {
	tok, ok := strings.CutPrefix(h, "Bearer ")
	if !ok {
		return false
	}
	ts.mu.Lock()
	scope := ts.issued[tok]
	ts.mu.Unlock()
	if push {
		return strings.HasSuffix(scope, ":pull,push")
	}
	return strings.HasSuffix(scope, ":pull") || strings.HasSuffix(scope, ":pull,push")
}

// TestOCITokenAuth: the token flow, with a token for pull to read and one
// for pull and push to write, fetched once each and reused.
func TestOCITokenAuth(t *testing.T) {
	ts := newTokenServer(t, "hub", "s3cret")
	f, srv := newFakeRegistry(t)
	f.handle = func(w http.ResponseWriter, r *http.Request) bool {
		push := r.Method != http.MethodGet && r.Method != http.MethodHead
		if ts.allows(r.Header.Get("Authorization"), push) {
			return false
		}
		scope := "repository:station/modules:pull"
		if push {
			scope += ",push"
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="`+ts.srv.URL+`/token",service="fake-registry",scope="`+scope+`"`)
		http.Error(w, `{"errors":[{"code":"UNAUTHORIZED"}]}`, http.StatusUnauthorized)
		return true
	}
	if _, err := openFake(t, srv, OCIOptions{Username: "hub", Password: "wrong"}); err == nil || !strings.Contains(err.Error(), "refused the credentials") {
		t.Errorf("wrong credentials = %v", err)
	}
	r, err := openFake(t, srv, OCIOptions{Username: "hub", Password: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range 3 {
		data := []byte("blob " + strconv.Itoa(i))
		if err := r.Put(ctx, hub.Digest(data), data); err != nil {
			t.Fatal(err)
		}
		w, err := r.Create(ctx)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(append(data, '!'))
		if err := w.Commit(hub.Digest(append(data, '!'))); err != nil {
			t.Fatal(err)
		}
		if got, err := r.Get(ctx, hub.Digest(data), 100); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("Get = %q, %v", got, err)
		}
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	want := []string{"repository:station/modules:pull", "repository:station/modules:pull,push"}
	if fmt.Sprint(ts.scopes) != fmt.Sprint(want) {
		t.Errorf("tokens fetched for %q, want one each of %q", ts.scopes, want)
	}
}

// TestOCITokenRotatedUnderConcurrentRequests: the registry stops taking
// the (unexpired) token two requests were sent with. The first fetches a
// new one instead of failing; the second, refused after that, sends again
// with the new token instead of taking a fresh token it did not send for
// refused credentials.
func TestOCITokenRotatedUnderConcurrentRequests(t *testing.T) {
	ts := newTokenServer(t, "hub", "s3cret")
	f, srv := newFakeRegistry(t)
	var mu sync.Mutex
	revoked := map[string]bool{}
	refusals := 0
	renewed := make(chan struct{})
	f.handle = func(w http.ResponseWriter, r *http.Request) bool {
		push := r.Method != http.MethodGet && r.Method != http.MethodHead
		h := r.Header.Get("Authorization")
		mu.Lock()
		old := revoked[strings.TrimPrefix(h, "Bearer ")]
		if old && r.Method == http.MethodGet {
			refusals++
		}
		n := refusals
		mu.Unlock()
		if !old && ts.allows(h, push) {
			return false
		}
		if old && n == 2 {
			select { // the second request's refusal comes after the first got its new token
			case <-renewed:
			case <-time.After(5 * time.Second):
			}
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="`+ts.srv.URL+`/token",service="fake-registry",scope="repository:station/modules:pull"`)
		http.Error(w, `{"errors":[{"code":"UNAUTHORIZED"}]}`, http.StatusUnauthorized)
		return true
	}
	r, err := openFake(t, srv, OCIOptions{Username: "hub", Password: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	data := []byte("rotated")
	if err := r.Put(ctx, hub.Digest(data), data); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Get(ctx, hub.Digest(data), 100); err != nil {
		t.Fatal(err)
	}
	// Rotate: every token issued so far stops working.
	ts.mu.Lock()
	before := len(ts.issued)
	mu.Lock()
	for tok := range ts.issued {
		revoked[tok] = true
	}
	mu.Unlock()
	ts.mu.Unlock()
	go func() {
		for {
			ts.mu.Lock()
			n := len(ts.issued)
			ts.mu.Unlock()
			if n > before {
				close(renewed)
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = r.Get(ctx, hub.Digest(data), 100)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("request %d after the rotation: %v", i+1, err)
		}
	}
}

// TestOCITokenRealmOverPlainHTTP: an https registry whose realm is plain
// http would have the credentials sent in clear: refused.
func TestOCITokenRealmOverPlainHTTP(t *testing.T) {
	ts := newTokenServer(t, "hub", "s3cret")
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="`+ts.srv.URL+`/token",service="fake-registry"`)
		w.WriteHeader(http.StatusUnauthorized)
	}))
	defer srv.Close()
	_, err := openFake(t, srv, OCIOptions{Username: "hub", Password: "s3cret", Client: srv.Client()})
	if err == nil || !strings.Contains(err.Error(), "in clear") {
		t.Errorf("a plain-http realm = %v", err)
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if len(ts.scopes) != 0 {
		t.Errorf("the credentials went to the plain-http realm")
	}
}

// TestOCIErrorsSayWhatToDo: the registry's refusals become errors that
// name the cause and the fix.
func TestOCIErrorsSayWhatToDo(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		name, body string
		status     int
		want       string
	}{
		{"name invalid", `{"errors":[{"code":"NAME_INVALID","message":"invalid repository name"}]}`, http.StatusBadRequest, "refuses the repository name"},
		{"denied", `{"errors":[{"code":"DENIED","message":"requested access to the resource is denied"}]}`, http.StatusForbidden, "may not pull and push"},
		{"no such project", `{"errors":[{"code":"NAME_UNKNOWN","message":"project station not found"}]}`, http.StatusNotFound, "create it"},
		{"rate-limited", `{"errors":[{"code":"TOOMANYREQUESTS"}]}`, http.StatusTooManyRequests, "retry later"},
		{"not json", "\x00\x01\x02 binary", http.StatusBadGateway, "502 Bad Gateway"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f, srv := newFakeRegistry(t)
			r, err := openFake(t, srv, OCIOptions{})
			if err != nil {
				t.Fatal(err)
			}
			f.handle = func(w http.ResponseWriter, r *http.Request) bool {
				if r.Method == http.MethodPost {
					w.WriteHeader(tt.status)
					io.WriteString(w, tt.body)
					return true
				}
				return false
			}
			data := []byte("x")
			err = r.Put(ctx, hub.Digest(data), data)
			if err == nil || !strings.Contains(err.Error(), tt.want) || strings.ContainsRune(err.Error(), 0) {
				t.Errorf("Put = %q, want it to say %q", err, tt.want)
			}
			if _, err := r.Create(ctx); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Create = %v, want it to say %q", err, tt.want)
			}
		})
	}
	// Not a registry at all, and a registry without TLS named oci://.
	web := httptest.NewServer(http.NotFoundHandler())
	defer web.Close()
	if _, err := openFake(t, web, OCIOptions{}); err == nil || !strings.Contains(err.Error(), "not an OCI registry") {
		t.Errorf("a web server = %v", err)
	}
	_, err := OpenOCI(ctx, "oci://"+web.Listener.Addr().String()+"/x", OCIOptions{})
	if err == nil || !strings.Contains(err.Error(), "use oci+http://") {
		t.Errorf("oci:// to a plain-http server = %v", err)
	}
}

// TestOCIUploadAbortsMidStream: a blob that fails part way (the bundle
// turned out bad) leaves no blob and deletes the upload, and a registry
// that breaks off the PATCH fails the Write or the Commit with why.
func TestOCIUploadAbortsMidStream(t *testing.T) {
	ctx := context.Background()
	f, srv := newFakeRegistry(t)
	r, err := openFake(t, srv, OCIOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := r.Create(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("half a blob"))
	w.Abort()
	f.mu.Lock()
	if len(f.uploads) != 0 || len(f.blobs) != 0 {
		t.Errorf("after Abort: %d uploads, %d blobs", len(f.uploads), len(f.blobs))
	}
	f.mu.Unlock()

	f.handle = func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method == http.MethodPatch {
			io.CopyN(io.Discard, r.Body, 1000)
			http.Error(w, `{"errors":[{"code":"SIZE_INVALID","message":"storage full"}]}`, http.StatusRequestEntityTooLarge)
			return true
		}
		return false
	}
	w, err = r.Create(ctx)
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 64<<10)
	var werr error
	for range 1000 {
		if _, werr = w.Write(chunk); werr != nil {
			break
		}
	}
	cerr := w.Commit(hub.Digest(nil))
	if werr == nil && cerr == nil {
		t.Error("an upload the registry broke off succeeded")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.blobs) != 0 {
		t.Errorf("a broken-off upload left %d blobs", len(f.blobs))
	}
}

// TestOCILocationStaysHTTPS: an https registry's upload location on plain
// http is refused; an http registry's, and an https one elsewhere, are
// taken.
func TestOCILocationStaysHTTPS(t *testing.T) {
	for _, tt := range []struct {
		from, loc string
		ok        bool
	}{
		{"https://registry.example.com/v2/m/blobs/uploads/", "http://registry.example.com/up/1", false},
		{"https://registry.example.com/v2/m/blobs/uploads/", "https://storage.example.net/up/1", true},
		{"https://registry.example.com/v2/m/blobs/uploads/", "/v2/m/blobs/uploads/1", true},
		{"http://127.0.0.1:5000/v2/m/blobs/uploads/", "http://127.0.0.1:5000/up/1", true},
	} {
		req := httptest.NewRequest("POST", tt.from, nil)
		resp := &http.Response{Request: req, Header: http.Header{"Location": {tt.loc}}}
		got, err := location(resp)
		if (err == nil) != tt.ok {
			t.Errorf("location %s from %s = %q, %v; want ok %v", tt.loc, tt.from, got, err, tt.ok)
		}
	}
}
