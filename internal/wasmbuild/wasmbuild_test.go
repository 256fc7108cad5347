package wasmbuild

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/tetratelabs/wazero"

	"github.com/station-dev/station/abi"
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
