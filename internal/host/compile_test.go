package host

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero"

	"github.com/station-dev/station/internal/wasmgen"
)

// A module a child compiled within the bounds is not compiled in a child
// again, in this process or a later one with the same bounds (the marker
// next to the cache); other bounds vet it again.
func TestVettedModulesSkipTheChild(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	wasm := wasmgen.Module([]wasmgen.Func{{Body: []byte{0x01}}})
	children := 0
	compile := func(opts Options) {
		t.Helper()
		cache, err := wazero.NewCompilationCacheWithDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer cache.Close(ctx)
		c := newCompiler(opts, slog.New(slog.DiscardHandler))
		c.exe = func() (string, error) { children++; return selfExe() }
		rt := newRuntime(ctx, cache)
		defer rt.Close(ctx)
		for range 2 {
			if _, err := c.compile(ctx, rt, "test/vetted", Digest(wasm), wasm, 16); err != nil {
				t.Fatal(err)
			}
		}
	}
	compile(Options{CacheDir: dir})
	if children != 1 {
		t.Fatalf("%d compile children for two compiles in one process, want 1", children)
	}
	compile(Options{CacheDir: dir}) // a later process
	if children != 1 {
		t.Fatalf("a later process started a compile child for a vetted module")
	}
	compile(Options{CacheDir: dir, Install: InstallLimits{CompileMemory: 1 << 30}})
	if children != 2 {
		t.Fatalf("other bounds did not vet the module again")
	}
}

// A station that cannot start a compile child refuses the module instead of
// compiling it in its own process without the memory bound.
func TestNoChildRefuses(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cache, err := wazero.NewCompilationCacheWithDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer cache.Close(ctx)
	wasm := wasmgen.Module([]wasmgen.Func{{Body: []byte{0x01}}})
	for name, exe := range map[string]func() (string, error){
		"no binary":           func() (string, error) { return "", errors.New("no /proc/self/exe") },
		"binary cannot start": func() (string, error) { return dir + "/missing", nil },
	} {
		c := newCompiler(Options{CacheDir: dir}, slog.New(slog.DiscardHandler))
		c.exe = exe
		rt := newRuntime(ctx, cache)
		_, err := c.compile(ctx, rt, "test/unbounded", Digest(wasm), wasm, 16)
		rt.Close(ctx)
		if err == nil || !strings.Contains(err.Error(), "module test/unbounded: install: its compilation cannot be bounded in memory") {
			t.Errorf("%s: compile = %v, want a refusal naming the module", name, err)
		}
	}
}
