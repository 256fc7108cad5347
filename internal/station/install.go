package station

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/station-dev/station/internal/atomicfile"
	"github.com/station-dev/station/internal/config"
	"github.com/station-dev/station/internal/execgate"
	"github.com/station-dev/station/internal/host"
	"github.com/station-dev/station/internal/netgate"
	"github.com/station-dev/station/internal/store"
	"github.com/station-dev/station/manifest"
)

// installLimits are the host's install limits from the operator's install
// section (zero fields: the host's defaults).
func installLimits(in config.Install) host.InstallLimits {
	return host.InstallLimits{
		ModuleBytes:    int64(in.MaxModuleSize),
		Functions:      in.MaxFunctions,
		FunctionBytes:  int(in.MaxFunctionSize),
		Locals:         in.MaxLocals,
		ModuleLocals:   int64(in.MaxModuleLocals),
		Nesting:        in.MaxNesting,
		Types:          in.MaxTypes,
		Imports:        in.MaxImports,
		Exports:        in.MaxExports,
		Globals:        in.MaxGlobals,
		DataSegments:   in.MaxDataSegments,
		CompileTimeout: in.CompileTimeout,
		CompileMemory:  in.CompileMemory,
	}
}

// maxWasmSize is the largest wasm file install reads
// (install.max_module_size).
func (s *Station) maxWasmSize() int64 {
	if n := s.Config.Install.MaxModuleSize; n > 0 {
		return int64(n)
	}
	return host.DefaultMaxModuleBytes
}

// Permissions is what an operator approves for a module. It is stored with
// the module, and it is exactly what the module's gates enforce.
type Permissions struct {
	Network          []string `json:"network"`
	Subprocess       any      `json:"subprocess"`
	FilesystemWrites []string `json:"filesystem_writes"`
	FilesystemReads  []string `json:"filesystem_reads,omitempty"`
	// Programs are the programs resolved for subprocess.allow at install,
	// with the paths and digests the operator approved.
	Programs []execgate.Program `json:"programs,omitempty"`
	// Env are the variables the module may pass to programs.
	Env []string `json:"subprocess_env,omitempty"`
	// LLM is set when the module may ask the station's LLM for
	// completions (requires.llm).
	LLM *LLMPermission `json:"llm,omitempty"`
	// Secrets are the secrets the module may have sent for it, each to
	// its hosts only (requires.secrets).
	Secrets []SecretPermission `json:"secrets,omitempty"`
}

// SecretPermission is an approved requires.secrets entry.
type SecretPermission struct {
	Name  string   `json:"name"`
	Hosts []string `json:"hosts"`
	// In is where in a request the value may go: "headers", and "query"
	// and "body" where the manifest opted in.
	In []string `json:"in"`
}

func secretPermissions(m *manifest.Manifest) []SecretPermission {
	var out []SecretPermission
	for _, s := range m.Requires.Secrets {
		in := []string{"headers"}
		if s.Query {
			in = append(in, "query")
		}
		if s.Body {
			in = append(in, "body")
		}
		out = append(out, SecretPermission{Name: s.Name, Hosts: s.Hosts, In: in})
	}
	return out
}

// LLMPermission is an approved requires.llm; zero fields mean no limit.
type LLMPermission struct {
	MaxTokensPerCall   int   `json:"max_tokens_per_call,omitempty"`
	BudgetTokensPerDay int64 `json:"budget_tokens_per_day,omitempty"`
}

