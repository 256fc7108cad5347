package host

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/station-dev/station/manifest"
)

// newRuntime returns a module runtime: runtimeConfig's, compiling the
// inline termination check (a load and a branch at each loop header, where
// upstream wazero calls into Go; RATIONALE.md, "Why a patched wazero?").
// Every call on it is armed with a watchdog (watchdog.go).
func newRuntime(ctx context.Context, cache wazero.CompilationCache) wazero.Runtime {
	return wazero.NewRuntimeWithConfig(experimental.WithInlineTerminationCheck(ctx), runtimeConfig(cache))
}

// runtimeConfig is every module runtime's configuration. The compile child
// uses the very same one: wazero keys its compilation cache by the binary
// and the settings that change the code (WithCloseOnContextDone), so what
// the child writes is what the station's runtime finds. The module's memory
// limit is not a runtime setting: each instance's allocator enforces it
// (memory.go), so the runtime allows what a 32-bit module can address.
func runtimeConfig(cache wazero.CompilationCache) wazero.RuntimeConfig {
	return wazero.NewRuntimeConfigCompiler().
		WithCompilationCache(cache).
		WithCloseOnContextDone(true). // runaway guests stop when the call's context ends
		WithMemoryLimitPages(wasmPages).
		// No reference types: table.grow would let a guest take host memory
		// outside its memory limit (RATIONALE.md).
		WithCoreFeatures(api.CoreFeaturesV2 &^ api.CoreFeatureReferenceTypes)
}

// compileChildEnv marks the station binary re-executed to compile one
// module (compileChild). Nothing else is in the child's environment.
const compileChildEnv = "STATION_HOST_COMPILE"

// compileChildExit codes: the module does not compile (wazero's reason is
// on standard output), or the child was started wrongly.
const (
	compileChildRefused = 3
	compileChildUsage   = 4
)

func init() {
	if os.Getenv(compileChildEnv) == "1" {
		os.Exit(compileChild(os.Args[1:], os.Stdin, os.Stdout))
	}
}

// compiler bounds compilation: modules are compiled first in a child
// process under the install limits (time and memory), into the on-disk
// compilation cache; the station's own CompileModule then finds the code
// there and only deserializes it. Without an on-disk cache (a Host given
// an in-memory Cache, as tests do) there is no child: the compile runs in
// the station under the time bound, which wazero honours between functions.
type compiler struct {
	lim      InstallLimits
	cacheDir string // "" for in-process compiles only
	log      *slog.Logger
	slots    chan struct{} // compile children running at once
	vetted   sync.Map      // digest and pages -> struct{}: compiled within the limits
	exe      func() (string, error)
	// workers is wazero's compilation workers, in the child and in the
	// station (at least 2, so that a deadline is checked between functions).
	workers int
}

// compileSlots is how many compile children may run at once: the station's
// memory at risk is this many times install.compile_memory.
const compileSlots = 2

func newCompiler(opts Options, log *slog.Logger) *compiler {
	return &compiler{
		lim:      opts.Install.withDefaults(),
		cacheDir: opts.CacheDir,
		log:      log,
		slots:    make(chan struct{}, compileSlots),
		exe:      selfExe,
		workers:  min(max(runtime.NumCPU(), 2), 4),
	}
}

// compile compiles wasm for module id into rt within the install limits.
func (c *compiler) compile(ctx context.Context, rt wazero.Runtime, id, digest string, wasm []byte, pages uint32) (wazero.CompiledModule, error) {
	key := digest + "/" + strconv.FormatUint(uint64(pages), 10)
	if _, ok := c.vetted.Load(key); !ok && c.cacheDir != "" && !c.marked(key) {
		if err := c.child(ctx, id, wasm, pages); err != nil {
			return nil, err
		}
		c.mark(key)
	}
	cctx, cancel := context.WithTimeout(experimental.WithCompilationWorkers(ctx, c.workers), c.lim.CompileTimeout)
	defer cancel()
	compiled, err := rt.CompileModule(cctx, wasm)
	if err != nil {
		if ctx.Err() == nil && errors.Is(cctx.Err(), context.DeadlineExceeded) {
			return nil, c.tooSlow(id)
		}
		return nil, fmt.Errorf("compile: %w", err)
	}
	c.vetted.Store(key, struct{}{})
	return compiled, nil
}

