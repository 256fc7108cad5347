package wasmbuild

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRustBuildSeesNoSecrets: a stranger's Rust source reads the
// environment while it compiles (option_env!); the builder's tokens are
// not in it, and so not in the module it makes.
func TestRustBuildSeesNoSecrets(t *testing.T) {
	RequireToolchain(t, LangRust)
	const secret = "sk-live-do-not-leak-4242"
	t.Setenv("STATION_TEST_SECRET", secret)
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "src"), 0o755)
	src := `#[no_mangle]
pub static LEAK: [u8; 24] = match option_env!("STATION_TEST_SECRET") {
    Some(_) => *b"the secret was visible!!",
    None => *b"the environment is clean",
};
`
	os.WriteFile(filepath.Join(dir, "src", "lib.rs"), []byte(src), 0o644)
	out := filepath.Join(dir, "module.wasm")
	if err := Build(context.Background(), dir, out); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(out)
	if bytes.Contains(b, []byte("the secret was visible")) || bytes.Contains(b, []byte(secret)) {
		t.Error("the Rust build saw the builder's environment")
	}
	if !bytes.Contains(b, []byte("the environment is clean")) {
		t.Error("the module lacks its own data: the test checks nothing")
	}
}

// TestBuildReplacesASymlinkedOutput: a module directory may name its wasm
// file as a link to a file of the builder's; the build replaces the link
// and never writes through it.
func TestBuildReplacesASymlinkedOutput(t *testing.T) {
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ lang, example string }{
		{LangC, "examples/c/hello"},
		{LangRust, "examples/rust/hello"},
	} {
		t.Run(tc.lang, func(t *testing.T) {
			RequireToolchain(t, tc.lang)
			victim := filepath.Join(t.TempDir(), "bashrc")
			os.WriteFile(victim, []byte("export PS1=mine\n"), 0o600)
			out := filepath.Join(t.TempDir(), "module.wasm")
			if err := os.Symlink(victim, out); err != nil {
				t.Fatal(err)
			}
			if err := Build(context.Background(), filepath.Join(root, filepath.FromSlash(tc.example)), out); err != nil {
				t.Fatal(err)
			}
			if b, _ := os.ReadFile(victim); string(b) != "export PS1=mine\n" {
				t.Errorf("the build wrote through the link into %s", victim)
			}
			if fi, err := os.Lstat(out); err != nil || !fi.Mode().IsRegular() {
				t.Errorf("%s is not the built module: %v %v", out, fi, err)
			}
		})
	}
}

// TestRustManifest: what the rustc build cannot honour in a Cargo.toml is
// refused with the line, never ignored.
func TestRustManifest(t *testing.T) {
	for _, tc := range []struct {
		cargo, edition, err string
	}{
		{"", "2021", ""},
		{"[package]\nname = \"x\"\nedition = \"2018\" # old\n\n[dependencies]\nstation = { path = \"station\" }\n", "2018", ""},
		{"[package]\nedition = \"2024\"\n", "", `Cargo.toml:2: edition "2024"`},
		{"[dependencies]\nstation = { path = \"station\" }\nserde = \"1\"\n", "", "Cargo.toml:3: depends on serde"},
		{"[dependencies.serde]\nversion = \"1\"\n", "", "Cargo.toml:2: depends on serde"},
		{"[target.'cfg(unix)'.dependencies]\nlibc = \"0.2\"\n", "", "depends on libc"},
		{"[package]\nbuild = \"gen.rs\"\n", "", "Cargo.toml:2: a build script"},
	} {
		dir := t.TempDir()
		if tc.cargo != "" {
			os.WriteFile(filepath.Join(dir, "Cargo.toml"), []byte(tc.cargo), 0o644)
		}
		ed, err := rustManifest(dir)
		if tc.err == "" && (err != nil || ed != tc.edition) || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%q: %q, %v; want %q, %q", tc.cargo, ed, err, tc.edition, tc.err)
		}
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "build.rs"), []byte("fn main() {}"), 0o644)
	if _, err := rustManifest(dir); err == nil {
		t.Error("a build.rs was not refused")
	}
}