// PermissionsOf returns the permissions a manifest asks for.
func PermissionsOf(m *manifest.Manifest) Permissions {
	p := Permissions{Network: nonNil(m.Requires.Network.Allow), FilesystemWrites: nonNil(m.Requires.FilesystemWrites), FilesystemReads: m.Requires.FilesystemReads, Subprocess: false}
	switch {
	case m.Requires.Subprocess.Any:
		p.Subprocess = true
	case len(m.Requires.Subprocess.Allow) > 0:
		p.Subprocess = map[string][]string{"allow": m.Requires.Subprocess.Allow}
	}
	p.Env = m.Requires.Subprocess.Env
	if l := m.Requires.LLM; l.Enabled {
		p.LLM = &LLMPermission{MaxTokensPerCall: l.MaxTokensPerCall, BudgetTokensPerDay: l.BudgetTokensPerDay}
	}
	p.Secrets = secretPermissions(m)
	return p
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// StartsPrograms reports whether the permissions let the module start
// programs.
func (p Permissions) StartsPrograms() bool {
	if b, ok := p.Subprocess.(bool); ok {
		return b
	}
	return p.Subprocess != nil
}

// Describe renders the permissions in plain words, one line each. children
// is what a granted program gets on this machine (Plan.Children,
// Station.ChildConfinement); "" says it in general terms.
func (p Permissions) Describe(children string) []string {
	childLimits := childLimits
	if children != "" {
		childLimits = "  " + children
	}
	var lines []string
	if len(p.Network) == 0 {
		lines = append(lines, "may not connect to the network")
	}
	for _, e := range p.Network {
		r, err := netgate.ParseRule(e)
		if err != nil {
			lines = append(lines, fmt.Sprintf("may connect to %s", e))
			continue
		}
		host := r.Host
		if r.Wildcard {
			host = "any subdomain of " + r.Host + " (not " + r.Host + " itself)"
		}
		lines = append(lines, fmt.Sprintf("may connect to %s (%s, port %d)", host, r.Scheme, r.Port))
		if why := r.Broad(); why != "" {
			lines = append(lines, "  BROAD, OPERATOR GRANT (network.grant): "+why)
		}
	}
	switch s := p.Subprocess.(type) {
	case bool:
		if s {
			lines = append(lines, "MAY START ANY PROGRAM on the station's search path (operator grant)")
			lines = append(lines, childLimits)
		} else {
			lines = append(lines, "may not start programs")
		}
	default:
		if len(p.Programs) == 0 {
			lines = append(lines, fmt.Sprintf("MAY START PROGRAMS: %v", s))
		}
		for _, prog := range p.Programs {
			lines = append(lines, fmt.Sprintf("MAY START %s (%s, %s)", prog.Name, prog.Path, shortHash(prog.Digest)))
		}
		if len(p.Programs) > 0 {
			lines = append(lines, childLimits)
		}
		if len(p.Env) > 0 {
			lines = append(lines, "may pass these environment variables to them: "+strings.Join(p.Env, ", "))
		}
	}
	if len(p.FilesystemWrites) == 0 {
		lines = append(lines, "may not write files")
	}
	home, _ := os.UserHomeDir()
	glob := func(verb, g string) {
		lines = append(lines, verb+g)
		if why := manifest.GrantReason(g, home); why != "" {
			lines = append(lines, "  BROAD, OPERATOR GRANT (filesystem.grant): "+why)
		}
	}
	for _, g := range p.FilesystemWrites {
		glob("may create, change and delete ", g)
	}
	for _, g := range p.FilesystemReads {
		glob("may read ", g)
	}
	if l := p.LLM; l != nil {
		lines = append(lines, l.describe()...)
	}
	for _, sec := range p.Secrets {
		lines = append(lines, fmt.Sprintf("may have the station send secret %s, only to %s (in %s); the module never sees its value",
			sec.Name, strings.Join(sec.Hosts, ", "), strings.Join(sec.In, ", ")))
	}
	return lines
}

// childLimits is what the approval says of a child's confinement when it
// does not know this machine (execgate.Describe does).
const childLimits = "  a program runs OUTSIDE WebAssembly: where the station can confine it (Landlock, namespaces) it may read system directories (/usr, /etc, ...) and the module's own directories, has no network, and writes only in the module's writable directories; where it cannot, the program does not start unless the operator allows it"

func shortHash(d string) string {
	if len(d) > 19 {
		return d[:19]
	}
	return d
}

// Plan is what an install will do, shown to the operator for approval.
type Plan struct {
	Manifest    *manifest.Manifest
	Digest      string
	Size        int
	Permissions Permissions
	Replaces    *store.Module // the installed version this replaces, if any
	// Children is what a granted program gets on this machine, in one
	// line (execgate.Describe); "" when the module starts no programs.
	Children string
}

// Approver decides whether to go ahead with an install.
type Approver func(Plan) (bool, error)

// ErrNotApproved is returned when the operator declines an install.
var ErrNotApproved = errors.New("not approved")

// Install installs the module in dir: it reads and checks the manifest,
// verifies the wasm against it (it must compile, speak the station's ABI and
// import only what the manifest grants), asks approve, then copies the
// module into the station home and records it with its digest, approved
// permissions and dir (store.Module.Source).
func (s *Station) Install(ctx context.Context, dir string, approve Approver) (*Plan, error) {
	// Read each file once, confined to dir; what is parsed, verified and
	// approved is exactly what is stored (never a second read of dir).
	raw, err := readModuleFile(dir, manifest.FileName, manifest.MaxFileSize)
	if err != nil {
		return nil, fmt.Errorf("install %s: %w", dir, err)
	}
	man, err := s.ParseManifest(filepath.Join(dir, manifest.FileName), raw)
	if err != nil {
		return nil, err
	}
	wasm, err := readModuleFile(dir, man.Wasm, s.maxWasmSize())
	if big := (*tooLargeError)(nil); errors.As(err, &big) {
		err = host.ModuleSizeError(man.ID, big.size, big.limit)
	}
	if err != nil {
		return nil, fmt.Errorf("install %s@%s: %w", man.ID, man.Version, err)
	}
	plan := &Plan{Manifest: man, Digest: host.Digest(wasm), Size: len(wasm), Permissions: PermissionsOf(man)}
	if prev, err := s.Store.Module(ctx, man.ID); err == nil {
		plan.Replaces = &prev
	}
	op := s.execOperator(ctx)
	plan.Children = s.ChildConfinement(plan.Permissions)
	home, _ := os.UserHomeDir()
	var roots []string
	for _, g := range man.Requires.FilesystemWrites {
		roots = append(roots, writeRoot(g, home))
	}
	if err := s.checkWriteRoots(ctx, man.ID, roots, op); err != nil {
		return plan, fmt.Errorf("install %s@%s: requires.filesystem_writes: %w", man.ID, man.Version, err)
	}
	if sp := man.Requires.Subprocess; len(sp.Allow) > 0 {
		// This module's own write roots are excluded too: a program it may
		// rewrite is not the program the operator approved.
		op.Excluded = append(op.Excluded, roots...)
		progs, err := execgate.Resolve(sp.Allow, op)
		if err != nil {
			return plan, fmt.Errorf("install %s@%s: requires.subprocess: %w", man.ID, man.Version, err)
		}
		plan.Permissions.Programs = progs
	}
	if err := s.Host.Check(ctx, man, wasm, host.Grants{Programs: plan.Permissions.Programs}); err != nil {
		return plan, fmt.Errorf("install %s@%s: verify: %w", man.ID, man.Version, err)
	}
	unlock := s.lockModule(man.ID)
	defer unlock()
	ok, err := approve(*plan)
	if err != nil {
		return plan, err
	}
	if !ok {
		return plan, fmt.Errorf("install %s@%s: %w", man.ID, man.Version, ErrNotApproved)
	}

	dst := filepath.Join(s.Home, "modules", man.ID)
	if err := os.MkdirAll(dst, 0o700); err != nil {
		return plan, err
	}
	wasmPath := filepath.Join(dst, strings.TrimPrefix(plan.Digest, "sha256:")+".wasm")
	if err := writeAtomic(wasmPath, wasm, 0o400); err != nil {
		return plan, fmt.Errorf("install %s: %w", man.ID, err)
	}
	if err := writeAtomic(filepath.Join(dst, manifest.FileName), raw, 0o600); err != nil {
		return plan, err
	}
	approved, _ := json.Marshal(plan.Permissions)
	source, err := filepath.Abs(dir)
	if err != nil {
		source = dir
	}
	rec := store.Module{ID: man.ID, Version: man.Version, Digest: plan.Digest, Manifest: raw, WasmPath: wasmPath, Approved: approved, InstalledAt: time.Now().UTC(), Source: source}
	if err := s.Store.PutModule(ctx, rec); err != nil {
		return plan, fmt.Errorf("install %s: record: %w", man.ID, err)
	}
	if plan.Replaces != nil && plan.Replaces.WasmPath != wasmPath {
		os.Remove(plan.Replaces.WasmPath)
	}
	// A running host picks up the new version (and its policy) on the next call.
	if s.Host.Module(man.ID) != nil {
		if _, err := s.Host.LoadGranted(ctx, man, wasm, host.Grants{Programs: plan.Permissions.Programs}); err != nil {
			return plan, err
		}
	}
	return plan, nil
}

// checkWriteRoots refuses write grants over a directory programs are
// resolved from, or over a program another module was approved to run:
// either would let a module rewrite what runs outside the sandbox.
func (s *Station) checkWriteRoots(ctx context.Context, id string, roots []string, op execgate.Operator) error {
	search := op.SearchPath
	if len(search) == 0 {
		search = []string{"/usr/local/bin", "/usr/bin", "/bin"}
	}
	mods, _ := s.Store.Modules(ctx)
	for _, root := range roots {
		for _, dir := range search {
			if within(dir, root) {
				return fmt.Errorf("%s contains %s, a directory programs are started from; a module may not write there", root, dir)
			}
		}
		for _, rec := range mods {
			if rec.ID == id {
				continue
			}
			var p Permissions
			if json.Unmarshal(rec.Approved, &p) != nil {
				continue
			}
			for _, prog := range p.Programs {
				if within(prog.Path, root) {
					return fmt.Errorf("%s contains %s, which module %s was approved to run; a module may not write there", root, prog.Path, rec.ID)
				}
			}
		}
	}
	return nil
}

// within reports whether p is dir or inside it.
func within(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}

// Remove uninstalls a module.
func (s *Station) Remove(ctx context.Context, id string) error {
	unlock := s.lockModule(id)
	defer unlock()
	rec, err := s.Store.Module(ctx, id)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("remove %s: module is not installed", id)
		}
		return err
	}
	if err := s.Store.DeleteModule(ctx, id); err != nil {
		return fmt.Errorf("remove %s: %w", id, err)
	}
	if s.Host.Module(id) != nil {
		_ = s.Host.Unload(ctx, id)
	}
	_ = os.Remove(rec.WasmPath)
	_ = os.Remove(filepath.Join(s.Home, "modules", id, "module.yaml"))
	_ = os.Remove(filepath.Join(s.Home, "modules", id))
	_ = os.Remove(filepath.Dir(filepath.Join(s.Home, "modules", id)))
	return nil
}

// readModuleFile reads one file of a module directory, confined to dir: the
// manifest cannot point outside it, even through a symlink; at most limit
// bytes.
func readModuleFile(dir, name string, limit int64) ([]byte, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	f, err := root.Open(name)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			if name == manifest.FileName {
				return nil, fmt.Errorf("no %s in %s", name, dir)
			}
			return nil, fmt.Errorf("%s: no such file in %s (build it with: station module build %s)", name, dir, dir)
		}
		return nil, fmt.Errorf("open %s: %w", name, err)
	}
	defer f.Close()
	// A file known to be too large is refused before it is read.
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() && fi.Size() > limit {
		return nil, &tooLargeError{name: name, size: fi.Size(), limit: limit}
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, &tooLargeError{name: name, size: -1, limit: limit}
	}
	return b, nil
}

// tooLargeError is a module file over its limit (readModuleFile); size is
// -1 when the file's size is not known.
type tooLargeError struct {
	name        string
	size, limit int64
}

func (e *tooLargeError) Error() string {
	return fmt.Sprintf("%s is larger than %d bytes", e.name, e.limit)
}

func writeAtomic(path string, data []byte, mode os.FileMode) error {
	return atomicfile.Write(path, data, mode)
}
