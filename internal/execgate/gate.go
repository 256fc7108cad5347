package execgate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/station-dev/station/internal/sandbox"
	"github.com/station-dev/station/sdk/abi"
)

// Errors a request can fail with besides a *sandbox.Violation. Test with
// errors.Is.
var (
	// ErrInvalid marks a malformed request: no argv, a NUL byte in an
	// argument, a variable name that is not a name, a relative directory.
	ErrInvalid = errors.New("invalid request")
	// ErrTooLarge marks a request beyond a limit (MaxArgs, MaxArgBytes,
	// MaxEnv, MaxStdin).
	ErrTooLarge = errors.New("size limit exceeded")
)

// Limits.
const (
	// DefaultMaxOutput bounds stdout and stderr, each, when
	// Options.MaxOutput is zero.
	DefaultMaxOutput = 1 << 20
	// MaxOutputLimit is the largest Options.MaxOutput New accepts.
	MaxOutputLimit = 64 << 20
	// MaxStdin bounds the bytes a request feeds to the program.
	MaxStdin = 1 << 20
	// MaxArgs bounds the number of arguments, argv[0] included.
	MaxArgs = 1024
	// MaxArgBytes bounds the arguments and the request's variables
	// together (names, values and one byte per string for its terminator).
	MaxArgBytes = 256 << 10
	// MaxEnv bounds the number of variables a request may pass.
	MaxEnv = 64
	// waitDelay bounds how long Run waits for the output pipes once the
	// program has exited or the call's context has ended (a descendant that
	// escaped the kill may hold them open).
	waitDelay = 500 * time.Millisecond
)

// Options configures a gate. Everything in it is bound when New returns and
// stays fixed for the gate's life.
type Options struct {
	// Module is the id of the module the gate serves; every decision and
	// violation names it.
	Module string
	// Programs are the module's allow entries as Resolve returned them at
	// install. argv[0] of a request must be one of their names.
	Programs []Program
	// Any is `subprocess: true`: any program on the operator's search path
	// may run. It needs Operator.GrantAny.
	Any bool
	// Env names the variables the manifest declares; a request may pass
	// only these. Names the station sets (PATH, HOME, LANG, TMPDIR) and
	// names that change how programs load or run (LD_*, PYTHON*,
	// GIT_SSH*, ...) cannot be declared.
	Env []string
	// WorkDirs are the module's writable mounts. A request's working
	// directory must be inside one of them; children may write only there
	// (where the platform can enforce it) and in a scratch directory the
	// gate creates for each call.
	WorkDirs []string
	// ReadDirs are the module's mount roots (read and write). Where the
	// platform can enforce it, children read files only beneath these, the
	// work dirs, their scratch directory and the system directories (see
	// docs/subprocess.md, "Confinement").
	ReadDirs []string
	// Operator holds the operator's settings.
	Operator Operator
	// Recorder receives every decision, allowed and denied; nil discards
	// them. The command name comes from sandbox.CommandFrom(ctx).
	Recorder sandbox.Recorder
	// MaxOutput bounds stdout and stderr, each; 0 means DefaultMaxOutput.
	MaxOutput int64
}

// Gate starts programs for one module. It is safe for concurrent use.
type Gate struct {
	module    string
	programs  map[string]Program
	order     []string // program names in manifest order
	any       bool
	env       map[string]bool
	envNames  []string
	workDirs  []string // resolved
	set       *settings
	known     *knownSet // for Any: what must not run under another name
	rec       sandbox.Recorder
	maxOutput int64
	conf      confinement
	refusal   string // non-empty: children cannot be confined here, and none starts
	cleanup   runtime.Cleanup
	closed    sync.Once

	// started, when set (by tests), is called with the child's pid right
	// after it started.
	started func(pid int)
}