// marker is the file that records, next to the compilation cache, that a
// child compiled the module with key within the current bounds and
// wazero: a later station process (a restart, each one-shot station run)
// then reads the code from the cache without a child. A marker whose cache
// entry is gone leaves the station to compile in-process, still within the
// time bound, a module that compiled within the memory bound before.
func (c *compiler) marker(key string) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%d\x00%d\x00%s", key, c.lim.CompileTimeout, c.lim.CompileMemory, wazeroVersion())
	return filepath.Join(c.cacheDir, "station-vetted", hex.EncodeToString(h.Sum(nil)))
}

func (c *compiler) marked(key string) bool {
	_, err := os.Stat(c.marker(key))
	return err == nil
}

func (c *compiler) mark(key string) {
	m := c.marker(key)
	if os.MkdirAll(filepath.Dir(m), 0o700) == nil {
		_ = os.WriteFile(m, nil, 0o600)
	}
}

// wazeroVersion is the version of wazero built into this binary.
var wazeroVersion = sync.OnceValue(func() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "github.com/tetratelabs/wazero" {
				return d.Version
			}
		}
	}
	return "unknown"
})

func (c *compiler) tooSlow(id string) error {
	return &InstallLimitError{Module: id, What: "compiling it takes longer", Limit: c.lim.CompileTimeout.String(), Key: "install.compile_timeout"}
}

func (c *compiler) tooBig(id string) error {
	return &InstallLimitError{Module: id, What: "compiling it takes more memory", Limit: manifest.FormatSize(c.lim.CompileMemory), Key: "install.compile_memory"}
}

// noChild is the refusal when no compile child can be started: the station
// does not compile a module it cannot bound in memory in its own process
// (a host without a cache directory, an embedder's, is not bounded so).
func noChild(id string, err error) error {
	return fmt.Errorf("module %s: install: its compilation cannot be bounded in memory, so it is refused: the compile child does not start (%v)", id, err)
}

// child compiles wasm in a child process, into the on-disk cache, under
// the time and memory bounds. A refusal by wazero comes back as wazero's
// error, an exceeded bound as an *InstallLimitError.
func (c *compiler) child(ctx context.Context, id string, wasm []byte, pages uint32) error {
	select {
	case c.slots <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-c.slots }()

	exe, err := c.exe()
	if err != nil {
		return noChild(id, err)
	}
	tctx, cancel := context.WithTimeout(ctx, c.lim.CompileTimeout)
	defer cancel()
	cmd := exec.CommandContext(tctx, exe, c.cacheDir, strconv.FormatUint(uint64(pages), 10),
		strconv.FormatUint(c.lim.CompileMemory, 10), strconv.Itoa(c.workers),
		strconv.FormatInt(int64(c.lim.CompileTimeout/time.Millisecond), 10))
	cmd.Args[0] = "station-compile"
	cmd.Env = []string{compileChildEnv + "=1"}
	cmd.Stdin = bytes.NewReader(wasm)
	stdout := &tailBuffer{max: 4096}
	stderr := &tailBuffer{max: 4096}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.WaitDelay = 5 * time.Second
	childAttr(cmd)

	// Pdeathsig is tied to the thread that forks: keep this goroutine on
	// it until the child is reaped, so the child dies with the station.
	runtime.LockOSThread()
	err = cmd.Run()
	runtime.UnlockOSThread()

	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	case tctx.Err() != nil || cpuExceeded(cmd.ProcessState):
		return c.tooSlow(id)
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		return noChild(id, err)
	}
	out := strings.TrimSpace(stdout.String())
	switch code := exit.ExitCode(); {
	case code == compileChildRefused:
		return fmt.Errorf("compile: %s", out)
	case outOfMemory(stderr.String()), !raceEnabled && runtimeFault(stderr.String()):
		return c.tooBig(id)
	default:
		return fmt.Errorf("compile: the compile child failed (%v): %s", err, lastLines(stderr.String(), 3))
	}
}

