package hubserver_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/fixture"
	"github.com/station-dev/station/internal/hubclient"
	"github.com/station-dev/station/internal/hubserver"
	"github.com/station-dev/station/internal/hubserver/hubtest"
	"github.com/station-dev/station/internal/wasmgen"
)

// bigWasm returns a valid module of n bytes (n at least 4 MiB): a
// minimal one with a custom section of random bytes (seeded, so each seed
// gives other bytes) — what a module with debug information is like to
// the hub, which checks its skeleton and streams the rest.
func bigWasm(n int, seed uint64) []byte {
	b := hubtest.Wasm("big")
	content := n - len(b) - 1 - 4 // the section's id and 4-byte size
	b = append(b, 0)
	b = append(b, wasmgen.LEB(uint64(content))...)
	b = append(b, wasmgen.Name("padding")...)
	pad := make([]byte, content-len(wasmgen.Name("padding")))
	rand.NewChaCha8([32]byte{byte(seed)}).Read(pad)
	return append(b, pad...)
}

// allocated returns how many bytes the process allocated while fn ran. It
// bounds what fn's work held at any moment: nothing can be live that was
// not allocated.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestBundleMemoryIsBounded: the hub streams bundles both ways — a
// download is written from the blob file as it is read, a publish's wasm
// goes to a blob file as it arrives — so what eight concurrent downloads,
// or four concurrent publishes, of a 16 MiB module allocate on the hub is a
// small fraction of one module, not several copies of it per request (the
// base64 JSON of 100 MB a request would otherwise be, at the default
// limits). Clients here stream too, so what is counted is the hub's.
func TestBundleMemoryIsBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("moves 200 MB through loopback")
	}
	if raceDetector {
		t.Skip("the race detector empties sync.Pool at random, so allocations are not the hub's own, and slows the copies 20 times")
	}
	const size = 16 << 20
	h := hubtest.StartWith(t, func(o *hubserver.Options) {
		o.Limits.MaxWasmBytes = size
		o.Limits.RatePerSecond, o.Limits.Burst = 1e6, 1e6
	})
	tr := &http.Transport{MaxConnsPerHost: 0}
	t.Cleanup(tr.CloseIdleConnections)

	const publishers = 4
	type pub struct {
		tok  string
		man  []byte
		wasm []byte
		sig  string
	}
	pubs := make([]pub, publishers)
	for i := range pubs {
		name := fmt.Sprintf("pub%d", i)
		_, s := h.Publisher(t, name)
		p := pub{tok: tokenOf(t, h, name), man: hubtest.Manifest(name+"/big", "1.0.0"), wasm: bigWasm(size, uint64(i))}
		sig, err := s.Sign(hub.Statement{ID: name + "/big", Version: "1.0.0", ManifestDigest: hub.Digest(p.man), WasmDigest: hub.Digest(p.wasm)})
		if err != nil {
			t.Fatal(err)
		}
		p.sig = sig.String()
		pubs[i] = p
	}

	// Publishes: each body is encoded as it is sent, from the bytes above.
	errs := make(chan error, publishers)
	published := allocated(func() {
		var wg sync.WaitGroup
		for _, p := range pubs {
			wg.Go(func() { errs <- streamPublish(tr, h.URL, p.tok, p.man, p.wasm, p.sig) })
		}
		wg.Wait()
	})
	for range publishers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d concurrent publishes of a %d MiB module: the hub allocated %.1f MiB", publishers, size>>20, float64(published)/(1<<20))
	if limit := uint64(size / 4); published > limit {
		t.Errorf("%d concurrent publishes of %d MiB allocated %d bytes, want at most %d", publishers, size>>20, published, limit)
	}
	// What was stored is what was signed: a station verifies it.
	got, err := h.Client(t, "").Fetch(ctx, "pub0/big", "1.0.0", hubclient.FetchOptions{})
	if err != nil || !bytesEqual(got.Wasm, pubs[0].wasm) {
		t.Fatalf("fetch the published module: %v", err)
	}

	const downloads = 8
	derrs := make(chan error, downloads)
	downloaded := allocated(func() {
		var wg sync.WaitGroup
		for i := range downloads {
			wg.Go(func() { derrs <- streamDownload(tr, h.URL, fmt.Sprintf("pub%d/big", i%publishers), size) })
		}
		wg.Wait()
	})
	for range downloads {
		if err := <-derrs; err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d concurrent downloads of a %d MiB module: the hub allocated %.1f MiB", downloads, size>>20, float64(downloaded)/(1<<20))
	if limit := uint64(size / 4); downloaded > limit {
		t.Errorf("%d concurrent downloads of %d MiB allocated %d bytes, want at most %d", downloads, size>>20, downloaded, limit)
	}
}

