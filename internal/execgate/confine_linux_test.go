package execgate

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/station-dev/station/internal/sandbox"
	"github.com/station-dev/station/sdk/abi"
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
	t.Cleanup(func() { g.Close() })
	requireLandlock(t, g)
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

// withoutNamespaces simulates a platform where children get no namespaces
// (why says so) but the real Landlock state.
func withoutNamespaces(t *testing.T, why string) {
	real := currentPlatform()
	withPlatform(t, platform{nsErr: why, landlock: real.landlock, kernelLandlock: real.kernelLandlock, landlockErr: real.landlockErr})
}

// requireLandlock fails the test if g does not confine children with
// Landlock although the kernel has it, or although the run demands
// confinement (STATION_REQUIRE_CONFINEMENT, which .ci/run sets for both its
// passes): a "not confined" fallback is a failure, never a skip. It skips
// only on a kernel without Landlock outside such a run.
func requireLandlock(t *testing.T, g *Gate) {
	t.Helper()
	if g.conf.landlockABI() > 0 {
		return
	}
	if landlockABI() > 0 || os.Getenv("STATION_REQUIRE_CONFINEMENT") != "" {
		t.Fatalf("children are not confined to their files (as uid %d): %s", os.Geteuid(), g.Confinement())
	}
	t.Skipf("no Landlock in this kernel: %s", g.Confinement())
}

// TestPlatformConfinesThisUser: the platform probe finds every confinement
// the kernel offers, for the user the tests run as — root or not. (As a
// normal user the probe used to build rules without the reads a call has,
// failed, and left children unconfined.)
func TestPlatformConfinesThisUser(t *testing.T) {
	p := detectPlatform()
	if !p.isolated() {
		if os.Getenv("STATION_REQUIRE_CONFINEMENT") != "" {
			t.Fatalf("as uid %d children get no namespaces: %s", os.Geteuid(), p.nsErr)
		}
		t.Skipf("no namespaces here: %s", p.nsErr)
	}
	if p.ns.dropCaps != (os.Geteuid() == 0) || p.ns.userns == (os.Geteuid() == 0) {
		t.Errorf("as uid %d: mode %+v, want a user namespace exactly when not root", os.Geteuid(), p.ns)
	}
	if k := landlockABI(); k > 0 {
		if p.landlock != k || p.landlockErr != "" {
			t.Fatalf("as uid %d: Landlock ABI %d in the kernel, children get %d (%s)", os.Geteuid(), k, p.landlock, p.landlockErr)
		}
	} else if os.Getenv("STATION_REQUIRE_CONFINEMENT") != "" {
		t.Fatal("no Landlock in this kernel, and this run demands it")
	}
}

