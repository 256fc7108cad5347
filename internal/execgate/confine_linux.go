package execgate

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/station-dev/station/internal/execgate/launch"
)

// platform is what this kernel lets the gate do, found out once per process
// (see docs/subprocess.md, "Confinement").
type platform struct {
	ns       nsMode
	nsErr    string // why there are no namespaces
	landlock int    // Landlock ABI version children get, 0 if none

	kernelLandlock int    // the kernel's Landlock ABI version, 0 if it has none
	landlockErr    string // why Landlock cannot be applied although the kernel has it
}

// nsMode is how children get their own namespaces.
type nsMode struct {
	flags    uintptr // clone flags; 0 means no namespaces
	userns   bool    // in a user namespace mapping our uid and gid to themselves
	dropCaps bool    // root: no user namespace, every capability dropped instead
}

// currentPlatform probes once; tests replace it to simulate other platforms.
var currentPlatform = sync.OnceValue(detectPlatform)

// detectPlatform finds out which namespaces children can get and whether
// Landlock can be enforced, by starting probe children exactly as Run
// starts a program (see probe).
func detectPlatform() platform {
	var p platform
	const ns = unix.CLONE_NEWNET | unix.CLONE_NEWPID | unix.CLONE_NEWIPC
	modes := []nsMode{{flags: ns | unix.CLONE_NEWUSER, userns: true}}
	if os.Geteuid() == 0 {
		modes = append([]nsMode{{flags: ns, dropCaps: true}}, modes...)
	}
	var errs []string
	for _, m := range modes {
		err := probe(platform{ns: m})
		if err == nil {
			p.ns = m
			break
		}
		what := "user, network, pid and ipc namespaces"
		if m.dropCaps {
			what = "network, pid and ipc namespaces as root"
		}
		errs = append(errs, what+": "+err.Error())
	}
	if p.ns.flags == 0 {
		p.nsErr = strings.Join(errs, "; ")
	}
	p.kernelLandlock = landlockABI()
	if p.kernelLandlock > 0 {
		if err := probe(platform{ns: p.ns, landlock: p.kernelLandlock}); err != nil {
			p.landlockErr = fmt.Sprintf("Landlock ABI %d is enabled but cannot be applied: %v", p.kernelLandlock, err)
		} else {
			p.landlock = p.kernelLandlock
		}
	}
	return p
}

// probe starts a child through the launcher, with the rules a call of a
// typical gate gets (built by newConfinement, as for every gate: the system
// roots, a work dir, a read dir, a scratch dir), and a program that cannot
// exist: the launcher's report "exec ...: no such file or directory" means
// the clone, the id maps, the privilege drop, the Landlock ruleset and the
// seccomp filter all worked.
func probe(p platform) error {
	tmp, err := os.MkdirTemp("", "station-exec-probe-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	dirs := make([]string, 3)
	for i, name := range []string{"work", "read", "scratch"} {
		dirs[i] = filepath.Join(realish(tmp), name)
		if err := os.Mkdir(dirs[i], 0o700); err != nil {
			return err
		}
	}
	set, err := Operator{Excluded: []string{dirs[0]}}.settings()
	if err != nil {
		return err
	}
	c := confinementFor(p, set, dirs[:1], dirs[:2], nil)
	c.scratchRoot = dirs[2]
	if c.rules, err = c.prepare(c.scratchRoot); err != nil {
		return err
	}
	defer c.release()
	const missing = "/proc/self/execgate-probe-does-not-exist"
	cmd := exec.Command(missing)
	cmd.Dir = dirs[2]
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		err := c.start(cmd)
		if err == nil {
			cmd.Process.Kill()
			cmd.Wait()
			err = errors.New("the probe program exists")
		}
		errc <- err
	}()
	err = <-errc
	var le *launchError
	if errors.As(err, &le) && le.Stage == "exec" && le.Errno == syscall.ENOENT {
		return nil
	}
	return err
}

// landlockABI returns the kernel's Landlock ABI version, or 0.
func landlockABI() int {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		return 0
	}
	return int(v)
}

// confinement is how a gate confines its children.
type confinement struct {
	platform
	execRoots []string // where children may execute files (Landlock)
	readRoots []string // where children may read files and list directories (Landlock)
	workDirs  []string // where children may write, with the call's scratch dir

	// scratchRoot holds every call's scratch directory; children may write
	// beneath it. rules is the Landlock ruleset, built once (build) with it
	// and enforced by every child's launcher; nil without Landlock.
	scratchRoot string
	rules       *ruleset

	breakRules bool // tests: hand the launcher /dev/null as its ruleset
}

