// Package station ties the pieces of a station together: its home directory,
// the operator's configuration, the SQLite store, the audit writer and the
// module host. The CLI (and later the daemon) drive a *Station; module calls
// still go through the host's one dispatch entry point.
package station

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/tetratelabs/wazero"

	"github.com/station-dev/station/internal/audit"
	"github.com/station-dev/station/internal/config"
	"github.com/station-dev/station/internal/execgate"
	"github.com/station-dev/station/internal/fsgate"
	"github.com/station-dev/station/internal/host"
	"github.com/station-dev/station/internal/llm"
	"github.com/station-dev/station/internal/netgate"
	"github.com/station-dev/station/internal/secrets"
	"github.com/station-dev/station/internal/store"
	"github.com/station-dev/station/manifest"
)

// Options configure Open.
type Options struct {
	// Logger receives the station log (module gates at load, guest logs).
	Logger *slog.Logger
	// Cache, if set, replaces the on-disk compilation cache (tests share one
	// in-memory cache between stations).
	Cache wazero.CompilationCache
	// Resolver, if set, resolves names for module egress that the
	// operator's resolve overrides do not cover (tests count lookups with
	// it). Nil: a fresh net.Resolver per module.
	Resolver netgate.Resolver
	// LLM, if set, replaces the LLM client the configuration describes
	// (tests use a fake provider's client).
	LLM llm.Completer
	// Getenv reads the environment for the LLM settings (STATION_LLM_*
	// and the key); nil means os.Getenv.
	Getenv func(string) string
	// AuditClock, if set, is the clock of the audit log's rate limit
	// (tests stop it); nil means time.Now.
	AuditClock func() time.Time
}

// Station is an open station home.
type Station struct {
	Home   string
	Config *config.Config
	Store  *store.Store
	Host   *host.Host
	Audit  *audit.Writer
	LLM    llm.Completer // the station's own LLM client, under no module's policy (llm.go)
	// Secrets holds the values of modules' secrets (requires.secrets),
	// which only their network gates read.
	Secrets *secrets.Store
	log     *slog.Logger

	locksMu sync.Mutex
	locks   map[string]*sync.Mutex // per module id: serializes load, install and remove

	adv advisoryGate // the run gate of security advisories (advisories.go)
}

// lockModule serializes load, install and remove of one module id, so a lazy
// load cannot race an upgrade or a removal; other modules are not held up.
func (s *Station) lockModule(id string) (unlock func()) {
	s.locksMu.Lock()
	if s.locks == nil {
		s.locks = map[string]*sync.Mutex{}
	}
	mu := s.locks[id]
	if mu == nil {
		mu = &sync.Mutex{}
		s.locks[id] = mu
	}
	s.locksMu.Unlock()
	mu.Lock()
	return mu.Unlock
}

// Open opens (creating if needed) the station in home.
func Open(ctx context.Context, home string, opts Options) (*Station, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(home, 0o700); err != nil {
		return nil, fmt.Errorf("open station %s: %w", home, err)
	}
	cfg, err := config.Load(home)
	if err != nil {
		return nil, err
	}
	roots, err := cfg.RootCAs(home)
	if err != nil {
		return nil, fmt.Errorf("open station %s: %w", home, err)
	}
	st, err := store.Open(filepath.Join(home, "station.db"))
	if err != nil {
		return nil, fmt.Errorf("open station %s: %w", home, err)
	}
	aw := audit.NewWriter(st, opts.Logger, opts.AuditClock)
	llmc, llmFunc, err := newLLM(cfg, opts, st, aw)
	if err != nil {
		aw.Close(ctx)
		st.Close()
		return nil, fmt.Errorf("open station %s: %w", home, err)
	}
	hopts := host.Options{
		LLM:      llmFunc,
		Cache:    opts.Cache,
		Recorder: aw,
		Logger:   opts.Logger,
		Operator: &netgate.Operator{
			Resolve:      cfg.ResolveMap(),
			RootCAs:      roots,
			AllowPrivate: cfg.AllowPrivate(),
			Resolver:     opts.Resolver,
		},
		Limits: host.Limits{
			MemoryBytes: cfg.Limits.DefaultMemory,
			Timeout:     cfg.Limits.DefaultTimeout,
			Concurrency: cfg.Limits.DefaultConcurrency,
		},
		MaxLimits: host.Limits{
			MemoryBytes: cfg.Limits.MaxMemory,
			Timeout:     cfg.Limits.MaxTimeout,
		},
	}
	if hopts.Cache == nil {
		hopts.CacheDir = filepath.Join(home, "cache", "wazero")
	}
	// No module may mount or write the station's own home: store, module
	// packages, configuration and caches.
	if abs, err := filepath.Abs(home); err == nil {
		hopts.Protected = append(hopts.Protected, abs)
	}
	hopts.HomeDir, _ = os.UserHomeDir()
	hopts.FilesystemQuota = int64(cfg.Filesystem.Quota)
	// Raise the soft RLIMIT_NOFILE to the hard limit now, and compute the
	// descriptors modules' files may share from the limit in effect.
	fds := fsgate.ProcessDescriptors()
	if opts.Logger != nil {
		opts.Logger.Debug(fmt.Sprintf("modules' open files may hold %d of the process's %d descriptors", fds.Limit(), fds.ProcessLimit()))
	}
	hopts.FilesystemEntries = int64(cfg.Filesystem.Entries)
	hopts.FilesystemOpenFiles = int64(cfg.Filesystem.OpenFiles)
	hopts.FilesystemOpenFilesPerInstance = int64(cfg.Filesystem.OpenFilesPerInstance)
	hopts.Usage = st
	hopts.Exec = func() execgate.Operator { return execOperator(context.Background(), cfg, home, st) }
	hopts.Install = installLimits(cfg.Install)
	secretStore := secrets.Open(home)
	hopts.Secrets = secretStore
	h, err := host.New(hopts)
	if err != nil {
		aw.Close(ctx)
		st.Close()
		return nil, fmt.Errorf("open station %s: %w", home, err)
	}
	return &Station{Home: home, Config: cfg, Store: st, Host: h, Audit: aw, LLM: llmc, Secrets: secretStore, log: opts.Logger}, nil
}