// New binds o into a gate. It checks the stored programs against the
// operator's current settings (a program the operator no longer grants, or
// that now lies in an excluded tree, is refused) and finds out how children
// can be confined on this platform. If they cannot be cut off from the
// network, New fails unless Operator.AllowNetwork is set.
func New(o Options) (*Gate, error) {
	if o.Module == "" {
		return nil, errors.New("execgate: a module id is required")
	}
	fail := func(format string, args ...any) (*Gate, error) {
		return nil, fmt.Errorf("execgate: module %s: "+format, append([]any{o.Module}, args...)...)
	}
	if len(o.Programs) == 0 && !o.Any {
		return fail("no programs granted (a module without subprocess gets no gate)")
	}
	if o.Any && !o.Operator.GrantAny {
		return fail("subprocess: true needs the operator's grant: subprocess.grant_any: true in %s", o.Operator.configFile())
	}
	if len(o.Programs) > maxPrograms {
		return fail("%d programs exceed %d", len(o.Programs), maxPrograms)
	}
	var workDirs []string
	for _, d := range o.WorkDirs {
		if !filepath.IsAbs(d) || strings.IndexByte(d, 0) >= 0 {
			return fail("work dir %q: want an absolute path", d)
		}
		r, err := filepath.EvalSymlinks(filepath.Clean(d))
		if err != nil {
			return fail("work dir %s: %v", d, err)
		}
		if fi, err := os.Stat(r); err != nil || !fi.IsDir() {
			return fail("work dir %s is not a directory", d)
		}
		workDirs = appendUnique(workDirs, r)
	}
	// Work dirs are module-writable: nothing inside them may run, whether
	// or not the operator listed them.
	op := o.Operator
	op.Excluded = append(slices.Clone(op.Excluded), workDirs...)
	set, err := op.settings()
	if err != nil {
		return fail("subprocess settings: %v", err)
	}
	g := &Gate{
		module:    o.Module,
		programs:  map[string]Program{},
		any:       o.Any,
		env:       map[string]bool{},
		workDirs:  workDirs,
		set:       set,
		rec:       o.Recorder,
		maxOutput: o.MaxOutput,
	}
	if g.rec == nil {
		g.rec = sandbox.Discard
	}
	switch {
	case g.maxOutput == 0:
		g.maxOutput = DefaultMaxOutput
	case g.maxOutput < 0 || g.maxOutput > MaxOutputLimit:
		return fail("MaxOutput %d is outside 1..%d", g.maxOutput, MaxOutputLimit)
	}
	station := stationBinary()
	var programDirs []string
	for _, p := range o.Programs {
		if err := g.checkProgram(p, station); err != nil {
			return fail("program %q: %v", p.Name, err)
		}
		g.programs[p.Name] = p
		g.order = append(g.order, p.Name)
		programDirs = appendUnique(programDirs, filepath.Dir(p.Path))
	}
	for _, n := range o.Env {
		if err := CheckEnv(n); err != nil {
			return fail("env %v", err)
		}
		if g.env[n] {
			return fail("env %s: declared twice", n)
		}
		g.env[n] = true
		g.envNames = append(g.envNames, n)
	}
	if o.Any {
		g.known = set.knownPrograms()
	}
	var readDirs []string
	for _, d := range o.ReadDirs {
		if !filepath.IsAbs(d) || strings.IndexByte(d, 0) >= 0 {
			return fail("read dir %q: want an absolute path", d)
		}
		readDirs = appendUnique(readDirs, realish(filepath.Clean(d)))
	}
	g.conf = newConfinement(set, g.workDirs, slices.Concat(readDirs, g.workDirs), programDirs)
	if !g.conf.isolated() && !set.network {
		return fail("children cannot be cut off from the network on this platform (%s); the operator must allow them the host network explicitly (subprocess.allow_network: true)", g.conf.unavailable())
	}
	g.refusal = refusal(g.conf.platform, set.files)
	if err := g.conf.build(); err != nil {
		if g.refusal == "" {
			g.refusal = "cannot be started: its confinement could not be prepared (" + err.Error() + ")"
		}
	} else {
		// A gate nobody closes still gives back its descriptor and
		// scratch root once it is unreachable.
		g.cleanup = runtime.AddCleanup(g, func(c confinement) { c.release() }, g.conf)
	}
	return g, nil
}

// Close releases what New prepared for children: the Landlock ruleset and
// the scratch root. Calls in flight must have returned. It is idempotent.
func (g *Gate) Close() error {
	g.closed.Do(func() {
		g.cleanup.Stop()
		g.conf.release()
	})
	return nil
}