// systemRoots are the trees children may execute programs from, besides
// the search path and the granted programs' directories.
var systemRoots = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt", "/nix/store", "/gnu/store", "/snap"}

// readableRoots are the trees, besides the system roots, that children may
// read: configuration programs need (/etc: the loader cache, locale, name
// service, CA certificates), the harmless devices (not all of /dev:
// /dev/shm holds other processes' shared memory) and kernel views (/proc,
// /sys). Landlock keeps /proc from being a way into the station: a
// sandboxed process may not ptrace, so neither read the memory nor the
// environment of, any process outside its domain.
var readableRoots = []string{"/etc", "/proc", "/sys",
	"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"}

func newConfinement(set *settings, workDirs, readDirs, programDirs []string) confinement {
	return confinementFor(currentPlatform(), set, workDirs, readDirs, programDirs)
}

// confinementFor is newConfinement on platform p: the one constructor of
// every gate's rules and of the probe's.
func confinementFor(p platform, set *settings, workDirs, readDirs, programDirs []string) confinement {
	c := confinement{platform: p, workDirs: workDirs}
	if c.landlock == 0 {
		return c
	}
	avoid := appendUnique(slices.Clone(set.excluded), workDirs...)
	var roots []string
	for _, r := range slices.Concat(systemRoots, set.searchReal, programDirs) {
		if _, err := os.Stat(r); err == nil {
			roots = appendUnique(roots, realish(r))
		}
	}
	for _, r := range roots {
		c.execRoots = appendUnique(c.execRoots, cover(r, avoid, 0)...)
	}
	// Reads: the system and readable roots, the search path, the granted
	// programs' directories and the module's own mount roots, minus every
	// excluded tree (the station home, other modules' writable trees) that
	// is not one of this module's own.
	var readAvoid []string
	for _, e := range set.excluded {
		if !slices.Contains(readDirs, e) {
			readAvoid = append(readAvoid, e)
		}
	}
	if os.Geteuid() == 0 {
		// A child of a root station is uid 0 without capabilities: it
		// still owns every root-owned file. What only root may read in
		// /etc (shadow, private keys, services' credentials) stays out of
		// reach, as it is for a normal user's children.
		readAvoid = append(readAvoid, rootOnly("/etc")...)
	}
	for _, r := range slices.Concat(systemRoots, readableRoots, set.searchReal, programDirs, readDirs) {
		if _, err := os.Stat(r); err == nil {
			c.readRoots = appendUnique(c.readRoots, cover(realish(r), readAvoid, 0)...)
		}
	}
	return c
}

// rootOnly lists what beneath root a user other than its owner could not
// read: files without read permission for others, directories without read
// and search permission for others (their contents are not listed).
// Symbolic links are judged by where they lead, through cover.
func rootOnly(root string) []string {
	var out []string
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			if d != nil && d.IsDir() && p != root {
				out = append(out, p) // unreadable: keep it out
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type()&os.ModeSymlink != 0 {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		need := os.FileMode(0o004)
		if d.IsDir() {
			need = 0o005
		}
		if fi.Mode().Perm()&need != need {
			out = append(out, p)
			if d.IsDir() {
				return filepath.SkipDir
			}
		}
		return nil
	})
	return out
}

// cover returns paths whose union is the tree root minus the trees in avoid:
// root itself when nothing to avoid lies inside it, else its entries,
// recursively. Symlinked entries are followed (a Landlock rule applies to
// what the path resolves to) and checked in resolved form.
func cover(root string, avoid []string, depth int) []string {
	inner := false
	for _, a := range avoid {
		if within(root, a) {
			return nil
		}
		if within(a, root) {
			inner = true
		}
	}
	if !inner {
		return []string{root}
	}
	if depth > 8 {
		return nil
	}
	ents, err := os.ReadDir(root)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		p := filepath.Join(root, e.Name())
		if r, err := filepath.EvalSymlinks(p); err == nil {
			out = append(out, cover(r, avoid, depth+1)...)
		}
	}
	return out
}

// filesState reports the Landlock ABI children get, or 0 and why none.
func (p platform) filesState() (int, string) {
	switch {
	case p.landlock > 0:
		return p.landlock, ""
	case p.landlockErr != "":
		return 0, p.landlockErr
	default:
		return 0, "the kernel has no Landlock (Linux 5.13 or later with the landlock LSM enabled)"
	}
}

func (p platform) isolated() bool { return p.ns.flags&unix.CLONE_NEWNET != 0 }

