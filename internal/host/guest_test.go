package host

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/station-dev/station/internal/wasmbuild"
	"github.com/station-dev/station/manifest"
)

// buildReviewGuest builds a stand-alone Go guest (no SDK: it declares the
// station imports itself, as a module in another toolchain would) from src.
func buildReviewGuest(t *testing.T, src string) []byte {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module reviewguest\n\ngo 1.24\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "guest.wasm")
	if err := wasmbuild.Build(context.Background(), dir, out); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func reviewManifest(t *testing.T, id, limits string) *manifest.Manifest {
	t.Helper()
	src := "id: " + id + "\nversion: \"1.0.0\"\nwasm: module.wasm\ncommands: [{name: run}]\n" +
		"requires: {network: {allow: []}, subprocess: false, filesystem_writes: []}\n"
	if limits != "" {
		src += "limits: {" + limits + "}\n"
	}
	m, err := manifest.Parse("module.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// guestSource assembles a stand-alone guest: imports, the ABI marker, main,
// and body.
func guestSource(imports []string, body string) string {
	var b strings.Builder
	b.WriteString("package main\n\nimport (\n\t\"unsafe\"\n")
	for _, i := range imports {
		b.WriteString("\t\"" + i + "\"\n")
	}
	b.WriteString(")\n\n//go:wasmimport station output_set\nfunc outputSet(ptr unsafe.Pointer, n uint32) int32\n\n")
	b.WriteString("var _ = outputSet\n\n//go:wasmexport station_abi_1\nfunc abi1() {}\n\nfunc main() {}\n")
	b.WriteString(body)
	return b.String()
}

// Regression test (found in review): WASI sleeps are ended by the call's context through
// instance.sleep, which reads inst.st.ctx — but while _initialize runs there
// is no call state, so sleep falls back to context.Background(). A guest
// whose start function sleeps (time.Sleep in a Go init) is not stopped by any
// deadline: WithCloseOnContextDone only takes effect when guest code runs
// again, and the host is parked in time.Timer. This blocks
//   - Host.Load / Host.Check (install) for as long as the guest likes; the
//     ctx passed to them cannot cancel it;
//   - every call that instantiates (limits.instances: fresh, or a pool miss),
//     far past limits.timeout, holding a concurrency slot;
//   - station.load holds Station.loadMu meanwhile, so the lazy load of every
//     other module in the process waits too.
//
// Fix: give the instance the instantiation context before InstantiateModule
// (e.g. inst.startCtx = ctx, used by sleep when st.ctx is nil), and do not
// hold a station-wide mutex across Host.Load.
func TestStartFunctionSleepEndsWithDeadline(t *testing.T) {
	// Half of the instances sleep 3s in init (the guest decides with its
	// random source), so a load eventually succeeds and fresh calls then
	// run into the sleeping ones.
	wasm := buildReviewGuest(t, guestSource([]string{"time", "math/rand/v2"}, `
func init() {
	if rand.IntN(2) == 0 {
		time.Sleep(3 * time.Second)
	}
}

//go:wasmexport station_call
func call(cmd, in int32) int32 { return 0 }
`))
	h, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	man := reviewManifest(t, "test/sleepy", "timeout: 1s, instances: fresh")
	var worstLoad, worstCall time.Duration
	loaded := false
	for i := 0; i < 16 && !loaded; i++ {
		start := time.Now()
		_, err := h.Load(context.Background(), man, wasm)
		worstLoad = max(worstLoad, time.Since(start))
		loaded = err == nil
	}
	if !loaded {
		t.Fatal("could not load the module")
	}
	for i := 0; i < 16 && worstCall < 2*time.Second; i++ {
		start := time.Now()
		h.Call(context.Background(), "test/sleepy", "run", nil)
		worstCall = max(worstCall, time.Since(start))
	}
	t.Logf("limits.timeout 1s: slowest Load %s, slowest call %s", worstLoad.Round(time.Millisecond), worstCall.Round(time.Millisecond))
	if worstLoad > 2*time.Second || worstCall > 2*time.Second {
		t.Fatalf("a sleep in the start function outlived the 1s deadline: slowest Load %s, slowest call %s",
			worstLoad.Round(time.Millisecond), worstCall.Round(time.Millisecond))
	}
}