// refusal is why no child may start on platform p, or "": unconfined says
// whether the operator accepts children not confined to files.
func refusal(p platform, unconfined bool) string {
	if v, why := p.filesState(); v == 0 && !unconfined {
		return "cannot be confined to the module's files on this machine (" + why + "), so the station does not start it; " +
			"an operator who accepts that children can read and change every file the station's user can sets subprocess.allow_unconfined_files: true"
	}
	return ""
}

// Describe says in one line, for the operator approving a module, what a
// granted program gets on this machine under the settings o: whether it
// starts at all, and what confines it. The install prompt and `station
// module show` print it; Gate.Confinement is the detailed form for the log.
func Describe(o Operator) string {
	p := currentPlatform()
	const lead = "a program runs OUTSIDE WebAssembly"
	if !p.isolated() && !o.AllowNetwork {
		return lead + ", and on this machine it WILL NOT START: it cannot be cut off from the network here (" + p.unavailable() + "); the operator may allow the host network with subprocess.allow_network: true"
	}
	if r := refusal(p, o.AllowUnconfinedFiles); r != "" {
		return lead + ", and on this machine it WILL NOT START: it " + r
	}
	network := "has no network"
	if !p.isolated() {
		network = "HAS THE HOST'S NETWORK (no network namespaces here; subprocess.allow_network is set)"
	}
	if v, why := p.filesState(); v == 0 {
		return lead + " and on this machine its files are NOT CONFINED (" + why + "; subprocess.allow_unconfined_files is set): it may read and change any file you can, and " + network
	}
	return lead + ", confined on this machine by Landlock: it may read system directories (/usr, /etc, ...) and the module's own directories, " + network + ", and writes only in the module's writable directories"
}

// checkProgram re-checks a stored program against the current settings.
func (g *Gate) checkProgram(p Program, station string) error {
	if err := checkEntry(p.Name); err != nil {
		return err
	}
	if _, dup := g.programs[p.Name]; dup {
		return errors.New("listed twice")
	}
	if !filepath.IsAbs(p.Path) || filepath.Clean(p.Path) != p.Path || strings.IndexByte(p.Path, 0) >= 0 {
		return fmt.Errorf("path %q is not absolute and clean", p.Path)
	}
	if !validDigest(p.Digest) {
		return fmt.Errorf("digest %q is not sha256:<64 hex digits>", p.Digest)
	}
	if root, ok := g.set.inExcluded(p.Path, realish(p.Path)); ok {
		return fmt.Errorf("%s is inside the excluded tree %s", p.Path, root)
	}
	if g.set.grants[p.Name] {
		return nil
	}
	for _, n := range []string{filepath.Base(p.Name), filepath.Base(p.Path)} {
		if kind := programKind(n); kind != "" {
			return fmt.Errorf("%s is %s and the operator does not grant it (to grant it: %s)", n, kind, g.set.op.grantHint(p.Name))
		}
	}
	if station != "" && p.Path == station {
		return fmt.Errorf("is the station binary and the operator does not grant it (to grant it: %s)", g.set.op.grantHint(p.Name))
	}
	return nil
}

// stationBinary is the resolved path of the running executable, or "".
func stationBinary() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	if r, err := filepath.EvalSymlinks(exe); err == nil {
		return r
	}
	return exe
}

// String describes what the gate allows, for the station's log line
// "subprocess gate active — allow: git, pandoc".
func (g *Gate) String() string {
	var parts []string
	if len(g.order) > 0 {
		parts = append(parts, "allow: "+strings.Join(g.order, ", "))
	}
	if g.any {
		parts = append(parts, "any program on "+g.set.path()+" (operator grant)")
	}
	return strings.Join(parts, "; ")
}

// Isolated reports whether children run without network access (in a
// network namespace of their own, with nothing but a loopback interface
// that is down). It is false only when the platform cannot do that and the
// operator set AllowNetwork; the host should log it.
func (g *Gate) Isolated() bool { return g.conf.isolated() }

// Refusal is why no child of this gate starts on this platform (every Run
// is a recorded denial with this reason), or "".
func (g *Gate) Refusal() string { return g.refusal }

