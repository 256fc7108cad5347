package wasmbuild

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestRustSDKUnitTests runs the Rust SDK's own unit tests (rustc --test,
// natively, with the rustc that builds modules) and the example's against
// it: the JSON parser and writer, base64, the command table, off wasm32.
func TestRustSDKUnitTests(t *testing.T) {
	tc, err := findRustToolchain()
	if err != nil {
		if os.Getenv("STATION_REQUIRE_WASM_TOOLCHAINS") == "1" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tmp := t.TempDir()
	rustc := func(args ...string) {
		t.Helper()
		if out, err := exec.CommandContext(ctx, tc.rustc, append([]string{"--edition", "2021"}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("rustc %v: %v\n%s", args, err, out)
		}
	}
	run := func(bin string) {
		t.Helper()
		out, err := exec.CommandContext(ctx, bin, "--quiet").CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", filepath.Base(bin), err, out)
		}
		t.Logf("%s: %s", filepath.Base(bin), out)
	}
	sdk := filepath.Join(root, "sdk", "rust", "src", "lib.rs")
	rustc("--test", "--crate-name", "station", "-o", filepath.Join(tmp, "sdk-tests"), sdk)
	run(filepath.Join(tmp, "sdk-tests"))
	rustc("--crate-type=rlib", "--crate-name", "station", "--out-dir", tmp, sdk)
	rustc("--test", "--crate-name", "hello", "--extern", "station="+filepath.Join(tmp, "libstation.rlib"), "-L", "dependency="+tmp,
		"-o", filepath.Join(tmp, "hello-tests"), filepath.Join(root, "examples", "rust", "hello", "src", "lib.rs"))
	run(filepath.Join(tmp, "hello-tests"))
}
