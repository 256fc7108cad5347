package execgate

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// platform is what this kernel lets the gate do, found out once per process
// (see docs/subprocess.md, "Confinement").
type platform struct {
	ns          nsMode
	nsErr       string // why there are no namespaces
	landlock    int    // Landlock ABI version, 0 if unavailable
	landlockErr string // why Landlock is unusable although the kernel has it
}

// nsMode is how children get their own namespaces.
type nsMode struct {
	flags    uintptr // clone flags; 0 means no namespaces
	userns   bool    // in a user namespace mapping our uid and gid to themselves
	dropCaps bool    // root: no user namespace, every capability dropped instead
}

// currentPlatform probes once; tests replace it to simulate other platforms.
var currentPlatform = sync.OnceValue(detectPlatform)

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
	if v := landlockABI(); v > 0 {
		if err := probe(platform{ns: p.ns, landlock: v}); err != nil {
			p.landlockErr = fmt.Sprintf("Landlock ABI %d: %v", v, err)
		} else {
			p.landlock = v
		}
	}
	return p
}

// probe starts a child the way Run would, on a thread of its own that is
// discarded afterwards, with a program that cannot exist: ENOENT from exec
// means the clone, the id maps, the privilege drop and the Landlock rules
// all worked.
func probe(p platform) error {
	c := confinement{platform: p}
	rules, err := c.prepare(os.TempDir())
	if err != nil {
		return err
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with this goroutine
		if err := c.apply(rules); err != nil {
			errc <- err
			return
		}
		_, err := syscall.ForkExec("/proc/self/execgate-probe-does-not-exist", []string{"probe"},
			&syscall.ProcAttr{Sys: c.sysProcAttr()})
		if errors.Is(err, syscall.ENOENT) {
			err = nil
		} else if err == nil {
			err = errors.New("the probe program exists")
		}
		errc <- err
	}()
	return <-errc
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
	c := confinement{platform: currentPlatform(), workDirs: workDirs}
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
	for _, r := range slices.Concat(systemRoots, readableRoots, set.searchReal, programDirs, readDirs) {
		if _, err := os.Stat(r); err == nil {
			c.readRoots = appendUnique(c.readRoots, cover(realish(r), readAvoid, 0)...)
		}
	}
	return c
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

func (c confinement) isolated() bool { return c.ns.flags&unix.CLONE_NEWNET != 0 }

func (c confinement) unavailable() string {
	if c.nsErr == "" {
		return "no namespaces"
	}
	return c.nsErr
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
	if c.landlock > 0 {
		parts = append(parts, fmt.Sprintf("files: Landlock ABI %d, reads only in system directories and the module's own trees, writes only in work dirs and a scratch dir, programs only from system directories", c.landlock))
	} else if c.landlockErr != "" {
		parts = append(parts, "files: not confined ("+c.landlockErr+")")
	} else {
		parts = append(parts, "files: not confined (no Landlock)")
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
// devices; read beneath the read roots, the work dirs and scratch; and,
// with a user namespace, write to /proc, where Go writes the child's id maps
// from this thread.
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
	if c.ns.userns {
		if err := add("/proc", unix.LANDLOCK_ACCESS_FS_WRITE_FILE, true); err != nil {
			return fail(err)
		}
	}
	return r, nil
}

// apply confines the calling thread, which must be locked and must never be
// unlocked: children it starts inherit no_new_privs, the cleared capability
// sets, the Landlock domain and the seccomp filter (seccomp_linux.go); Go's
// runtime never clones new threads from a locked thread, so nothing else
// inherits them. It closes r.
func (c confinement) apply(r *ruleset) error {
	if r != nil {
		defer unix.Close(r.fd)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("clear ambient capabilities: %w", err)
	}
	if c.ns.dropCaps {
		for capability := uintptr(0); ; capability++ {
			err := unix.Prctl(unix.PR_CAPBSET_DROP, capability, 0, 0, 0)
			if errors.Is(err, unix.EINVAL) {
				break // past the last capability
			}
			if err != nil {
				return fmt.Errorf("drop capability %d from the bounding set: %w", capability, err)
			}
		}
		hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
		var data [2]unix.CapUserData
		if err := unix.Capget(&hdr, &data[0]); err != nil {
			return fmt.Errorf("capget: %w", err)
		}
		data[0].Inheritable, data[1].Inheritable = 0, 0
		if err := unix.Capset(&hdr, &data[0]); err != nil {
			return fmt.Errorf("capset: %w", err)
		}
	}
	if r != nil {
		if _, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(r.fd), 0, 0); errno != 0 {
			return fmt.Errorf("landlock_restrict_self: %w", errno)
		}
	}
	return applySeccomp()
}

// lockThread locks the calling goroutine to its thread for good.
func lockThread() { runtime.LockOSThread() }

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
