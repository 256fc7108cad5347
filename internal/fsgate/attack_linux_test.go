package fsgate

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
)

// The standard tree of the attack tests. The module may write $T/m/out/**
// and read $T/m/notes.txt, so one mount is made at $T/m; out2, out.bak and
// secret are inside the mount but neither readable nor writable, and
// outside.txt and station are outside it.
var stdTree = map[string]string{
	"outside.txt":      "outside",
	"station/state.db": "db",
	"m/notes.txt":      "notes",
	"m/out/a.txt":      "a",
	"m/out/sub/":       "",
	"m/out2/b.txt":     "b",
	"m/out.bak":        "bak",
	"m/secret/key":     "key",
}

var (
	stdWrites = []string{"$T/m/out/**"}
	stdReads  = []string{"$T/m/notes.txt"}
)

const (
	rdonly = experimentalsys.O_RDONLY
	wronly = experimentalsys.O_WRONLY
	rdwr   = experimentalsys.O_RDWR
	creat  = experimentalsys.O_CREAT
	trunc  = experimentalsys.O_TRUNC
	excl   = experimentalsys.O_EXCL
	appnd  = experimentalsys.O_APPEND
)

// open opens and closes p.
func open(fsys experimentalsys.FS, p string, flag experimentalsys.Oflag) experimentalsys.Errno {
	f, e := fsys.OpenFile(p, flag, 0o644)
	if e == 0 {
		f.Close()
	}
	return e
}

// put opens p and writes data to it.
func put(fsys experimentalsys.FS, p string, flag experimentalsys.Oflag, data string) experimentalsys.Errno {
	f, e := fsys.OpenFile(p, flag, 0o644)
	if e != 0 {
		return e
	}
	defer f.Close()
	_, e = f.Write([]byte(data))
	return e
}

type attack struct {
	name  string
	plant map[string]string // more entries, as tree takes them; "$T" is the base
	do    func(fsys experimentalsys.FS) experimentalsys.Errno
	want  experimentalsys.Errno
	deny  string // the recorded denial's reason contains this; "" means no denial
}