// FilesConfined reports whether children are confined to the module's
// files (Landlock). It is false only where the platform cannot do that and
// the operator set AllowUnconfinedFiles, or where Refusal is set.
func (g *Gate) FilesConfined() bool { v, _ := g.conf.filesState(); return v > 0 }

// Confinement describes, for the log, everything that confines children on
// this platform: namespaces, privileges and filesystem rules.
func (g *Gate) Confinement() string { return g.conf.String() }

// call is a request that passed every check, ready to run.
type call struct {
	name   string
	path   string
	digest string // "" in Any mode: resolved at run time, nothing pinned
	argv   []string
	env    map[string]string
	dir    string   // resolved working directory, "" for the scratch dir
	dirFD  *os.File // dir opened beneath its work dir, closed after start
	stdin  []byte
	target string
}

// Run runs one request under the gate and waits for it. ctx carries the
// call's deadline: when it ends, the program and everything it started are
// killed and Run returns an error wrapping ctx.Err().
//
// A request the policy refuses returns a *sandbox.Violation (capability
// sandbox.Subprocess): a program not in the allowlist, a variable that is
// not declared or may never be passed, a directory outside the module's
// work dirs, a program that changed since install. A malformed request wraps
// ErrInvalid; one over a limit is a *sandbox.LimitError (module, target,
// reason and limit) that wraps ErrTooLarge. A program that ran and exited
// non-zero is a success. Every decision is recorded.
func (g *Gate) Run(ctx context.Context, req *abi.ProcessRequest) (*abi.ProcessResponse, error) {
	c, err := g.check(ctx, req)
	if err != nil {
		return nil, err
	}
	if c.dirFD != nil {
		defer c.dirFD.Close()
	}
	if g.refusal != "" {
		return nil, g.deny(ctx, c.target, g.refusal)
	}
	g.rec.Record(sandbox.Decision{
		Time:       time.Now(),
		Module:     g.module,
		Command:    sandbox.CommandFrom(ctx),
		Trace:      sandbox.CallFrom(ctx).TraceName(),
		Capability: sandbox.Subprocess,
		Target:     sandbox.CallFrom(ctx).Scrub(c.target),
		Allowed:    true,
		Reason:     sandbox.CallFrom(ctx).Scrub(g.allowReason(c)),
	})
	return g.run(ctx, c)
}

func (g *Gate) allowReason(c *call) string {
	if c.digest == "" {
		return "subprocess: true (operator grant); found on " + g.set.path()
	}
	return "is in its subprocess allowlist (" + strings.Join(g.order, ", ") + ")"
}

// check validates req and decides it. Refusals are recorded here.
func (g *Gate) check(ctx context.Context, req *abi.ProcessRequest) (*call, error) {
	if err := checkShape(req); err != nil {
		what := "(no request)"
		switch {
		case req == nil:
		case len(req.Argv) == 0 || req.Argv[0] == "":
			what = "(no program)"
		default:
			what = req.Argv[0]
		}
		var over *sizeError
		if errors.As(err, &over) {
			le := sandbox.Exceed(g.module, sandbox.Subprocess, what, over.reason, over.limit, ErrTooLarge)
			le.Bytes = over.bytes // the station's own limits: no key raises them
			g.rec.Record(le.Decision(sandbox.CallFrom(ctx)))
			return nil, le
		}
		v := sandbox.Deny(g.module, sandbox.Subprocess, what, err.Error())
		g.rec.Record(v.Decision(sandbox.CallFrom(ctx)))
		return nil, err
	}
	name := req.Argv[0]
	c := &call{name: name, argv: req.Argv, env: req.Env, stdin: req.Stdin}
	if p, ok := g.programs[name]; ok {
		c.path, c.digest = p.Path, p.Digest
	} else if g.any {
		path, reason := g.findAny(name)
		if reason != "" {
			return nil, g.deny(ctx, name, reason)
		}
		c.path = path
	} else {
		return nil, g.deny(ctx, name, "is not in its subprocess allowlist ("+strings.Join(g.order, ", ")+")")
	}
	c.target = sandbox.Sanitize(fmt.Sprintf("%s (%s) argc=%d", name, c.path, len(req.Argv)))

	keys := make([]string, 0, len(req.Env))
	for k := range req.Env {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if why := envRefusal(k); why != "" {
			return nil, g.deny(ctx, name+": env "+k, why)
		}
		if !g.env[k] {
			return nil, g.deny(ctx, name+": env "+k, "is not declared in its subprocess env ("+listOrNone(g.envNames)+")")
		}
	}

	if req.Dir != "" {
		if err := g.openDir(ctx, c, req.Dir); err != nil {
			return nil, err
		}
	}

	if c.digest != "" {
		if reason := verify(c.path, c.digest); reason != "" {
			if c.dirFD != nil {
				c.dirFD.Close()
			}
			return nil, g.deny(ctx, name+" ("+c.path+")", reason)
		}
	}
	return c, nil
}

