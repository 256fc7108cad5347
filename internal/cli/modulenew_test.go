package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/station-dev/station/internal/wasmbuild"
)

// TestNewModuleFromScratch is a module author's first ten minutes, from an
// empty directory outside this repository, with no network: station module
// new, build, install, run — for every language whose toolchain is here.
// GOPROXY=off: the Go SDK can only come from the station itself.
func TestNewModuleFromScratch(t *testing.T) {
	work := t.TempDir()
	t.Chdir(work)
	t.Setenv("GOPROXY", "off")
	t.Setenv("GOFLAGS", "-mod=mod -modcacherw")
	t.Setenv("GOMODCACHE", filepath.Join(work, "modcache")) // nothing cached from the repository
	t.Setenv("GONOSUMDB", "")
	home := filepath.Join(work, "home")
	for _, lang := range []string{wasmbuild.LangGo, wasmbuild.LangC, wasmbuild.LangRust} {
		t.Run(lang, func(t *testing.T) {
			wasmbuild.RequireToolchain(t, lang)
			dir, id := "hello-"+lang, "ada/hello-"+lang
			r := station(t, home, "", "module", "new", dir, "--lang", lang, "--id", id).want(t, 0)
			if !strings.Contains(r.out, "station module build "+dir) {
				t.Errorf("module new does not say what to do next:\n%s", r.out)
			}
			for _, f := range []string{"module.yaml", "tests.yaml", "README.md", ".gitignore"} {
				if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
					t.Errorf("module new wrote no %s: %v", f, err)
				}
			}
			station(t, home, "", "module", "build", dir).want(t, 0)
			// Its tests.yaml passes in a throwaway station, showing the calls.
			r = station(t, home, "", "module", "test", "--no-build", dir).want(t, 0)
			if !strings.Contains(r.out, "2 passed") {
				t.Errorf("module test of a new module:\n%s", r.out)
			}
			station(t, home, "", "module", "install", "--yes", dir).want(t, 0)
			r = station(t, home, "", "run", id, "greet", "--compact", "--input", `{"name": "Ada"}`).want(t, 0)
			if got := strings.TrimSpace(r.out); got != `{"greeting":"Hello, Ada!"}` {
				t.Errorf("run greet = %s, want {\"greeting\":\"Hello, Ada!\"}", got)
			}
			// A second module new into the same directory changes nothing.
			before, _ := os.ReadFile(filepath.Join(dir, "module.yaml"))
			r = station(t, home, "", "module", "new", dir, "--lang", lang).want(t, 1)
			if !strings.Contains(r.err, "not empty") {
				t.Errorf("module new into a full directory: %s", r.err)
			}
			if after, _ := os.ReadFile(filepath.Join(dir, "module.yaml")); string(after) != string(before) {
				t.Error("module new into a full directory changed module.yaml")
			}
		})
	}
	// The Go module's go.mod is the one a published SDK will satisfy.
	if b, err := os.ReadFile(filepath.Join("hello-go", "go.mod")); err == nil && !strings.Contains(string(b), "require github.com/station-dev/station/sdk v") {
		t.Errorf("go.mod does not require the SDK:\n%s", b)
	}
}

// TestNewModuleRefusals: module new refuses what it cannot make well, and
// leaves nothing behind.
func TestNewModuleRefusals(t *testing.T) {
	work := t.TempDir()
	t.Chdir(work)
	home := filepath.Join(work, "home")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"x", "--lang", "cobol"}, `unknown language "cobol"`},
		{[]string{"x", "--id", "Ada/Hello"}, "may contain only lower-case"},
		{[]string{"x", "--id", "nohyphen"}, `must be "owner/slug"`},
		{[]string{"x", "--id", "../../etc/evil"}, "may contain only lower-case"},
	} {
		r := station(t, home, "", append([]string{"module", "new"}, tc.args...)...)
		if r.code == 0 || !strings.Contains(r.err, tc.want) {
			t.Errorf("module new %v: exit %d, %s; want an error containing %q", tc.args, r.code, r.err, tc.want)
		}
		if _, err := os.Stat("x"); err == nil {
			t.Errorf("module new %v failed but left x/ behind", tc.args)
			os.RemoveAll("x")
		}
	}
	// A file in the way is refused, and kept.
	os.WriteFile("file", []byte("mine"), 0o600)
	if r := station(t, home, "", "module", "new", "file"); r.code == 0 {
		t.Error("module new over a file succeeded")
	}
	if b, _ := os.ReadFile("file"); string(b) != "mine" {
		t.Error("module new changed a file in the way")
	}
	// --json is for scripts.
	r := station(t, home, "", "module", "new", "j", "--id", "ada/j", "--json").want(t, 0)
	var res struct {
		ID    string   `json:"id"`
		Lang  string   `json:"lang"`
		Files []string `json:"files"`
		Next  []string `json:"next"`
	}
	if err := json.Unmarshal([]byte(r.out), &res); err != nil || res.ID != "ada/j" || res.Lang != "go" || len(res.Files) == 0 || len(res.Next) == 0 {
		t.Errorf("module new --json = %s (%v)", r.out, err)
	}
}