func bytesEqual(a, b []byte) bool { return string(a) == string(b) }

// streamPublish posts a bundle whose JSON is written as it is sent.
func streamPublish(tr http.RoundTripper, base, tok string, man, wasm []byte, sig string) error {
	pr, pw := io.Pipe()
	go func() {
		sigJSON, _ := json.Marshal(sig)
		io.WriteString(pw, `{"format":1,"manifest":"`+base64.StdEncoding.EncodeToString(man)+`","wasm":"`)
		enc := base64.NewEncoder(base64.StdEncoding, pw)
		enc.Write(wasm)
		enc.Close()
		io.WriteString(pw, `","signature":`+string(sigJSON)+`}`)
		pw.Close()
	}()
	req, _ := http.NewRequest("POST", base+"/v1/modules", pr)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 201 {
		return fmt.Errorf("publish: %d %s", resp.StatusCode, body)
	}
	return nil
}

// streamDownload reads a bundle to the end without keeping it, and checks
// its length.
func streamDownload(tr http.RoundTripper, base, id string, size int) error {
	req, _ := http.NewRequest("GET", base+"/v1/modules/"+id+"/versions/1.0.0/bundle", nil)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		body, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("download %s: %d %s", id, resp.StatusCode, body)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	if err != nil {
		return fmt.Errorf("download %s: %w", id, err)
	}
	if n < int64(base64.StdEncoding.EncodedLen(size)) {
		return fmt.Errorf("download %s: %d bytes, less than the wasm's base64", id, n)
	}
	if cl := resp.Header.Get("Content-Length"); cl != "" && cl != strconv.FormatInt(n, 10) {
		return fmt.Errorf("download %s: %d bytes, Content-Length %s", id, n, cl)
	}
	return nil
}

// TestDownloadOfACorruptBlobIsBrokenOff: the hub sends a wasm as it reads
// it, so it learns that a stored file is corrupt only at its end; it then
// breaks the answer off, and no client gets a complete bundle with other
// bytes than those published.
func TestDownloadOfACorruptBlobIsBrokenOff(t *testing.T) {
	var logs fixture.SyncBuffer
	h := hubtest.StartWith(t, func(o *hubserver.Options) {
		o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	if _, ok := h.Blobs.(*hubserver.BlobDir); !ok {
		t.Skipf("corrupts a blob file, and the blobs are in %T (TestOCICorruptRegistryIsCaught corrupts a registry's)", h.Blobs)
	}
	dave, key := h.Publisher(t, "dave")
	v := publish(t, dave, key, "dave/x", "1.0.0")
	hexd := strings.TrimPrefix(v.WasmDigest, "sha256:")
	p := filepath.Join(h.Dir, "blobs", "sha256", hexd[:2], hexd)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-1] ^= 1
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	err = streamDownload(http.DefaultTransport, h.URL, "dave/x", int(v.WasmSize))
	if err == nil {
		t.Error("a corrupt blob was served whole")
	}
	if _, err := h.Client(t, "").Fetch(ctx, "dave/x", "1.0.0", hubclient.FetchOptions{}); err == nil {
		t.Error("a station fetched a corrupt blob")
	}
	if !strings.Contains(logs.String(), "the stored wasm is corrupt") {
		t.Errorf("the hub did not log the corruption:\n%s", logs.String())
	}
	// A missing file is an error answer, not a broken one.
	os.Remove(p)
	if a := send(t, h, "GET", "/v1/modules/dave/x/versions/1.0.0/bundle", "", nil); a.code() != hub.CodeInternal {
		t.Errorf("a missing blob = %d %s", a.status, a.body)
	}
}
