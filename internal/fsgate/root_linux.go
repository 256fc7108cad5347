package fsgate

import (
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/sys"
)

// rootFS is one instance's view of the host, linked as the guest's only
// preopened directory, "/". Every path the guest names is the host path of
// the same name: rootFS resolves it itself and hands it, on segment
// boundaries, to the mount whose root it is in, so that no path reaches a
// mount it does not name. "/" and the directories above the mount roots
// exist only as the way to the roots; everything else outside the mounts
// is refused like a hidden name inside one.
type rootFS struct {
	experimentalsys.UnimplementedFS
	g      *Gate
	hooks  Hooks
	inst   *instanceState
	mounts []*mountFS // by path, none inside another
}

func (r *rootFS) held() int64 { return r.inst.open.n.Load() }

func (r *rootFS) state() *instanceState { return r.inst }

// limitErrno implements limiter: the WASI error number of the refusal
// over a limit the instance's last operation returned, if any.
func (r *rootFS) limitErrno() (uint32, bool) {
	n := r.inst.pending.Swap(0)
	return n, n != 0
}

var _ experimentalsys.FS = (*rootFS)(nil)

// String implements fmt.Stringer.
func (r *rootFS) String() string { return "/" }

// place is what a guest path names: a path inside one of the mounts, or the
// clean absolute path abs outside all of them (a directory above a mount
// root, or something the module may not see).
type place struct {
	m       *mountFS // nil outside every mount
	rel     string   // inside m: relative to its root, clean; "." for the root
	abs     string   // outside every mount
	mustDir bool     // the path ended in "/": it names a directory
}

// find resolves p, a path relative to the guest's "/" as wazero passes it
// (a leading "/" is allowed too), for an operation of kind k. Refusals are
// recorded.
func (r *rootFS) find(p string, k kind) (place, errno) {
	if strings.IndexByte(p, 0) >= 0 {
		return place{}, r.deny(p, "contains a NUL byte", experimentalsys.EINVAL)
	}
	if len(p) > maxPathLen {
		return place{}, r.deny(p, fmt.Sprintf("is longer than %d bytes", maxPathLen), experimentalsys.ENAMETOOLONG)
	}
	rel := strings.Trim(p, "/")
	clean, longest := scanRel(rel)
	if !clean {
		rel = path.Clean("/" + rel)[1:] // ".." stops at "/", as in POSIX
	}
	if rel == "." {
		rel = ""
	}
	mustDir := rel != "" && strings.HasSuffix(p, "/")
	// While the start function runs, only "/" may be opened read-only (the
	// runtime's view of its preopened directory, which touches no host file).
	if r.hooks.Blocked != nil && r.hooks.Blocked() && (rel != "" || k == kindWrite) {
		return place{}, r.deny(rel, "is refused: no call is active (a module's start function cannot touch files)", k.denied())
	}
	if longest > maxNameLen {
		return place{}, r.deny(rel, fmt.Sprintf("has a name longer than %d bytes", maxNameLen), experimentalsys.ENAMETOOLONG)
	}
	for _, m := range r.mounts {
		mp := m.root.path[1:]
		switch {
		case !strings.HasPrefix(rel, mp):
		case len(rel) == len(mp):
			return place{m: m, rel: ".", mustDir: mustDir}, 0
		case rel[len(mp)] == '/':
			return place{m: m, rel: rel[len(mp)+1:], mustDir: mustDir}, 0
		}
	}
	return place{abs: "/" + rel, mustDir: mustDir}, 0
}

// deny records a denial of the guest path p (relative to "/").
func (r *rootFS) deny(p, reason string, e errno) errno {
	return r.g.deny(r.hooks, "/"+strings.TrimLeft(p, "/"), reason, e)
}

// isAbove reports whether abs, outside every mount, is "/" or a directory
// above a mount root.
func (r *rootFS) isAbove(abs string) bool {
	_, ok := r.g.above[abs]
	return ok
}

// outside refuses an operation of kind k on abs, a path outside every
// mount, as the gate refuses a hidden name inside one.
func (r *rootFS) outside(abs string, k kind) errno {
	return r.g.deny(r.hooks, abs, r.g.pol.notIn(k), k.denied())
}

// OpenFile implements experimentalsys.FS: see mountFS.openFile. A directory
// above the mount roots can only be opened read-only, to be listed.
func (r *rootFS) OpenFile(p string, flag experimentalsys.Oflag, perm fs.FileMode) (experimentalsys.File, errno) {
	k := openKind(flag)
	pl, e := r.find(p, k)
	switch {
	case e != 0:
		return nil, e
	case pl.m != nil:
		return pl.m.openFile(pl.rel, pl.mustDir, k, flag, perm)
	case k == kindWrite || !r.isAbove(pl.abs):
		return nil, r.outside(pl.abs, k)
	}
	d := &aboveDir{g: r.g, hooks: r.hooks, inst: r.inst, abs: pl.abs, entries: r.g.above[pl.abs]}
	if e := r.takeAbove(d); e != 0 {
		return nil, e
	}
	r.inst.track(d)
	return d, 0
}