// TestFailClosedWithoutLandlock: where the kernel offers Landlock but the
// station cannot apply it (or there is none), no child starts unless the
// operator accepts it by name; the refusal is a recorded denial that names
// the setting, and Describe and Confinement say what children get.
func TestFailClosedWithoutLandlock(t *testing.T) {
	real := currentPlatform()
	for _, p := range []platform{
		{ns: real.ns, nsErr: real.nsErr, kernelLandlock: 7, landlockErr: "Landlock ABI 7 is enabled but cannot be applied: simulated"},
		{ns: real.ns, nsErr: real.nsErr},
	} {
		withPlatform(t, p)
		dir := t.TempDir()
		marker := filepath.Join(dir, "ran")
		rec := &recorder{}
		g := systemGate(t, rec, []string{"touch"}, Options{WorkDirs: []string{dir}, Operator: Operator{Excluded: []string{dir}}})
		_, err := g.Run(callCtx(t), &abi.ProcessRequest{Argv: []string{"touch", marker}, Dir: dir})
		var v *sandbox.Violation
		if !errors.As(err, &v) || !strings.Contains(v.Reason, "subprocess.allow_unconfined_files: true") || !strings.Contains(v.Reason, "cannot be confined to the module's files") {
			t.Fatalf("Run on %+v = %v, want a denial naming the setting", p, err)
		}
		if d := rec.last(t); d.Allowed || d.Capability != sandbox.Subprocess {
			t.Errorf("decision %+v, want a recorded denial", d)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Fatal("the program ran")
		}
		if got := Describe(Operator{}); !strings.Contains(got, "WILL NOT START") || !strings.Contains(got, "allow_unconfined_files") {
			t.Errorf("Describe = %q, want it to say programs will not start and why", got)
		}
		if got := g.Confinement(); !strings.Contains(got, "files: NOT confined") {
			t.Errorf("Confinement() = %q, want files: NOT confined", got)
		}
		if g.Refusal() == "" || g.FilesConfined() {
			t.Errorf("Refusal() = %q, FilesConfined() = %v; want a refusal", g.Refusal(), g.FilesConfined())
		}

		op := Operator{Excluded: []string{dir}, AllowUnconfinedFiles: true}
		g = systemGate(t, rec, []string{"touch"}, Options{WorkDirs: []string{dir}, Operator: op})
		if resp, err := g.Run(callCtx(t), &abi.ProcessRequest{Argv: []string{"touch", marker}, Dir: dir}); err != nil || resp.ExitCode != 0 {
			t.Fatalf("Run with allow_unconfined_files = %+v, %v", resp, err)
		}
		if g.Refusal() != "" || g.FilesConfined() {
			t.Errorf("with allow_unconfined_files: Refusal() = %q, FilesConfined() = %v", g.Refusal(), g.FilesConfined())
		}
		if got := Describe(op); !strings.Contains(got, "NOT CONFINED") {
			t.Errorf("Describe with allow_unconfined_files = %q, want NOT CONFINED", got)
		}
	}
}

// TestLauncherFailureStartsNothing: when the launcher cannot confine itself
// (here: the Landlock ruleset it is given is not one), the program does not
// run, and the call is a recorded denial saying why.
func TestLauncherFailureStartsNothing(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	rec := &recorder{}
	g := systemGate(t, rec, []string{"touch"}, Options{WorkDirs: []string{dir}, Operator: Operator{Excluded: []string{dir}}})
	requireLandlock(t, g)
	g.conf.breakRules = true
	_, err := g.Run(callCtx(t), &abi.ProcessRequest{Argv: []string{"touch", marker}, Dir: dir})
	var v *sandbox.Violation
	if !errors.As(err, &v) || !strings.Contains(v.Reason, "was not started: it could not be confined (confine): landlock_restrict_self") {
		t.Fatalf("Run with a broken ruleset = %v, want a denial", err)
	}
	if d := rec.last(t); d.Allowed {
		t.Errorf("last decision %+v, want the denial", d)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the program ran unconfined")
	}
}

// TestStationThreadsStayUnconfined: starting children changes no thread of
// the station (no_new_privs, seccomp and Landlock are the launcher's).
func TestStationThreadsStayUnconfined(t *testing.T) {
	g := systemGate(t, nil, []string{"true"}, Options{})
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 4 {
				if _, err := g.Run(callCtx(t), &abi.ProcessRequest{Argv: []string{"true"}}); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + task.Name() + "/status")
		if err != nil {
			continue // the thread exited
		}
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) == 2 && (f[0] == "NoNewPrivs:" || f[0] == "Seccomp:") && f[1] != "0" {
				t.Errorf("station thread %s: %s", task.Name(), l)
			}
		}
	}
	// A thread under Landlock could not create a file outside its rules.
	if err := os.WriteFile(filepath.Join(t.TempDir(), "f"), nil, 0o600); err != nil {
		t.Fatalf("the station cannot write after starting children: %v", err)
	}
}