// ParseManifest parses a manifest with the operator's grants (broad
// filesystem globs and network entries the configuration allows) and home
// directory.
func (s *Station) ParseManifest(filename string, data []byte) (*manifest.Manifest, error) {
	home, _ := os.UserHomeDir()
	return manifest.ParseWith(filename, data, manifest.Options{GrantedGlobs: s.Config.Filesystem.Grant, GrantedNetwork: s.Config.Network.Grant,
		Home: home, Resolve: realDir})
}

// realDir is p with symbolic links followed, or "" if it cannot be
// resolved (manifest.Options.Resolve).
func realDir(p string) string {
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		return ""
	}
	return r
}

// Close unloads modules, flushes the audit log and closes the store.
func (s *Station) Close(ctx context.Context) error {
	err := s.Host.Close(ctx)
	err = errors.Join(err, s.Audit.Close(ctx))
	return errors.Join(err, s.Store.Close())
}

// Run runs a module command through the host's dispatch entry point, loading
// the module from the store first if this process has not loaded it yet.
// It is the one entry point of every module call (the CLI, the daemon,
// workflow steps), and it first asks the advisory gate: a version that an
// advisory at or above advisories.block affects, and that the operator did
// not allow, is refused with an *AdvisoryError (advisories.go). What runs
// is the version the gate looked at: a warm copy of another (another
// process upgraded the module, and this one was not told) is replaced by
// the installed one, and a version the store holds that the gate has not
// looked at yet is looked at before it is loaded.
func (s *Station) Run(ctx context.Context, id, command string, input []byte) ([]byte, error) {
	for tries := 0; ; tries++ {
		looked, err := s.gateAdvisories(ctx, id, command)
		if err != nil {
			return nil, err
		}
		if m := s.Host.Module(id); m != nil && (moduleCopy{m.Version(), m.Digest()}) == looked {
			break
		}
		err = s.load(ctx, id, looked)
		if err == nil {
			break
		}
		if !errors.Is(err, errNotLooked) || tries > 0 {
			return nil, err
		}
		// Another process changed the module since the gate last looked:
		// look again.
		s.AdvisoriesChanged()
	}
	return s.Host.Call(ctx, id, command, input)
}

// errNotLooked is load's refusal of an installed version that is not the
// one the advisory gate looked at.
var errNotLooked = errors.New("another process changed the installed version while the call started; run it again")

// Installed is an installed module as Verify read it back.
type Installed struct {
	store.Module
	Manifest *manifest.Manifest // the stored (approved) manifest, as parsed now
	Approved Permissions        // what the operator approved
	Wasm     []byte             // the module's file, with the approved digest
}

