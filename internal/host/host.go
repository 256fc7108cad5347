// Package host runs modules: it compiles each module's WebAssembly once, keeps
// a pool of warm instances per module, links into each module exactly the
// imports its manifest grants — with the module's policy bound into them at
// link time — and serves every call through one dispatch entry point,
// Host.Call.
//
// Each module gets its own wazero.Runtime. The runtime is the module's whole
// world: its namespace holds only that module's instances and one "station"
// host module whose functions close over that module's gates. No gate is ever
// looked up from process-wide state or from anything the caller controls, so
// one module's policy cannot govern another module or the station (see
// RATIONALE.md, "Why is a module's policy bound at link time?").
package host

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"

	"github.com/station-dev/station/internal/execgate"
	"github.com/station-dev/station/internal/netgate"
	"github.com/station-dev/station/internal/sandbox"
	"github.com/station-dev/station/manifest"
)

// Defaults for the limits a manifest does not set.
const (
	DefaultMemory      = 128 << 20
	DefaultTimeout     = 30 * time.Second
	DefaultConcurrency = 8
	// DefaultMaxInput bounds a call's input document.
	DefaultMaxInput = 16 << 20
	// DefaultMaxOutput bounds what a guest may set with output_set.
	DefaultMaxOutput = 16 << 20
	// DefaultMaxArg bounds a host-call argument document (an HTTP request).
	DefaultMaxArg = 16 << 20
	// MaxLogLine bounds one log import call.
	MaxLogLine = 64 << 10
	// MaxBuffers bounds the live buffers of one call.
	MaxBuffers = 64
	// MaxBufferBytes bounds the bytes the host holds in one call's live
	// buffers (input and host-call results together).
	MaxBufferBytes = 64 << 20
	// MaxLogLinesPerCall bounds the log records (log import and stdout/stderr
	// lines together) one call may write; the rest are counted and dropped.
	MaxLogLinesPerCall = 1000
	// DefaultMaxConcurrency is the operator maximum for limits.concurrency
	// when the configuration sets none.
	DefaultMaxConcurrency = 64
)

// Options configure a Host. The zero value is usable: in-memory compilation
// cache, no audit, default limits.
type Options struct {
	// Cache is shared by every module's runtime. If nil, one is made from
	// CacheDir (on disk) or kept in memory when CacheDir is empty.
	Cache wazero.CompilationCache
	// CacheDir is the on-disk compilation cache; it must be writable only by
	// the station and must never be inside a module-writable tree. With
	// Cache set too, it names the directory Cache keeps its files in. Only
	// with a CacheDir are modules compiled in a child process, within
	// Install's time and memory bounds (compile.go).
	CacheDir string
	// Recorder receives every sandbox decision.
	Recorder sandbox.Recorder
	// Logger receives the module log (gates at load, guest log lines).
	Logger *slog.Logger
	// Operator holds the operator's network settings for module egress.
	Operator *netgate.Operator
	// Limits are the defaults for limits a manifest leaves unset.
	Limits Limits
	// MaxLimits are the operator's maxima; a manifest asking for more is
	// refused at load. Zero fields mean no maximum beyond the hard ones.
	MaxLimits Limits
	// HomeDir expands "~/" in filesystem globs (the operator's home).
	HomeDir string
	// Protected are host directories no module may mount or write: the
	// station home (store, module packages, configuration, caches).
	Protected []string
	// FilesystemQuota bounds the bytes each module's files may grow by
	// (0: the filesystem gate's default).
	FilesystemQuota int64
	// FilesystemEntries bounds the names each module's operations may
	// have created, net of those removed; FilesystemOpenFiles and
	// FilesystemOpenFilesPerInstance bound the files a module's instances
	// hold open together and each. Zero: the filesystem gate's defaults.
	FilesystemEntries, FilesystemOpenFiles, FilesystemOpenFilesPerInstance int64
	// Usage stores what each module's files take, so that its quota and
	// entry limit hold across restarts; nil keeps it for the host's life
	// only (while the module is loaded).
	Usage UsageStore
	// Exec returns the operator's subprocess settings, computed when a
	// module is loaded (so that write grants installed since are excluded).
	// Protected directories and every write root of the module are added to
	// Excluded.
	Exec func() execgate.Operator
	// LLM answers llm_complete for modules whose manifest grants llm,
	// with the grant bound when the module was linked. The host never
	// holds the provider or its key. Nil: granted modules still load, and
	// their requests fail with "this station offers no LLM".
	LLM LLMFunc
	// Install bounds what a module's binary may contain and what compiling
	// it may cost (install.* in config.yaml); zero fields are the defaults.
	Install InstallLimits
	// Secrets gives the values of modules' secrets (requires.secrets) to
	// their network gates, at request time. Nil: a module that declares
	// secrets does not load.
	Secrets netgate.SecretSource
}

