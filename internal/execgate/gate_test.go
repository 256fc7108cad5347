package execgate

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/station-dev/station/internal/fixture"
	"github.com/station-dev/station/internal/sandbox"
	"github.com/station-dev/station/sdk/abi"
)

// systemGate builds a gate for programs on the default search path.
func systemGate(t testing.TB, rec sandbox.Recorder, allow []string, o Options) *Gate {
	t.Helper()
	progs, err := Resolve(allow, o.Operator)
	if err != nil {
		t.Fatalf("Resolve(%v): %v", allow, err)
	}
	if o.Module == "" {
		o.Module = "test/mod"
	}
	o.Programs = progs
	o.Recorder = rec
	g, err := New(o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { g.Close() })
	t.Cleanup(func() { g.Close() })
	return g
}

// wantViolation checks that err is a violation with the given target and a
// reason containing reason, and that the last decision recorded says the
// same.
func wantViolation(t *testing.T, rec *recorder, err error, target, reason string) {
	t.Helper()
	var v *sandbox.Violation
	if !errors.As(err, &v) {
		t.Fatalf("error = %v, want a *sandbox.Violation", err)
	}
	if v.Capability != sandbox.Subprocess || v.Target != target || !strings.Contains(v.Reason, reason) {
		t.Fatalf("violation = %+v, want capability subprocess, target %q, reason containing %q", v, target, reason)
	}
	d := rec.last(t)
	if d.Allowed || d.Module != v.Module || d.Command != "cmd" || d.Capability != sandbox.Subprocess || d.Target != v.Target || d.Reason != v.Reason {
		t.Fatalf("last decision = %+v, want the denial %+v for command cmd", d, v)
	}
}

func TestNew(t *testing.T) {
	wd := t.TempDir()
	trueProg := must(Resolve([]string{"true"}, Operator{}))[0]
	sh := Program{Name: "sh", Path: realPath(t, "/bin/sh"), Digest: trueProg.Digest}
	base := func() Options {
		return Options{Module: "test/mod", Programs: []Program{trueProg}, WorkDirs: []string{wd}}
	}
	cases := []struct {
		name    string
		edit    func(*Options)
		wantErr string
	}{
		{"no module", func(o *Options) { o.Module = "" }, "a module id is required"},
		{"empty grant", func(o *Options) { o.Programs = nil }, "no programs granted"},
		{"any without the operator", func(o *Options) { o.Programs, o.Any = nil, true }, "needs the operator's grant"},
		{"bad digest", func(o *Options) { o.Programs[0].Digest = "md5:00" }, "is not sha256"},
		{"relative path", func(o *Options) { o.Programs[0].Path = "bin/true" }, "is not absolute and clean"},
		{"bad name", func(o *Options) { o.Programs[0].Name = "a b" }, "not a program name"},
		{"duplicate", func(o *Options) { o.Programs = append(o.Programs, trueProg) }, "listed twice"},
		{"path now excluded", func(o *Options) { o.Operator.Excluded = []string{filepath.Dir(trueProg.Path)} }, "is inside the excluded tree"},
		{"shell no longer granted", func(o *Options) { o.Programs = []Program{sh} }, "is a shell and the operator does not grant it"},
		{"declares LD_PRELOAD", func(o *Options) { o.Env = []string{"LD_PRELOAD"} }, "env LD_PRELOAD is a variable that can make a program load or run other code"},
		{"declares PATH", func(o *Options) { o.Env = []string{"PATH"} }, "env PATH is set by the station"},
		{"declares HOME", func(o *Options) { o.Env = []string{"HOME"} }, "is set by the station"},
		{"declares GIT_SSH_COMMAND", func(o *Options) { o.Env = []string{"GIT_SSH_COMMAND"} }, "env GIT_SSH_COMMAND"},
		{"declares PYTHONPATH", func(o *Options) { o.Env = []string{"PYTHONPATH"} }, "env PYTHONPATH"},
		{"declares a bad name", func(o *Options) { o.Env = []string{"A=B"} }, "not a variable name"},
		{"declares twice", func(o *Options) { o.Env = []string{"FOO", "FOO"} }, "declared twice"},
		{"relative work dir", func(o *Options) { o.WorkDirs = []string{"work"} }, "want an absolute path"},
		{"missing work dir", func(o *Options) { o.WorkDirs = []string{filepath.Join(wd, "missing")} }, "no such file"},
		{"negative output cap", func(o *Options) { o.MaxOutput = -1 }, "MaxOutput -1"},
		{"huge output cap", func(o *Options) { o.MaxOutput = MaxOutputLimit + 1 }, "MaxOutput"},
		{"bad operator settings", func(o *Options) { o.Operator.SearchPath = []string{"relative"} }, "subprocess settings"},
		{"work dir holds the search path", func(o *Options) { o.Operator.SearchPath = []string{wd} }, "search path entry " + wd + " is inside the excluded tree"},
		{"work dir holds a program", func(o *Options) { o.Programs[0].Path = filepath.Join(realPath(t, wd), "true") }, "is inside the excluded tree"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := base()
			c.edit(&o)
			g, err := New(o)
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("New = %v, %v; want an error containing %q", g, err, c.wantErr)
			}
		})
	}
}

