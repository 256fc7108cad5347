package fsgate

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"
	"time"
	"unsafe"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/sys"
	"golang.org/x/sys/unix"

	"github.com/station-dev/station/internal/sandbox"
)

// openRoot is a mount root directory, opened once per gate and shared by
// the file systems of all the module's instances.
type openRoot struct {
	path string
	f    *os.File        // an O_PATH descriptor of the directory
	raw  syscall.RawConn // holds the descriptor open while an operation uses it
}

func (r *openRoot) close() error { return r.f.Close() }

// identify returns the device and inode of p (following symbolic links) and
// whether it is a directory.
func identify(p string) (dev, ino uint64, isDir bool, err error) {
	var st unix.Stat_t
	if err := unix.Stat(p, &st); err != nil {
		return 0, 0, false, err
	}
	return uint64(st.Dev), st.Ino, st.Mode&unix.S_IFMT == unix.S_IFDIR, nil // Dev is narrower on some platforms
}

// FS returns the file system to link into one wazero instance at the
// guest's "/" (sysfs.FSConfig.WithSysFSMount(fsys, "/")), bound to h: the
// guest's view of the host, in which every path means the host path of the
// same name. The first call opens the mount roots, checking that each is
// still the directory New checked; later calls share them. A module with no
// globs gets nil: no file system at all.
func (g *Gate) FS(h Hooks) (experimentalsys.FS, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil, fmt.Errorf("fsgate: module %s: the gate is closed", g.module)
	}
	if len(g.roots) == 0 {
		return nil, nil
	}
	if g.opened == nil {
		var opened []*openRoot
		for _, r := range g.roots {
			or, err := openRootDir(r)
			if err != nil {
				for _, o := range opened {
					o.close()
				}
				return nil, fmt.Errorf("fsgate: module %s: %w", g.module, err)
			}
			opened = append(opened, or)
		}
		g.opened = opened
	}
	inst := &instanceState{}
	r := &rootFS{g: g, hooks: h, inst: inst, mounts: make([]*mountFS, len(g.opened))}
	for i, o := range g.opened {
		r.mounts[i] = &mountFS{g: g, root: o, hooks: h, inst: inst}
	}
	return r, nil
}

func openRootDir(r root) (*openRoot, error) {
	fd, err := unix.Open(r.path, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open mount root %s: %w", r.path, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("open mount root %s: %w", r.path, err)
	}
	if uint64(st.Dev) != r.dev || st.Ino != r.ino {
		unix.Close(fd)
		return nil, fmt.Errorf("open mount root %s: it was replaced after the gate checked it", r.path)
	}
	f := os.NewFile(uintptr(fd), r.path)
	raw, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("open mount root %s: %w", r.path, err)
	}
	return &openRoot{path: r.path, f: f, raw: raw}, nil
}

// mountFS is one mount of one instance: it decides and performs the
// operations that the instance's root view (rootFS) finds inside the mount
// root, on paths relative to that root.
type mountFS struct {
	g     *Gate
	root  *openRoot
	hooks Hooks
	inst  *instanceState // shared by the instance's mounts
}

// host returns the host path of a clean relative path.
func (m *mountFS) host(rel string) string { return hostPath(m.root.path, rel) }

// deny records a denial, reports it to the instance and returns e.
func (m *mountFS) deny(target, reason string, e errno) errno {
	return m.g.deny(m.hooks, target, reason, e)
}

// allow records an allowed change.
func (m *mountFS) allow(target, reason string) { m.g.allow(m.hooks, target, reason) }

// deny records a denial for the instance with hooks h, reports it to the
// instance and returns e.
func (g *Gate) deny(h Hooks, target, reason string, e errno) errno {
	v := sandbox.Deny(g.module, sandbox.Filesystem, target, reason)
	g.rec.Record(v.Decision(h.call()))
	if h.Denied != nil {
		h.Denied(v)
	}
	return e
}

// allow records an allowed change for the instance with hooks h.
func (g *Gate) allow(h Hooks, target, reason string) {
	call := h.call()
	g.rec.Record(sandbox.Decision{
		Time:       time.Now(),
		Module:     g.module,
		Command:    call.CommandName(),
		Trace:      call.TraceName(),
		Capability: sandbox.Filesystem,
		Target:     call.Scrub(sandbox.Sanitize(target)),
		Allowed:    true,
		Reason:     call.Scrub(reason),
	})
}

func (h Hooks) call() *sandbox.Call {
	if h.Call == nil {
		return nil
	}
	return h.Call()
}