var attacks = []attack{
	// The write allowlist itself.
	{name: "create inside out", do: func(f experimentalsys.FS) experimentalsys.Errno {
		return put(f, "out/new.txt", wronly|creat|trunc, "x")
	}},
	{name: "create in a new subdirectory", do: func(f experimentalsys.FS) experimentalsys.Errno {
		if e := f.Mkdir("out/d", 0o755); e != 0 {
			return e
		}
		return put(f, "out/d/x", wronly|creat|excl, "x")
	}},
	{name: "create in out2", do: func(f experimentalsys.FS) experimentalsys.Errno { return put(f, "out2/x.txt", wronly|creat, "x") },
		want: experimentalsys.EPERM, deny: "is not in its write allowlist ($T/m/out/**)"},
	{name: "overwrite out2", do: func(f experimentalsys.FS) experimentalsys.Errno { return put(f, "out2/b.txt", wronly, "x") },
		want: experimentalsys.EPERM, deny: "is not in its write allowlist"},
	{name: "write out.bak", do: func(f experimentalsys.FS) experimentalsys.Errno { return put(f, "out.bak", rdwr, "x") },
		want: experimentalsys.EPERM, deny: "is not in its write allowlist"},
	{name: "create in the directory above", do: func(f experimentalsys.FS) experimentalsys.Errno { return put(f, "new.txt", wronly|creat, "x") },
		want: experimentalsys.EPERM, deny: "is not in its write allowlist"},
	{name: "mkdir above", do: func(f experimentalsys.FS) experimentalsys.Errno { return f.Mkdir("newdir", 0o755) },
		want: experimentalsys.EPERM, deny: "is not in its write allowlist"},
	{name: "rmdir out2", do: func(f experimentalsys.FS) experimentalsys.Errno { return f.Rmdir("out2") },
		want: experimentalsys.EPERM, deny: "is not in its write allowlist"},
	{name: "unlink a readable file", do: func(f experimentalsys.FS) experimentalsys.Errno { return f.Unlink("notes.txt") },
		want: experimentalsys.EPERM, deny: "is not in its write allowlist"},
	{name: "chmod a readable file", do: func(f experimentalsys.FS) experimentalsys.Errno { return f.Chmod("notes.txt", 0o777) },
		want: experimentalsys.EPERM, deny: "is not in its write allowlist"},
	{name: "set times of a readable file", do: func(f experimentalsys.FS) experimentalsys.Errno { return f.Utimens("notes.txt", 1, 1) },
		want: experimentalsys.EPERM, deny: "is not in its write allowlist"},
	{name: "remove the mount root", do: func(f experimentalsys.FS) experimentalsys.Errno { return f.Rmdir(".") },
		want: experimentalsys.EPERM, deny: "is not in its write allowlist"},

	// Reads.
	{name: "read a readable file", do: func(f experimentalsys.FS) experimentalsys.Errno { return open(f, "notes.txt", rdonly) }},
	{name: "list the mount root", do: func(f experimentalsys.FS) experimentalsys.Errno { return open(f, ".", rdonly) }},
	{name: "read a hidden file", do: func(f experimentalsys.FS) experimentalsys.Errno { return open(f, "secret/key", rdonly) },
		want: experimentalsys.EACCES, deny: "is not in its read allowlist ($T/m/out/**, $T/m/notes.txt)"},
	{name: "list a hidden directory", do: func(f experimentalsys.FS) experimentalsys.Errno { return open(f, "out2", rdonly) },
		want: experimentalsys.EACCES, deny: "is not in its read allowlist"},
	{name: "stat a hidden file", do: func(f experimentalsys.FS) experimentalsys.Errno { _, e := f.Stat("out.bak"); return e },
		want: experimentalsys.EACCES, deny: "is not in its read allowlist"},
	{name: "stat a hidden name that does not exist", do: func(f experimentalsys.FS) experimentalsys.Errno { _, e := f.Lstat("nothing"); return e },
		want: experimentalsys.EACCES, deny: "is not in its read allowlist"},
	{name: "readlink of a hidden link", plant: map[string]string{"m/secret/l": "->key"},
		do:   func(f experimentalsys.FS) experimentalsys.Errno { _, e := f.Readlink("secret/l"); return e },
		want: experimentalsys.EACCES, deny: "is not in its read allowlist"},

	// Truncate-on-open and other writes through a read grant.
	{name: "truncate on open through the read grant", do: func(f experimentalsys.FS) experimentalsys.Errno { return open(f, "notes.txt", rdonly|trunc) },
		want: experimentalsys.EPERM, deny: "is not in its write allowlist"},
	{name: "append-open through the read grant", do: func(f experimentalsys.FS) experimentalsys.Errno { return open(f, "notes.txt", rdonly|appnd) },
		want: experimentalsys.EPERM, deny: "is not in its write allowlist"},
	{name: "exclusive create over a readable file", do: func(f experimentalsys.FS) experimentalsys.Errno { return open(f, "notes.txt", rdonly|creat|excl) },
		want: experimentalsys.EPERM, deny: "is not in its write allowlist"},
	{name: "set size through a read-only descriptor", do: func(f experimentalsys.FS) experimentalsys.Errno {
		return withFile(f, "notes.txt", rdonly, func(h experimentalsys.File) experimentalsys.Errno { return h.Truncate(0) })
	}, want: experimentalsys.EBADF, deny: "is not in its write allowlist"},
	{name: "set times through a read-only descriptor", do: func(f experimentalsys.FS) experimentalsys.Errno {
		return withFile(f, "notes.txt", rdonly, func(h experimentalsys.File) experimentalsys.Errno { return h.Utimens(1e9, 1e9) })
	}, want: experimentalsys.EBADF, deny: "is not in its write allowlist"},
	{name: "set times through a directory descriptor", do: func(f experimentalsys.FS) experimentalsys.Errno {
		return withFile(f, ".", rdonly, func(h experimentalsys.File) experimentalsys.Errno { return h.Utimens(1e9, 1e9) })
	}, want: experimentalsys.EBADF, deny: "is not in its write allowlist"},
	{name: "write through a read-only descriptor", do: func(f experimentalsys.FS) experimentalsys.Errno {
		return withFile(f, "notes.txt", rdonly, func(h experimentalsys.File) experimentalsys.Errno { _, e := h.Write([]byte("x")); return e })
	}, want: experimentalsys.EBADF},
	{name: "set times through a read-only descriptor of a writable file", do: func(f experimentalsys.FS) experimentalsys.Errno {
		return withFile(f, "out/a.txt", rdonly, func(h experimentalsys.File) experimentalsys.Errno { return h.Utimens(1e9, 1e9) })
	}, want: experimentalsys.EBADF, deny: "was opened read-only"},
	{name: "set size and times through a writable descriptor", do: func(f experimentalsys.FS) experimentalsys.Errno {
		return withFile(f, "out/a.txt", wronly, func(h experimentalsys.File) experimentalsys.Errno {
			if e := h.Truncate(10); e != 0 {
				return e
			}
			return h.Utimens(1e9, 1e9)
		})
	}},

	// "..", also from a directory descriptor (wazero joins its name): it is
	// resolved lexically in the guest's view, where every path is the host
	// path of the same name, and the result is decided like any other path.
	{name: ".. to read outside", do: func(f experimentalsys.FS) experimentalsys.Errno { return open(f, "../outside.txt", rdonly) },
		want: experimentalsys.EACCES, deny: "is not in its read allowlist ($T/m/out/**, $T/m/notes.txt)"},
	{name: ".. to write outside", do: func(f experimentalsys.FS) experimentalsys.Errno { return put(f, "out/../../outside.txt", wronly, "x") },
		want: experimentalsys.EPERM, deny: "is not in its write allowlist ($T/m/out/**)"},
	{name: ".. from a subdirectory", do: func(f experimentalsys.FS) experimentalsys.Errno { return f.Unlink("out/sub/../../../outside.txt") },
		want: experimentalsys.EPERM, deny: "is not in its write allowlist ($T/m/out/**)"},
	{name: ".. to a hidden sibling", do: func(f experimentalsys.FS) experimentalsys.Errno {
		return put(f, "out/sub/../../out2/b.txt", wronly, "x")
	},
		want: experimentalsys.EPERM, deny: "is not in its write allowlist"},
	{name: ".. into the protected directory", do: func(f experimentalsys.FS) experimentalsys.Errno {
		return put(f, "out/../../station/state.db", wronly|trunc, "x")
	},
		want: experimentalsys.EPERM, deny: "is not in its write allowlist ($T/m/out/**)"},
	{name: "an absolute path stays inside the mount", do: func(f experimentalsys.FS) experimentalsys.Errno { return open(f, "/out/a.txt", rdonly) }},

	// Symbolic links planted beforehand.
	{name: "planted link out: write", plant: map[string]string{"m/out/l": "->../../outside.txt"},
		do:   func(f experimentalsys.FS) experimentalsys.Errno { return put(f, "out/l", wronly, "x") },
		want: experimentalsys.EPERM, deny: "is a symlink whose target leaves the mount"},
	{name: "planted link out: read", plant: map[string]string{"m/out/l": "->../../outside.txt"},
		do:   func(f experimentalsys.FS) experimentalsys.Errno { return open(f, "out/l", rdonly) },
		want: experimentalsys.EACCES, deny: "is a symlink whose target leaves the mount"},
	{name: "planted link out: truncate on open", plant: map[string]string{"m/out/l": "->../../outside.txt"},
		do:   func(f experimentalsys.FS) experimentalsys.Errno { return open(f, "out/l", wronly|trunc) },
		want: experimentalsys.EPERM, deny: "is a symlink whose target leaves the mount"},
	{name: "planted link out: stat", plant: map[string]string{"m/out/l": "->../../outside.txt"},
		do:   func(f experimentalsys.FS) experimentalsys.Errno { _, e := f.Stat("out/l"); return e },
		want: experimentalsys.EACCES, deny: "is a symlink whose target leaves the mount"},
	{name: "planted link out: chmod", plant: map[string]string{"m/out/l": "->../../outside.txt"},
		do:   func(f experimentalsys.FS) experimentalsys.Errno { return f.Chmod("out/l", 0o777) },
		want: experimentalsys.EPERM, deny: "is a symlink whose target leaves the mount"},
	{name: "planted link out: set times", plant: map[string]string{"m/out/l": "->../../outside.txt"},
		do:   func(f experimentalsys.FS) experimentalsys.Errno { return f.Utimens("out/l", 1e9, 1e9) },
		want: experimentalsys.EPERM, deny: "is a symlink whose target leaves the mount"},
	{name: "planted link out: lstat and unlink act on the link", plant: map[string]string{"m/out/l": "->../../outside.txt"},
		do: func(f experimentalsys.FS) experimentalsys.Errno {
			if _, e := f.Lstat("out/l"); e != 0 {
				return e
			}
			return f.Unlink("out/l")
		}},
	{name: "planted link out: rename moves the link", plant: map[string]string{"m/out/l": "->../../outside.txt"},
		do: func(f experimentalsys.FS) experimentalsys.Errno { return f.Rename("out/l", "out/l2") }},
	{name: "planted link out: mkdir does not follow", plant: map[string]string{"m/out/l": "->../../newdir"},
		do: func(f experimentalsys.FS) experimentalsys.Errno { return f.Mkdir("out/l", 0o755) }, want: experimentalsys.EEXIST},
	// A trailing slash reaches these system calls, which never follow the
	// link at the last element: nothing is created at its target.
	{name: "planted link out: mkdir with a trailing slash does not follow", plant: map[string]string{"m/out/l": "->../../newdir"},
		do: func(f experimentalsys.FS) experimentalsys.Errno { return f.Mkdir("out/l/", 0o755) }, want: experimentalsys.EEXIST},
	{name: "planted link out: symlink with a trailing slash does not follow", plant: map[string]string{"m/out/l": "->../../newdir"},
		do: func(f experimentalsys.FS) experimentalsys.Errno { return f.Symlink("a.txt", "out/l/") }, want: experimentalsys.EEXIST},
	{name: "planted link out: link with a trailing slash does not follow", plant: map[string]string{"m/out/l": "->../../newdir"},
		do: func(f experimentalsys.FS) experimentalsys.Errno { return f.Link("out/a.txt", "out/l/") }, want: experimentalsys.EEXIST},
	{name: "planted link out: rename onto it with a trailing slash", plant: map[string]string{"m/out/l": "->../../newdir"},
		do: func(f experimentalsys.FS) experimentalsys.Errno { return f.Rename("out/sub", "out/l/") }, want: experimentalsys.ENOTDIR},
	{name: "planted link out: unlink and rmdir with a trailing slash", plant: map[string]string{"m/out/l": "->../.."},
		do: func(f experimentalsys.FS) experimentalsys.Errno {
			if e := f.Unlink("out/l/"); e != experimentalsys.ENOTDIR {
				return e
			}
			return f.Rmdir("out/l/")
		}, want: experimentalsys.ENOTDIR},
	{name: "planted link out: open with a trailing slash and O_NOFOLLOW", plant: map[string]string{"m/out/l": "->../.."},
		do: func(f experimentalsys.FS) experimentalsys.Errno {
			return open(f, "out/l/", rdonly|experimentalsys.O_NOFOLLOW|experimentalsys.O_DIRECTORY)
		}, want: experimentalsys.EACCES, deny: "is a symlink whose target leaves the mount"},
	{name: "planted link out: lstat with a trailing slash", plant: map[string]string{"m/out/l": "->../.."},
		do:   func(f experimentalsys.FS) experimentalsys.Errno { _, e := f.Lstat("out/l/"); return e },
		want: experimentalsys.EACCES, deny: "is a symlink whose target leaves the mount"},
	{name: "planted link out: hard link of it with a trailing slash", plant: map[string]string{"m/out/l": "->../.."},
		do:   func(f experimentalsys.FS) experimentalsys.Errno { return f.Link("out/l/", "out/l2") },
		want: experimentalsys.EACCES, deny: "is a symlink whose target leaves the mount"},
	{name: "planted directory link out: create inside", plant: map[string]string{"m/out/d": "->../.."},
		do: func(f experimentalsys.FS) experimentalsys.Errno {
			return put(f, "out/d/outside.txt", wronly|creat|trunc, "x")
		},
		want: experimentalsys.EPERM, deny: "is a symlink whose target leaves the mount"},
	{name: "planted directory link out: mkdir inside", plant: map[string]string{"m/out/d": "->../.."},
		do:   func(f experimentalsys.FS) experimentalsys.Errno { return f.Mkdir("out/d/x", 0o755) },
		want: experimentalsys.EPERM, deny: "is a symlink whose target leaves the mount"},
	{name: "planted directory link out: rename into it", plant: map[string]string{"m/out/d": "->../.."},
		do:   func(f experimentalsys.FS) experimentalsys.Errno { return f.Rename("out/a.txt", "out/d/a.txt") },
		want: experimentalsys.EPERM, deny: "is a symlink whose target leaves the mount"},
	{name: "planted absolute link", plant: map[string]string{"m/out/abs": "->$T/outside.txt"},
		do:   func(f experimentalsys.FS) experimentalsys.Errno { return put(f, "out/abs", wronly|trunc, "x") },
		want: experimentalsys.EPERM, deny: "is a symlink with an absolute target"},
	{name: "planted absolute link to a writable file", plant: map[string]string{"m/out/abs": "->$T/m/out/a.txt"},
		do:   func(f experimentalsys.FS) experimentalsys.Errno { return open(f, "out/abs", rdonly) },
		want: experimentalsys.EACCES, deny: "is a symlink with an absolute target"},
	{name: "planted link to a hidden sibling: write", plant: map[string]string{"m/out/sib": "->../out2/b.txt"},
		do:   func(f experimentalsys.FS) experimentalsys.Errno { return put(f, "out/sib", wronly, "x") },
		want: experimentalsys.EPERM, deny: "is not in its write allowlist ($T/m/out/**) (resolved from $T/m/out/sib)"},
	{name: "planted link to a hidden sibling: truncate", plant: map[string]string{"m/out/sib": "->../out2/b.txt"},
		do:   func(f experimentalsys.FS) experimentalsys.Errno { return open(f, "out/sib", rdwr|trunc) },
		want: experimentalsys.EPERM, deny: "is not in its write allowlist"},
	{name: "planted link to a hidden sibling: read", plant: map[string]string{"m/out/sib": "->../secret/key"},
		do:   func(f experimentalsys.FS) experimentalsys.Errno { return open(f, "out/sib", rdonly) },
		want: experimentalsys.EACCES, deny: "is not in its read allowlist"},
	{name: "planted link to a readable file: read", plant: map[string]string{"m/out/n": "->../notes.txt"},
		do: func(f experimentalsys.FS) experimentalsys.Errno { return open(f, "out/n", rdonly) }},
	{name: "planted link to a readable file: write", plant: map[string]string{"m/out/n": "->../notes.txt"},
		do:   func(f experimentalsys.FS) experimentalsys.Errno { return put(f, "out/n", wronly|appnd, "x") },
		want: experimentalsys.EPERM, deny: "is not in its write allowlist"},
	{name: "planted link to a readable file: chmod", plant: map[string]string{"m/out/n": "->../notes.txt"},
		do:   func(f experimentalsys.FS) experimentalsys.Errno { return f.Chmod("out/n", 0o600) },
		want: experimentalsys.EPERM, deny: "is not in its write allowlist"},
	{name: "planted directory link to a sibling: create", plant: map[string]string{"m/out/d": "->../out2"},
		do:   func(f experimentalsys.FS) experimentalsys.Errno { return put(f, "out/d/new", wronly|creat, "x") },
		want: experimentalsys.EPERM, deny: "is not in its write allowlist"},
	{name: "planted directory link to a sibling: mkdir", plant: map[string]string{"m/out/d": "->../out2"},
		do:   func(f experimentalsys.FS) experimentalsys.Errno { return f.Mkdir("out/d/new", 0o755) },
		want: experimentalsys.EPERM, deny: "is not in its write allowlist"},
	{name: "planted directory link to a sibling: unlink", plant: map[string]string{"m/out/d": "->../out2"},
		do:   func(f experimentalsys.FS) experimentalsys.Errno { return f.Unlink("out/d/b.txt") },
		want: experimentalsys.EPERM, deny: "is not in its write allowlist"},
	{name: "planted directory link to a sibling: rename out of it", plant: map[string]string{"m/out/d": "->../out2"},
		do:   func(f experimentalsys.FS) experimentalsys.Errno { return f.Rename("out/d/b.txt", "out/b.txt") },
		want: experimentalsys.EPERM, deny: "source $T/m/out2/b.txt is not in its write allowlist"},
	{name: "planted dangling link: create through it", plant: map[string]string{"m/out/dl": "->../out2/new.txt"},
		do:   func(f experimentalsys.FS) experimentalsys.Errno { return put(f, "out/dl", wronly|creat, "x") },
		want: experimentalsys.EPERM, deny: "is not in its write allowlist"},
	{name: "planted dangling link inside out: create through it", plant: map[string]string{"m/out/dl": "->new.txt"},
		do: func(f experimentalsys.FS) experimentalsys.Errno { return put(f, "out/dl", wronly|creat, "x") }},
	{name: "exclusive create on a link does not follow", plant: map[string]string{"m/out/dl": "->new.txt"},
		do: func(f experimentalsys.FS) experimentalsys.Errno { return open(f, "out/dl", wronly|creat|excl) }, want: experimentalsys.EEXIST},
	{name: "O_NOFOLLOW on a link", plant: map[string]string{"m/out/n": "->a.txt"},
		do: func(f experimentalsys.FS) experimentalsys.Errno {
			return open(f, "out/n", rdonly|experimentalsys.O_NOFOLLOW)
		}, want: experimentalsys.ELOOP},
	{name: "a link loop", plant: map[string]string{"m/out/x": "->y", "m/out/y": "->x"},
		do: func(f experimentalsys.FS) experimentalsys.Errno { return open(f, "out/x", rdonly) }, want: experimentalsys.ELOOP},

	// Symbolic links the module creates.
	{name: "symlink out of the mount", do: func(f experimentalsys.FS) experimentalsys.Errno { return f.Symlink("../../outside.txt", "out/s") },
		want: experimentalsys.EPERM, deny: "is a symlink whose target (../../outside.txt) leaves the mount"},
	{name: "symlink with an absolute target", do: func(f experimentalsys.FS) experimentalsys.Errno { return f.Symlink("/etc/passwd", "out/s") },
		want: experimentalsys.EPERM, deny: "leaves the mount"},
	{name: "symlink out from a subdirectory", do: func(f experimentalsys.FS) experimentalsys.Errno { return f.Symlink("../../../x", "out/sub/s") },
		want: experimentalsys.EPERM, deny: "leaves the mount"},
	{name: "symlink in a place it may not write", do: func(f experimentalsys.FS) experimentalsys.Errno { return f.Symlink("b.txt", "out2/s") },
		want: experimentalsys.EPERM, deny: "is not in its write allowlist"},
	{name: "symlink inside the mount, then write through it", do: func(f experimentalsys.FS) experimentalsys.Errno {
		if e := f.Symlink("../out2/b.txt", "out/s"); e != 0 {
			return e
		}
		return put(f, "out/s", wronly|trunc, "x")
	}, want: experimentalsys.EPERM, deny: "is not in its write allowlist"},
	{name: "symlink moved so that it leaves the mount", do: func(f experimentalsys.FS) experimentalsys.Errno {
		if e := f.Symlink("../../notes.txt", "out/sub/s"); e != 0 { // $T/m/notes.txt
			return e
		}
		if e := f.Rename("out/sub/s", "out/s"); e != 0 { // now $T/notes.txt
			return e
		}
		return open(f, "out/s", rdonly)
	}, want: experimentalsys.EACCES, deny: "is a symlink whose target leaves the mount"},
	{name: "symlink with a NUL byte", do: func(f experimentalsys.FS) experimentalsys.Errno { return f.Symlink("a\x00b", "out/s") },
		want: experimentalsys.EINVAL, deny: "contains a NUL byte"},

	// Hard links.
	{name: "link a readable file into out", do: func(f experimentalsys.FS) experimentalsys.Errno { return f.Link("notes.txt", "out/n") },
		want: experimentalsys.EPERM, deny: "source is not in its write allowlist"},
	{name: "link a writable file out", do: func(f experimentalsys.FS) experimentalsys.Errno { return f.Link("out/a.txt", "out2/a") },
		want: experimentalsys.EPERM, deny: "destination is not in its write allowlist"},
	{name: "link a writable file out of the mount", do: func(f experimentalsys.FS) experimentalsys.Errno { return f.Link("out/a.txt", "../../x") },
		want: experimentalsys.EPERM, deny: "destination is not in its write allowlist ($T/m/out/**)"},
	{name: "planted hard link: write", plant: map[string]string{"m/out/h": "=>outside.txt"},
		do:   func(f experimentalsys.FS) experimentalsys.Errno { return put(f, "out/h", wronly, "x") },
		want: experimentalsys.EPERM, deny: "is a file with 2 hard links"},
	{name: "planted hard link: truncate on open", plant: map[string]string{"m/out/h": "=>outside.txt"},
		do:   func(f experimentalsys.FS) experimentalsys.Errno { return open(f, "out/h", rdwr|trunc) },
		want: experimentalsys.EPERM, deny: "is a file with 2 hard links"},
	{name: "planted hard link: chmod", plant: map[string]string{"m/out/h": "=>outside.txt"},
		do:   func(f experimentalsys.FS) experimentalsys.Errno { return f.Chmod("out/h", 0o600) },
		want: experimentalsys.EPERM, deny: "is a file with 2 hard links"},
	{name: "planted hard link: set times", plant: map[string]string{"m/out/h": "=>outside.txt"},
		do:   func(f experimentalsys.FS) experimentalsys.Errno { return f.Utimens("out/h", 1e9, 1e9) },
		want: experimentalsys.EPERM, deny: "is a file with 2 hard links"},
	{name: "planted hard link: link again", plant: map[string]string{"m/out/h": "=>outside.txt"},
		do:   func(f experimentalsys.FS) experimentalsys.Errno { return f.Link("out/h", "out/h2") },
		want: experimentalsys.EPERM, deny: "source is a file with 2 hard links"},

	// Renames across the boundary.
	{name: "rename out of out", do: func(f experimentalsys.FS) experimentalsys.Errno { return f.Rename("out/a.txt", "out2/a.txt") },
		want: experimentalsys.EPERM, deny: "destination is not in its write allowlist"},
	{name: "rename over a hidden file", do: func(f experimentalsys.FS) experimentalsys.Errno { return f.Rename("out/a.txt", "out.bak") },
		want: experimentalsys.EPERM, deny: "destination is not in its write allowlist"},
	{name: "rename into out", do: func(f experimentalsys.FS) experimentalsys.Errno { return f.Rename("notes.txt", "out/notes.txt") },
		want: experimentalsys.EPERM, deny: "source is not in its write allowlist"},
	{name: "rename out of the mount", do: func(f experimentalsys.FS) experimentalsys.Errno { return f.Rename("out/a.txt", "../../a.txt") },
		want: experimentalsys.EPERM, deny: "destination is not in its write allowlist ($T/m/out/**)"},
	{name: "rename a directory out", do: func(f experimentalsys.FS) experimentalsys.Errno { return f.Rename("out/sub", "out2/sub") },
		want: experimentalsys.EPERM, deny: "destination is not in its write allowlist"},
	{name: "rename inside out", do: func(f experimentalsys.FS) experimentalsys.Errno { return f.Rename("out/a.txt", "out/sub/a.txt") }},

	// Names.
	{name: "a name longer than 255 bytes", do: func(f experimentalsys.FS) experimentalsys.Errno {
		return put(f, "out/"+strings.Repeat("a", 256), wronly|creat, "x")
	}, want: experimentalsys.ENAMETOOLONG, deny: "has a name longer than 255 bytes"},
	{name: "a path longer than 4095 bytes", do: func(f experimentalsys.FS) experimentalsys.Errno {
		return put(f, "out/"+strings.Repeat("a/", 2100), wronly|creat, "x")
	}, want: experimentalsys.ENAMETOOLONG, deny: "is longer than 4095 bytes"},
	{name: "a NUL byte", do: func(f experimentalsys.FS) experimentalsys.Errno { return put(f, "out/a.txt\x00.sh", wronly|creat, "x") },
		want: experimentalsys.EINVAL, deny: "contains a NUL byte"},
	{name: "a NUL byte to escape", do: func(f experimentalsys.FS) experimentalsys.Errno { return f.Unlink("out/\x00/../../../outside.txt") },
		want: experimentalsys.EINVAL, deny: "contains a NUL byte"},

	// Special files.
	{name: "a FIFO: read", plant: map[string]string{"m/out/fifo": "|"},
		do:   func(f experimentalsys.FS) experimentalsys.Errno { return open(f, "out/fifo", rdonly) },
		want: experimentalsys.EACCES, deny: "is a FIFO; only regular files and directories can be opened"},
	{name: "a FIFO: write", plant: map[string]string{"m/out/fifo": "|"},
		do:   func(f experimentalsys.FS) experimentalsys.Errno { return put(f, "out/fifo", wronly, "x") },
		want: experimentalsys.EPERM, deny: "is a FIFO"},
	{name: "a character device", plant: map[string]string{"m/out/null": "c"},
		do:   func(f experimentalsys.FS) experimentalsys.Errno { return put(f, "out/null", wronly, "x") },
		want: experimentalsys.EPERM, deny: "is a character device"},
	// A socket, which any user can create (a device needs root).
	{name: "a socket: read", plant: map[string]string{"m/out/sock": "s"},
		do:   func(f experimentalsys.FS) experimentalsys.Errno { return open(f, "out/sock", rdonly) },
		want: experimentalsys.EACCES, deny: "is a socket; only regular files and directories can be opened"},
	{name: "a socket: write", plant: map[string]string{"m/out/sock": "s"},
		do:   func(f experimentalsys.FS) experimentalsys.Errno { return put(f, "out/sock", wronly|appnd, "x") },
		want: experimentalsys.EPERM, deny: "is a socket"},
	{name: "a FIFO through a link", plant: map[string]string{"m/out/fifo": "|", "m/out/l": "->fifo"},
		do:   func(f experimentalsys.FS) experimentalsys.Errno { return open(f, "out/l", rdonly) },
		want: experimentalsys.EACCES, deny: "is a FIFO"},
}

