package fsgate

import (
	"path"
	"strings"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"golang.org/x/sys/unix"
)

// Path limits, as Linux applies them.
const (
	maxPathLen = 4095 // PATH_MAX without the NUL
	maxNameLen = 255  // NAME_MAX
	maxHops    = 40   // MAXSYMLINKS: symbolic links followed for one path
)

// at is where an operation acts: the entry name in the directory dir.
// dir is an O_PATH descriptor that the gate reached without following any
// symbolic link, so rel (the path of the entry relative to the mount root)
// is exactly the place the operation touches.
type at struct {
	dir  int
	own  bool   // dir must be closed (it is not the root's descriptor)
	name string // "." for the mount root itself
	rel  string
}

func (a *at) close() {
	if a.own {
		unix.Close(a.dir)
		a.own = false
	}
}

// link is a symbolic link met while resolving: the directory it is in
// (relative to the mount root), its name, its target, and the rest of the
// path after it ("" when it was the last element).
type link struct {
	dir, name, target, rest string
}

// path returns the link's own path relative to the mount root.
func (l *link) path() string { return path.Join(l.dir, l.name) }

// follow returns the path that replaces a path through l, or ok false if
// the link's target is absolute or leads out of the mount. ".." is resolved
// lexically, which is exact here because l.dir was reached without
// following any symbolic link.
func (l *link) follow() (rel string, ok bool) {
	if strings.HasPrefix(l.target, "/") {
		return "", false
	}
	rel = path.Join(l.dir, l.target, l.rest)
	return rel, !escapes(rel)
}

// escapes reports whether a clean relative path leaves its root.
func escapes(rel string) bool {
	return rel == ".." || strings.HasPrefix(rel, "../")
}

// parent opens the directory that holds rel's last element. It returns
// either the place to act, or the first symbolic link on the way (the
// caller decides on the path through it and tries again). rel must be
// clean and must not escape.
func parent(rootfd int, rel string) (at, *link, experimentalsys.Errno) {
	if rel == "." {
		return at{dir: rootfd, name: ".", rel: "."}, nil, 0
	}
	dir, name := path.Split(rel)
	dir = strings.TrimSuffix(dir, "/")
	if dir == "" {
		return at{dir: rootfd, name: name, rel: rel}, nil, 0
	}
	how := unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	}
	fd, err := openat2(rootfd, dir, &how)
	switch err {
	case nil:
		return at{dir: fd, own: true, name: name, rel: rel}, nil, 0
	case unix.ELOOP, unix.ENOSYS, unix.EPERM, unix.EAGAIN:
		// A symbolic link on the way, or no openat2 (an old kernel, a
		// seccomp filter), or renames kept racing: walk one element at a
		// time.
	case unix.EXDEV:
		// RESOLVE_BENEATH saw an escape; the path is clean, so this cannot
		// happen. Refuse rather than guess.
		return at{}, nil, experimentalsys.EACCES
	default:
		return at{}, nil, experimentalsys.UnwrapOSError(err)
	}
	fd, own, l, errno := walk(rootfd, dir)
	if errno != 0 || l != nil {
		if l != nil && l.rest != "" {
			l.rest += "/" + name
		} else if l != nil {
			l.rest = name
		}
		return at{}, l, errno
	}
	return at{dir: fd, own: own, name: name, rel: rel}, nil, 0
}

// testNoOpenat2, when a test sets it, makes openat2 unavailable (ENOSYS),
// as on kernels before 5.6 or under a seccomp filter that refuses it, so
// that parent walks every path one element at a time.
var testNoOpenat2 bool

// openat2 is unix.Openat2, retried while a concurrent rename makes it
// return EAGAIN.
func openat2(dir int, name string, how *unix.OpenHow) (int, error) {
	if testNoOpenat2 {
		return -1, unix.ENOSYS
	}
	for range 8 {
		fd, err := unix.Openat2(dir, name, how)
		if err != unix.EAGAIN && err != unix.EINTR {
			return fd, err
		}
	}
	return -1, unix.EAGAIN
}

// walk opens the directory rel one element at a time without following
// symbolic links; at the first link it stops and returns it.
func walk(rootfd int, rel string) (fd int, own bool, l *link, errno experimentalsys.Errno) {
	cur, curOwn := rootfd, false
	done := func() {
		if curOwn {
			unix.Close(cur)
		}
	}
	elems := strings.Split(rel, "/")
	for i, e := range elems {
		next, err := openNoFollow(cur, e, unix.O_PATH)
		if err != nil {
			done()
			return -1, false, nil, experimentalsys.UnwrapOSError(err)
		}
		var st unix.Stat_t
		if err := unix.Fstat(next, &st); err != nil {
			unix.Close(next)
			done()
			return -1, false, nil, experimentalsys.UnwrapOSError(err)
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
			done()
			cur, curOwn = next, true
		case unix.S_IFLNK:
			target, errno := readlink(next, "")
			unix.Close(next)
			done()
			if errno != 0 {
				return -1, false, nil, errno
			}
			dir := "."
			if i > 0 {
				dir = strings.Join(elems[:i], "/")
			}
			return -1, false, &link{
				dir:    dir,
				name:   e,
				target: target,
				rest:   strings.Join(elems[i+1:], "/"),
			}, 0
		default:
			unix.Close(next)
			done()
			return -1, false, nil, experimentalsys.ENOTDIR
		}
	}
	return cur, curOwn, nil, 0
}

// openNoFollow opens name in dir (one element, never a symbolic link).
func openNoFollow(dir int, name string, flags int) (int, error) {
	for {
		fd, err := unix.Openat(dir, name, flags|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// readlink reads the symbolic link name in dir ("" for dir itself).
func readlink(dir int, name string) (string, experimentalsys.Errno) {
	buf := make([]byte, maxPathLen+1)
	n, err := unix.Readlinkat(dir, name, buf)
	if err != nil {
		return "", experimentalsys.UnwrapOSError(err)
	}
	if n > maxPathLen {
		return "", experimentalsys.ENAMETOOLONG
	}
	return string(buf[:n]), 0
}

// fstatat is lstat of name in dir.
func fstatat(dir int, name string) (unix.Stat_t, experimentalsys.Errno) {
	var st unix.Stat_t
	err := unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	return st, experimentalsys.UnwrapOSError(err)
}