// withRoot runs fn with the root's descriptor, which stays open meanwhile.
func (m *mountFS) withRoot(fn func(rootfd int) errno) errno {
	e := experimentalsys.EBADF
	if err := m.root.raw.Control(func(fd uintptr) { e = fn(int(fd)) }); err != nil {
		return experimentalsys.EBADF
	}
	return e
}

// slashed returns name with the trailing slash the guest gave, so that the
// system call applies its own rule for "name/" (it must be a directory)
// exactly. Only calls that never follow a link at their last element get
// it: mkdirat, unlinkat, renameat, symlinkat, and linkat's new name.
func slashed(name string, mustDir bool) string {
	if mustDir && name != "." {
		return name + "/"
	}
	return name
}

// checker decides one operation on one path. side names the end of a
// rename or link ("source", "destination") and target overrides the
// decision's target (rename and link name both ends).
type checker struct {
	m      *mountFS
	k      kind
	orig   string // the path the guest named, relative to the mount
	side   string
	target string

	glob    string // set by check: the glob that allowed it
	dirOnly bool   // set by check: kindList allowed only as a directory
}

// check decides on rel, the path the gate resolved and will touch next.
func (c *checker) check(rel string) errno {
	pol, abs := c.m.g.pol, c.m.host(rel)
	c.glob, c.dirOnly = "", false
	switch c.k {
	case kindWrite:
		if g, ok := pol.writable(abs); ok {
			c.glob = g
			return 0
		}
	case kindSee, kindList, kindRead:
		if g, ok := pol.readable(abs); ok {
			c.glob = g
			return 0
		}
		if c.k != kindRead && pol.visible(abs) {
			c.dirOnly = c.k == kindList
			return 0
		}
	}
	return c.refuse(rel, pol.notIn(c.k))
}

// refuse records a denial of rel for reason.
func (c *checker) refuse(rel, reason string) errno {
	target := c.target
	if target == "" {
		target = c.m.host(rel)
	}
	if c.side != "" {
		reason = c.side + " " + reason
		if rel != c.orig {
			reason = c.side + " " + c.m.host(rel) + " " + strings.TrimPrefix(reason, c.side+" ")
		}
	} else if rel != c.orig {
		reason += " (resolved from " + sandbox.SanitizeLimit(c.m.host(c.orig), 128) + ")"
	}
	return c.m.deny(target, reason, c.k.denied())
}

// via refuses a path through a symbolic link that leaves the mount.
func (c *checker) via(l *link) errno {
	reason := "is a symlink whose target leaves the mount"
	if strings.HasPrefix(l.target, "/") {
		reason = "is a symlink with an absolute target"
	}
	target := c.target
	if target == "" {
		target = c.m.host(l.path())
	} else {
		reason = c.side + " " + sandbox.SanitizeLimit(c.m.host(l.path()), 128) + " " + reason
	}
	return c.m.deny(target, reason, c.k.denied())
}

// resolve decides on rel and opens the directory that holds its last
// element, following symbolic links on the way (never the last element):
// each link's target replaces the path, which is decided again before
// anything on it is touched. hops counts the links followed.
func (c *checker) resolve(rootfd int, rel string, hops *int) (at, errno) {
	for {
		if e := c.check(rel); e != 0 {
			return at{}, e
		}
		raced("resolve", rel)
		a, l, e := parent(rootfd, rel)
		if e != 0 {
			return at{}, e
		}
		if l == nil {
			return a, 0
		}
		if *hops++; *hops > maxHops {
			return at{}, experimentalsys.ELOOP
		}
		next, ok := l.follow()
		if !ok {
			return at{}, c.via(l)
		}
		rel = next
	}
}

// run resolves rel and runs op at its last element. If op reports that the
// last element is a symbolic link to follow, run follows it like resolve.
func (c *checker) run(rootfd int, rel string, op func(a *at) (*link, errno)) errno {
	hops := 0
	for {
		a, e := c.resolve(rootfd, rel, &hops)
		if e != 0 {
			return e
		}
		raced("use", a.rel)
		l, e := op(&a)
		a.close()
		if l == nil || e != 0 {
			return e
		}
		if hops++; hops > maxHops {
			return experimentalsys.ELOOP
		}
		next, ok := l.follow()
		if !ok {
			return c.via(l)
		}
		rel = next
	}
}

// testHookRace, when a test sets it, runs between the gate's decision on
// a path and the system call that uses it, so that the test can play an
// attacker who swaps entries at the worst moment.
// stage is "resolve" (before the directories on the way are opened),
// "use" (before the last element is used) or "open" (between OpenFile's
// look at the last element and its open).
var testHookRace func(stage, rel string)

func raced(stage, rel string) {
	if testHookRace != nil {
		testHookRace(stage, rel)
	}
}