// sizeError is a request over one of the limits; check turns it into the
// *sandbox.LimitError that Run returns.
type sizeError struct {
	limit  int64
	reason string
	bytes  bool // limit counts bytes
}

func (e *sizeError) Error() string { return ErrTooLarge.Error() + ": " + e.reason }
func (e *sizeError) Unwrap() error { return ErrTooLarge }

func overLimit(limit int, format string, args ...any) error {
	return &sizeError{limit: int64(limit), reason: fmt.Sprintf(format, args...)}
}

// overBytes is overLimit for a limit of bytes.
func overBytes(limit int, format string, args ...any) error {
	return &sizeError{limit: int64(limit), reason: fmt.Sprintf(format, args...), bytes: true}
}

// checkShape refuses malformed and oversized requests.
func checkShape(req *abi.ProcessRequest) error {
	if req == nil {
		return fmt.Errorf("%w: no request", ErrInvalid)
	}
	if len(req.Argv) == 0 || req.Argv[0] == "" {
		return fmt.Errorf("%w: argv is empty", ErrInvalid)
	}
	if len(req.Argv) > MaxArgs {
		return overLimit(MaxArgs, "%d arguments exceed %d", len(req.Argv), MaxArgs)
	}
	if len(req.Env) > MaxEnv {
		return overLimit(MaxEnv, "%d variables exceed %d", len(req.Env), MaxEnv)
	}
	if len(req.Stdin) > MaxStdin {
		return overBytes(MaxStdin, "stdin of %d bytes exceeds %d", len(req.Stdin), MaxStdin)
	}
	size := 0
	for i, a := range req.Argv {
		size += len(a) + 1
		if strings.IndexByte(a, 0) >= 0 {
			return fmt.Errorf("%w: argument %d contains a NUL byte", ErrInvalid, i)
		}
	}
	for k, v := range req.Env {
		size += len(k) + len(v) + 2
		if !validEnvName(k) {
			return fmt.Errorf("%w: %q is not a variable name", ErrInvalid, sandbox.SanitizeLimit(k, 64))
		}
		if strings.IndexByte(v, 0) >= 0 {
			return fmt.Errorf("%w: variable %s contains a NUL byte", ErrInvalid, sandbox.SanitizeLimit(k, 64))
		}
	}
	if size > MaxArgBytes {
		return overBytes(MaxArgBytes, "arguments and variables of %d bytes exceed %d", size, MaxArgBytes)
	}
	if d := req.Dir; d != "" {
		if len(d) > maxPathLen || strings.IndexByte(d, 0) >= 0 || !filepath.IsAbs(d) || filepath.Clean(d) != d {
			return fmt.Errorf("%w: dir must be an absolute, clean path", ErrInvalid)
		}
	}
	return nil
}

// findAny resolves name on the search path for `subprocess: true`, with the
// same refusals as Resolve. It returns the path, or a denial reason.
func (g *Gate) findAny(name string) (string, string) {
	if !validName(name) {
		return "", "is not a bare program name; with subprocess: true argv[0] names a program on the search path (" + g.set.path() + ")"
	}
	found, real, err := g.set.find(name)
	if err != nil {
		return "", err.Error()
	}
	f, fi, err := openProgram(real)
	if err != nil {
		return "", "cannot be run: " + err.Error()
	}
	defer f.Close()
	digest := ""
	if g.known.sizeMatches(fi) {
		if digest, err = digestOf(f); err != nil {
			return "", "cannot be read: " + err.Error()
		}
	}
	if err := g.set.vet(name, found, real, fi, digest, g.known); err != nil {
		return "", err.Error()
	}
	return real, ""
}