func TestString(t *testing.T) {
	cases := []struct {
		allow []string
		any   bool
		want  string
	}{
		{[]string{"true", "echo"}, false, "allow: true, echo"},
		{nil, true, "any program on /usr/local/bin:/usr/bin:/bin (operator grant)"},
		{[]string{"true"}, true, "allow: true; any program on /usr/local/bin:/usr/bin:/bin (operator grant)"},
	}
	for _, c := range cases {
		var progs []Program
		if c.allow != nil {
			progs = must(Resolve(c.allow, Operator{}))
		}
		g, err := New(Options{Module: "m", Programs: progs, Any: c.any, Operator: Operator{GrantAny: c.any}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { g.Close() })
		if got := g.String(); got != c.want {
			t.Errorf("String() = %q, want %q", got, c.want)
		}
	}
}

func TestRunArgvLiteral(t *testing.T) {
	rec := &recorder{}
	g := systemGate(t, rec, []string{"echo", "true"}, Options{})
	args := []string{"; rm -rf /", "$(id)", "`id`", "a b", "*", "'\"", "--", "-n", "$HOME", "\\x41"}
	resp, err := g.Run(callCtx(t), &abi.ProcessRequest{Argv: append([]string{"echo", "--"}, args...)})
	if err != nil {
		t.Fatal(err)
	}
	// GNU echo prints "--" literally; every other argument arrives as written.
	if got, want := string(resp.Stdout), "-- "+strings.Join(args, " ")+"\n"; got != want || resp.ExitCode != 0 {
		t.Fatalf("stdout = %q, exit %d; want %q, exit 0", got, resp.ExitCode, want)
	}
	d := rec.last(t)
	want := sandbox.Decision{Module: "test/mod", Command: "cmd", Capability: sandbox.Subprocess,
		Target: "echo (" + realPath(t, "/bin/echo") + ") argc=12", Allowed: true, Reason: "is in its subprocess allowlist (echo, true)"}
	d.Time = time.Time{}
	if d != want {
		t.Fatalf("decision = %+v, want %+v", d, want)
	}
}

func TestRunArgvZero(t *testing.T) {
	g, name := helperGate(t, nil, nil)
	resp, err := g.Run(callCtx(t), &abi.ProcessRequest{Argv: []string{name, "$(id)", "a\nb", ""}, Env: map[string]string{helperVar: "args"}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	if err := json.Unmarshal(resp.Stdout, &got); err != nil {
		t.Fatalf("stdout %q: %v", resp.Stdout, err)
	}
	if want := []string{name, "$(id)", "a\nb", ""}; !slices.Equal(got, want) {
		t.Fatalf("child argv = %q, want %q (argv[0] is the granted name, not the path)", got, want)
	}
}

func TestRunDenied(t *testing.T) {
	rec := &recorder{}
	g := systemGate(t, rec, []string{"echo", "true"}, Options{Env: []string{"FOO"}, WorkDirs: []string{t.TempDir()}})
	cases := []struct {
		name   string
		req    abi.ProcessRequest
		target string
		reason string
	}{
		{"not in allowlist", abi.ProcessRequest{Argv: []string{"curl", "https://evil.example"}}, "curl", "is not in its subprocess allowlist (echo, true)"},
		{"path instead of the granted name", abi.ProcessRequest{Argv: []string{"/bin/echo"}}, "/bin/echo", "is not in its subprocess allowlist"},
		{"shell", abi.ProcessRequest{Argv: []string{"sh", "-c", "id"}}, "sh", "is not in its subprocess allowlist"},
		{"control bytes sanitized", abi.ProcessRequest{Argv: []string{"cu\x1b[2Jrl"}}, `cu\x1b[2Jrl`, "is not in its subprocess allowlist"},
		{"LD_PRELOAD", abi.ProcessRequest{Argv: []string{"true"}, Env: map[string]string{"LD_PRELOAD": "/tmp/evil.so"}}, "true: env LD_PRELOAD", "can make a program load or run other code"},
		{"undeclared variable", abi.ProcessRequest{Argv: []string{"true"}, Env: map[string]string{"FOO": "1", "BAR": "2"}}, "true: env BAR", "is not declared in its subprocess env (FOO)"},
		{"PATH", abi.ProcessRequest{Argv: []string{"true"}, Env: map[string]string{"PATH": "/tmp"}}, "true: env PATH", "is set by the station"},
		{"dir outside", abi.ProcessRequest{Argv: []string{"true"}, Dir: "/etc"}, "true: dir /etc", "is outside the module's work directories"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, err := g.Run(callCtx(t), &c.req)
			if resp != nil {
				t.Fatalf("Run returned a response %+v for a denied request", resp)
			}
			wantViolation(t, rec, err, c.target, c.reason)
			if d := rec.last(t); d.Module != "test/mod" {
				t.Fatalf("decision module = %q, want test/mod", d.Module)
			}
		})
	}
	_, err := g.Run(callCtx(t), &abi.ProcessRequest{Argv: []string{"curl"}})
	if got, want := err.Error(), `sandbox violation: module test/mod: subprocess: "curl" is not in its subprocess allowlist (echo, true)`; got != want {
		t.Fatalf("error = %q, want %q", got, want)
	}
}

func TestRunInvalid(t *testing.T) {
	rec := &recorder{}
	g := systemGate(t, rec, []string{"true"}, Options{Env: []string{"FOO"}})
	many := make([]string, MaxArgs+1)
	for i := range many {
		many[i] = "true"
	}
	cases := []struct {
		name string
		req  *abi.ProcessRequest
		want error
	}{
		{"nil", nil, ErrInvalid},
		{"no argv", &abi.ProcessRequest{}, ErrInvalid},
		{"empty argv[0]", &abi.ProcessRequest{Argv: []string{""}}, ErrInvalid},
		{"NUL in argv[0]", &abi.ProcessRequest{Argv: []string{"true\x00x"}}, ErrInvalid},
		{"NUL in an argument", &abi.ProcessRequest{Argv: []string{"true", "a\x00b"}}, ErrInvalid},
		{"NUL in a value", &abi.ProcessRequest{Argv: []string{"true"}, Env: map[string]string{"FOO": "a\x00b"}}, ErrInvalid},
		{"bad variable name", &abi.ProcessRequest{Argv: []string{"true"}, Env: map[string]string{"A=B": "x"}}, ErrInvalid},
		{"relative dir", &abi.ProcessRequest{Argv: []string{"true"}, Dir: "work"}, ErrInvalid},
		{"unclean dir", &abi.ProcessRequest{Argv: []string{"true"}, Dir: "/tmp/../etc"}, ErrInvalid},
		{"too many arguments", &abi.ProcessRequest{Argv: many}, ErrTooLarge},
		{"arguments too large", &abi.ProcessRequest{Argv: []string{"true", strings.Repeat("x", MaxArgBytes)}}, ErrTooLarge},
		{"stdin too large", &abi.ProcessRequest{Argv: []string{"true"}, Stdin: make([]byte, MaxStdin+1)}, ErrTooLarge},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := len(rec.All())
			resp, err := g.Run(callCtx(t), c.req)
			if resp != nil || !errors.Is(err, c.want) {
				t.Fatalf("Run = %+v, %v; want an error wrapping %v", resp, err, c.want)
			}
			reason := err.Error()
			if le := (*sandbox.LimitError)(nil); errors.As(err, &le) {
				if le.Module != "test/mod" || le.Capability != sandbox.Subprocess || le.Limit == 0 || !strings.Contains(err.Error(), "module test/mod") {
					t.Fatalf("limit error %+v (%v), want the module, the capability and the limit", le, err)
				}
				reason = le.Reason
			} else if errors.Is(err, ErrTooLarge) {
				t.Fatalf("Run = %v, want a *sandbox.LimitError for a limit", err)
			}
			if ds := rec.All(); len(ds) != n+1 || ds[n].Allowed || ds[n].Reason != reason {
				t.Fatalf("decisions = %+v, want one denial with reason %q", ds[n:], reason)
			}
		})
	}
}

