package conformance

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/tetratelabs/wazero"

	"github.com/station-dev/station/internal/wasmbuild"
)

// langs are the builds of the conformance module, Go first.
var langs = []struct{ name, dir string }{
	{wasmbuild.LangGo, "internal/conformance/guest"},
	{wasmbuild.LangC, "examples/c/hello"},
	{wasmbuild.LangRust, "examples/rust/hello"},
}

// forEachLang runs fn as a sub-benchmark per language whose toolchain is
// installed, with the module's directory.
func forEachLang(b *testing.B, fn func(b *testing.B, dir string)) {
	root, err := wasmbuild.RepoRoot()
	if err != nil {
		b.Fatal(err)
	}
	for _, l := range langs {
		b.Run(l.name, func(b *testing.B) {
			wasmbuild.RequireToolchain(b, l.name)
			fn(b, filepath.Join(root, filepath.FromSlash(l.dir)))
		})
	}
}

// BenchmarkCompile is what a station pays once per module digest: wazero
// compiling the module to machine code, with no cache. The module's size
// is reported as wasm-bytes.
func BenchmarkCompile(b *testing.B) {
	forEachLang(b, func(b *testing.B, dir string) {
		wasm := wasmbuild.ForTestLang(b, dir)
		ctx := context.Background()
		for b.Loop() {
			r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler())
			if _, err := r.CompileModule(ctx, wasm); err != nil {
				b.Fatal(err)
			}
			r.Close(ctx)
		}
		b.ReportMetric(float64(len(wasm)), "wasm-bytes")
	})
}

// BenchmarkCall is a warm call of greet through the station (Station.Run:
// the manifest's input check, a pooled instance, the SDK's decoding and
// encoding).
func BenchmarkCall(b *testing.B) {
	forEachLang(b, func(b *testing.B, dir string) {
		cache := wazero.NewCompilationCache()
		defer cache.Close(context.Background())
		st := install(b, cache, dir)
		ctx := context.Background()
		in := []byte(`{"name": "Ada"}`)
		if _, err := st.Run(ctx, id, "greet", in); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if _, err := st.Run(ctx, id, "greet", in); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkBuild is an author's rebuild after an edit: the toolchain
// (station module build's compile step) with its caches warm.
func BenchmarkBuild(b *testing.B) {
	forEachLang(b, func(b *testing.B, dir string) {
		out := filepath.Join(b.TempDir(), "module.wasm")
		ctx := context.Background()
		for b.Loop() {
			if err := wasmbuild.Build(ctx, dir, out); err != nil {
				b.Fatal(err)
			}
		}
		if fi, err := os.Stat(out); err == nil {
			b.ReportMetric(float64(fi.Size()), "wasm-bytes")
		}
	})
}