// withFile opens p and runs fn on it.
func withFile(fsys experimentalsys.FS, p string, flag experimentalsys.Oflag, fn func(experimentalsys.File) experimentalsys.Errno) experimentalsys.Errno {
	f, e := fsys.OpenFile(p, flag, 0)
	if e != 0 {
		return e
	}
	defer f.Close()
	return fn(f)
}

// plant adds entries to the tree: "->x" is a symbolic link, "=>x" a hard
// link to the base-relative x, "|" a FIFO, "s" a Unix socket, "c" a
// character device.
func plant(t *testing.T, base string, entries map[string]string) {
	t.Helper()
	rest := map[string]string{}
	for n, v := range entries {
		v = strings.ReplaceAll(v, "$T", base)
		p := filepath.Join(base, n)
		switch {
		case strings.HasPrefix(v, "=>"):
			if err := os.Link(filepath.Join(base, v[2:]), p); err != nil {
				t.Fatal(err)
			}
		case v == "|":
			if err := syscall.Mkfifo(p, 0o644); err != nil {
				t.Fatal(err)
			}
		case v == "s":
			fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
			if err != nil {
				t.Fatal(err)
			}
			err = syscall.Bind(fd, &syscall.SockaddrUnix{Name: p})
			syscall.Close(fd) // the socket's file stays
			if err != nil {
				t.Fatal(err)
			}
		case v == "c": // the null device, where the test may create one
			if err := syscall.Mknod(p, syscall.S_IFCHR|0o666, 1<<8|3); err != nil {
				t.Skipf("cannot create a device: %v", err)
			}
		default:
			rest[n] = v
		}
	}
	tree(t, base, rest)
}