// Grants are what an install approved beyond the manifest itself.
type Grants struct {
	// Programs are the programs resolved (and hashed) at install for
	// requires.subprocess.allow, in manifest order.
	Programs []execgate.Program
}

// Limits bound a module's resources.
type Limits struct {
	MemoryBytes uint64
	Timeout     time.Duration
	Concurrency int
	// Fresh runs every call on a new instance instead of a warm one.
	Fresh     bool
	MaxInput  int
	MaxOutput int
	MaxArg    int
}

// Host owns the loaded modules. It is safe for concurrent use.
type Host struct {
	opts      Options
	cache     wazero.CompilationCache
	ownsCache bool
	log       *slog.Logger
	rec       sandbox.Recorder
	compiler  *compiler // bounds compilation (compile.go)

	mu      sync.Mutex                         // serializes Load/Unload/Close
	modules atomic.Pointer[map[string]*Module] // copy-on-write: Call never locks
	live    map[*Module]bool                   // every module not yet closed, retired ones included (h.mu)
	closed  bool

	accMu     sync.Mutex
	accounts  map[string]*account // by module id, while a version is loaded (accMu)
	stop      chan struct{}       // closed by Close: the saver returns
	stopOnce  sync.Once
	saverDone chan struct{}
}

// New returns a Host.
func New(opts Options) (*Host, error) {
	h := &Host{opts: opts, log: opts.Logger, rec: opts.Recorder}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	if h.rec == nil {
		h.rec = sandbox.Discard
	}
	h.cache = opts.Cache
	if h.cache == nil {
		h.ownsCache = true
		if opts.CacheDir != "" {
			c, err := wazero.NewCompilationCacheWithDir(opts.CacheDir)
			if err != nil {
				return nil, fmt.Errorf("compilation cache %s: %w", opts.CacheDir, err)
			}
			h.cache = c
		} else {
			h.cache = wazero.NewCompilationCache()
		}
	}
	h.compiler = newCompiler(opts, h.log)
	empty := map[string]*Module{}
	h.modules.Store(&empty)
	h.live = map[*Module]bool{}
	h.accounts = map[string]*account{}
	h.stop = make(chan struct{})
	h.saverDone = make(chan struct{})
	if opts.Usage != nil {
		go h.saver()
	} else {
		close(h.saverDone)
	}
	return h, nil
}

// ErrUnknownModule is returned by Call for a module that is not loaded.
var ErrUnknownModule = errors.New("module is not installed")