func (p platform) unavailable() string {
	if p.nsErr == "" {
		return "no namespaces"
	}
	return p.nsErr
}

// String describes the confinement for the station's log.
func (c confinement) String() string {
	var parts []string
	switch {
	case c.ns.flags == 0:
		parts = append(parts, "network: the host's (operator allowed it; no namespaces here: "+c.unavailable()+")",
			"processes: own session and process group, killed with the call")
	default:
		parts = append(parts, "network: none (own network namespace)", "processes: own pid namespace, killed with the call")
	}
	switch {
	case c.ns.dropCaps:
		parts = append(parts, "privileges: no_new_privs, no capabilities")
	case c.ns.userns:
		parts = append(parts, "privileges: no_new_privs, own user namespace")
	default:
		parts = append(parts, "privileges: no_new_privs")
	}
	if v, why := c.filesState(); v > 0 {
		parts = append(parts, fmt.Sprintf("files: Landlock ABI %d, reads only in system directories and the module's own trees, writes only in work dirs and a scratch dir, programs only from system directories", v))
	} else {
		parts = append(parts, "files: NOT confined ("+why+")")
	}
	parts = append(parts, "metadata: no chmod/chown/utimes (seccomp)")
	return strings.Join(parts, "; ")
}

func (c confinement) sysProcAttr() *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{
		Setsid:     true, // a new session: a new process group, and no controlling terminal
		Pdeathsig:  syscall.SIGKILL,
		Cloneflags: c.ns.flags,
	}
	if c.ns.userns {
		uid, gid := os.Getuid(), os.Getgid()
		a.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
		a.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
	}
	return a
}

// ruleset is a Landlock ruleset ready to be enforced.
type ruleset struct{ fd int }

// Landlock access rights the gate handles (by ABI version) and grants.
const (
	llExec  = unix.LANDLOCK_ACCESS_FS_EXECUTE
	llWrite = unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_REMOVE_DIR |
		unix.LANDLOCK_ACCESS_FS_REMOVE_FILE | unix.LANDLOCK_ACCESS_FS_MAKE_DIR |
		unix.LANDLOCK_ACCESS_FS_MAKE_REG | unix.LANDLOCK_ACCESS_FS_MAKE_SYM |
		unix.LANDLOCK_ACCESS_FS_MAKE_FIFO | unix.LANDLOCK_ACCESS_FS_MAKE_SOCK
	llDevices = unix.LANDLOCK_ACCESS_FS_MAKE_CHAR | unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK
	llRead    = unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR
	llFile    = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE |
		unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_TRUNCATE | unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
)

// rulesetAttr is struct landlock_ruleset_attr up to ABI 6.
type rulesetAttr struct {
	fs, net, scoped uint64
}

// prepare builds the Landlock ruleset for one call: execute beneath the
// exec roots; write beneath the work dirs and scratch; write to the null
// devices; read beneath the read roots, the work dirs and scratch. Nothing
// else: the station's thread that writes a child's id maps is not confined
// (the launcher confines the child), so no rule serves the station.
func (c confinement) prepare(scratch string) (*ruleset, error) {
	if c.landlock == 0 {
		return nil, nil
	}
	write := uint64(llWrite)
	handled := uint64(llExec | llWrite | llDevices | llRead)
	size := unsafe.Sizeof(uint64(0))
	attr := rulesetAttr{}
	if c.landlock >= 2 {
		write |= unix.LANDLOCK_ACCESS_FS_REFER
		handled |= unix.LANDLOCK_ACCESS_FS_REFER
	}
	if c.landlock >= 3 {
		write |= unix.LANDLOCK_ACCESS_FS_TRUNCATE
		handled |= unix.LANDLOCK_ACCESS_FS_TRUNCATE
	}
	if c.landlock >= 6 {
		attr.scoped = unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | unix.LANDLOCK_SCOPE_SIGNAL
		size = unsafe.Sizeof(attr)
	}
	attr.fs = handled
	fd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), size, 0)
	if errno != 0 {
		return nil, fmt.Errorf("landlock_create_ruleset: %w", errno)
	}
	r := &ruleset{fd: int(fd)}
	add := func(path string, access uint64, required bool) error {
		pfd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			if !required && errors.Is(err, unix.ENOENT) {
				return nil
			}
			return fmt.Errorf("landlock rule %s: %w", path, err)
		}
		defer unix.Close(pfd)
		var st unix.Stat_t
		if err := unix.Fstat(pfd, &st); err != nil {
			return fmt.Errorf("landlock rule %s: %w", path, err)
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			access &= llFile
		}
		if access == 0 {
			return nil
		}
		pb := unix.LandlockPathBeneathAttr{Allowed_access: access, Parent_fd: int32(pfd)}
		_, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(r.fd), unix.LANDLOCK_RULE_PATH_BENEATH, uintptr(unsafe.Pointer(&pb)), 0, 0, 0)
		if errno != 0 {
			return fmt.Errorf("landlock rule %s: %w", path, errno)
		}
		return nil
	}
	fail := func(err error) (*ruleset, error) {
		unix.Close(r.fd)
		return nil, err
	}
	for _, p := range c.execRoots {
		if err := add(p, llExec, false); err != nil {
			return fail(err)
		}
	}
	for _, p := range c.readRoots {
		if err := add(p, llRead, false); err != nil {
			return fail(err)
		}
	}
	for _, p := range append(slices.Clone(c.workDirs), scratch) {
		if err := add(p, write|llRead, true); err != nil {
			return fail(err)
		}
	}
	for _, p := range []string{"/dev/null", "/dev/zero", "/dev/full"} {
		if err := add(p, write&(unix.LANDLOCK_ACCESS_FS_WRITE_FILE|unix.LANDLOCK_ACCESS_FS_TRUNCATE), false); err != nil {
			return fail(err)
		}
	}
	return r, nil
}

