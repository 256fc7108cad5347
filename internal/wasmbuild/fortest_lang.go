package wasmbuild

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// Toolchain describes the toolchain that builds lang's modules (LangGo,
// LangC, LangRust), or says what to install.
func Toolchain(lang string) (string, error) {
	switch lang {
	case LangGo:
		return goTool(), nil
	case LangC:
		return CToolchain()
	case LangRust:
		return RustToolchain()
	}
	return "", fmt.Errorf("no language %q", lang)
}

// RequireToolchain skips the test when lang's toolchain is missing, saying
// what to install — or fails it when $STATION_REQUIRE_WASM_TOOLCHAINS is 1
// (CI, which installs them).
func RequireToolchain(t testing.TB, lang string) {
	t.Helper()
	if _, err := Toolchain(lang); err != nil {
		if os.Getenv("STATION_REQUIRE_WASM_TOOLCHAINS") == "1" {
			t.Fatalf("no %s toolchain (STATION_REQUIRE_WASM_TOOLCHAINS=1): %v", lang, err)
		}
		t.Skipf("no %s toolchain: %v", lang, err)
	}
}

// langBuilds memoizes ForTestLang: one build per directory and process.
var langBuilds sync.Map // string -> *testBuild

// ForTestLang builds the module at dir (relative to the repository root,
// or absolute) in its language, once per test process, and returns its
// bytes; a Go module goes through ForTest and its cache across processes.
// It skips the test when the toolchain is missing (RequireToolchain) and
// fails it when the build fails.
func ForTestLang(t testing.TB, dir string) []byte {
	t.Helper()
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	abs := dir
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(root, filepath.FromSlash(dir))
	}
	lang, err := Lang(abs)
	if err != nil {
		t.Fatal(err)
	}
	RequireToolchain(t, lang)
	if lang == LangGo {
		rel, err := filepath.Rel(root, abs)
		if err != nil {
			t.Fatal(err)
		}
		return ForTest(t, filepath.ToSlash(rel))
	}
	v, _ := langBuilds.LoadOrStore(abs, new(testBuild))
	b := v.(*testBuild)
	b.once.Do(func() {
		tmp, err := os.MkdirTemp("", "station-langbuild-")
		if err != nil {
			b.err = err
			return
		}
		defer os.RemoveAll(tmp)
		out := filepath.Join(tmp, "module.wasm")
		if b.err = Build(context.Background(), abs, out); b.err == nil {
			b.wasm, b.err = os.ReadFile(out)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.wasm
}
