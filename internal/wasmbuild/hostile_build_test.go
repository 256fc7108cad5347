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

// TestBuildCannotReadTheBuildersFiles: a stranger's C or Rust source names
// a file of the builder's (.incbin, include_bytes!) to carry it into the
// module; the confined compiler cannot open it, and the build fails.
func TestBuildCannotReadTheBuildersFiles(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "id_ed25519")
	// A C string literal, so that C can #include it as one.
	if err := os.WriteFile(secret, []byte(`"-----BEGIN OPENSSH PRIVATE KEY----- do not leak"`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		lang  string
		files map[string]string
	}{
		{LangC, map[string]string{
			"main.c": `#include "station.h"
static const char *leak =
#include "` + secret + `"
;
static int greet(station_call *c) { return station_fail(c, "%s", leak); }
const station_command station_commands[] = {{"greet", greet}, {0}};
`}},
		{LangRust, map[string]string{
			"src/lib.rs": `#[no_mangle]
pub static LEAK: &[u8] = include_bytes!("` + secret + `");
`}},
	} {
		t.Run(tc.lang, func(t *testing.T) {
			RequireToolchain(t, tc.lang)
			dir := t.TempDir()
			for name, src := range tc.files {
				os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755)
				os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644)
			}
			out := filepath.Join(dir, "module.wasm")
			err := Build(context.Background(), dir, out)
			if err == nil {
				b, _ := os.ReadFile(out)
				t.Fatalf("the build read %s (the secret is in the module: %v)", secret, bytes.Contains(b, []byte("do not leak")))
			}
			if msg := err.Error(); !strings.Contains(msg, "ermission denied") && !strings.Contains(msg, "not found") {
				t.Errorf("the build failed, but not for want of access: %v", err)
			}
			t.Logf("refused: %v", err)
		})
	}
}