// Digest returns the sha256 digest of a module's wasm, as "sha256:<hex>".
func Digest(wasm []byte) string {
	sum := sha256.Sum256(wasm)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Load compiles a module, links its policy and warms one instance. Loading a
// module whose id is already loaded replaces it: calls that start after Load
// returns use the new module (and its policy); calls in flight finish on the
// old one, which is then closed.
func (h *Host) Load(ctx context.Context, m *manifest.Manifest, wasm []byte) (*Module, error) {
	return h.LoadGranted(ctx, m, wasm, Grants{})
}

// LoadGranted is Load for a module whose install approved grants.
func (h *Host) LoadGranted(ctx context.Context, m *manifest.Manifest, wasm []byte, g Grants) (*Module, error) {
	mod, err := h.newModule(ctx, m, wasm, g)
	if err != nil {
		return nil, fmt.Errorf("load %s@%s: %w", m.ID, m.Version, err)
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		mod.close(ctx)
		return nil, errors.New("host is closed")
	}
	old := h.swap(m.ID, mod)
	h.live[mod] = true
	h.mu.Unlock()
	if old != nil {
		old.retire(ctx)
	}
	mod.logGates()
	return mod, nil
}

// Unload removes a module; calls in flight finish first.
func (h *Host) Unload(ctx context.Context, id string) error {
	h.mu.Lock()
	old := h.swap(id, nil)
	h.mu.Unlock()
	if old == nil {
		return fmt.Errorf("unload %s: %w", id, ErrUnknownModule)
	}
	old.retire(ctx)
	return nil
}

// swap replaces (or, with nil, removes) the module with id and returns the
// previous one. h.mu must be held.
func (h *Host) swap(id string, mod *Module) *Module {
	cur := *h.modules.Load()
	next := make(map[string]*Module, len(cur)+1)
	for k, v := range cur {
		next[k] = v
	}
	old := next[id]
	if mod == nil {
		delete(next, id)
	} else {
		next[id] = mod
	}
	h.modules.Store(&next)
	return old
}

// Module returns the loaded module with id, or nil.
func (h *Host) Module(id string) *Module { return (*h.modules.Load())[id] }

// Modules returns the ids of the loaded modules.
func (h *Host) Modules() []string {
	cur := *h.modules.Load()
	ids := make([]string, 0, len(cur))
	for id := range cur {
		ids = append(ids, id)
	}
	return ids
}

// Call is the one dispatch entry point: the CLI, the daemon API and the
// workflow engine all run module commands through it. It runs command of
// module id with the JSON input and returns the JSON output.
//
// A failed call returns a *CallError. When a gate denied something during a
// failed call, errors.As(err, **sandbox.Violation) finds the first denial.
func (h *Host) Call(ctx context.Context, id, command string, input []byte) ([]byte, error) {
	for {
		mod := (*h.modules.Load())[id]
		if mod == nil {
			return nil, fmt.Errorf("run %s %s: %w", id, command, ErrUnknownModule)
		}
		if !mod.enter() {
			continue // replaced or unloaded just now: look again
		}
		out, err := mod.call(ctx, command, input)
		mod.exit()
		return out, err
	}
}

// Close unloads every module and releases the runtimes.
func (h *Host) Close(ctx context.Context) error {
	h.mu.Lock()
	h.closed = true
	empty := map[string]*Module{}
	h.modules.Store(&empty)
	live := h.live
	h.live = map[*Module]bool{}
	h.mu.Unlock()
	// Wait for every module, including ones replaced or unloaded earlier
	// that still have calls in flight: their decisions must reach the audit
	// log before the station closes it.
	for m := range live {
		m.retire(ctx)
	}
	for m := range live {
		<-m.done
	}
	h.stopOnce.Do(func() { close(h.stop) })
	<-h.saverDone
	if h.ownsCache {
		return h.cache.Close(ctx)
	}
	return nil
}

// ResolveLimits returns the limits a module with manifest limits ml runs
// under: the manifest's, else the operator's defaults, else the host's;
// an error if the manifest asks for more than the operator's maxima.
func (h *Host) ResolveLimits(ml manifest.Limits) (Limits, error) { return h.resolveLimits(ml) }

func (h *Host) resolveLimits(ml manifest.Limits) (Limits, error) {
	d := h.opts.Limits
	l := Limits{
		MemoryBytes: pick(ml.MemoryBytes, d.MemoryBytes, DefaultMemory),
		Timeout:     pick(ml.Timeout, d.Timeout, DefaultTimeout),
		Concurrency: pick(ml.Concurrency, d.Concurrency, DefaultConcurrency),
		Fresh:       ml.Fresh || d.Fresh,
		MaxInput:    pick(int(ml.MaxInput), d.MaxInput, DefaultMaxInput),
		MaxOutput:   pick(int(ml.MaxOutput), d.MaxOutput, DefaultMaxOutput),
		MaxArg:      pick(int(ml.MaxRequest), d.MaxArg, DefaultMaxArg),
	}
	mx := h.opts.MaxLimits
	var errs []string
	if mx.MemoryBytes > 0 && l.MemoryBytes > mx.MemoryBytes {
		errs = append(errs, fmt.Sprintf("limits.memory %d bytes exceeds the operator maximum %d", l.MemoryBytes, mx.MemoryBytes))
	}
	if mx.Timeout > 0 && l.Timeout > mx.Timeout {
		errs = append(errs, fmt.Sprintf("limits.timeout %s exceeds the operator maximum %s", l.Timeout, mx.Timeout))
	}
	if mx.Concurrency == 0 {
		mx.Concurrency = DefaultMaxConcurrency
	}
	if l.Concurrency > mx.Concurrency {
		errs = append(errs, fmt.Sprintf("limits.concurrency %d exceeds the operator maximum %d", l.Concurrency, mx.Concurrency))
	}
	for name, v := range map[string]int{"max_input": l.MaxInput, "max_output": l.MaxOutput, "max_request": l.MaxArg} {
		if v > manifest.MaxDocument {
			errs = append(errs, fmt.Sprintf("limits.%s %d bytes exceeds the station maximum %d", name, v, manifest.MaxDocument))
		}
	}
	if l.MemoryBytes > 4<<30 {
		errs = append(errs, "limits.memory exceeds 4GiB, the most a 32-bit WebAssembly module can address")
	}
	if len(errs) > 0 {
		return l, errors.New(strings.Join(errs, "; "))
	}
	return l, nil
}

func pick[T comparable](vals ...T) T {
	var zero T
	for _, v := range vals {
		if v != zero {
			return v
		}
	}
	return zero
}

// Check verifies that wasm can run as the module m describes — it compiles,
// speaks the station's ABI, imports only what m grants, and starts — without
// loading it.
func (h *Host) Check(ctx context.Context, m *manifest.Manifest, wasm []byte, g Grants) error {
	mod, err := h.newModule(ctx, m, wasm, g)
	if err != nil {
		return err
	}
	mod.close(ctx)
	return nil
}