// outOfMemory reports whether a child's standard error says it ran out of
// memory: the Go runtime's fatal errors and wazero's panic on a failed
// mmap of code.
func outOfMemory(stderr string) bool {
	for _, s := range []string{"out of memory", "cannot allocate memory", "failed to reserve"} {
		if strings.Contains(stderr, s) {
			return true
		}
	}
	return false
}

// runtimeFault reports whether the child's Go runtime itself faulted
// ("SIGSEGV: segmentation violation" with no goroutine of the program's,
// as opposed to a Go-level "panic: runtime error") or could not start a
// thread (a thread's stack is a mapping too). The child runs nothing
// but wazero's compiler over bytes the station has checked, under an
// address-space bound (RLIMIT_AS, not set under the race detector): a
// runtime that faults there failed to map memory in a path that does not
// report it, which is the bound taking effect, not a bug to show as one.
func runtimeFault(stderr string) bool {
	for _, s := range []string{"unexpected signal during runtime execution", "pthread_create failed", "failed to create new OS thread"} {
		if strings.Contains(stderr, s) {
			return true
		}
	}
	return strings.HasPrefix(stderr, "SIGSEGV: segmentation violation")
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, " / ")
}

// tailBuffer keeps the first max bytes written to it.
type tailBuffer struct {
	buf bytes.Buffer
	max int
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	if room := t.max - t.buf.Len(); room > 0 {
		t.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (t *tailBuffer) String() string { return t.buf.String() }

// compileChild is the child's whole life: bound itself, read the module
// from standard input, compile it into the cache directory and exit. Its
// arguments are the cache directory, the memory limit in pages, the memory
// bound in bytes, the number of compile workers and the time bound in
// milliseconds.
func compileChild(args []string, stdin io.Reader, stdout io.Writer) int {
	if len(args) != 5 {
		fmt.Fprintln(stdout, "station compile child: wrong arguments")
		return compileChildUsage
	}
	dir := args[0]
	_, err1 := strconv.ParseUint(args[1], 10, 32) // the memory limit: part of the vetted marker, not of compiling
	memory, err2 := strconv.ParseUint(args[2], 10, 64)
	workers, err3 := strconv.Atoi(args[3])
	ms, err4 := strconv.ParseInt(args[4], 10, 64)
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		fmt.Fprintln(stdout, "station compile child:", err)
		return compileChildUsage
	}
	// The bounds come first: nothing of the module is read before them.
	if err := limitSelf(memory, time.Duration(ms)*time.Millisecond*time.Duration(max(workers, 1))); err != nil {
		fmt.Fprintln(stdout, "station compile child: bound itself:", err)
		return compileChildUsage
	}
	debug.SetMemoryLimit(int64(memory / 4 * 3))
	wasm, err := io.ReadAll(io.LimitReader(stdin, 1<<30))
	if err != nil {
		fmt.Fprintln(stdout, "station compile child: read the module:", err)
		return compileChildUsage
	}
	ctx := experimental.WithCompilationWorkers(context.Background(), workers)
	cache, err := wazero.NewCompilationCacheWithDir(dir)
	if err != nil {
		fmt.Fprintln(stdout, "station compile child:", err)
		return compileChildUsage
	}
	rt := newRuntime(ctx, cache)
	if _, err := rt.CompileModule(ctx, wasm); err != nil {
		fmt.Fprint(stdout, err)
		return compileChildRefused
	}
	return 0
}

// selfExe is the binary a compile child runs: the station's own.
// /proc/self/exe names the running file even if it was replaced or removed
// on disk since, so the child's wazero is the station's and its cache
// entries are the ones the station reads.
func selfExe() (string, error) {
	if _, err := os.Stat("/proc/self/exe"); err == nil {
		return "/proc/self/exe", nil
	}
	return os.Executable()
}
