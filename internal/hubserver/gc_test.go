package hubserver_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/hubclient"
	"github.com/station-dev/station/internal/hubserver"
	"github.com/station-dev/station/internal/hubserver/hubtest"
)

// TestCollectBlobs: what a publish that did not finish leaves in a blob
// directory — blobs no version names — is removed once old, and nothing
// else: not a version's blobs however old, not a young unnamed blob (a
// publish in flight may name it yet), not an old one a publish has just
// found there again. A dry run removes nothing.
func TestCollectBlobs(t *testing.T) {
	h := hubtest.Start(t)
	dir, ok := h.Blobs.(*hubserver.BlobDir)
	if !ok {
		t.Skipf("the blobs are a %T, not a directory (%s)", h.Blobs, hubtest.EnvBlobs)
	}
	pub, signer := h.Publisher(t, "dave")
	bundle, err := hubclient.NewBundle(hubtest.Manifest("dave/x", "1.0.0"), hubtest.Wasm("named"), signer)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pub.Publish(ctx, bundle); err != nil {
		t.Fatal(err)
	}
	put := func(data string, age time.Duration) string {
		d := hub.Digest([]byte(data))
		if err := dir.Put(ctx, d, []byte(data)); err != nil {
			t.Fatal(err)
		}
		setAge(t, h.Dir, d, age)
		return d
	}
	old, young, again := put("orphan, old", 2*time.Hour), put("orphan, young", time.Minute), put("orphan, found again", 3*time.Hour)
	if err := dir.Put(ctx, again, []byte("orphan, found again")); err != nil { // a publish of the same bytes
		t.Fatal(err)
	}
	// The version's blobs, made old: a version names them.
	for _, d := range []string{hub.Digest(hubtest.Wasm("named")), hub.Digest(hubtest.Manifest("dave/x", "1.0.0"))} {
		setAge(t, h.Dir, d, 48*time.Hour)
	}

	rep, err := hubserver.CollectBlobs(ctx, h.Store, dir, hubserver.CollectOptions{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Removed) != 1 || rep.Removed[0].Digest != old || !exists(t, h.Dir, old) {
		t.Errorf("dry run: %+v; want %s listed and still there", rep, old)
	}
	rep, err = hubserver.CollectBlobs(ctx, h.Store, dir, hubserver.CollectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Removed) != 1 || rep.Removed[0].Digest != old || rep.Kept != 2 || rep.Young != 2 || rep.RemovedBytes != int64(len("orphan, old")) {
		t.Errorf("collect: %+v; want %s removed, 2 kept, 2 young", rep, old)
	}
	if exists(t, h.Dir, old) || !exists(t, h.Dir, young) || !exists(t, h.Dir, again) {
		t.Error("collect removed the wrong blobs")
	}
	if _, err := h.Client(t, "").Fetch(ctx, "dave/x", "1.0.0", hubclient.FetchOptions{}); err != nil {
		t.Errorf("the published version after a collection: %v", err)
	}
}

func blobPath(dir, digest string) string {
	hx := strings.TrimPrefix(digest, "sha256:")
	return filepath.Join(dir, "blobs", "sha256", hx[:2], hx)
}

func setAge(t *testing.T, dir, digest string, age time.Duration) {
	t.Helper()
	at := time.Now().Add(-age)
	if err := os.Chtimes(blobPath(dir, digest), at, at); err != nil {
		t.Fatal(err)
	}
}

func exists(t *testing.T, dir, digest string) bool {
	t.Helper()
	_, err := os.Stat(blobPath(dir, digest))
	return err == nil
}
