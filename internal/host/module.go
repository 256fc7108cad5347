package host

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/experimental/sysfs"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"

	"github.com/station-dev/station/internal/execgate"
	"github.com/station-dev/station/internal/fsgate"
	"github.com/station-dev/station/internal/netgate"
	"github.com/station-dev/station/internal/sandbox"
	"github.com/station-dev/station/internal/units"
	"github.com/station-dev/station/manifest"
	"github.com/station-dev/station/sdk/abi"
)

// Module is one loaded module: its own runtime, its compiled code, its gates
// and its pool of warm instances.
type Module struct {
	h            *Host
	id           string
	version      string
	digest       string
	commands     []string
	commandBytes [][]byte // the names as buffers, made once
	// inputSchemas are the commands' compiled input_schema, nil where a
	// command declares none (call checks each input against it).
	inputSchemas []*manifest.CommandSchema
	bufBudget    int // bytes a call's live buffers may hold
	limits       Limits
	log          *slog.Logger
	rec          sandbox.Recorder

	// Gates, bound here and nowhere else. A capability with no gate (subprocess,
	// in this release) has no imports linked at all.
	net   *netgate.Gate
	allow *netgate.Allowlist
	fs    *fsgate.Gate   // nil: nothing is mounted
	acct  *account       // what its files take; nil when nothing is mounted
	exec  *execgate.Gate // nil: no process_run import is linked
	llm   *LLMGrant      // nil: no llm_complete import is linked

	rt       wazero.Runtime
	compiled wazero.CompiledModule
	pool     *pool
	lim      *limiter

	// refs counts calls in flight; once retiring is set no call enters, and
	// the last one out closes idle. See enter and retire.
	refs     atomic.Int64
	retiring atomic.Bool
	drained  sync.Once
	idle     chan struct{}
	retired  sync.Once
	done     chan struct{}
}

// ID returns the module id.
func (m *Module) ID() string { return m.id }

// Version returns the module's version, as its manifest says.
func (m *Module) Version() string { return m.version }

// Digest returns the sha256 digest of the module's wasm.
func (m *Module) Digest() string { return m.digest }

// Limits returns the module's resolved limits.
func (m *Module) Limits() Limits { return m.limits }