// TestAttacks runs each attack on a fresh tree and checks the result, the
// recorded denial, the violation reported to the instance, and that
// nothing outside $T/m/out changed.
func TestAttacks(t *testing.T) {
	for _, a := range attacks {
		t.Run(a.name, func(t *testing.T) {
			base := t.TempDir()
			tree(t, base, stdTree)
			plant(t, base, a.plant)
			e := newEnv(t, base, stdWrites, stdReads, 0)
			before := snapshot(t, base, "m/out")

			got := a.do(e.mount("m"))
			if got != a.want {
				t.Errorf("got errno %v, want %v\n%s", got, a.want, summary(e.rec, base))
			}
			var denials []string
			for _, d := range e.rec.All() {
				if !d.Allowed {
					denials = append(denials, strings.ReplaceAll(d.Reason, base, "$T"))
					if d.Module != "dave/probe" || d.Command != "run" || d.Capability != "filesystem" {
						t.Errorf("denial %+v: wrong attribution", d)
					}
				}
			}
			switch {
			case a.deny == "" && len(denials) > 0:
				t.Errorf("got denials %q, want none", denials)
			case a.deny != "" && (len(denials) != 1 || !strings.Contains(denials[0], a.deny)):
				t.Errorf("got denials %q, want one containing %q", denials, a.deny)
			}
			if len(e.violations) != len(denials) {
				t.Errorf("got %d violations reported to the instance, want %d", len(e.violations), len(denials))
			}
			unchanged(t, base, before, "m/out")
		})
	}
}
