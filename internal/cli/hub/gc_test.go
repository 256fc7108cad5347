package hub

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	hubapi "github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/cli/clitest"
	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/hubserver"
)

// TestGC: `station hub gc` on a data directory lists (--dry-run, --json)
// and then removes an old blob no version names, keeps the version's, and
// refuses what it cannot collect.
func TestGC(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, blobs, err := hubserver.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hubserver.CreateAccount(ctx, st, "dave", "test", time.Now()); err != nil {
		t.Fatal(err)
	}
	man, wasm, orphan := []byte("id: dave/x\n"), append([]byte(hubapi.WasmMagic), "body"...), []byte("left by a publish that did not finish")
	for _, b := range [][]byte{man, wasm, orphan} {
		if err := blobs.Put(ctx, hubapi.Digest(b), b); err != nil {
			t.Fatal(err)
		}
		hx := strings.TrimPrefix(hubapi.Digest(b), "sha256:")
		old := time.Now().Add(-2 * time.Hour)
		os.Chtimes(filepath.Join(dir, "blobs", "sha256", hx[:2], hx), old, old)
	}
	if _, err := st.Publish(ctx, hubserver.Version{Version: hubapi.Version{Module: "dave/x", Version: "1.0.0", ManifestDigest: hubapi.Digest(man),
		WasmDigest: hubapi.Digest(wasm), WasmSize: int64(len(wasm)), KeyID: "0000000000000001", PublishedAt: time.Now()}, Signature: "sig"}); err != nil {
		t.Fatal(err)
	}
	st.Close()

	io, out, _ := streams("", nil)
	if err := gcRun(ctx, &GCOptions{IO: io, Data: dir, OlderThan: time.Hour, DryRun: true, JSON: true}); err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Kept    int  `json:"kept"`
		DryRun  bool `json:"dry_run"`
		Removed []struct {
			Digest string `json:"digest"`
		} `json:"removed"`
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil || rep.Kept != 2 || !rep.DryRun || len(rep.Removed) != 1 || rep.Removed[0].Digest != hubapi.Digest(orphan) {
		t.Fatalf("gc --dry-run --json: %s (%v)", out, err)
	}
	io, out, _ = streams("", nil)
	if err := gcRun(ctx, &GCOptions{IO: io, Data: dir, OlderThan: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "removed 1 unnamed blobs") || !strings.Contains(out.String(), "kept 2") {
		t.Errorf("gc: %s", out)
	}
	if _, err := blobs.Get(ctx, hubapi.Digest(orphan), 1<<20); err == nil {
		t.Error("the orphan is still there")
	}
	if _, err := blobs.Get(ctx, hubapi.Digest(wasm), 1<<20); err != nil {
		t.Errorf("the version's wasm: %v", err)
	}

	if err := gcRun(ctx, &GCOptions{IO: io, Data: t.TempDir(), OlderThan: time.Hour}); cmdutil.ExitCode(err) != cmdutil.ExitUsage {
		t.Errorf("gc of a directory without a hub: %v", err)
	}
	if err := gcRun(ctx, &GCOptions{IO: io, Data: dir, Blobs: "oci://registry.example/hub", OlderThan: time.Hour}); cmdutil.ExitCode(err) != cmdutil.ExitUsage || !strings.Contains(err.Error(), "registry") {
		t.Errorf("gc of blobs in a registry: %v", err)
	}
	err = clitest.Parse(NewCmdGC(clitest.Factory(), func(*GCOptions) error { return nil }), "--older-than", "10s")
	if cmdutil.ExitCode(err) != cmdutil.ExitUsage {
		t.Errorf("gc --older-than 10s: %v, want a usage error", err)
	}
}