func (h *Host) newModule(ctx context.Context, man *manifest.Manifest, wasm []byte, g Grants) (*Module, error) {
	limits, err := h.resolveLimits(man.Limits)
	if err != nil {
		return nil, err
	}
	m := &Module{
		h:         h,
		id:        man.ID,
		version:   man.Version,
		digest:    Digest(wasm),
		limits:    limits,
		log:       h.log.With("module", man.ID),
		rec:       h.rec,
		pool:      newPool(),
		bufBudget: bufBudget(limits),
		lim:       newLimiter(limits.Concurrency),
		done:      make(chan struct{}),
		idle:      make(chan struct{}),
	}
	for _, c := range man.Commands {
		m.commands = append(m.commands, c.Name)
		m.commandBytes = append(m.commandBytes, []byte(c.Name))
		var schema *manifest.CommandSchema
		if c.InputSchema != "" {
			if schema, err = manifest.CompileSchema([]byte(c.InputSchema)); err != nil {
				return nil, fmt.Errorf("commands %s: input_schema: %w", c.Name, err)
			}
		}
		m.inputSchemas = append(m.inputSchemas, schema)
	}
	// The network gate always exists: with an empty allowlist it denies every
	// request (and each denial is audited), so a module that links an HTTP
	// client but declares no hosts installs and is refused at run time.
	allow, err := netgate.Compile(man.Requires.Network.Allow)
	if err != nil {
		return nil, fmt.Errorf("requires.network.allow: %w", err)
	}
	m.allow = allow
	var secrets []netgate.Secret
	for _, s := range man.Requires.Secrets {
		secrets = append(secrets, netgate.Secret{Name: s.Name, Hosts: s.Hosts, Query: s.Query, Body: s.Body})
	}
	m.net, err = netgate.New(netgate.Options{
		Module:       man.ID,
		Allow:        allow,
		Operator:     h.opts.Operator,
		Recorder:     h.rec,
		Secrets:      secrets,
		SecretSource: h.opts.Secrets,
	})
	if err != nil {
		return nil, fmt.Errorf("network gate: %w", err)
	}

	if len(man.Requires.FilesystemWrites)+len(man.Requires.FilesystemReads) > 0 {
		writes, err := expandHome(man.Requires.FilesystemWrites, h.opts.HomeDir)
		if err != nil {
			return nil, fmt.Errorf("requires.filesystem_writes: %w", err)
		}
		reads, err := expandHome(man.Requires.FilesystemReads, h.opts.HomeDir)
		if err != nil {
			return nil, fmt.Errorf("requires.filesystem_reads: %w", err)
		}
		if m.acct, err = h.account(ctx, man.ID); err != nil {
			m.closeGates()
			return nil, err
		}
		m.fs, err = fsgate.New(fsgate.Options{
			Module:               man.ID,
			Writes:               writes,
			Reads:                reads,
			Protected:            h.opts.Protected,
			Recorder:             h.rec,
			QuotaBytes:           h.opts.FilesystemQuota,
			Entries:              h.opts.FilesystemEntries,
			OpenFiles:            h.opts.FilesystemOpenFiles,
			OpenFilesPerInstance: h.opts.FilesystemOpenFilesPerInstance,
			Account:              m.acct.acct,
		})
		if err != nil {
			m.closeGates()
			return nil, fmt.Errorf("filesystem gate: %w", err)
		}
	}

	if sp := man.Requires.Subprocess; sp.Any || len(sp.Allow) > 0 {
		if !sp.Any && len(g.Programs) != len(sp.Allow) {
			m.closeGates()
			return nil, errors.New("requires.subprocess: the programs were not resolved at install; reinstall the module")
		}
		var workDirs, writeRoots, readDirs []string
		if m.fs != nil {
			readDirs = m.fs.Roots()
			workDirs = wholeTreeRoots(m.fs.WriteGlobs())
			for _, g := range m.fs.WriteGlobs() {
				writeRoots = append(writeRoots, fsgate.Root(g))
			}
		}
		var op execgate.Operator
		if h.opts.Exec != nil {
			op = h.opts.Exec()
		}
		op.Excluded = append(append(slices.Clone(op.Excluded), h.opts.Protected...), writeRoots...)
		var err error
		m.exec, err = execgate.New(execgate.Options{
			Module:   man.ID,
			Programs: g.Programs,
			Any:      sp.Any,
			Env:      sp.Env,
			WorkDirs: workDirs,
			ReadDirs: readDirs,
			Operator: op,
			Recorder: h.rec,
		})
		if err != nil {
			m.closeGates()
			return nil, fmt.Errorf("subprocess gate: %w", err)
		}
	}

	if man.Requires.LLM.Enabled {
		m.llm = &LLMGrant{Module: man.ID, LLM: man.Requires.LLM}
	}

	pages := uint32((limits.MemoryBytes + 65535) / 65536)
	m.rt = newRuntime(ctx, h.cache)
	ok := false
	defer func() {
		if !ok {
			m.rt.Close(ctx)
			m.closeGates()
		}
	}()

	// What the binary holds is bounded before wazero decodes it, and
	// compiling it is bounded in time and memory (wasmcheck.go, compile.go).
	if _, err := checkBinary(wasm, h.compiler.lim, man.ID); err != nil {
		return nil, err
	}
	m.compiled, err = h.compiler.compile(ctx, m.rt, man.ID, m.digest, wasm, pages)
	if err != nil {
		return nil, err
	}
	if err := m.checkShape(); err != nil {
		return nil, err
	}
	// WASI as wazero has it, except that every path a file operation names
	// reaches the filesystem gate, even one wazero's WASI layer refuses.
	if _, err := fsgate.InstantiateWASI(ctx, m.rt); err != nil {
		return nil, fmt.Errorf("link wasi: %w", err)
	}
	if err := m.link(ctx); err != nil {
		return nil, fmt.Errorf("link station imports: %w", err)
	}
	// Warm one instance now, so a module that cannot start fails at load.
	inst, err := m.instantiate(ctx, time.Now().Add(limits.Timeout))
	if err != nil {
		return nil, err
	}
	if limits.Fresh {
		inst.close()
	} else {
		m.pool.put(inst)
	}
	ok = true
	return m, nil
}

