package execgate

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/station-dev/station/abi"
)

func TestCover(t *testing.T) {
	root := realPath(t, t.TempDir())
	for _, d := range []string{"a", "b/c/d", "b/e", "f"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "b/file"), nil, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "b/c"), filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	j := func(p ...string) []string {
		for i := range p {
			p[i] = filepath.Join(root, p[i])
		}
		return p
	}
	cases := []struct {
		name  string
		avoid []string
		want  []string
	}{
		{"nothing to avoid", nil, j(".")},
		{"avoid elsewhere", []string{"/nonexistent"}, j(".")},
		{"root inside avoided", j("."), nil},
		{"one nested tree", j("b/c"), j("a", "b/e", "b/file", "f")},
		{"two trees", j("b/c/d", "f"), j("a", "b/e", "b/file")},
	}
	for _, c := range cases {
		got := cover(root, c.avoid, 0)
		slices.Sort(got)
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: cover = %q, want %q", c.name, got, c.want)
		}
	}
}

// TestRunReadsConfined: a child reads only the system directories, the
// module's own trees and its scratch directory — not the user's other files,
// not the station's state, not the station's process — and cannot reach a
// Unix socket on the file system, wherever it is.
func TestRunReadsConfined(t *testing.T) {
	wd := realPath(t, t.TempDir())
	readable := realPath(t, t.TempDir())
	outside := realPath(t, t.TempDir())
	home := filepath.Join(readable, "station-home") // an excluded tree inside a readable one
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	write := func(p, s string) string {
		t.Helper()
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	inWork := write(filepath.Join(wd, "in-work"), "work")
	inRead := write(filepath.Join(readable, "in-read"), "read")
	secret := write(filepath.Join(outside, "secret"), "secret")
	state := write(filepath.Join(home, "station.db"), "state")

	name, op := helperProgram(t, wd, home)
	progs, err := Resolve([]string{name}, op)
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(Options{Module: "test/reads", Programs: progs, Env: []string{helperVar}, WorkDirs: []string{wd}, ReadDirs: []string{readable}, Operator: op})
	if err != nil {
		t.Fatal(err)
	}
	if g.conf.landlockABI() == 0 {
		t.Skipf("no Landlock here: %s", g.Confinement())
	}
	run := func(mode string, args ...string) *abi.ProcessResponse {
		t.Helper()
		resp, err := g.Run(callCtx(t), &abi.ProcessRequest{Argv: append([]string{name}, args...), Env: map[string]string{helperVar: mode}, Dir: wd})
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	shm := ""
	if f, err := os.CreateTemp("/dev/shm", "execgate-test-"); err == nil {
		f.WriteString("shared")
		f.Close()
		shm = f.Name()
		t.Cleanup(func() { os.Remove(shm) })
	}
	for _, c := range []struct {
		path string
		ok   bool
	}{
		{"/dev/null", true},
		{shm, false},
		{inWork, true},
		{inRead, true},
		{"/etc/passwd", true},
		{secret, false},
		{state, false},
		{fmt.Sprintf("/proc/%d/environ", os.Getpid()), false},
	} {
		if c.path == "" {
			continue // no /dev/shm here
		}
		resp := run("read", c.path)
		if got := resp.ExitCode == 0; got != c.ok {
			t.Errorf("child read %s: exit %d (%q), want readable=%v", c.path, resp.ExitCode, resp.Stdout, c.ok)
		}
	}

	// Unix sockets: one outside every tree, one inside the work dir.
	for _, dir := range []string{outside, wd} {
		sock := filepath.Join(dir, "agent.sock")
		ln, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		var accepted atomic.Int32
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				accepted.Add(1)
				c.Close()
			}
		}()
		resp := run("unix", sock)
		ln.Close()
		if resp.ExitCode == 0 || accepted.Load() != 0 {
			t.Errorf("child connected to %s: exit %d (%q), %d accepted", sock, resp.ExitCode, resp.Stdout, accepted.Load())
		}
	}
}
