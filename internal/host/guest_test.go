package host

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

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

// Regression test (found in review): a WASI sleep in the start function (a
// Go init that calls time.Sleep) used to ignore the deadline, because there
// was no call state yet; Load, install checks and fresh calls then blocked for
// as long as the guest liked. Now sleeps end with the instantiation's
// context: the start function cannot finish, and Load fails saying so. (No
// timing assertion: if the sleep were not interrupted, it would complete and
// Load would succeed.)
func TestStartFunctionSleepEndsWithDeadline(t *testing.T) {
	wasm := buildReviewGuest(t, guestSource([]string{"time"}, `
func init() { time.Sleep(5 * time.Second) }

//go:wasmexport station_call
func call(cmd, in int32) int32 { return 0 }
`))
	h, err := New(Options{}) // the zero Options: an in-memory cache of its own
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	_, err = h.Load(context.Background(), reviewManifest(t, "test/sleepy", "timeout: 1s"), wasm)
	if err == nil || !strings.Contains(err.Error(), "did not finish within") {
		t.Fatalf("Load of a module whose start function sleeps past its deadline: got %v, want a start timeout", err)
	}
}