// openDir checks that dir is inside a work dir and opens it beneath that
// work dir, so that the child starts in the directory that was checked even
// if a path component is swapped for a symlink in between.
func (g *Gate) openDir(ctx context.Context, c *call, dir string) error {
	target := c.name + ": dir " + dir
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		if !g.insideWorkDir(realish(dir)) {
			return g.deny(ctx, target, g.outsideReason())
		}
		err = fmt.Errorf("%w: dir %s: %v", ErrInvalid, sandbox.Sanitize(dir), cause(err))
		g.rec.Record(sandbox.Deny(g.module, sandbox.Subprocess, target, err.Error()).Decision(sandbox.CallFrom(ctx)))
		return err
	}
	for _, wd := range g.workDirs {
		if !within(real, wd) {
			continue
		}
		root, err := os.OpenRoot(wd)
		if err != nil {
			return fmt.Errorf("open work dir %s: %w", wd, err)
		}
		rel := "."
		if real != wd {
			rel = real[len(wd)+1:]
		}
		// O_DIRECTORY: a FIFO planted at the path fails instead of
		// blocking the open.
		f, err := root.OpenFile(rel, os.O_RDONLY|syscall.O_DIRECTORY, 0)
		root.Close()
		if err == nil {
			var fi os.FileInfo
			if fi, err = f.Stat(); err == nil && !fi.IsDir() {
				err = errors.New("not a directory")
			}
			if err != nil {
				f.Close()
			}
		}
		if err != nil {
			err = fmt.Errorf("%w: dir %s: %v", ErrInvalid, sandbox.Sanitize(dir), cause(err))
			g.rec.Record(sandbox.Deny(g.module, sandbox.Subprocess, target, err.Error()).Decision(sandbox.CallFrom(ctx)))
			return err
		}
		c.dir, c.dirFD = real, f
		return nil
	}
	return g.deny(ctx, target, g.outsideReason())
}

// cause drops the path an *fs.PathError repeats.
func cause(err error) error {
	if u := errors.Unwrap(err); u != nil {
		return u
	}
	return err
}

func listOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

func (g *Gate) insideWorkDir(p string) bool {
	for _, wd := range g.workDirs {
		if within(p, wd) {
			return true
		}
	}
	return false
}

func (g *Gate) outsideReason() string {
	if len(g.workDirs) == 0 {
		return "is not allowed: the module has no writable mounts, so programs run in a scratch directory"
	}
	return "is outside the module's work directories (" + strings.Join(g.workDirs, ", ") + ")"
}

// verify re-digests a pinned program and returns a denial reason if it is no
// longer the file approved at install.
func verify(path, want string) string {
	f, _, err := openProgram(path)
	if err != nil {
		return "can no longer be run as installed (" + err.Error() + "); reinstall the module to approve it again"
	}
	defer f.Close()
	got, err := digestOf(f)
	if err != nil {
		return "cannot be read to verify it: " + err.Error()
	}
	if got != want {
		return "changed since install (" + short(want) + " at install, " + short(got) + " now); reinstall the module to approve it again"
	}
	return ""
}

func short(d string) string {
	if len(d) > len("sha256:")+12 {
		return d[:len("sha256:")+12] + "…"
	}
	return d
}

// deny records a denial and returns it as a violation.
func (g *Gate) deny(ctx context.Context, target, reason string) *sandbox.Violation {
	v := sandbox.Deny(g.module, sandbox.Subprocess, target, reason)
	g.rec.Record(v.Decision(sandbox.CallFrom(ctx)))
	return v
}