// Stat implements experimentalsys.FS: the path must be visible.
func (r *rootFS) Stat(p string) (sys.Stat_t, errno) { return r.stat(p, true) }

// Lstat implements experimentalsys.FS: the path must be visible.
func (r *rootFS) Lstat(p string) (sys.Stat_t, errno) { return r.stat(p, false) }

func (r *rootFS) stat(p string, follow bool) (sys.Stat_t, errno) {
	pl, e := r.find(p, kindSee)
	switch {
	case e != 0:
		return sys.Stat_t{}, e
	case pl.m != nil:
		return pl.m.stat(pl.rel, pl.mustDir, follow)
	case !r.isAbove(pl.abs):
		return sys.Stat_t{}, r.outside(pl.abs, kindSee)
	}
	return aboveStat(pl.abs), 0
}

// Readlink implements experimentalsys.FS: see mountFS.readlink.
func (r *rootFS) Readlink(p string) (string, errno) {
	pl, e := r.find(p, kindRead)
	switch {
	case e != 0:
		return "", e
	case pl.m != nil:
		return pl.m.readlink(pl.rel, pl.mustDir)
	case !r.isAbove(pl.abs):
		return "", r.outside(pl.abs, kindRead)
	}
	return "", experimentalsys.EINVAL // a directory is not a link
}

// change finds p for an operation that changes it: outside every mount,
// nothing may be changed.
func (r *rootFS) change(p string) (place, errno) {
	pl, e := r.find(p, kindWrite)
	if e == 0 && pl.m == nil {
		e = r.outside(pl.abs, kindWrite)
	}
	return pl, e
}

// Mkdir implements experimentalsys.FS: the path must be writable.
func (r *rootFS) Mkdir(p string, perm fs.FileMode) errno {
	pl, e := r.change(p)
	if e != 0 {
		return e
	}
	return pl.m.mkdir(pl.rel, pl.mustDir, perm)
}

// Rmdir implements experimentalsys.FS: the path must be writable.
func (r *rootFS) Rmdir(p string) errno {
	pl, e := r.change(p)
	if e != 0 {
		return e
	}
	return pl.m.rmdir(pl.rel, pl.mustDir)
}

// Unlink implements experimentalsys.FS: see mountFS.unlink.
func (r *rootFS) Unlink(p string) errno {
	pl, e := r.change(p)
	if e != 0 {
		return e
	}
	return pl.m.unlink(pl.rel, pl.mustDir)
}

// Chmod implements experimentalsys.FS: the resolved path (symbolic links
// are followed) must be writable. Only the permission bits are set.
func (r *rootFS) Chmod(p string, perm fs.FileMode) errno {
	pl, e := r.change(p)
	if e != 0 {
		return e
	}
	return pl.m.chmod(pl.rel, pl.mustDir, perm)
}

// Utimens implements experimentalsys.FS: the resolved path (symbolic links
// are followed) must be writable.
func (r *rootFS) Utimens(p string, atim, mtim int64) errno {
	pl, e := r.change(p)
	if e != 0 {
		return e
	}
	return pl.m.utimens(pl.rel, pl.mustDir, atim, mtim)
}

// Symlink implements experimentalsys.FS: see mountFS.symlink.
func (r *rootFS) Symlink(target, linkName string) errno {
	pl, e := r.change(linkName)
	if e != 0 {
		return e
	}
	return pl.m.symlink(target, pl.rel, pl.mustDir)
}

// Rename implements experimentalsys.FS: see Gate.rename.
func (r *rootFS) Rename(from, to string) errno {
	f, t, e := r.ends(from, to)
	if e != 0 {
		return e
	}
	return r.g.rename(f, t)
}

// Link implements experimentalsys.FS: see Gate.link.
func (r *rootFS) Link(oldPath, newPath string) errno {
	f, t, e := r.ends(oldPath, newPath)
	if e != 0 {
		return e
	}
	return r.g.link(f, t)
}

// ends finds the two ends of a rename or link, which must both be inside a
// mount. A denial names both ends, "from -> to".
func (r *rootFS) ends(from, to string) (end, end, errno) {
	pf, e := r.find(from, kindWrite)
	if e != 0 {
		return end{}, end{}, e
	}
	pt, e := r.find(to, kindWrite)
	if e != 0 {
		return end{}, end{}, e
	}
	abs := func(pl place) string {
		if pl.m == nil {
			return pl.abs
		}
		return pl.m.host(pl.rel)
	}
	side := "source"
	switch {
	case pf.m == nil:
	case pt.m == nil:
		side = "destination"
	default:
		return end{pf.m, pf.rel, pf.mustDir}, end{pt.m, pt.rel, pt.mustDir}, 0
	}
	reason := side + " " + r.g.pol.notIn(kindWrite)
	return end{}, end{}, r.g.deny(r.hooks, pairTarget(abs(pf), abs(pt)), reason, experimentalsys.EPERM)
}