func TestRunEnv(t *testing.T) {
	t.Setenv("STATION_SECRET", "must-not-leak")
	t.Setenv("LD_PRELOAD", "")
	rec := &recorder{}
	wd := t.TempDir()
	g := systemGate(t, rec, []string{"env"}, Options{
		Env:      []string{"FOO", "GIT_AUTHOR_NAME", "UNUSED"},
		WorkDirs: []string{wd},
		Operator: Operator{GrantPrograms: []string{"env"}, Excluded: []string{wd}},
	})
	resp, err := g.Run(callCtx(t), &abi.ProcessRequest{Argv: []string{"env"}, Env: map[string]string{"FOO": "bar baz", "GIT_AUTHOR_NAME": "A $(id)"}, Dir: wd})
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSpace(string(resp.Stdout)), "\n")
	slices.Sort(got)
	tmpdir := ""
	for _, l := range got {
		if v, ok := strings.CutPrefix(l, "TMPDIR="); ok {
			tmpdir = v
		}
	}
	want := []string{"FOO=bar baz", "GIT_AUTHOR_NAME=A $(id)", "HOME=" + realPath(t, wd), "LANG=C.UTF-8", "PATH=/usr/local/bin:/usr/bin:/bin", "TMPDIR=" + tmpdir}
	if !slices.Equal(got, want) || !strings.Contains(tmpdir, "station-exec-") {
		t.Fatalf("child environment = %q, want %q with a scratch TMPDIR", got, want)
	}
	if _, err := os.Stat(tmpdir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("scratch dir %s still exists after the run (%v)", tmpdir, err)
	}
}

