package station_test

// Subprocess gate regression tests (issue 3, "Must hold" 1, 4, 5).

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/station-dev/station/internal/probe"
	"github.com/station-dev/station/internal/sandbox"
	"github.com/station-dev/station/internal/store"
)

// 1. A module with subprocess: false cannot start a process by any route the
// probe can express: an exec import (process_run, or a made-up station.exec)
// is refused at install; raw calls can only name imports that exist; WASI has
// no way to start a process.
func TestSubprocessFalseHasNoRoute(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	for _, tag := range []string{probe.ExecTag, probe.ExtraImportTag} {
		err := e.tryInstall(e.moduleDir(moduleSpec{id: "test/noexec"}, probe.Wasm(t, tag)))
		if err == nil || !strings.Contains(err.Error(), "which this station does not offer to it") || !strings.Contains(err.Error(), "subprocess") {
			t.Errorf("probe built with %s under subprocess: false: install got %v, want a refusal naming the import", tag, err)
		}
	}
	e.install(moduleSpec{id: "test/noexec"}, probe.Wasm(t, probe.NoNetworkTag))
	res := e.mustProbe("test/noexec",
		probe.Exec("/bin/echo", "hi"),
		probe.Raw("process_run", 16, 16),
		probe.Raw("exec", 16, 16),
	)
	for i, r := range res {
		if r.OK {
			t.Errorf("route %d started something: %+v", i, r)
		}
	}
}

// A module granted one program runs exactly it, with its arguments passed
// literally, and is refused every other; denials are audited and logged.
func TestSubprocessAllowList(t *testing.T) {
	t.Parallel()
	echo := "/bin/echo"
	if _, err := os.Stat(echo); err != nil {
		echo = "/usr/bin/echo"
	}
	e := newEnv(t, envOpts{})
	work := filepath.Join(t.TempDir(), "work")
	os.Mkdir(work, 0o755)
	e.install(moduleSpec{id: "test/echoer", subp: "{allow: [echo]}", writes: []string{work + "/**"}}, probe.Wasm(t, probe.ExecTag))
	res := e.mustProbe("test/echoer",
		probe.Exec("echo", "hello", "$(id)", "; rm -rf /"),
		probe.Exec("cat", "/etc/passwd"),
		probe.Exec("sh", "-c", "id"),
		probe.Exec("echo", "in work").InDir(work),
		probe.Exec("echo", "x").WithEnv(map[string]string{"LD_PRELOAD": "/tmp/evil.so"}),
	)
	if !res[0].OK || res[0].ExitCode == nil || *res[0].ExitCode != 0 || res[0].Stdout != "hello $(id) ; rm -rf /\n" {
		t.Errorf("echo: got %+v (error %+v)", res[0], res[0].Error)
	}
	for i, target := range map[int]string{1: "cat", 2: "sh"} {
		r := res[i]
		if r.OK || r.Error == nil || r.Error.Code != "denied" || r.Error.Capability != "subprocess" || !strings.Contains(r.Error.Message, "module test/echoer") {
			t.Errorf("%s: got %+v, want a subprocess denial naming the module", target, r.Error)
		}
	}
	if !res[3].OK {
		t.Errorf("echo in the writable directory: %+v", res[3].Error)
	}
	if res[4].OK {
		t.Errorf("LD_PRELOAD was passed: %+v", res[4])
	}
	denied := e.audit(store.AuditFilter{Module: "test/echoer", DeniedOnly: true})
	found := false
	for _, r := range denied {
		if r.Capability == sandbox.Subprocess && strings.HasPrefix(r.Target, "cat") {
			found = true
		}
	}
	if !found {
		t.Errorf("no subprocess denial for cat in the audit log: %+v", denied)
	}
	if log := e.gateLog("test/echoer"); !strings.Contains(log, "subprocess gate active — allow: echo") {
		t.Errorf("gate log:\n%s", log)
	}
}

// Interpreters are refused at install unless the operator grants them.
func TestSubprocessInterpreterRefusedAtInstall(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	err := e.tryInstall(e.moduleDir(moduleSpec{id: "test/shell", subp: "{allow: [sh]}"}, probe.Wasm(t, probe.ExecTag)))
	if err == nil || !strings.Contains(err.Error(), "sh") {
		t.Fatalf("install with subprocess allow [sh]: got %v, want a refusal", err)
	}
}

// Issue 12, defect 4: a program's stdout past the station's cap is never
// handed to the module author as a complete success. Through the SDK the
// exec fails with sproc.ErrTruncated naming the limit; a module that opted
// into partial output gets the first part with Truncated, the limit and the
// count of discarded bytes; output of exactly the cap is complete.
func TestSubprocessTruncationIsVisible(t *testing.T) {
	t.Parallel()
	const limit = 1 << 20 // execgate.DefaultMaxOutput
	e := newEnv(t, envOpts{})
	e.install(moduleSpec{id: "test/spew", subp: "{allow: [head]}"}, probe.Wasm(t, probe.ExecTag))
	over := strconv.Itoa(limit + 4096)
	res := e.mustProbe("test/spew",
		probe.Exec("head", "-c", over, "/dev/zero"),
		probe.Exec("head", "-c", over, "/dev/zero").WithPartial(),
		probe.Exec("head", "-c", strconv.Itoa(limit), "/dev/zero"),
	)
	cut, partial, whole := res[0], res[1], res[2]
	if cut.OK || cut.Error == nil || !strings.Contains(cut.Error.Message, "truncated") || !strings.Contains(cut.Error.Message, strconv.Itoa(limit)) {
		t.Errorf("cut output: got ok %v, error %+v; want a failure saying truncated at %d", cut.OK, cut.Error, limit)
	}
	if !cut.Truncated || cut.Limit != limit || cut.StdoutDropped != 4096 {
		t.Errorf("cut output: truncated %v, limit %d, dropped %d; want true, %d, 4096", cut.Truncated, cut.Limit, cut.StdoutDropped, limit)
	}
	if !partial.OK || !partial.Truncated || partial.Limit != limit || partial.StdoutDropped != 4096 || partial.StdoutLen != limit {
		t.Errorf("partial output: got ok %v, truncated %v, limit %d, dropped %d, len %d (error %+v); want the first %d bytes marked truncated",
			partial.OK, partial.Truncated, partial.Limit, partial.StdoutDropped, partial.StdoutLen, partial.Error, limit)
	}
	if !whole.OK || whole.Truncated || whole.StdoutDropped != 0 || whole.StdoutLen != limit {
		t.Errorf("output of exactly the limit: got ok %v, truncated %v, dropped %d, len %d (error %+v)", whole.OK, whole.Truncated, whole.StdoutDropped, whole.StdoutLen, whole.Error)
	}
}