// checkShape verifies the module speaks our ABI and imports only what this
// module is offered, so a mismatch is a clear load error rather than a link
// failure deep inside wazero.
func (m *Module) checkShape() error {
	return checkShape(m.compiled, m.offered(), m.memoryLimit())
}

// checkShape verifies that the compiled module c exports what the ABI
// requires and imports only the station imports in offered, with an
// initial memory within memoryLimit bytes.
func checkShape(c wazero.CompiledModule, offered map[string]bool, memoryLimit uint64) error {
	exports := c.ExportedFunctions()
	if _, ok := exports[abi.ExportVersionPrefix+fmt.Sprint(abi.Version)]; !ok {
		var found []string
		for name := range exports {
			if strings.HasPrefix(name, abi.ExportVersionPrefix) {
				found = append(found, name)
			}
		}
		if len(found) > 0 {
			return fmt.Errorf("module speaks guest ABI %s; this station speaks %s%d", strings.Join(found, ", "), abi.ExportVersionPrefix, abi.Version)
		}
		return fmt.Errorf("module does not export %s%d: build it with the station SDK (station module build)", abi.ExportVersionPrefix, abi.Version)
	}
	call, ok := exports[abi.ExportCall]
	if !ok {
		return fmt.Errorf("module does not export %s", abi.ExportCall)
	}
	if !slices.Equal(call.ParamTypes(), []api.ValueType{api.ValueTypeI32, api.ValueTypeI32}) ||
		!slices.Equal(call.ResultTypes(), []api.ValueType{api.ValueTypeI32}) {
		return fmt.Errorf("%s must have the signature (i32, i32) -> i32", abi.ExportCall)
	}
	if _, ok := c.ExportedMemories()[abi.ExportMemory]; !ok {
		return fmt.Errorf("module does not export its memory as %q", abi.ExportMemory)
	}
	for _, f := range c.ImportedFunctions() {
		mod, name, _ := f.Import()
		switch mod {
		case wasi_snapshot_preview1.ModuleName:
		case abi.ImportModule:
			if !offered[name] {
				return fmt.Errorf("module imports %s.%s, which this station does not offer to it%s", mod, name, grantHint(name))
			}
		default:
			return fmt.Errorf("module imports %s.%s; only %s and %s imports exist", mod, name, abi.ImportModule, wasi_snapshot_preview1.ModuleName)
		}
	}
	for _, mem := range c.ImportedMemories() {
		mod, name, _ := mem.Import()
		return fmt.Errorf("module imports memory %s.%s; a module must define its own memory", mod, name)
	}
	// The runtime allows any memory a 32-bit module can have; the limit is
	// the allocator's (memory.go), which cannot refuse the initial size.
	if mem := c.ExportedMemories()[abi.ExportMemory]; uint64(mem.Min())*65536 > memoryLimit {
		return fmt.Errorf("module's memory starts at %s, more than its limit of %s (raise limits.memory in the module's manifest)",
			units.Bytes(int64(mem.Min())*65536), units.Bytes(int64(memoryLimit)))
	}
	return nil
}

func grantHint(name string) string {
	switch name {
	case "exec", "process_spawn", "spawn", abi.ImportProcessRun:
		return " (subprocess is not granted)"
	case abi.ImportLLMComplete:
		return " (llm is not granted)"
	}
	return ""
}