// TestChildCannotWriteStationProc: a granted program cannot write the
// station's /proc files — oom_score_adj would make the station the kernel's
// first victim (the user-namespace form used to allow /proc writes).
func TestChildCannotWriteStationProc(t *testing.T) {
	g := systemGate(t, nil, []string{"tee"}, Options{})
	requireLandlock(t, g)
	oom := fmt.Sprintf("/proc/%d/oom_score_adj", os.Getpid())
	before, err := os.ReadFile(oom)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{oom, fmt.Sprintf("/proc/%d/comm", os.Getpid()), "/proc/self/oom_score_adj", "/proc/sys/kernel/core_pattern"} {
		resp, err := g.Run(callCtx(t), &abi.ProcessRequest{Argv: []string{"tee", f}, Stdin: []byte("1000\n")})
		if err != nil {
			t.Fatal(err)
		}
		if resp.ExitCode == 0 {
			t.Errorf("tee %s: exit 0, want a refusal", f)
		}
	}
	if after, _ := os.ReadFile(oom); string(after) != string(before) {
		t.Fatalf("the station's oom_score_adj changed from %q to %q", before, after)
	}
}

// TestRootUserNamespaceFallback: where root cannot drop capabilities with
// network, pid and ipc namespaces alone (some containers), children get a
// user namespace instead — and are still confined: no capabilities in the
// namespace, no_new_privs, Landlock. As another user this is the normal
// path, which the other tests cover.
func TestRootUserNamespaceFallback(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("root's fallback; as this user the user namespace is the normal path")
	}
	real := currentPlatform()
	const ns = unix.CLONE_NEWNET | unix.CLONE_NEWPID | unix.CLONE_NEWIPC | unix.CLONE_NEWUSER
	p := platform{ns: nsMode{flags: ns, userns: true}, kernelLandlock: real.kernelLandlock}
	if err := probe(p); err != nil {
		t.Fatalf("probe of the user-namespace form as root: %v", err)
	}
	p.landlock = real.landlock
	withPlatform(t, p)
	wd := realPath(t, t.TempDir())
	outside := realPath(t, t.TempDir())
	g, name := helperGate(t, nil, []string{wd})
	requireLandlock(t, g)
	resp, err := g.Run(callCtx(t), &abi.ProcessRequest{Argv: []string{name}, Env: map[string]string{helperVar: "status"}})
	if err != nil {
		t.Fatal(err)
	}
	if out := string(resp.Stdout); !strings.Contains(out, "CapEff: 0000000000000000") || !strings.Contains(out, "CapBnd: 0000000000000000") || !strings.Contains(out, "NoNewPrivs: 1") {
		t.Errorf("child status %q: want no capabilities and no_new_privs", out)
	}
	resp, err = g.Run(callCtx(t), &abi.ProcessRequest{Argv: []string{name, filepath.Join(outside, "f")}, Env: map[string]string{helperVar: "write"}, Dir: wd})
	if err != nil {
		t.Fatal(err)
	}
	if resp.ExitCode == 0 {
		t.Errorf("the child wrote outside its work dir: %q", resp.Stdout)
	}
}

// TestCloseReleases: a gate's ruleset and scratch root live as long as the
// gate; after Close nothing of them is left, and no child starts.
func TestCloseReleases(t *testing.T) {
	g := systemGate(t, nil, []string{"true"}, Options{})
	requireLandlock(t, g)
	root, fd := g.conf.scratchRoot, g.conf.rules.fd
	if fi, err := os.Stat(root); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("scratch root %s: %v %v, want a 0700 directory", root, fi, err)
	}
	if _, err := g.Run(callCtx(t), &abi.ProcessRequest{Argv: []string{"true"}}); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(root); len(ents) != 0 {
		t.Errorf("a call's scratch dir outlived it: %v", ents)
	}
	g.Close()
	g.Close()
	if _, err := os.Stat(root); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("scratch root after Close: %v", err)
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err == nil {
		// The number may have been reused: only a ruleset would be ours.
		if target, _ := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd)); target == "anon_inode:landlock-ruleset" {
			t.Errorf("the ruleset is still open after Close")
		}
	}
	if _, err := g.Run(callCtx(t), &abi.ProcessRequest{Argv: []string{"true"}}); err == nil {
		t.Error("a closed gate started a child")
	}
}
