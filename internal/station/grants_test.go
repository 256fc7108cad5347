package station_test

// Review 2: how the filesystem and subprocess gates are integrated into the
// host and the install flow. Each test demonstrates a problem; they fail
// while the problem exists.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/station-dev/station/internal/probe"
	"github.com/station-dev/station/internal/station"
	"github.com/station-dev/station/internal/wasmbuild"
)

// buildInitWriter builds a minimal guest whose start function (a Go init)
// writes path. It speaks the station ABI, so it passes install checks.
func buildInitWriter(t *testing.T, path string) []byte {
	t.Helper()
	src := fmt.Sprintf(`package main

import (
	"os"
	"unsafe"
)

//go:wasmimport station output_set
func outputSet(ptr unsafe.Pointer, n uint32) int32

var _ = outputSet

//go:wasmexport station_abi_1
func abi1() {}

//go:wasmexport station_call
func call(cmd, in int32) int32 { return 0 }

func init() { os.WriteFile(%q, []byte("written before approval"), 0o644) }

func main() {}
`, path)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module initwriter\n\ngo 1.24\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o600)
	out := filepath.Join(dir, "guest.wasm")
	if err := wasmbuild.Build(context.Background(), dir, out); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Install runs Host.Check — which instantiates the module with its requested
// mounts and runs its start function — BEFORE the operator approves. A
// module's init therefore writes files under globs nobody approved, even when
// the operator declines the install.
func TestStartFunctionWritesBeforeApproval(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	out := filepath.Join(t.TempDir(), "out")
	os.Mkdir(out, 0o755)
	target := filepath.Join(out, "pwned.txt")
	dir := e.moduleDir(moduleSpec{id: "test/initwriter", writes: []string{out + "/**"}}, buildInitWriter(t, target))
	_, err := e.st.Install(context.Background(), dir, func(station.Plan) (bool, error) { return false, nil })
	if err == nil {
		t.Fatal("declined install succeeded")
	}
	if b, rerr := os.ReadFile(target); rerr == nil {
		t.Errorf("operator declined the install, yet the module's start function wrote %s (%q); install err: %v", target, b, err)
	}
}