// aboveStat is the status of a directory above the mount roots: a
// directory that anyone may read and list, and nothing else about the
// host's directory of that name.
func aboveStat(abs string) sys.Stat_t {
	return sys.Stat_t{Ino: aboveIno(abs), Mode: fs.ModeDir | 0o555, Nlink: 2}
}

// aboveDir is an open directory above the mount roots. It lists the names
// on the way to the roots and has no other content.
type aboveDir struct {
	experimentalsys.UnimplementedFile
	g       *Gate
	hooks   Hooks
	inst    *instanceState
	free    bool // the instance's one uncounted "/" (see takeAbove)
	abs     string
	entries []aboveEntry
	next    int // entries returned since the last rewind
	closed  bool
}

var _ experimentalsys.File = (*aboveDir)(nil)

// Dev implements experimentalsys.File.
func (d *aboveDir) Dev() (uint64, errno) { return 0, 0 }

// Ino implements experimentalsys.File.
func (d *aboveDir) Ino() (sys.Inode, errno) { return aboveIno(d.abs), 0 }

// IsDir implements experimentalsys.File.
func (d *aboveDir) IsDir() (bool, errno) { return true, 0 }

// IsAppend implements experimentalsys.File.
func (d *aboveDir) IsAppend() bool { return false }

// SetAppend implements experimentalsys.File.
func (d *aboveDir) SetAppend(bool) errno { return experimentalsys.EISDIR }

// Stat implements experimentalsys.File.
func (d *aboveDir) Stat() (sys.Stat_t, errno) {
	if d.closed {
		return sys.Stat_t{}, experimentalsys.EBADF
	}
	return aboveStat(d.abs), 0
}

// Read implements experimentalsys.File.
func (d *aboveDir) Read([]byte) (int, errno) { return 0, experimentalsys.EISDIR }

// Pread implements experimentalsys.File.
func (d *aboveDir) Pread([]byte, int64) (int, errno) { return 0, experimentalsys.EISDIR }

// Write implements experimentalsys.File.
func (d *aboveDir) Write([]byte) (int, errno) { return 0, experimentalsys.EISDIR }

// Pwrite implements experimentalsys.File.
func (d *aboveDir) Pwrite([]byte, int64) (int, errno) { return 0, experimentalsys.EISDIR }

// Truncate implements experimentalsys.File.
func (d *aboveDir) Truncate(int64) errno { return experimentalsys.EISDIR }

// Sync implements experimentalsys.File.
func (d *aboveDir) Sync() errno { return 0 }

// Datasync implements experimentalsys.File.
func (d *aboveDir) Datasync() errno { return 0 }

// Utimens implements experimentalsys.File: the directory was opened
// read-only, and nothing outside the mounts may change.
func (d *aboveDir) Utimens(int64, int64) errno {
	return d.g.deny(d.hooks, d.abs, d.g.pol.notIn(kindWrite), experimentalsys.EBADF)
}

// Seek implements experimentalsys.File: a directory can only be rewound.
func (d *aboveDir) Seek(off offset, whence int) (int64, errno) {
	switch {
	case d.closed:
		return 0, experimentalsys.EBADF
	case off != 0 || whence != io.SeekStart:
		return 0, experimentalsys.EINVAL
	}
	d.next = 0
	return 0, 0
}

// Readdir implements experimentalsys.File.
func (d *aboveDir) Readdir(n int) ([]experimentalsys.Dirent, errno) {
	if d.closed {
		return nil, experimentalsys.EBADF
	}
	rest := d.entries[d.next:]
	if n > 0 && n < len(rest) {
		rest = rest[:n]
	}
	out := make([]experimentalsys.Dirent, len(rest))
	for i, e := range rest {
		out[i] = experimentalsys.Dirent{Name: e.name, Ino: e.ino, Type: fs.ModeDir}
	}
	d.next += len(rest)
	return out, 0
}

// Close implements experimentalsys.File.
func (d *aboveDir) Close() errno {
	if d.closed {
		return 0
	}
	d.closed = true
	d.inst.untrack(d)
	d.putAbove()
	return 0
}

// refuseRaw implements refuser: raw is a path relative to the guest
// directory dir that wazero's WASI layer does not pass on.
func (r *rootFS) refuseRaw(dir string, raw []byte, k kind, reason string) errno {
	target := string(raw)
	if !strings.HasPrefix(target, "/") {
		target = strings.TrimSuffix(dir, "/") + "/" + target
	}
	return r.g.deny(r.hooks, target, reason, k.denied())
}