// lastLink reads the symbolic link at a's last element as a link to follow.
func lastLink(a *at) (*link, errno) {
	target, e := readlink(a.dir, a.name)
	if e != 0 {
		return nil, e
	}
	return &link{dir: path.Dir(a.rel), name: a.name, target: target}, 0
}

// openKind is what opening with flag needs: writable for write or
// read-write access, or O_APPEND, O_CREAT, O_TRUNC or O_EXCL; otherwise
// readable, or a visible directory.
func openKind(flag experimentalsys.Oflag) kind {
	acc := flag & (experimentalsys.O_RDONLY | experimentalsys.O_RDWR | experimentalsys.O_WRONLY)
	if acc != experimentalsys.O_RDONLY ||
		flag&(experimentalsys.O_APPEND|experimentalsys.O_CREAT|experimentalsys.O_TRUNC|experimentalsys.O_EXCL) != 0 {
		return kindWrite
	}
	return kindList
}

// openFile opens rel for rootFS.OpenFile, k being openKind(flag). Only
// regular files and directories are opened; a file with more than one hard
// link is never opened for writing. O_TRUNC is applied after these checks,
// on the opened descriptor.
func (m *mountFS) openFile(rel string, mustDir bool, k kind, flag experimentalsys.Oflag, perm fs.FileMode) (experimentalsys.File, errno) {
	acc := flag & (experimentalsys.O_RDONLY | experimentalsys.O_RDWR | experimentalsys.O_WRONLY)
	if flag&experimentalsys.O_DIRECTORY != 0 && acc != experimentalsys.O_RDONLY {
		return nil, experimentalsys.EISDIR
	}
	if flag&experimentalsys.O_CREAT != 0 {
		m.g.acct.ns.RLock()
		defer m.g.acct.ns.RUnlock()
	}
	c := &checker{m: m, k: k, orig: rel}
	var out *file
	e := m.withRoot(func(rootfd int) errno {
		return c.run(rootfd, rel, func(a *at) (*link, errno) {
			f, l, e := m.open(c, a, flag, perm, mustDir)
			out = f
			return l, e
		})
	})
	if e != 0 {
		return nil, e
	}
	return out, 0
}