// instance is one instantiated guest. It serves one call at a time.
type instance struct {
	m    *Module
	mod  api.Module
	fn   api.Function
	mem  api.Memory
	st   callState
	err  tailWriter // last bytes of stderr, for crash messages
	dead bool
	// initializing is set while the start function runs: host calls and
	// file operations are refused then (no call is active).
	initializing bool
	// sleepCtx ends WASI sleeps while the start function runs (a call's
	// sleeps end with its context).
	sleepCtx context.Context
	// wd ends a call at its deadline, and gctx is the context its guest
	// code runs with (watchdog.go).
	wd   watchdog
	gctx guestContext
	// stack holds station_call's parameters and result (calls on an
	// instance never overlap).
	stack [2]uint64
	// fsys is the instance's view of the host's files (nil when nothing
	// is mounted).
	fsys experimentalsys.FS
	// memory is the instance's linear memory, which enforces the module's
	// memory limit (memory.go).
	memory *linearMemory
}

// instantiate makes a new instance, whose start function must finish by
// deadline.
func (m *Module) instantiate(ctx context.Context, deadline time.Time) (*instance, error) {
	// The start function runs under wazero's own watch of a context: it
	// runs once per instance, so the goroutine per call the watchdog saves
	// calls is not worth saving here.
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	inst := &instance{m: m, sleepCtx: ctx}
	inst.st.bufBudget = m.bufBudget
	inst.err.log = m.log
	inst.err.st = &inst.st
	out := &inst.err // stdout and stderr both go to the module log
	cfg := wazero.NewModuleConfig().
		WithName("").
		WithStartFunctions(). // _initialize is run below, so file access can be refused while it runs

		WithSysWalltime().
		WithSysNanotime().
		WithRandSource(rand.Reader).
		WithNanosleep(inst.sleep).
		WithStdout(out).
		WithStderr(out)
	if m.fs != nil {
		// The module's only preopened directory is "/", the gate's view of
		// the host: every path it names is decided by its filesystem gate.
		fsys, err := m.fs.FS(fsgate.Hooks{
			Call: func() *sandbox.Call { return inst.st.call },
			Denied: func(v *sandbox.Violation) {
				if inst.st.violation == nil {
					inst.st.violation = v
				}
			},
			Limited: func(le *sandbox.LimitError) {
				if inst.st.limit == nil {
					inst.st.limit = le
				}
			},
			Blocked: func() bool { return inst.initializing },
		})
		if err != nil {
			return nil, fmt.Errorf("module %s: mount: %w", m.id, err)
		}
		inst.fsys = fsys
		cfg = cfg.WithFSConfig(wazero.NewFSConfig().(sysfs.FSConfig).WithSysFSMount(fsys, "/"))
	}
	mod, err := m.rt.InstantiateModule(experimental.WithMemoryAllocator(ctx, allocator(m.memoryLimit(), &inst.memory)), m.compiled, cfg)
	if err == nil {
		if init := mod.ExportedFunction(abi.ExportInitialize); init != nil {
			inst.initializing = true
			_, err = init.Call(ctx)
			inst.initializing = false
			if err != nil {
				mod.Close(context.Background())
			}
		}
	}
	if err != nil {
		if errors.Is(ctx.Err(), context.Canceled) {
			return nil, fmt.Errorf("module %s: start: canceled", m.id)
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("module %s: start: did not finish within %s", m.id, m.limits.Timeout)
		}
		trap := describeTrap(err, inst.err.tail())
		if oom := m.outOfMemory(inst, nil); oom != nil {
			trap = m.oomText(oom, trap)
		}
		return nil, fmt.Errorf("module %s: start: %s", m.id, trap)
	}
	inst.sleepCtx = nil
	inst.mod = mod
	inst.wd.mod = mod
	inst.fn = mod.ExportedFunction(abi.ExportCall)
	inst.mem = mod.Memory()
	return inst, nil
}