// run starts the checked call and waits for it.
func (g *Gate) run(ctx context.Context, c *call) (*abi.ProcessResponse, error) {
	scratch, err := os.MkdirTemp(g.conf.scratchRoot, "call-")
	if err != nil {
		return nil, fmt.Errorf("run %s: scratch dir: %w", c.name, err)
	}
	defer os.RemoveAll(scratch)
	home := c.dir
	if home == "" {
		home = scratch
	}
	env := []string{"PATH=" + g.set.path(), "LANG=C.UTF-8", "HOME=" + home, "TMPDIR=" + scratch}
	for _, k := range g.envNames {
		if v, ok := c.env[k]; ok {
			env = append(env, k+"="+v)
		}
	}

	stdout := &capped{max: g.maxOutput}
	stderr := &capped{max: g.maxOutput}
	cmd := exec.CommandContext(ctx, c.path)
	cmd.Args = append([]string{c.name}, c.argv[1:]...)
	cmd.Env = env
	cmd.Dir = home
	if c.dirFD != nil {
		cmd.Dir = fdPath(c.dirFD, c.dir)
	}
	cmd.Stdin = bytes.NewReader(c.stdin)
	cmd.Stdout = stdout
	cmd.Stderr = stderr
	cmd.Cancel = func() error { return killGroup(cmd.Process.Pid) }
	cmd.WaitDelay = waitDelay

	done := make(chan error, 1)
	go g.spawn(cmd, done)
	err = <-done
	if cerr := ctx.Err(); cerr != nil {
		return nil, fmt.Errorf("run %s: %w", c.name, cerr)
	}
	var le *launchError
	if errors.As(err, &le) {
		if le.Stage == "exec" {
			return nil, fmt.Errorf("run %s: %w", c.name, err)
		}
		// Fail closed: the program did not start.
		return nil, g.deny(ctx, c.target, "was not started: it "+le.Error())
	}
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) && !errors.Is(err, exec.ErrWaitDelay) {
		return nil, fmt.Errorf("run %s: %w", c.name, err)
	}
	return &abi.ProcessResponse{
		ExitCode:      cmd.ProcessState.ExitCode(),
		Stdout:        stdout.buf,
		Stderr:        stderr.buf,
		Truncated:     stdout.dropped > 0 || stderr.dropped > 0,
		Limit:         g.maxOutput,
		StdoutDropped: stdout.dropped,
		StderrDropped: stderr.dropped,
	}, nil
}

// spawn starts cmd through the launcher (confinement.start), waits for the
// child and kills its process group before reaping it. It runs locked to
// its OS thread from the start until the child is reaped, as Pdeathsig ties
// the child to the thread that forked it; nothing changes that thread, so
// it is unlocked afterwards.
func (g *Gate) spawn(cmd *exec.Cmd, done chan<- error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := g.conf.start(cmd); err != nil {
		done <- err
		return
	}
	pid := cmd.Process.Pid
	if g.started != nil {
		g.started(pid)
	}
	// Wait for the exit without reaping, so the process group id cannot
	// be reused before the kill; then kill what is left of the group.
	if waitExited(pid) {
		killGroup(pid)
		done <- cmd.Wait()
		return
	}
	err := cmd.Wait()
	killGroup(pid)
	done <- err
}

// killGroup sends SIGKILL to the process group led by pid.
func killGroup(pid int) error {
	err := syscall.Kill(-pid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		return os.ErrProcessDone
	}
	return err
}

// capped keeps the first max bytes written to it and counts the rest, which
// it discards, in dropped; it never blocks the writer. A response reports
// the count: output is never cut silently.
type capped struct {
	buf     []byte
	max     int64
	dropped int64
}

func (c *capped) Write(p []byte) (int, error) {
	room := c.max - int64(len(c.buf))
	if int64(len(p)) > room {
		c.buf = append(c.buf, p[:room]...)
		c.dropped += int64(len(p)) - room
		return len(p), nil
	}
	c.buf = append(c.buf, p...)
	return len(p), nil
}

// fdPath names an open directory for the child's chdir: /proc/self/fd/N
// where /proc is available (the child inherits the descriptor until exec),
// else the checked path.
func fdPath(f *os.File, fallback string) string {
	p := "/proc/self/fd/" + strconv.Itoa(int(f.Fd()))
	if _, err := os.Stat(p); err != nil {
		return fallback
	}
	return p
}