// open opens a's last element for openFile, after c allowed it.
func (m *mountFS) open(c *checker, a *at, flag experimentalsys.Oflag, perm fs.FileMode, mustDir bool) (*file, *link, errno) {
	if mustDir && flag&experimentalsys.O_CREAT != 0 {
		return nil, nil, experimentalsys.EISDIR // as open(2) for "name/" with O_CREAT
	}
	write := c.k == kindWrite
	abs := m.host(a.rel)
	oflags := unix.O_CLOEXEC | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_NOCTTY
	switch flag & (experimentalsys.O_RDWR | experimentalsys.O_WRONLY) {
	case experimentalsys.O_RDWR:
		oflags |= unix.O_RDWR
	case experimentalsys.O_WRONLY:
		oflags |= unix.O_WRONLY
	}
	for _, f := range [...]struct {
		sys  experimentalsys.Oflag
		unix int
	}{
		{experimentalsys.O_APPEND, unix.O_APPEND},
		{experimentalsys.O_CREAT, unix.O_CREAT},
		{experimentalsys.O_EXCL, unix.O_EXCL},
		{experimentalsys.O_DIRECTORY, unix.O_DIRECTORY},
		{experimentalsys.O_DSYNC, unix.O_DSYNC},
		{experimentalsys.O_SYNC, unix.O_SYNC},
		{experimentalsys.O_RSYNC, unix.O_RSYNC},
	} {
		if flag&f.sys != 0 {
			oflags |= f.unix
		}
	}
	if c.dirOnly || mustDir {
		oflags |= unix.O_DIRECTORY
	}
	exclusive := flag&experimentalsys.O_CREAT != 0 && flag&experimentalsys.O_EXCL != 0
	// "name/" is what name leads to, even with O_NOFOLLOW, as in open(2).
	follow := (flag&experimentalsys.O_NOFOLLOW == 0 || mustDir) && !exclusive

	// Look before opening, so that a FIFO or a device is never opened (an
	// open can block, or have effects of its own). The descriptor is
	// checked again below: this look only avoids the common case.
	st, lookErr := fstatat(a.dir, a.name)
	if lookErr == 0 {
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFREG, unix.S_IFDIR:
		case unix.S_IFLNK:
			if follow {
				l, e := lastLink(a)
				return nil, l, e
			}
			if exclusive {
				return nil, nil, experimentalsys.EEXIST
			}
			return nil, nil, experimentalsys.ELOOP
		default:
			return nil, nil, c.refuse(a.rel, special(st.Mode))
		}
	}

	// A descriptor is held from here. An open that may create the file
	// holds an entry too, and creates only with O_EXCL, so that the entry
	// is counted exactly when it created the name: when the name exists
	// (and the guest did not ask for O_EXCL) it is opened without O_CREAT,
	// and if it was removed meanwhile, created after all. Once the open
	// created the name, the entry stays counted, even if the file is then
	// refused: the name is on disk.
	if e := m.takeFD(abs); e != 0 {
		return nil, nil, e
	}
	kept := false
	defer func() {
		if !kept {
			m.putFD()
		}
	}()
	creating := flag&experimentalsys.O_CREAT != 0
	entry, made := false, false
	defer func() {
		if entry && !made {
			m.g.putEntry()
		}
	}()
	raced("open", a.rel)
	var fd int
	var err error
	mayExist := lookErr == 0 && !exclusive
	for try := 0; ; try++ {
		if !creating || mayExist {
			fd, err = openat(a.dir, a.name, oflags&^unix.O_CREAT, uint32(perm.Perm()))
			if err == unix.ENOENT && creating && try < 3 {
				mayExist = false // removed since the look: create it
				continue
			}
			break
		}
		if !entry {
			if e := m.takeEntry(abs); e != 0 {
				return nil, nil, e
			}
			entry = true
		}
		fd, err = openat(a.dir, a.name, oflags|unix.O_EXCL, uint32(perm.Perm()))
		if err == nil {
			made = true
			break
		}
		if err == unix.EEXIST && !exclusive && try < 3 {
			mayExist = true // created meanwhile: open it
			continue
		}
		break
	}
	switch {
	case err == unix.ELOOP && follow: // it became a symbolic link since the look
		l, e := lastLink(a)
		return nil, l, e
	case err == unix.ENOTDIR && c.dirOnly && !mustDir && flag&experimentalsys.O_DIRECTORY == 0:
		return nil, nil, c.refuse(a.rel, m.g.pol.notIn(kindRead))
	case err != nil:
		return nil, nil, experimentalsys.UnwrapOSError(err)
	}
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, nil, experimentalsys.UnwrapOSError(err)
	}
	typ := st.Mode & unix.S_IFMT
	if typ != unix.S_IFREG && typ != unix.S_IFDIR {
		unix.Close(fd)
		return nil, nil, c.refuse(a.rel, special(st.Mode))
	}
	if write && typ == unix.S_IFREG && st.Nlink > 1 {
		unix.Close(fd)
		return nil, nil, c.refuse(a.rel, hardLinks(uint64(st.Nlink)))
	}
	if flag&experimentalsys.O_TRUNC != 0 {
		if _, e := m.g.resize(fd, 0); e != 0 {
			unix.Close(fd)
			return nil, nil, e
		}
	}
	if fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0); err == nil {
		unix.FcntlInt(uintptr(fd), unix.F_SETFL, fl&^unix.O_NONBLOCK) // best effort: regular files and directories ignore it
	}
	if write {
		m.allow(abs, openReason(flag)+" (allowed by "+c.glob+")")
	}
	kept = true
	f := newFile(m, fd, a.rel, c.glob, &st, flag)
	m.inst.track(f)
	return f, nil, 0
}