func TestRunStdin(t *testing.T) {
	g, name := helperGate(t, nil, nil)
	in := []byte("line one\n\x00binary\xff")
	resp, err := g.Run(callCtx(t), &abi.ProcessRequest{Argv: []string{name}, Env: map[string]string{helperVar: "stdin"}, Stdin: in})
	if err != nil {
		t.Fatal(err)
	}
	if string(resp.Stdout) != string(in) {
		t.Fatalf("stdout = %q, want %q", resp.Stdout, in)
	}
}

func TestRunExitCode(t *testing.T) {
	g := systemGate(t, nil, []string{"false", "true"}, Options{})
	for name, want := range map[string]int{"true": 0, "false": 1} {
		resp, err := g.Run(callCtx(t), &abi.ProcessRequest{Argv: []string{name}})
		if err != nil || resp.ExitCode != want {
			t.Fatalf("%s: Run = %+v, %v; want exit code %d", name, resp, err, want)
		}
	}
}

// TestRunOutputCap: each stream keeps at most MaxOutput bytes, and a
// program that writes past the cap gets a response that says so — with the
// limit and how many bytes of each stream were discarded — while one that
// writes exactly the cap does not (silent truncation is the attack).
func TestRunOutputCap(t *testing.T) {
	name, op := helperProgram(t)
	g, err := New(Options{Module: "test/mod", Programs: must(Resolve([]string{name}, op)), Env: []string{helperVar}, Operator: op, MaxOutput: 1000})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	cases := []struct {
		n           int
		wantLen     int
		wantDropped int64
	}{
		{999, 999, 0},
		{1000, 1000, 0},
		{1001, 1000, 1},
		{3 << 20, 1000, 3<<20 - 1000},
	}
	for _, c := range cases {
		resp, err := g.Run(callCtx(t), &abi.ProcessRequest{Argv: []string{name, strconv.Itoa(c.n)}, Env: map[string]string{helperVar: "spew"}})
		if err != nil {
			t.Fatal(err)
		}
		got := [5]int64{int64(len(resp.Stdout)), int64(len(resp.Stderr)), resp.Limit, resp.StdoutDropped, resp.StderrDropped}
		want := [5]int64{int64(c.wantLen), int64(c.wantLen), 1000, c.wantDropped, c.wantDropped}
		if got != want || resp.Truncated != (c.wantDropped > 0) || resp.ExitCode != 0 {
			t.Errorf("spew %d: stdout, stderr, limit, stdout dropped, stderr dropped = %v, truncated %v, exit %d; want %v, %v, 0",
				c.n, got, resp.Truncated, resp.ExitCode, want, c.wantDropped > 0)
		}
	}
}

func TestRunEndlessOutputDeadline(t *testing.T) {
	g := systemGate(t, nil, []string{"yes"}, Options{MaxOutput: 4096})
	ctx, cancel := context.WithTimeout(callCtx(t), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	resp, err := g.Run(ctx, &abi.ProcessRequest{Argv: []string{"yes"}})
	if !errors.Is(err, context.DeadlineExceeded) || resp != nil {
		t.Fatalf("Run = %+v, %v; want an error wrapping context.DeadlineExceeded", resp, err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Run returned %v after the deadline", d)
	}
}

// groupMembers lists the live (not zombie) processes in process group pgid.
func groupMembers(pgid int) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:]) // state ppid pgrp ...
		if len(f) > 2 && f[0] != "Z" && f[2] == strconv.Itoa(pgid) {
			out = append(out, pid)
		}
	}
	return out
}

// shellGate builds a gate that may run /bin/sh, granted by the operator.
func shellGate(t *testing.T, rec sandbox.Recorder, workDirs ...string) *Gate {
	t.Helper()
	op := Operator{GrantPrograms: []string{"sh"}, Excluded: workDirs}
	return systemGate(t, rec, []string{"sh"}, Options{Operator: op, WorkDirs: workDirs})
}

