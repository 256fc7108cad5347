package hubserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/fixture"
	"github.com/station-dev/station/internal/hubclient"
	"github.com/station-dev/station/internal/hubserver"
	"github.com/station-dev/station/internal/hubserver/hubtest"
	"github.com/station-dev/station/internal/hubserver/ocitest"
)

// ociHub starts a hub whose blobs are in a repository of the test's own
// in the test registry, whatever STATION_HUB_TEST_BLOBS says, and returns
// it with the repository's URL (http://host:port/v2/REPO).
func ociHub(t *testing.T, configure func(*hubserver.Options)) (*hubtest.Hub, string) {
	t.Helper()
	spec := ocitest.URL(t)
	blobs, err := hubserver.OpenBlobs(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	h := hubtest.StartWith(t, func(o *hubserver.Options) {
		o.Blobs = blobs
		if configure != nil {
			configure(o)
		}
	})
	u, err := url.Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	if u.Scheme != "oci+http" {
		t.Skipf("the test registry is %s; this test reads it over plain http", u.Scheme)
	}
	return h, "http://" + u.Host + "/v2" + u.Path
}

// fromRegistry GETs path under the repository straight from the registry.
func fromRegistry(t *testing.T, repo, path string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, repo+path, nil)
	req.Header.Set("Accept", "application/vnd.oci.image.manifest.v1+json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	return resp.StatusCode, body
}

// tags lists the repository's tags.
func tags(t *testing.T, repo string) []string {
	t.Helper()
	code, body := fromRegistry(t, repo, "/tags/list")
	if code == http.StatusNotFound {
		return nil
	}
	var list struct {
		Tags []string `json:"tags"`
	}
	if code != http.StatusOK || json.Unmarshal(body, &list) != nil {
		t.Fatalf("tags/list: %d %s", code, body)
	}
	return list.Tags
}

// TestPublishToOCI: a version published through a hub on a registry is
// an artifact there, under its tag, whose layers are the version's
// manifest, wasm and signature — the digests the hub records — and the
// hub serves it (verified by the station) from the registry.
func TestPublishToOCI(t *testing.T) {
	h, repo := ociHub(t, nil)
	dave, key := h.Publisher(t, "dave")
	b, err := hubclient.NewBundle(hubtest.Manifest("dave/x", "1.0.0+build.7"), hubtest.Wasm("dave/x"), key)
	if err != nil {
		t.Fatal(err)
	}
	v, err := dave.Publish(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	pkg, err := h.Client(t, "").Fetch(ctx, "dave/x", "1.0.0+build.7", hubclient.FetchOptions{})
	if err != nil || string(pkg.Wasm) != string(b.Wasm) {
		t.Fatalf("fetch from a hub on a registry: %v", err)
	}

	if got := tags(t, repo); len(got) != 1 || got[0] != "dave_x_1.0.0_build.7" {
		t.Errorf("tags = %q, want [dave_x_1.0.0_build.7]", got)
	}
	code, body := fromRegistry(t, repo, "/manifests/dave_x_1.0.0_build.7")
	if code != http.StatusOK {
		t.Fatalf("the artifact: %d %s", code, body)
	}
	var m struct {
		ArtifactType string `json:"artifactType"`
		Layers       []struct {
			MediaType string `json:"mediaType"`
			Digest    string `json:"digest"`
			Size      int64  `json:"size"`
		} `json:"layers"`
		Annotations map[string]string `json:"annotations"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	want := []struct {
		mediaType, digest string
		size              int64
	}{
		{hubserver.MediaTypeModuleManifest, v.ManifestDigest, int64(len(b.Manifest))},
		{hubserver.MediaTypeWasm, v.WasmDigest, v.WasmSize},
		{hubserver.MediaTypeModuleSignature, hub.Digest([]byte(b.Signature)), int64(len(b.Signature))},
	}
	if m.ArtifactType != hubserver.MediaTypeModuleArtifact || len(m.Layers) != len(want) {
		t.Fatalf("artifact = %s", body)
	}
	for i, l := range m.Layers {
		if l.MediaType != want[i].mediaType || l.Digest != want[i].digest || l.Size != want[i].size {
			t.Errorf("layer %d = %+v, want %+v", i, l, want[i])
		}
		if code, blob := fromRegistry(t, repo, "/blobs/"+l.Digest); code != http.StatusOK || hub.Digest(blob) != l.Digest {
			t.Errorf("layer %d's blob in the registry: %d, digest %s", i, code, hub.Digest(blob))
		}
	}
	if m.Annotations["dev.station.module.id"] != "dave/x" || m.Annotations["org.opencontainers.image.version"] != "1.0.0+build.7" ||
		m.Annotations["dev.station.module.key-id"] != v.KeyID {
		t.Errorf("annotations = %v", m.Annotations)
	}
}

// refusingStore records no version: as when another hub process published
// the same version first.
type refusingStore struct{ hubserver.Store }

func (refusingStore) Publish(context.Context, hubserver.Version) (hub.Event, error) {
	return hub.Event{}, hubserver.ErrExists
}

// TestOCIRefusedPublishIsNotTagged: a version the store refuses after its
// artifact was stored leaves no tag, so no tag ever names bytes other than
// the recorded version's.
func TestOCIRefusedPublishIsNotTagged(t *testing.T) {
	h, repo := ociHub(t, func(o *hubserver.Options) { o.Store = refusingStore{o.Store} })
	dave, key := h.Publisher(t, "dave")
	b, err := hubclient.NewBundle(hubtest.Manifest("dave/x", "1.0.0"), hubtest.Wasm("x"), key)
	if err != nil {
		t.Fatal(err)
	}
	_, err = dave.Publish(ctx, b)
	wantCode(t, "publish refused by the store", err, hub.CodeVersionExists)
	if got := tags(t, repo); len(got) != 0 {
		t.Errorf("a refused publish was tagged: %q", got)
	}
}

// untaggable is a registry that fails to tag.
type untaggable struct{ *hubserver.OCIRegistry }

func (untaggable) TagArtifact(context.Context, hubserver.Version) error {
	return errors.New("the registry is read-only now")
}

// TestOCITagFailureAfterPublish: once the store recorded a version it is
// published, whatever the registry does with the tag; the hub logs what
// failed, for the operator.
func TestOCITagFailureAfterPublish(t *testing.T) {
	var logs fixture.SyncBuffer
	h, repo := ociHub(t, func(o *hubserver.Options) {
		o.Blobs = untaggable{o.Blobs.(*hubserver.OCIRegistry)}
		o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	dave, key := h.Publisher(t, "dave")
	publish(t, dave, key, "dave/x", "1.0.0")
	if _, err := h.Client(t, "").Fetch(ctx, "dave/x", "1.0.0", hubclient.FetchOptions{}); err != nil {
		t.Errorf("fetch a version whose tag failed: %v", err)
	}
	if got := tags(t, repo); len(got) != 0 {
		t.Errorf("tags = %q", got)
	}
	if l := logs.String(); !strings.Contains(l, "did not tag its artifact") || !strings.Contains(l, "read-only") || !strings.Contains(l, "dave_x_1.0.0") {
		t.Errorf("the hub did not log the failed tag:\n%s", l)
	}
}

// TestOCICorruptRegistryIsCaught: a registry (or its storage) that sends
// other bytes than a version's wasm gets no station a complete bundle:
// the hub breaks the answer off, logs why, and the station refuses it.
func TestOCICorruptRegistryIsCaught(t *testing.T) {
	spec := ocitest.URL(t)
	u, err := url.Parse(spec)
	if err != nil || u.Scheme != "oci+http" {
		t.Skipf("the test registry is %s; this test proxies it over plain http", spec)
	}
	var corrupt atomic.Bool
	target := &url.URL{Scheme: "http", Host: u.Host}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.ModifyResponse = func(resp *http.Response) error {
		if corrupt.Load() && resp.Request.Method == http.MethodGet && strings.Contains(resp.Request.URL.Path, "/blobs/") {
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				return err
			}
			body[len(body)-1] ^= 1
			resp.Body = io.NopCloser(bytes.NewReader(body))
		}
		return nil
	}
	front := httptest.NewServer(proxy)
	defer front.Close()
	blobs, err := hubserver.OpenBlobs(ctx, "oci+http://"+front.Listener.Addr().String()+u.Path)
	if err != nil {
		t.Fatal(err)
	}
	var logs fixture.SyncBuffer
	h := hubtest.StartWith(t, func(o *hubserver.Options) {
		o.Blobs = blobs
		o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	dave, key := h.Publisher(t, "dave")
	v := publish(t, dave, key, "dave/x", "1.0.0")
	corrupt.Store(true)
	if err := streamDownload(http.DefaultTransport, h.URL, "dave/x", int(v.WasmSize)); err == nil {
		t.Error("a bundle from a corrupt registry was served whole")
	}
	if _, err := h.Client(t, "").Fetch(ctx, "dave/x", "1.0.0", hubclient.FetchOptions{}); err == nil {
		t.Error("a station fetched a bundle from a corrupt registry")
	}
	if l := logs.String(); !strings.Contains(l, "the registry sent other bytes") {
		t.Errorf("the hub did not log the corruption:\n%s", l)
	}
}
