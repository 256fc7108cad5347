package wasmbuild

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/tetratelabs/wazero"

	"github.com/station-dev/station/sdk/abi"
)

func TestForTestHello(t *testing.T) {
	wasm := ForTest(t, "examples/hello")
	if !bytes.HasPrefix(wasm, []byte("\x00asm\x01\x00\x00\x00")) {
		t.Fatalf("not a wasm module: % x", wasm[:min(8, len(wasm))])
	}
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter()) // only decoding is needed; the compiler is slow under -race
	defer rt.Close(ctx)
	m, err := rt.CompileModule(ctx, wasm)
	if err != nil {
		t.Fatal(err)
	}
	exports := m.ExportedFunctions()
	for _, name := range []string{abi.ExportVersionPrefix + "1", abi.ExportCall, abi.ExportInitialize} {
		if _, ok := exports[name]; !ok {
			t.Errorf("hello does not export %s", name)
		}
	}
	if _, ok := exports["_start"]; ok {
		t.Errorf("hello exports _start: not a reactor")
	}
	for _, f := range m.ImportedFunctions() {
		if mod, name, _ := f.Import(); mod == abi.ImportModule && name == abi.ImportHTTPRequest {
			t.Errorf("hello imports %s.%s, which a module without network access is not offered", mod, name)
		}
	}
	if again := ForTest(t, "examples/hello"); &again[0] != &wasm[0] {
		t.Errorf("second ForTest in one process built again")
	}
}