// sleep implements WASI clock sleeps so that they end with the call's
// deadline instead of outliving it.
func (inst *instance) sleep(ns int64) {
	ctx := inst.sleepCtx
	if inst.st.call != nil {
		ctx = inst.st.context()
	}
	if ctx == nil {
		return // no call and no start function is running: nothing may wait
	}
	t := time.NewTimer(time.Duration(ns))
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

func (inst *instance) close() {
	inst.dead = true
	if inst.mod != nil {
		inst.mod.Close(context.Background())
	}
	if inst.fsys != nil {
		// wazero leaves an instance's files open when a deadline closed it
		// and the guest then trapped or exited: close them here.
		fsgate.CloseFiles(inst.fsys)
	}
}

// logGates writes what the module may do, as enforced, to the station log.
func (m *Module) logGates() {
	m.log.Info(fmt.Sprintf("module %s: network gate active — allow: %s", m.id, m.allow))
	if m.exec != nil {
		m.log.Info(fmt.Sprintf("module %s: subprocess gate active — %s (%s)", m.id, m.exec, m.exec.Confinement()))
		if !m.exec.Isolated() {
			m.log.Warn(fmt.Sprintf("module %s: programs it starts run WITH network access: this platform cannot isolate them and the operator allowed it", m.id))
		}
		if r := m.exec.Refusal(); r != "" {
			m.log.Warn(fmt.Sprintf("module %s: programs it starts WILL NOT START: each %s", m.id, r))
		} else if !m.exec.FilesConfined() {
			m.log.Warn(fmt.Sprintf("module %s: programs it starts are NOT CONFINED to its files: this platform cannot confine them and the operator allowed it", m.id))
		}
	} else {
		m.log.Info(fmt.Sprintf("module %s: subprocess gate CLOSED", m.id))
	}
	if m.llm != nil {
		m.log.Info(fmt.Sprintf("module %s: llm gate active — %s", m.id, describeLLM(m.llm)))
	} else {
		m.log.Info(fmt.Sprintf("module %s: llm gate CLOSED", m.id))
	}
	if m.fs != nil {
		m.log.Info(fmt.Sprintf("module %s: filesystem-write gate active — %s", m.id, m.fs))
	} else {
		m.log.Info(fmt.Sprintf("module %s: filesystem-write gate active — allow: (none)", m.id))
	}
}

// enter registers a call; it reports false once the module is retiring (the
// caller then looks the module up again: it was replaced or unloaded).
func (m *Module) enter() bool {
	m.refs.Add(1)
	if m.retiring.Load() {
		m.exit()
		return false
	}
	return true
}

// exit ends a call registered by enter.
func (m *Module) exit() {
	if m.refs.Add(-1) == 0 && m.retiring.Load() {
		m.drained.Do(func() { close(m.idle) })
	}
}

// retire stops new calls from entering m (the caller already removed it from
// the host's table), waits for calls in flight, and releases everything.
// retiring is set before refs is read and enter adds to refs before reading
// retiring, so no call can enter after the module is found idle.
func (m *Module) retire(ctx context.Context) {
	m.retired.Do(func() {
		m.retiring.Store(true)
		if m.refs.Load() == 0 {
			m.drained.Do(func() { close(m.idle) })
		}
		go func() {
			<-m.idle
			m.close(ctx)
		}()
	})
}

func (m *Module) close(ctx context.Context) {
	m.h.mu.Lock()
	delete(m.h.live, m)
	m.h.mu.Unlock()
	for _, inst := range m.pool.drain() {
		inst.close()
	}
	m.rt.Close(context.WithoutCancel(ctx))
	m.closeGates()
	select {
	case <-m.done:
	default:
		close(m.done)
	}
}

// tailWriter forwards guest stdout/stderr to the module log line by line and
// keeps the last bytes for crash messages. It runs inside a host call, where
// the deadline cannot interrupt it, so its work is linear in the write and
// bounded: lines share the call's log budget, a line longer than MaxLogLine
// goes out as several records, and only the last maxTail bytes are kept.
type tailWriter struct {
	log  *slog.Logger
	st   *callState // the owning instance's call state (for the log budget)
	mu   sync.Mutex
	buf  []byte // the current partial line, at most MaxLogLine
	last []byte // the last maxTail bytes written
}

const maxTail = 2048

func (w *tailWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(p)
	if len(p) >= maxTail {
		w.last = append(w.last[:0], p[len(p)-maxTail:]...)
	} else {
		w.last = append(w.last, p...)
		if len(w.last) > maxTail {
			w.last = append(w.last[:0], w.last[len(w.last)-maxTail:]...)
		}
	}
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		end := i // the end of this line's bytes in p
		if i < 0 {
			end = len(p)
		}
		if room := MaxLogLine - len(w.buf); end > room {
			// An over-long line, ended or not, continues in the next
			// record: nothing is dropped silently.
			w.buf = append(w.buf, p[:room]...)
			w.flush()
			p = p[room:]
			continue
		}
		w.buf = append(w.buf, p[:end]...)
		if i < 0 {
			break // the line goes on in a later write
		}
		w.flush()
		p = p[i+1:]
	}
	return n, nil
}