// runKilled starts `sh -c script`, waits until its process group has want
// live members, cancels the call and checks that Run returns promptly and
// the whole group is gone.
func runKilled(t *testing.T, g *Gate, script string, want int, strict bool) {
	t.Helper()
	pids := make(chan int, 1)
	g.started = func(pid int) { pids <- pid }
	ctx, cancel := context.WithCancel(callCtx(t))
	defer cancel()
	type result struct {
		resp *abi.ProcessResponse
		err  error
	}
	res := make(chan result, 1)
	go func() {
		resp, err := g.Run(ctx, &abi.ProcessRequest{Argv: []string{"sh", "-c", script}})
		res <- result{resp, err}
	}()
	var pid int
	select {
	case pid = <-pids:
	case r := <-res:
		t.Fatalf("Run returned before the program started: %+v, %v", r.resp, r.err)
	}
	fixture.Eventuallyf(t, 10*time.Second, func() bool { return len(groupMembers(pid)) >= want }, "the shell and its background sleeps")
	cancel()
	start := time.Now()
	r := <-res
	if !errors.Is(r.err, context.Canceled) {
		t.Fatalf("Run = %+v, %v; want an error wrapping context.Canceled", r.resp, r.err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Run returned %v after the call ended", d)
	}
	fixture.Eventuallyf(t, 10*time.Second, func() bool {
		if len(groupMembers(pid)) != 0 {
			return false
		}
		return !strict || errors.Is(syscall.Kill(-pid, 0), syscall.ESRCH)
	}, "the process group to be gone")
}

func TestRunDeadlineKillsProcessGroup(t *testing.T) {
	g := shellGate(t, nil)
	// The grandchildren hold stdout and stderr open; Run must not wait for
	// them.
	runKilled(t, g, "sleep 100 & sleep 100 & wait", 3, true)
}

func TestRunExitKillsProcessGroup(t *testing.T) {
	g := shellGate(t, nil)
	pids := make(chan int, 1)
	g.started = func(pid int) { pids <- pid }
	start := time.Now()
	resp, err := g.Run(callCtx(t), &abi.ProcessRequest{Argv: []string{"sh", "-c", "sleep 100 & echo started"}})
	if err != nil {
		t.Fatal(err)
	}
	if string(resp.Stdout) != "started\n" || resp.ExitCode != 0 {
		t.Fatalf("Run = %+v, want stdout started and exit 0", resp)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Run took %v: it waited for the background sleep", d)
	}
	pid := <-pids
	fixture.Eventuallyf(t, 10*time.Second, func() bool {
		return len(groupMembers(pid)) == 0 && (!g.Isolated() || errors.Is(syscall.Kill(-pid, 0), syscall.ESRCH))
	}, "the process group to be gone")
}

func TestRunNoNetwork(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var accepted atomic.Int32
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()

	g, name := helperGate(t, nil, nil)
	if !g.Isolated() {
		t.Skipf("children cannot be isolated here: %s", g.Confinement())
	}
	resp, err := g.Run(callCtx(t), &abi.ProcessRequest{Argv: []string{name, l.Addr().String()}, Env: map[string]string{helperVar: "connect"}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.ExitCode != 1 || !strings.HasPrefix(string(resp.Stdout), "error: ") {
		t.Fatalf("child connect: exit %d, stdout %q; want a failure", resp.ExitCode, resp.Stdout)
	}
	l.Close()
	wg.Wait()
	if n := accepted.Load(); n != 0 {
		t.Fatalf("the listener accepted %d connections from an isolated child", n)
	}
}

// withPlatform simulates another platform for the test.
func withPlatform(t *testing.T, p platform) {
	old := currentPlatform
	currentPlatform = func() platform { return p }
	t.Cleanup(func() { currentPlatform = old })
}

func TestFailClosedWithoutNamespaces(t *testing.T) {
	withoutNamespaces(t, "simulated: no namespaces")
	progs := must(Resolve([]string{"true"}, Operator{}))
	_, err := New(Options{Module: "test/mod", Programs: progs})
	if err == nil || !strings.Contains(err.Error(), "cannot be cut off from the network on this platform (simulated: no namespaces)") {
		t.Fatalf("New without namespaces = %v, want a refusal", err)
	}
	g, err := New(Options{Module: "test/mod", Programs: progs, Operator: Operator{AllowNetwork: true}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	if g.Isolated() || !strings.Contains(g.Confinement(), "network: the host's") {
		t.Fatalf("Isolated() = %v, Confinement() = %q; want the host network reported", g.Isolated(), g.Confinement())
	}
	if resp, err := g.Run(callCtx(t), &abi.ProcessRequest{Argv: []string{"true"}}); err != nil || resp.ExitCode != 0 {
		t.Fatalf("Run = %+v, %v", resp, err)
	}
}

// TestNetworkControl shows that TestRunNoNetwork's probe does detect a
// network: without namespaces (operator-allowed) the same child connects.
func TestNetworkControl(t *testing.T) {
	withoutNamespaces(t, "simulated")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		if c, err := l.Accept(); err == nil {
			c.Close()
		}
	}()
	name, op := helperProgram(t)
	op.AllowNetwork = true
	g, err := New(Options{Module: "test/mod", Programs: must(Resolve([]string{name}, op)), Env: []string{helperVar}, Operator: op})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	resp, err := g.Run(callCtx(t), &abi.ProcessRequest{Argv: []string{name, l.Addr().String()}, Env: map[string]string{helperVar: "connect"}})
	if err != nil || string(resp.Stdout) != "connected" {
		t.Fatalf("Run = %+v, %v; want the child to connect", resp, err)
	}
}

// TestRunWithoutPIDNamespace: where children share the host's pid namespace
// (operator-allowed fallback), the process group is still killed when the
// call ends, and Run does not wait for a descendant that left the group and
// holds the output pipes.
func TestRunWithoutPIDNamespace(t *testing.T) {
	withoutNamespaces(t, "simulated")
	op := Operator{GrantPrograms: []string{"sh"}, AllowNetwork: true}
	g := systemGate(t, nil, []string{"sh"}, Options{Operator: op})
	runKilled(t, g, "sleep 100 & sleep 100 & wait", 3, false)

	// A descendant in a session of its own escapes the group kill and
	// keeps stdout open; Run still returns once the shell has exited.
	marker := "1000." + strconv.Itoa(os.Getpid())
	t.Cleanup(func() { killByCmdline("sleep\x00" + marker + "\x00") })
	start := time.Now()
	resp, err := g.Run(callCtx(t), &abi.ProcessRequest{Argv: []string{"sh", "-c", "setsid sleep " + marker + " & echo started"}})
	if err != nil || string(resp.Stdout) != "started\n" {
		t.Fatalf("Run = %+v, %v", resp, err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Run took %v", d)
	}
}

// killByCmdline kills the processes whose command line is exactly cmdline.
func killByCmdline(cmdline string) {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil && string(b) == cmdline {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

func TestRunDigestChanged(t *testing.T) {
	bin := t.TempDir()
	tool := filepath.Join(bin, "tool")
	copyFile(t, realPath(t, "/bin/true"), tool, 0o755)
	rec := &recorder{}
	g := systemGate(t, rec, []string{"tool"}, Options{Operator: Operator{SearchPath: []string{bin}}})
	if _, err := g.Run(callCtx(t), &abi.ProcessRequest{Argv: []string{"tool"}}); err != nil {
		t.Fatalf("before the change: %v", err)
	}
	copyFile(t, realPath(t, "/bin/echo"), tool, 0o755)
	resp, err := g.Run(callCtx(t), &abi.ProcessRequest{Argv: []string{"tool", "ran"}})
	if resp != nil {
		t.Fatalf("Run = %+v after the program changed", resp)
	}
	wantViolation(t, rec, err, "tool ("+tool+")", "changed since install")

	// Replaced by a symlink to the original: the path is no longer the file
	// that was approved.
	os.Remove(tool)
	if err := os.Symlink(realPath(t, "/bin/true"), tool); err != nil {
		t.Fatal(err)
	}
	_, err = g.Run(callCtx(t), &abi.ProcessRequest{Argv: []string{"tool"}})
	wantViolation(t, rec, err, "tool ("+tool+")", "can no longer be run as installed")
}

func TestRunWorkDir(t *testing.T) {
	rec := &recorder{}
	wd := t.TempDir()
	outside := t.TempDir()
	for _, d := range []string{"sub", "sub/deeper"} {
		if err := os.Mkdir(filepath.Join(wd, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(wd, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(wd, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(wd, "escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("sub/deeper", filepath.Join(wd, "inner")); err != nil {
		t.Fatal(err)
	}
	g, name := helperGate(t, rec, []string{wd})
	rwd := realPath(t, wd)
	cases := []struct {
		dir     string
		want    string // printed working directory
		target  string // denial target
		reason  string
		invalid bool
	}{
		{dir: wd, want: rwd},
		{dir: filepath.Join(wd, "sub"), want: filepath.Join(rwd, "sub")},
		{dir: filepath.Join(wd, "inner"), want: filepath.Join(rwd, "sub/deeper")},
		{dir: outside, target: name + ": dir " + outside, reason: "is outside the module's work directories (" + rwd + ")"},
		{dir: "/", target: name + ": dir /", reason: "is outside"},
		{dir: filepath.Join(wd, "escape"), target: name + ": dir " + filepath.Join(wd, "escape"), reason: "is outside"},
		{dir: filepath.Join(outside, "missing"), target: name + ": dir " + filepath.Join(outside, "missing"), reason: "is outside"},
		{dir: filepath.Join(wd, "missing"), invalid: true},
		{dir: filepath.Join(wd, "file"), invalid: true},
		{dir: filepath.Join(wd, "fifo"), invalid: true},
	}
	for _, c := range cases {
		t.Run(c.dir, func(t *testing.T) {
			resp, err := g.Run(callCtx(t), &abi.ProcessRequest{Argv: []string{name}, Env: map[string]string{helperVar: "pwd"}, Dir: c.dir})
			switch {
			case c.invalid:
				if !errors.Is(err, ErrInvalid) {
					t.Fatalf("Run = %+v, %v; want ErrInvalid", resp, err)
				}
			case c.target != "":
				wantViolation(t, rec, err, c.target, c.reason)
			default:
				if err != nil || string(resp.Stdout) != c.want {
					t.Fatalf("Run = %+v, %v; want the child in %s", resp, err, c.want)
				}
			}
		})
	}

	// No dir: a fresh scratch dir, removed after the run.
	resp, err := g.Run(callCtx(t), &abi.ProcessRequest{Argv: []string{name}, Env: map[string]string{helperVar: "pwd"}})
	if err != nil {
		t.Fatal(err)
	}
	scratch := string(resp.Stdout)
	if !strings.Contains(scratch, "station-exec-") {
		t.Fatalf("default working dir = %q, want a scratch dir", scratch)
	}
	if _, err := os.Stat(scratch); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("scratch dir %s still exists (%v)", scratch, err)
	}
}

func TestRunFilesystemConfined(t *testing.T) {
	wd := t.TempDir()
	outside := t.TempDir()
	g := shellGate(t, nil, wd)
	requireLandlock(t, g)
	planted := filepath.Join(wd, "planted")
	copyFile(t, realPath(t, "/bin/true"), planted, 0o755)
	cases := []struct {
		script string
		exit   int
	}{
		{`echo x > "` + filepath.Join(wd, "inside") + `"`, 0},
		{`mkdir "` + filepath.Join(wd, "d") + `" && mv "` + filepath.Join(wd, "inside") + `" "` + filepath.Join(wd, "d/moved") + `"`, 0},
		{`echo x > "$TMPDIR/tmp" && rm "$TMPDIR/tmp"`, 0},
		{`echo x > /dev/null`, 0},
		{`echo x > "` + filepath.Join(outside, "f") + `"`, 2},
		{`mkdir "` + filepath.Join(outside, "d") + `"`, 1},
		{`echo x > /tmp/execgate-landlock-test`, 2},
		{`"` + planted + `"`, 126},
		{`cp /bin/true "$TMPDIR/t" && "$TMPDIR/t"`, 126},
		{`/bin/true`, 0},
	}
	if g.conf.dropsCaps() {
		// uid 0 without capabilities could still write sysctls by file
		// permission; Landlock stops it.
		cases = append(cases, struct {
			script string
			exit   int
		}{`cat /proc/sys/vm/swappiness > /proc/sys/vm/swappiness`, 2})
	}
	for _, c := range cases {
		resp, err := g.Run(callCtx(t), &abi.ProcessRequest{Argv: []string{"sh", "-c", c.script}, Dir: wd})
		if err != nil {
			t.Fatal(err)
		}
		if resp.ExitCode != c.exit {
			t.Errorf("sh -c %s: exit %d (stderr %q), want %d", c.script, resp.ExitCode, resp.Stderr, c.exit)
		}
	}
	ents, _ := os.ReadDir(outside)
	if len(ents) != 0 {
		t.Fatalf("the child wrote outside its work dir: %v", ents)
	}
	if _, err := os.Stat("/tmp/execgate-landlock-test"); err == nil {
		os.Remove("/tmp/execgate-landlock-test")
		t.Fatal("the child wrote to /tmp")
	}
}

func TestRunPrivileges(t *testing.T) {
	g, name := helperGate(t, nil, nil)
	resp, err := g.Run(callCtx(t), &abi.ProcessRequest{Argv: []string{name}, Env: map[string]string{helperVar: "status"}})
	if err != nil {
		t.Fatal(err)
	}
	out := string(resp.Stdout)
	if !strings.Contains(out, "NoNewPrivs: 1") {
		t.Errorf("child status %q: want no_new_privs", out)
	}
	if g.conf.dropsCaps() && (!strings.Contains(out, "CapEff: 0000000000000000") || !strings.Contains(out, "CapBnd: 0000000000000000")) {
		t.Errorf("child status %q: want no capabilities", out)
	}
}

func TestRunAny(t *testing.T) {
	rec := &recorder{}
	op := Operator{GrantAny: true}
	g, err := New(Options{Module: "test/mod", Any: true, Operator: op, Recorder: rec})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	resp, err := g.Run(callCtx(t), &abi.ProcessRequest{Argv: []string{"echo", "$(id)"}})
	if err != nil || string(resp.Stdout) != "$(id)\n" {
		t.Fatalf("Run echo = %+v, %v", resp, err)
	}
	if d := rec.last(t); !d.Allowed || d.Target != "echo ("+realPath(t, "/bin/echo")+") argc=2" || !strings.Contains(d.Reason, "subprocess: true (operator grant)") {
		t.Fatalf("decision = %+v", d)
	}
	cases := []struct{ argv0, reason string }{
		{"sh", "is a shell"},
		{filepath.Base(realPath(t, "/bin/sh")), "is a shell"},
		{"env", "is a program that runs other programs"},
		{"/bin/echo", "is not a bare program name"},
		{"../bin/echo", "is not a bare program name"},
		{"nosuch-program", "not found on the search path"},
	}
	for _, c := range cases {
		_, err := g.Run(callCtx(t), &abi.ProcessRequest{Argv: []string{c.argv0}})
		wantViolation(t, rec, err, c.argv0, c.reason)
	}

	op.GrantPrograms = []string{"sh"}
	g, err = New(Options{Module: "test/mod", Any: true, Operator: op, Recorder: rec})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	resp, err = g.Run(callCtx(t), &abi.ProcessRequest{Argv: []string{"sh", "-c", "echo hi"}})
	if err != nil || string(resp.Stdout) != "hi\n" {
		t.Fatalf("Run granted sh = %+v, %v", resp, err)
	}
}

func TestRunConcurrent(t *testing.T) {
	rec := &recorder{}
	g := systemGate(t, rec, []string{"echo"}, Options{})
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for i := range 16 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			want := strconv.Itoa(i)
			resp, err := g.Run(callCtx(t), &abi.ProcessRequest{Argv: []string{"echo", want}})
			if err != nil {
				errs <- err
			} else if string(resp.Stdout) != want+"\n" {
				errs <- errors.New("echo " + want + " printed " + string(resp.Stdout))
			}
		}()
		go func() {
			defer wg.Done()
			if _, err := g.Run(callCtx(t), &abi.ProcessRequest{Argv: []string{"cat", "/etc/passwd"}}); err == nil {
				errs <- errors.New("cat was allowed")
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	allowed, denied := 0, 0
	for _, d := range rec.All() {
		if d.Allowed {
			allowed++
		} else {
			denied++
		}
	}
	if allowed != 16 || denied != 16 {
		t.Fatalf("decisions: %d allowed, %d denied; want 16 and 16", allowed, denied)
	}
}

func TestRunGit(t *testing.T) {
	if _, err := Resolve([]string{"git"}, Operator{}); err != nil {
		t.Skipf("no git here: %v", err)
	}
	wd := t.TempDir()
	g := systemGate(t, nil, []string{"git"}, Options{WorkDirs: []string{wd}})
	git := func(args ...string) *abi.ProcessResponse {
		t.Helper()
		resp, err := g.Run(callCtx(t), &abi.ProcessRequest{Argv: append([]string{"git"}, args...), Dir: wd})
		if err != nil {
			t.Fatalf("git %v: %v", args, err)
		}
		return resp
	}
	if r := git("init", "-q"); r.ExitCode != 0 {
		t.Fatalf("git init: exit %d, %s", r.ExitCode, r.Stderr)
	}
	if g.conf.landlockABI() > 0 {
		// A hook the module planted is not executed: files in the work dir
		// are not executable for the child.
		hook := filepath.Join(wd, ".git/hooks/post-commit")
		if err := os.WriteFile(hook, []byte("#!/bin/sh\necho ran > \"$(git rev-parse --show-toplevel)/hook-ran\"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if r := git("-c", "user.name=Station", "-c", "user.email=station@example.invalid", "commit", "-q", "--allow-empty", "-m", "$(id)"); r.ExitCode != 0 {
		t.Fatalf("git commit: exit %d, %s", r.ExitCode, r.Stderr)
	}
	if r := git("log", "--format=%s"); string(r.Stdout) != "$(id)\n" {
		t.Fatalf("git log = %q", r.Stdout)
	}
	if _, err := os.Stat(filepath.Join(wd, "hook-ran")); err == nil {
		t.Fatal("the planted hook ran")
	}
}