func TestCacheKey(t *testing.T) {
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	dir := filepath.Join(root, "examples", "hello")
	k1, err := cacheKey(ctx, root, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	k2, _ := cacheKey(ctx, root, dir, nil)
	k3, _ := cacheKey(ctx, root, dir, []string{"sometag"})
	k4, _ := cacheKey(ctx, root, filepath.Join(root, "internal", "probe", "guest"), nil)
	if k1 != k2 || k1 == k3 || k1 == k4 {
		t.Errorf("keys: same inputs %s %s, a tag %s, another package %s", k1, k2, k3, k4)
	}
}

// TestBuildCachedConcurrent builds one key from several goroutines into an
// empty cache (as parallel test binaries would) and then again from the
// cache, which must not run the compiler.
func TestBuildCachedConcurrent(t *testing.T) {
	old := cacheRoot
	cacheRoot = t.TempDir()
	t.Cleanup(func() { cacheRoot = old })
	ctx := context.Background()
	var wg sync.WaitGroup
	results := make([][]byte, 3)
	errs := make([]error, 3)
	for i := range results {
		wg.Go(func() { results[i], errs[i] = buildCached(ctx, "examples/hello", nil) })
	}
	wg.Wait()
	for i := range results {
		if errs[i] != nil || !bytes.Equal(results[i], results[0]) {
			t.Fatalf("build %d: %v (or different bytes)", i, errs[i])
		}
	}
	entries, _ := os.ReadDir(filepath.Join(cacheRoot, fmt.Sprintf("station-wasmbuild-%d", os.Getuid())))
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if len(names) != 1 || !strings.HasSuffix(names[0], ".wasm") {
		t.Errorf("cache holds %q, want one .wasm (no leftover temporary files)", names)
	}
}

func TestBuildError(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module broken\n\ngo 1.26\n")
	write("main.go", "package main\n\nfunc main() { undefinedThing() }\n")
	err := Build(context.Background(), dir, filepath.Join(dir, "out.wasm"))
	if err == nil || !strings.Contains(err.Error(), "undefined: undefinedThing") {
		t.Errorf("Build of a broken package: error %v, want the compiler's message", err)
	}
}

func TestDeclaresModule(t *testing.T) {
	tests := []struct {
		gomod string
		want  bool
	}{
		{"module github.com/station-dev/station\n\ngo 1.26\n", true},
		{"// x\nmodule \"github.com/station-dev/station\"\n", true},
		{"module github.com/station-dev/station/v2\n", false},
		{"module example.com/other\n", false},
	}
	for _, tt := range tests {
		if got := declaresModule([]byte(tt.gomod), modulePath); got != tt.want {
			t.Errorf("declaresModule(%q) = %v, want %v", tt.gomod, got, tt.want)
		}
	}
}

// TestPrivateDir: a cache directory is used only if it is this user's
// alone; one that others may write, a symbolic link, or (as root) one
// another user owns is refused.
func TestPrivateDir(t *testing.T) {
	base := t.TempDir()
	fresh := filepath.Join(base, "fresh", "cache")
	if err := privateDir(fresh); err != nil {
		t.Fatalf("a new directory: %v", err)
	}
	if fi, err := os.Stat(fresh); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("made %v (%v), want mode 0700", fi.Mode(), err)
	}
	if err := privateDir(fresh); err != nil {
		t.Fatalf("again: %v", err)
	}
	open := filepath.Join(base, "open")
	if err := os.Mkdir(open, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := privateDir(open); err == nil || !strings.Contains(err.Error(), "writable by others") {
		t.Errorf("a world-writable directory: %v, want a refusal", err)
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(fresh, link); err != nil {
		t.Fatal(err)
	}
	if err := privateDir(link); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("a symbolic link: %v, want a refusal", err)
	}
	if os.Getuid() == 0 {
		other := filepath.Join(base, "other")
		if err := os.Mkdir(other, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(other, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		if err := privateDir(other); err == nil || !strings.Contains(err.Error(), "another user") {
			t.Errorf("another user's directory: %v, want a refusal", err)
		}
	}
}

// TestCacheForTest: the shared compilation cache is on disk, in this
// user's directory, under a name for this build of wazero, and one
// process gets one cache.
func TestCacheForTest(t *testing.T) {
	build, err := wazeroBuild()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(build, "v") || strings.ContainsAny(build, `/\`) {
		t.Errorf("wazero build %q, want its version and a hash", build)
	}
	dir, err := testCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(os.TempDir(), fmt.Sprintf("station-test-wazero-cache-%d", os.Getuid()), build); dir != want {
		t.Errorf("cache directory %s, want %s", dir, want)
	}
	if CacheForTest() != CacheForTest() {
		t.Error("two caches in one process")
	}
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler().WithCompilationCache(CacheForTest()))
	defer rt.Close(ctx)
	// The smallest module: one function, (func).
	if _, err := rt.CompileModule(ctx, []byte("\x00asm\x01\x00\x00\x00\x01\x04\x01\x60\x00\x00\x03\x02\x01\x00\x0a\x04\x01\x02\x00\x0b")); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) == 0 {
		t.Errorf("cache directory %s: %v entries (%v), want wazero's", dir, len(entries), err)
	}
}

// TestBuildName: wazero's build is named by its version and checksum, and
// a replacement's; one without a checksum (a local directory) has none, so
// the cache stays in memory.
func TestBuildName(t *testing.T) {
	v112 := `{"Path": "github.com/tetratelabs/wazero", "Version": "v1.12.0", "Sum": "h1:DuWc="}`
	other := `{"Path": "github.com/tetratelabs/wazero", "Version": "v1.12.0", "Sum": "h1:other="}`
	fork := `{"Path": "github.com/tetratelabs/wazero", "Version": "v1.12.0", "Sum": "h1:DuWc=",
		"Replace": {"Path": "example.com/wazero", "Version": "v1.12.1", "Sum": "h1:fork="}}`
	local := `{"Path": "github.com/tetratelabs/wazero", "Version": "v1.12.0", "Sum": "h1:DuWc=",
		"Replace": {"Path": "../wazero"}}`
	a, err1 := buildName([]byte(v112))
	b, err2 := buildName([]byte(other))
	c, err3 := buildName([]byte(fork))
	if err := errors.Join(err1, err2, err3); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(a, "v1.12.0-") || !strings.HasPrefix(c, "v1.12.1-") || a == b || a == c {
		t.Errorf("names %q (v1.12.0), %q (another checksum), %q (a fork), want the version and a hash that tell them apart", a, b, c)
	}
	if _, err := buildName([]byte(local)); err == nil || !strings.Contains(err.Error(), "local directory") {
		t.Errorf("a replacement by a local directory: %v, want no name", err)
	}
	if _, err := buildName([]byte("not json")); err == nil {
		t.Error("a name from no module")
	}
}

// TestCachesOthersMayWriteAreNotUsed: when the user's cache directories
// under os.TempDir() are writable by others, CacheForTest's directory is
// refused and ForTest builds into a directory of its own, which it does not
// leave behind.
func TestCachesOthersMayWriteAreNotUsed(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	old := cacheRoot
	cacheRoot = tmp
	t.Cleanup(func() { cacheRoot = old })
	for _, name := range []string{"station-test-wazero-cache-%d", "station-wasmbuild-%d"} {
		dir := filepath.Join(tmp, fmt.Sprintf(name, os.Getuid()))
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	if dir, err := testCacheDir(); err == nil {
		t.Errorf("compilation cache in %s, a directory others may write", dir)
	}
	wasm, err := buildCached(context.Background(), "examples/hello", nil)
	if err != nil || !bytes.HasPrefix(wasm, []byte("\x00asm")) {
		t.Fatalf("build without the shared cache: %v", err)
	}
	entries, _ := os.ReadDir(tmp)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if len(names) != 2 {
		t.Errorf("%s holds %q, want only the two refused directories", tmp, names)
	}
	if shared, _ := os.ReadDir(filepath.Join(tmp, fmt.Sprintf("station-wasmbuild-%d", os.Getuid()))); len(shared) != 0 {
		t.Errorf("the build went into the directory others may write")
	}
}

func TestReplacesSDK(t *testing.T) {
	for _, tc := range []struct {
		mod  string
		want bool
	}{
		{"module x\n\nrequire github.com/station-dev/station/sdk v1.0.0\n", false},
		{"module x\nreplace github.com/station-dev/station/sdk => ../sdk\n", true},
		{"module x\nreplace github.com/station-dev/station/sdk v1.0.0 => ../sdk\n", true},
		{"module x\nreplace (\n\tgithub.com/station-dev/station/sdk => ./sdk\n)\n", true},
		{"module x\nreplace (\n\texample.com/other => ./o\n)\nrequire github.com/station-dev/station/sdk v1.0.0\n", false},
		{"module x\nreplace github.com/station-dev/station/sdkx => ./x\n", false},
	} {
		if got := replacesSDK([]byte(tc.mod)); got != tc.want {
			t.Errorf("replacesSDK(%q) = %v, want %v", tc.mod, got, tc.want)
		}
	}
}