// flush emits the partial line as one log record, within the call's budget.
func (w *tailWriter) flush() {
	line := w.buf
	w.buf = w.buf[:0]
	if w.st != nil {
		w.st.logLines++
		if w.st.logLines > MaxLogLinesPerCall {
			return
		}
	}
	text := sanitizeLog(line)
	if w.st != nil {
		text = w.st.call.Scrub(text)
	}
	w.log.Debug(GuestLogMessage, "stream", "stdout/stderr", "text", text)
}

func (w *tailWriter) tail() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(w.last)
}

// closeGates releases the gates' resources.
func (m *Module) closeGates() {
	m.net.Close()
	if m.exec != nil {
		m.exec.Close()
	}
	if m.fs != nil {
		m.fs.Close()
	}
	if m.acct != nil {
		m.h.release(m.acct)
		m.acct = nil
	}
}

// wholeTreeRoots returns the directories X of write globs "X/**" (X without
// wildcards): the only directories a child process may work in, because a
// child is confined per directory tree, not per glob (docs/subprocess.md).
func wholeTreeRoots(globs []string) []string {
	var roots []string
	for _, g := range globs {
		if x, ok := strings.CutSuffix(g, "/**"); ok && !strings.ContainsAny(x, "*?[{") {
			roots = append(roots, x)
		}
	}
	return roots
}

// expandHome turns "~/x" globs into absolute ones under home. A home that is
// "/", relative or not clean is refused: "~/etc/**" must never become
// "/etc/**".
func expandHome(globs []string, home string) ([]string, error) {
	out := make([]string, 0, len(globs))
	for _, g := range globs {
		if rest, ok := strings.CutPrefix(g, "~/"); ok {
			if home == "" || home == "/" || !filepath.IsAbs(home) || filepath.Clean(home) != home {
				return nil, fmt.Errorf("%q: the station's home directory %q cannot anchor ~/ (it must be an absolute, clean directory other than /)", g, home)
			}
			g = filepath.ToSlash(filepath.Join(home, rest))
			if strings.HasSuffix(rest, "/") {
				g += "/"
			}
		}
		out = append(out, g)
	}
	return out, nil
}

// describeTrap turns a wazero error into one line a person can act on.
func describeTrap(err error, stderr string) string {
	var exit *sys.ExitError
	if errors.As(err, &exit) {
		msg := fmt.Sprintf("exited with code %d", exit.ExitCode())
		if line := lastFatal(stderr); line != "" {
			msg += ": " + line
		}
		return msg
	}
	msg := err.Error()
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	if line := lastFatal(stderr); line != "" {
		msg += " (" + line + ")"
	}
	return "trapped: " + msg
}

// lastFatal finds the most telling line of a Go guest's crash output.
func lastFatal(stderr string) string {
	lines := strings.Split(stderr, "\n")
	for _, l := range lines {
		if strings.HasPrefix(l, "fatal error:") || strings.HasPrefix(l, "panic:") || strings.HasPrefix(l, "runtime:") {
			return sandbox.Sanitize(strings.TrimSpace(l))
		}
	}
	return ""
}