// openat is unix.Openat retried on EINTR.
func openat(dir int, name string, flags int, perm uint32) (int, error) {
	for {
		fd, err := unix.Openat(dir, name, flags, perm)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

func openReason(flag experimentalsys.Oflag) string {
	var parts []string
	if flag&experimentalsys.O_CREAT != 0 {
		parts = append(parts, "create")
	}
	if flag&experimentalsys.O_TRUNC != 0 {
		parts = append(parts, "truncate")
	}
	if flag&experimentalsys.O_APPEND != 0 {
		parts = append(parts, "append")
	}
	if len(parts) == 0 {
		return "open for writing"
	}
	return "open for writing (" + strings.Join(parts, ", ") + ")"
}

// special is the reason a file that is neither regular nor a directory is
// refused.
func special(mode uint32) string {
	name := "a special file"
	switch mode & unix.S_IFMT {
	case unix.S_IFIFO:
		name = "a FIFO"
	case unix.S_IFCHR:
		name = "a character device"
	case unix.S_IFBLK:
		name = "a block device"
	case unix.S_IFSOCK:
		name = "a socket"
	}
	return "is " + name + "; only regular files and directories can be opened"
}

// hardLinks is the reason a file with other hard links is not changed.
func hardLinks(n uint64) string {
	return fmt.Sprintf("is a file with %d hard links; it is not changed because the other links may be outside its write allowlist", n)
}

// stat returns the status of rel, which must be visible. "name/" follows a
// link at name even for lstat, as stat(2) does.
func (m *mountFS) stat(rel string, mustDir, follow bool) (sys.Stat_t, errno) {
	follow = follow || mustDir
	c := &checker{m: m, k: kindSee, orig: rel}
	var st unix.Stat_t
	e := m.withRoot(func(rootfd int) errno {
		return c.run(rootfd, rel, func(a *at) (*link, errno) {
			var e errno
			st, e = fstatat(a.dir, a.name)
			if e != 0 || st.Mode&unix.S_IFMT != unix.S_IFLNK {
				return nil, e
			}
			if follow {
				return lastLink(a)
			}
			// A link's size is the length of its target: none, if the
			// module may not read the target (see readlink).
			if target, e := readlink(a.dir, a.name); e != 0 || !m.shows(path.Dir(a.rel), target) {
				st.Size = 0
			}
			return nil, 0
		})
	})
	if e != 0 {
		return sys.Stat_t{}, e
	}
	if mustDir && st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return sys.Stat_t{}, experimentalsys.ENOTDIR
	}
	return toStat(&st), 0
}

// readlink returns the target of the link rel, which must be readable. A
// target that names something the module may not see (a host path outside
// its grants, or a hidden name inside a mount) is refused: the guest learns
// nothing about the host from it. "name/" is what name leads to, which is
// never a link (EINVAL for a directory, ENOTDIR otherwise), as in
// readlink(2).
func (m *mountFS) readlink(rel string, mustDir bool) (string, errno) {
	c := &checker{m: m, k: kindRead, orig: rel}
	var target string
	e := m.withRoot(func(rootfd int) errno {
		if mustDir {
			var st unix.Stat_t
			e := c.run(rootfd, rel, func(a *at) (*link, errno) {
				var e errno
				if st, e = fstatat(a.dir, a.name); e == 0 && st.Mode&unix.S_IFMT == unix.S_IFLNK {
					return lastLink(a)
				}
				return nil, e
			})
			switch {
			case e != 0:
				return e
			case st.Mode&unix.S_IFMT == unix.S_IFDIR:
				return experimentalsys.EINVAL
			}
			return experimentalsys.ENOTDIR
		}
		hops := 0
		a, e := c.resolve(rootfd, rel, &hops)
		if e != 0 {
			return e
		}
		defer a.close()
		if a.name == "." {
			return experimentalsys.EINVAL
		}
		t, e := readlink(a.dir, a.name)
		if e != 0 {
			return e
		}
		if !m.shows(path.Dir(a.rel), t) {
			return c.refuse(a.rel, "is a symlink whose target is not in its read allowlist ("+m.g.pol.readList+")")
		}
		target = t
		return 0
	})
	return target, e
}

// shows reports whether the module may learn target, the target of a link
// in the directory dir (relative to the mount): every path it names on the
// way, resolved lexically from dir (or from "/" if it is absolute), is one
// the module may see.
func (m *mountFS) shows(dir, target string) bool {
	cur := m.host(dir)
	if strings.HasPrefix(target, "/") {
		cur = "/"
	}
	for s := range strings.SplitSeq(target, "/") {
		switch s {
		case "", ".":
			continue
		case "..":
			cur = path.Dir(cur) // above something visible: visible
			continue
		}
		cur = hostPath(cur, s)
		if !m.g.pol.visible(cur) {
			return false
		}
	}
	return true
}

// mutate resolves rel for an operation that changes its last element
// without following it, decides that the resolved path is writable, and
// runs op there. op calls c.allowed just before it changes anything.
func (m *mountFS) mutate(rel string, op func(c *checker, a *at) errno) errno {
	c := &checker{m: m, k: kindWrite, orig: rel}
	return m.withRoot(func(rootfd int) errno {
		hops := 0
		a, e := c.resolve(rootfd, rel, &hops)
		if e != 0 {
			return e
		}
		defer a.close()
		raced("use", a.rel)
		return op(c, &a)
	})
}

// allowed records that the operation verb on rel was allowed.
func (c *checker) allowed(rel, verb string) {
	target := c.target
	if target == "" {
		target = c.m.host(rel)
	}
	c.m.allow(target, verb+" (allowed by "+c.glob+")")
}

// mkdir creates the directory rel, which must be writable.
func (m *mountFS) mkdir(rel string, mustDir bool, perm fs.FileMode) errno {
	m.g.acct.ns.RLock()
	defer m.g.acct.ns.RUnlock()
	return m.mutate(rel, func(c *checker, a *at) errno {
		if a.name == "." {
			return experimentalsys.EEXIST
		}
		if e := m.takeEntry(m.host(a.rel)); e != 0 {
			return e
		}
		c.allowed(a.rel, "mkdir")
		e := experimentalsys.UnwrapOSError(unix.Mkdirat(a.dir, slashed(a.name, mustDir), uint32(perm.Perm())))
		if e == experimentalsys.ENOTDIR {
			e = experimentalsys.ENOENT
		}
		if e != 0 {
			m.g.putEntry()
		}
		return e
	})
}

// rmdir removes the directory rel, which must be writable.
func (m *mountFS) rmdir(rel string, mustDir bool) errno {
	m.g.acct.ns.RLock()
	defer m.g.acct.ns.RUnlock()
	return m.mutate(rel, func(c *checker, a *at) errno {
		if a.name == "." {
			return c.refuse(a.rel, "is the root of a mount")
		}
		c.allowed(a.rel, "rmdir")
		e := experimentalsys.UnwrapOSError(unix.Unlinkat(a.dir, slashed(a.name, mustDir), unix.AT_REMOVEDIR))
		if e == 0 {
			m.g.putEntry()
		}
		return e
	})
}

// unlink removes rel, which must be writable. The bytes of a regular
// file's last link are returned to the quota. "name/" is never unlinked
// (unlinkat(2) answers ENOTDIR, or EISDIR for a directory).
func (m *mountFS) unlink(rel string, mustDir bool) errno {
	m.g.acct.ns.RLock()
	defer m.g.acct.ns.RUnlock()
	return m.mutate(rel, func(c *checker, a *at) errno {
		if a.name == "." {
			return c.refuse(a.rel, "is the root of a mount")
		}
		c.allowed(a.rel, "unlink")
		m.g.acct.mu.Lock() // the recorder is not called with it held: it may block
		defer m.g.acct.mu.Unlock()
		st, e := fstatat(a.dir, a.name)
		if e != 0 {
			return e
		}
		if e := experimentalsys.UnwrapOSError(unix.Unlinkat(a.dir, slashed(a.name, mustDir), 0)); e != 0 {
			if e == experimentalsys.EPERM {
				e = experimentalsys.EISDIR // as wazero's own directory file system
			}
			return e
		}
		m.g.credit(&st)
		m.g.putEntry()
		return 0
	})
}

// end is one end of a rename or link: the mount it is in, the path
// relative to the mount root, and its trailing slash.
type end struct {
	m       *mountFS
	rel     string
	mustDir bool
}

// pair resolves the two ends of a rename or link, neither followed at its
// last element, decides that both are writable, and runs op. The ends may
// be in different mounts. Decisions name both ends: "from -> to".
func pair(from, to end, op func(cf, ct *checker, af, at *at) errno) errno {
	target := pairTarget(from.m.host(from.rel), to.m.host(to.rel))
	cf := &checker{m: from.m, k: kindWrite, orig: from.rel, side: "source", target: target}
	ct := &checker{m: to.m, k: kindWrite, orig: to.rel, side: "destination", target: target}
	return from.m.withRoot(func(fromfd int) errno {
		return to.m.withRoot(func(tofd int) errno {
			hops := 0
			af, e := cf.resolve(fromfd, from.rel, &hops)
			if e != 0 {
				return e
			}
			defer af.close()
			hops = 0
			at, e := ct.resolve(tofd, to.rel, &hops)
			if e != 0 {
				return e
			}
			defer at.close()
			raced("use", af.rel)
			raced("use", at.rel)
			return op(cf, ct, &af, &at)
		})
	})
}

// pairTarget is the target of a decision on a rename or link.
func pairTarget(from, to string) string {
	if t := from + " -> " + to; len(t) <= sandbox.MaxTargetLen {
		return t
	}
	return sandbox.SanitizeLimit(from, 124) + " -> " + sandbox.SanitizeLimit(to, 124)
}

// rename renames from to to: both must be writable, and a directory may
// only move from and to places where everything below it is writable too.
// The bytes of a regular file it replaces are returned to the quota.
//
// rename holds the gate's namespace lock exclusively, so no other
// operation of this module can turn a file it checked into a directory (or
// the reverse) before it renames.
func (g *Gate) rename(from, to end) errno {
	g.acct.ns.Lock()
	defer g.acct.ns.Unlock()
	return pair(from, to, func(cf, ct *checker, af, at *at) errno {
		if af.name == "." {
			return cf.refuse(af.rel, "is the root of a mount")
		}
		if at.name == "." {
			return ct.refuse(at.rel, "is the root of a mount")
		}
		sf, e := fstatat(af.dir, af.name)
		if e != 0 {
			return e
		}
		if sf.Mode&unix.S_IFMT == unix.S_IFDIR {
			if !g.pol.subtreeWritable(cf.m.host(af.rel)) {
				return cf.refuse(af.rel, "is a directory whose contents are not all in its write allowlist ("+g.pol.writeList+")")
			}
			if !g.pol.subtreeWritable(ct.m.host(at.rel)) {
				return ct.refuse(at.rel, "is a directory whose contents would not all be in its write allowlist ("+g.pol.writeList+")")
			}
		}
		cf.allowed(af.rel, "rename")
		g.acct.mu.Lock()
		defer g.acct.mu.Unlock()
		st, replaced := fstatat(at.dir, at.name)
		if e := experimentalsys.UnwrapOSError(unix.Renameat(af.dir, slashed(af.name, from.mustDir), at.dir, slashed(at.name, to.mustDir))); e != 0 {
			return e
		}
		if replaced == 0 && (st.Dev != sf.Dev || st.Ino != sf.Ino) {
			g.credit(&st)
			g.putEntry() // the name it replaced
		}
		return 0
	})
}

// link makes newPath a hard link of oldPath: both must be writable.
// "old/" is what old leads to, which must be a directory, and directories
// are not linked (EPERM), as in linkat(2).
func (g *Gate) link(oldPath, newPath end) errno {
	g.acct.ns.RLock()
	defer g.acct.ns.RUnlock()
	return pair(oldPath, newPath, func(co, cn *checker, ao, an *at) errno {
		if ao.name == "." {
			return experimentalsys.EPERM // a directory
		}
		if oldPath.mustDir {
			// A directory, or an error: linkat(2) then looks at the new
			// name before it refuses to link a directory.
			if _, e := co.m.stat(ao.rel, true, true); e != 0 {
				return e
			}
			if _, e := fstatat(an.dir, an.name); e == 0 || an.name == "." {
				return experimentalsys.EEXIST
			}
			if newPath.mustDir {
				return experimentalsys.ENOENT
			}
			return experimentalsys.EPERM
		}
		if an.name == "." {
			return experimentalsys.EEXIST
		}
		st, e := fstatat(ao.dir, ao.name)
		if e != 0 {
			return e
		}
		if st.Mode&unix.S_IFMT == unix.S_IFREG && st.Nlink > 1 {
			return co.refuse(ao.rel, hardLinks(uint64(st.Nlink)))
		}
		if e := cn.m.takeEntry(cn.m.host(an.rel)); e != 0 {
			return e
		}
		co.allowed(ao.rel, "link")
		e = experimentalsys.UnwrapOSError(unix.Linkat(ao.dir, ao.name, an.dir, slashed(an.name, newPath.mustDir), 0))
		if e != 0 {
			g.putEntry()
		}
		return e
	})
}

// symlink creates the link rel, which must be writable, to target, which
// resolved from the link's directory must stay inside the mount. Absolute
// targets are refused.
func (m *mountFS) symlink(target, rel string, mustDir bool) errno {
	m.g.acct.ns.RLock()
	defer m.g.acct.ns.RUnlock()
	return m.mutate(rel, func(c *checker, a *at) errno {
		switch {
		case strings.IndexByte(target, 0) >= 0:
			return m.deny(m.host(a.rel), "is a symlink whose target contains a NUL byte", experimentalsys.EINVAL)
		case len(target) > maxPathLen:
			return m.deny(m.host(a.rel), fmt.Sprintf("is a symlink whose target is longer than %d bytes", maxPathLen), experimentalsys.ENAMETOOLONG)
		case target == "":
			return experimentalsys.ENOENT
		case a.name == ".":
			return experimentalsys.EEXIST
		}
		l := &link{dir: path.Dir(a.rel), name: a.name, target: target}
		if _, ok := l.follow(); !ok {
			return m.deny(m.host(a.rel), "is a symlink whose target ("+sandbox.SanitizeLimit(target, 64)+") leaves the mount", experimentalsys.EPERM)
		}
		if e := m.takeEntry(m.host(a.rel)); e != 0 {
			return e
		}
		c.allowed(a.rel, "symlink to "+sandbox.SanitizeLimit(target, 64))
		e := experimentalsys.UnwrapOSError(unix.Symlinkat(target, a.dir, slashed(a.name, mustDir)))
		if e != 0 {
			m.g.putEntry()
		}
		return e
	})
}

// chmod sets the permission bits of rel (symbolic links are followed),
// which must be writable.
func (m *mountFS) chmod(rel string, mustDir bool, perm fs.FileMode) errno {
	return m.inode(rel, mustDir, "chmod", func(fd int, a *at, st *unix.Stat_t) errno {
		mode := uint32(perm.Perm())
		err := unix.Fchmodat(fd, "", mode, unix.AT_EMPTY_PATH)
		if err != unix.EOPNOTSUPP && err != unix.ENOSYS && err != unix.EINVAL {
			return experimentalsys.UnwrapOSError(err)
		}
		return reopened(a, st, func(rfd int) error { return unix.Fchmod(rfd, mode) })
	})
}

// utimens sets the times of rel (symbolic links are followed), which must
// be writable.
func (m *mountFS) utimens(rel string, mustDir bool, atim, mtim int64) errno {
	return m.inode(rel, mustDir, "set times", func(fd int, a *at, st *unix.Stat_t) errno {
		ts := []unix.Timespec{timespec(atim), timespec(mtim)}
		err := unix.UtimesNanoAt(fd, "", ts, unix.AT_EMPTY_PATH)
		if err != unix.EOPNOTSUPP && err != unix.ENOSYS && err != unix.EINVAL && err != unix.EBADF {
			return experimentalsys.UnwrapOSError(err)
		}
		return reopened(a, st, func(rfd int) error { return futimens(rfd, ts) })
	})
}

// inode resolves rel following symbolic links, decides that the result is
// writable, opens it as an O_PATH descriptor (never following a link) and
// runs op on that descriptor, so what op changes is what was decided on.
// A file with other hard links is refused: its metadata is shared with
// them. With mustDir the result must be a directory.
func (m *mountFS) inode(rel string, mustDir bool, verb string, op func(fd int, a *at, st *unix.Stat_t) errno) errno {
	c := &checker{m: m, k: kindWrite, orig: rel}
	return m.withRoot(func(rootfd int) errno {
		return c.run(rootfd, rel, func(a *at) (*link, errno) {
			fd, err := openNoFollow(a.dir, a.name, unix.O_PATH)
			if err != nil {
				return nil, experimentalsys.UnwrapOSError(err)
			}
			defer unix.Close(fd)
			var st unix.Stat_t
			if err := unix.Fstat(fd, &st); err != nil {
				return nil, experimentalsys.UnwrapOSError(err)
			}
			if st.Mode&unix.S_IFMT == unix.S_IFLNK {
				target, e := readlink(fd, "")
				if e != 0 {
					return nil, e
				}
				return &link{dir: path.Dir(a.rel), name: a.name, target: target}, 0
			}
			if mustDir && st.Mode&unix.S_IFMT != unix.S_IFDIR {
				return nil, experimentalsys.ENOTDIR
			}
			if st.Mode&unix.S_IFMT != unix.S_IFDIR && st.Nlink > 1 {
				return nil, c.refuse(a.rel, hardLinks(uint64(st.Nlink)))
			}
			c.allowed(a.rel, verb)
			return nil, op(fd, a, &st)
		})
	})
}

// reopened runs fn on a read-only descriptor of the regular file or
// directory that the O_PATH descriptor of a refers to, for kernels whose
// fchmodat2 or utimensat cannot take an O_PATH descriptor. The name is
// opened again without following links, and the result must be the same
// inode, else nothing is changed.
func reopened(a *at, st *unix.Stat_t, fn func(rfd int) error) errno {
	if typ := st.Mode & unix.S_IFMT; typ != unix.S_IFREG && typ != unix.S_IFDIR {
		return experimentalsys.ENOTSUP
	}
	rfd, err := openNoFollow(a.dir, a.name, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY)
	if err != nil {
		return experimentalsys.UnwrapOSError(err)
	}
	defer unix.Close(rfd)
	var again unix.Stat_t
	if err := unix.Fstat(rfd, &again); err != nil {
		return experimentalsys.UnwrapOSError(err)
	}
	if again.Dev != st.Dev || again.Ino != st.Ino {
		return experimentalsys.EAGAIN // replaced meanwhile; nothing was changed
	}
	return experimentalsys.UnwrapOSError(fn(rfd))
}

// futimens sets the times of an open descriptor (utimensat with a NULL
// path, which x/sys/unix does not offer).
func futimens(fd int, ts []unix.Timespec) error {
	_, _, e := unix.Syscall6(unix.SYS_UTIMENSAT, uintptr(fd), 0, uintptr(unsafe.Pointer(&ts[0])), 0, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

// timespec converts wazero's nanoseconds (or UTIME_OMIT).
func timespec(t int64) unix.Timespec {
	if t == experimentalsys.UTIME_OMIT {
		return unix.Timespec{Nsec: unix.UTIME_OMIT}
	}
	return unix.NsecToTimespec(t)
}