// Verify reads installed module id and checks that what would run is what
// the operator approved: the stored manifest asks for exactly the stored
// approved permissions (the resolved programs come from the approval
// itself), and the file on disk has the approved digest. It is the check
// every load makes; `workflow check` asks it too. On a failed check the
// Installed holds what could be read (for a report) and the error says
// what to do; a module that is not installed is an error matching
// store.ErrNotFound, with a nil Installed.
func (s *Station) Verify(ctx context.Context, id string) (*Installed, error) {
	rec, err := s.Store.Module(ctx, id)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, notInstalledError{id}
		}
		return nil, err
	}
	in := &Installed{Module: rec}
	if err := json.Unmarshal(rec.Approved, &in.Approved); err != nil {
		return in, fmt.Errorf("stored approval: %w (reinstall the module)", err)
	}
	if in.Manifest, err = s.ParseManifest(filepath.Join(s.Home, "modules", id, manifest.FileName), rec.Manifest); err != nil {
		return in, fmt.Errorf("stored manifest: %w (reinstall the module)", err)
	}
	want := PermissionsOf(in.Manifest)
	want.Programs = in.Approved.Programs
	if got, _ := json.Marshal(want); !bytes.Equal(got, rec.Approved) {
		return in, fmt.Errorf("the stored manifest asks for %s but %s was approved; refusing to run it (reinstall the module)", got, rec.Approved)
	}
	wasm, err := os.ReadFile(rec.WasmPath)
	if err != nil {
		return in, fmt.Errorf("%w (reinstall the module)", err)
	}
	if got := host.Digest(wasm); got != rec.Digest {
		return in, fmt.Errorf("%s has digest %s but %s was approved; refusing to run it (reinstall the module)", rec.WasmPath, got, rec.Digest)
	}
	in.Wasm = wasm
	return in, nil
}

// load loads installed module id into the host, after Verify, in place of
// a copy of another version or build; looked is the version the advisory
// gate looked at, and an installed one that is not it is refused with
// errNotLooked, unloaded.
func (s *Station) load(ctx context.Context, id string, looked moduleCopy) error {
	unlock := s.lockModule(id)
	defer unlock()
	if m := s.Host.Module(id); m != nil && (moduleCopy{m.Version(), m.Digest()}) == looked {
		return nil
	}
	in, err := s.Verify(ctx, id)
	if in == nil {
		return err
	}
	if err != nil {
		return fmt.Errorf("load %s: %w", id, err)
	}
	if (moduleCopy{in.Version, in.Digest}) != looked {
		return fmt.Errorf("load %s@%s: %w", id, in.Version, errNotLooked)
	}
	_, err = s.Host.LoadGranted(ctx, in.Manifest, in.Wasm, host.Grants{Programs: in.Approved.Programs})
	return err
}

// execOperator returns the operator's subprocess settings, with every tree
// a module may write (any installed module's write roots) and the station
// home excluded from where programs may be resolved.
func (s *Station) execOperator(ctx context.Context) execgate.Operator {
	return execOperator(ctx, s.Config, s.Home, s.Store)
}

// ChildConfinement says in one line what a program a module with the
// permissions p is granted gets on this machine under the operator's
// settings: whether it starts at all, and what confines it
// (execgate.Describe). It is "" for a module that starts no programs.
func (s *Station) ChildConfinement(p Permissions) string {
	if !p.StartsPrograms() {
		return ""
	}
	sp := s.Config.Subprocess
	return execgate.Describe(execgate.Operator{AllowNetwork: sp.AllowNetwork, AllowUnconfinedFiles: sp.AllowUnconfinedFiles})
}

// writeRoot is the host directory a write glob's matches live under.
func writeRoot(g, home string) string {
	if rest, ok := strings.CutPrefix(g, "~/"); ok {
		g = filepath.ToSlash(filepath.Join(home, rest))
	}
	return fsgate.Root(g)
}

// configFile is the configuration file of the station home, absolute, to
// name in a refusal that a setting there would lift (a station without the
// file runs on the defaults; the operator creates it there).
func configFile(home string) string {
	if abs, err := filepath.Abs(home); err == nil {
		home = abs
	}
	return config.Path(home)
}

func execOperator(ctx context.Context, cfg *config.Config, stationHome string, st *store.Store) execgate.Operator {
	sp := cfg.Subprocess
	op := execgate.Operator{SearchPath: sp.SearchPath, GrantAny: sp.GrantAny, GrantPrograms: sp.GrantPrograms,
		AllowNetwork: sp.AllowNetwork, AllowUnconfinedFiles: sp.AllowUnconfinedFiles, ConfigFile: configFile(stationHome)}
	if abs, err := filepath.Abs(stationHome); err == nil {
		op.Excluded = append(op.Excluded, abs)
	}
	home, _ := os.UserHomeDir()
	mods, _ := st.Modules(ctx)
	for _, rec := range mods {
		var p Permissions
		if json.Unmarshal(rec.Approved, &p) != nil {
			continue
		}
		for _, g := range p.FilesystemWrites {
			op.Excluded = append(op.Excluded, writeRoot(g, home))
		}
	}
	return op
}
