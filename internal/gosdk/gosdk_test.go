package gosdk

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestGoToolchainTakesTheProxy downloads the SDK from WriteProxy's
// directory with the go command itself, offline, and checks that go
// records the hashes Hash computes.
func TestGoToolchainTakesTheProxy(t *testing.T) {
	proxy := t.TempDir()
	if err := WriteProxy(proxy); err != nil {
		t.Fatal(err)
	}
	// Twice: the second call finds everything in place.
	if err := WriteProxy(proxy); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cmd := exec.Command("go", "mod", "download", "-json", ModulePath+"@"+Version)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOMODCACHE="+filepath.Join(dir, "modcache"), "GOTOOLCHAIN=local")
	cmd.Env = append(cmd.Env, Env(proxy, map[string]string{"GOPROXY": "off"})...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go mod download: %v\n%s", err, out)
	}
	var got struct{ Version, Sum, GoModSum, Error string }
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	sum, modSum, err := Hash()
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != Version || got.Sum != sum || got.GoModSum != modSum || got.Error != "" {
		t.Errorf("go mod download: %+v, want %s %s %s", got, Version, sum, modSum)
	}
	// Make the cache deletable (the go command writes it read-only).
	c := exec.Command("go", "clean", "-modcache")
	c.Env = cmd.Env
	c.Run()
}

// TestEmbedsEveryFile: the module zip a proxy would make from a tag holds
// every file under sdk/ (the embed pattern skips names starting with "."
// or "_"), so the station serves the same module, with the same hash.
func TestEmbedsEveryFile(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git to list the repository's files")
	}
	cmd := exec.Command(git, "ls-files", "--cached", "--others", "--exclude-standard", ".")
	cmd.Dir = filepath.Join("..", "..", "sdk")
	out, err := cmd.Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	var want []string
	for line := range strings.Lines(string(out)) {
		if name := strings.TrimSpace(line); name != "" {
			if _, err := os.Stat(filepath.Join(cmd.Dir, name)); err == nil {
				want = append(want, name)
			}
		}
	}
	slices.Sort(want)
	got, err := Files()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("embedded %d files, the repository's sdk/ has %d:\nonly embedded: %v\nonly in sdk/: %v",
			len(got), len(want), minus(got, want), minus(want, got))
	}
}

func minus(a, b []string) []string {
	var d []string
	for _, s := range a {
		if !slices.Contains(b, s) {
			d = append(d, s)
		}
	}
	return d
}

// TestReleasedVersionsDoNotChange: a version in released.txt is out in the
// world, recorded in the go.sum of modules built against it; its contents
// can never change. Changing the SDK after a release means a new version
// (sdk.Version), recorded here when it is released.
func TestReleasedVersionsDoNotChange(t *testing.T) {
	f, err := os.Open("released.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sum, modSum, err := Hash()
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		if len(fields) != 3 {
			t.Fatalf("released.txt: %q: want VERSION H1 GOMOD-H1", sc.Text())
		}
		if fields[0] == Version && (fields[1] != sum || fields[2] != modSum) {
			t.Errorf("the SDK's files changed, but sdk.Version is still %s, which is released as %s %s (now %s %s): "+
				"give the SDK a new version in sdk/version.go (and record it in released.txt when it is released)",
				Version, fields[1], fields[2], sum, modSum)
		}
	}
}

func TestEnv(t *testing.T) {
	tests := []struct {
		env        map[string]string
		proxy, sum string
	}{
		{map[string]string{}, "file:///p,https://proxy.golang.org,direct", ModulePath},
		{map[string]string{"GOPROXY": "off"}, "file:///p,off", ModulePath},
		{map[string]string{"GOPROXY": "https://corp.example|direct", "GONOSUMDB": "corp.example"}, "file:///p,https://corp.example|direct", "corp.example," + ModulePath},
		{map[string]string{"GOPROXY": "file:///p,off", "GONOSUMDB": ModulePath}, "file:///p,off", ModulePath},
	}
	for _, tt := range tests {
		got := Env("/p", tt.env)
		want := []string{"GOPROXY=" + tt.proxy, "GONOSUMDB=" + tt.sum}
		if !slices.Equal(got, want) {
			t.Errorf("Env(%v) = %v, want %v", tt.env, got, want)
		}
	}
}

// TestZipIsDeterministic: the same source gives the same zip, so
// WriteProxy rewrites nothing on a second build.
func TestZipIsDeterministic(t *testing.T) {
	a, err := Zip()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Zip()
	if !bytes.Equal(a, b) {
		t.Error("two zips of the same source differ")
	}
}

func TestCopyDir(t *testing.T) {
	if _, err := CopyDir("nope", t.TempDir()); err == nil {
		t.Error("CopyDir of a directory the SDK lacks succeeded")
	}
}

// TestWriteProxyKeepsAVersionsBytes: a proxy directory another build of the
// station filled with other contents under the same version is refused,
// and left as it was.
func TestWriteProxyKeepsAVersionsBytes(t *testing.T) {
	proxy := t.TempDir()
	if err := WriteProxy(proxy); err != nil {
		t.Fatal(err)
	}
	zip := filepath.Join(proxy, filepath.FromSlash(ModulePath), "@v", Version+".zip")
	if err := os.WriteFile(zip, []byte("another build's SDK"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := WriteProxy(proxy)
	if err == nil || !strings.Contains(err.Error(), "other contents") || !strings.Contains(err.Error(), "remove") {
		t.Fatalf("WriteProxy over another SDK of the same version: %v", err)
	}
	if b, _ := os.ReadFile(zip); string(b) != "another build's SDK" {
		t.Error("WriteProxy replaced another build's zip")
	}
}