// build makes the gate's scratch root and, with Landlock, its ruleset:
// built once, with every path opened and checked here, and enforced by each
// child's launcher. release undoes it.
func (c *confinement) build() error {
	root, err := os.MkdirTemp("", "station-exec-")
	if err != nil {
		return fmt.Errorf("scratch root: %w", err)
	}
	c.scratchRoot = root
	if c.rules, err = c.prepare(root); err != nil {
		os.RemoveAll(root)
		c.scratchRoot = ""
		return err
	}
	return nil
}

// release closes the ruleset and removes the scratch root.
func (c *confinement) release() {
	if c.rules != nil {
		unix.Close(c.rules.fd)
	}
	if c.scratchRoot != "" {
		os.RemoveAll(c.scratchRoot)
	}
}

// start starts cmd's program (cmd.Path, cmd.Args, cmd.Env) confined by c,
// whose ruleset covers the call's scratch directory: it execs the launcher
// (package launch) in the child's namespaces, which confines itself and
// then execs the program. The calling goroutine must be locked to its
// thread until the child is reaped, because Pdeathsig is tied to the thread
// that forked. start returns once the program runs, or with the launcher's
// *launchError — then nothing ran unconfined and the launcher was reaped.
func (c confinement) start(cmd *exec.Cmd) error {
	filter, err := seccompProgram()
	if err != nil {
		return &launchError{Stage: "rules", Message: err.Error()}
	}
	var rules *os.File // the launcher's own descriptor of the gate's ruleset
	if c.rules != nil {
		fd, err := unix.FcntlInt(uintptr(c.rules.fd), unix.F_DUPFD_CLOEXEC, 0)
		if c.breakRules && err == nil {
			unix.Close(fd)
			fd, err = unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		}
		if err != nil {
			return &launchError{Stage: "rules", Message: "ruleset: " + err.Error()}
		}
		rules = os.NewFile(uintptr(fd), "landlock-ruleset")
	}
	var flags []string
	if rules != nil {
		flags = append(flags, "landlock")
	}
	if c.ns.dropCaps || (c.ns.userns && os.Geteuid() == 0) {
		flags = append(flags, "caps")
	}
	extra, report, err := launcherFiles(launch.Encode(filter, flags, cmd.Path, cmd.Env, cmd.Args), rules)
	if err != nil {
		return err
	}
	cmd.Path = launcherPath()
	cmd.Args = []string{"station-launch"}
	// GOGC=off: the launcher allocates little and lives a millisecond; a
	// collection would only slow its start.
	cmd.Env = []string{launch.Env + "=1", "GOGC=off"}
	cmd.ExtraFiles = extra
	cmd.SysProcAttr = c.sysProcAttr()
	err = cmd.Start()
	for _, f := range extra {
		f.Close()
	}
	if err != nil {
		report.Close()
		return err
	}
	err = readReport(report)
	report.Close()
	if err != nil {
		cmd.Wait()
		return err
	}
	return nil
}

// waitExited blocks until process pid has exited, without reaping it. It
// reports whether it could.
func waitExited(pid int) bool {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			return err == nil
		}
	}
}

func (c confinement) landlockABI() int { return c.landlock }
func (c confinement) dropsCaps() bool  { return c.ns.dropCaps }