// A program listed in subprocess.allow may lie inside the module's OWN
// writable tree when the grant is not of the whole-tree form "X/**": install
// (execgate.Resolve with execOperator) excludes only OTHER installed modules'
// trees, and newModule adds only wholeTreeRoots. The module can then rewrite
// the approved program in place (mode kept), racing the digest check against
// the exec. After a restart the same module no longer loads (execOperator then
// excludes its own globs): install and load disagree.
func TestProgramInsideOwnWritableTree(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	tools := filepath.Join(t.TempDir(), "tools")
	os.Mkdir(tools, 0o755)
	tool := filepath.Join(tools, "tool")
	good := "#!/bin/sh\necho good\n"
	evil := "#!/bin/sh\necho EVIL\n"
	if err := os.WriteFile(tool, []byte(good), 0o755); err != nil {
		t.Fatal(err)
	}
	spec := moduleSpec{id: "test/selfprog", writes: []string{tools + "/*"}, subp: fmt.Sprintf("{allow: [%q]}", tool)}
	err := e.tryInstall(e.moduleDir(spec, probe.Wasm(t, probe.ExecTag)))
	if err != nil {
		t.Logf("install refused (fixed?): %v", err)
		return
	}
	t.Errorf("install accepted %s, which is inside the module's own writable glob %s/*", tool, tools)

	// Race: one call rewrites the program in place, another runs it.
	var wg sync.WaitGroup
	var writes []probe.Action
	for i := 0; i < 500; i++ {
		writes = append(writes, probe.Write(tool, good), probe.Sleep(time.Millisecond), probe.Write(tool, evil), probe.Sleep(time.Millisecond))
	}
	var execs []probe.Action
	for i := 0; i < 150; i++ {
		execs = append(execs, probe.Exec(tool))
	}
	var evilRan, denied int
	wg.Add(1)
	go func() { defer wg.Done(); e.probe("test/selfprog", writes...) }()
	res, err := e.probe("test/selfprog", execs...)
	wg.Wait()
	if err != nil {
		t.Fatalf("exec loop: %v", err)
	}
	for _, r := range res {
		if r.OK && strings.Contains(r.Stdout, "EVIL") {
			evilRan++
		} else if !r.OK {
			denied++
		}
	}
	os.WriteFile(tool, []byte(good), 0o755)
	if evilRan > 0 {
		t.Errorf("the module ran content it wrote itself under an approved program name %d times (%d denied by the digest check)", evilRan, denied)
	} else {
		t.Logf("race not won this time (%d denied by the digest check)", denied)
	}

	// Restart: the same approved module no longer loads.
	home := e.home
	e.st.Close(context.Background())
	st2, err := station.Open(context.Background(), home, station.Options{Cache: testCache(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close(context.Background())
	if _, err := st2.Run(context.Background(), "test/selfprog", probe.Command, probe.Run(probe.Exec(tool))); err != nil {
		t.Errorf("after a restart, the installed module fails to load: %v", err)
	}
}

// execOperator cuts another module's write glob at the first wildcard
// character, not at the last '/' before it: "<base>/to*/**" excludes only
// "<base>/to", so a program at "<base>/tools/tool" — writable by that module —
// is accepted for a second module, even after a restart.
func TestOtherModuleGlobCutMidSegment(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	base := t.TempDir()
	tools := filepath.Join(base, "tools")
	os.Mkdir(tools, 0o755)
	tool := filepath.Join(tools, "tool")
	os.WriteFile(tool, []byte("#!/bin/sh\necho good\n"), 0o755)

	e.install(moduleSpec{id: "test/writer", writes: []string{base + "/to*/**"}}, probe.Wasm(t, probe.NoNetworkTag))
	err := e.tryInstall(e.moduleDir(moduleSpec{id: "test/runner", subp: fmt.Sprintf("{allow: [%q]}", tool)}, probe.Wasm(t, probe.ExecTag)))
	if err == nil {
		t.Errorf("test/runner was allowed to run %s, which test/writer may rewrite (write glob %s/to*/**)", tool, base)
	}
	// test/writer can indeed change it.
	res := e.mustProbe("test/writer", probe.Write(tool, "#!/bin/sh\necho EVIL\n"))
	if !res[0].OK {
		t.Logf("writer could not rewrite the program: %+v", res[0].Error)
	}
}

// A module installed later with a write grant over a directory that holds an
// already-approved program of another module is accepted silently; the first
// module keeps running in this process (digest-checked only) and fails to load
// after a restart.
func TestLaterWriteGrantOverApprovedProgram(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	tools := filepath.Join(t.TempDir(), "tools")
	os.Mkdir(tools, 0o755)
	tool := filepath.Join(tools, "tool")
	os.WriteFile(tool, []byte("#!/bin/sh\necho good\n"), 0o755)
	e.install(moduleSpec{id: "test/runner", subp: fmt.Sprintf("{allow: [%q]}", tool)}, probe.Wasm(t, probe.ExecTag))
	err := e.tryInstall(e.moduleDir(moduleSpec{id: "test/writer", writes: []string{tools + "/**"}}, probe.Wasm(t, probe.NoNetworkTag)))
	if err == nil {
		t.Errorf("test/writer got a write grant over %s, an approved program of test/runner, without any refusal or warning", tool)
	}
}

// A write grant over (or above) a directory of the operator's search path is
// accepted at install without a word. In this process, subprocess: true
// modules then resolve programs from a module-writable directory (the host's
// Exec.Excluded was computed once at Open); after a restart, every
// subprocess module fails to load (execgate: "search path entry ... is inside
// the excluded tree"), because execOperator excludes all modules' trees.
func TestWriteGrantOverSearchPathBricksSubprocess(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	bin := filepath.Join(t.TempDir(), "tools", "bin")
	os.MkdirAll(bin, 0o755)
	cfg, _ := os.ReadFile(filepath.Join(e.home, "config.yaml"))
	cfg = append(cfg, []byte(fmt.Sprintf("subprocess:\n  search_path: [%s, /usr/bin, /bin]\n", bin))...)
	os.WriteFile(filepath.Join(e.home, "config.yaml"), cfg, 0o600)
	e.st.Close(context.Background())
	st, err := station.Open(context.Background(), e.home, station.Options{Cache: testCache(t)})
	if err != nil {
		t.Fatal(err)
	}
	e.st = st
	t.Cleanup(func() { st.Close(context.Background()) })

	e.install(moduleSpec{id: "test/echoer", subp: "{allow: [echo]}"}, probe.Wasm(t, probe.ExecTag))
	if _, err := e.probe("test/echoer", probe.Exec("echo", "hi")); err != nil {
		t.Fatal(err)
	}
	err = e.tryInstall(e.moduleDir(moduleSpec{id: "test/binwriter", writes: []string{filepath.Dir(bin) + "/**"}}, probe.Wasm(t, probe.NoNetworkTag)))
	if err == nil {
		t.Errorf("a write grant over the search path entry %s was accepted", bin)
	}
	st.Close(context.Background())
	st2, err := station.Open(context.Background(), e.home, station.Options{Cache: testCache(t)})
	if err != nil {
		t.Fatal(err)
	}
	e.st = st2
	t.Cleanup(func() { st2.Close(context.Background()) })
	if _, err := st2.Run(context.Background(), "test/echoer", probe.Command, probe.Run(probe.Exec("echo", "hi"))); err != nil {
		t.Errorf("after installing an unrelated writer module and restarting, test/echoer no longer loads: %v", err)
	}
}
