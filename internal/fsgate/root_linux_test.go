package fsgate

import (
	"context"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero"
	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
)

// TestGuestView runs, from a Go guest, the paths of issue 11: siblings that
// share a prefix with a mount root, host paths outside every mount, and
// paths that wazero's WASI layer refuses before any file system sees them.
// Each must be a denial of the gate, recorded and naming the module, with
// EACCES for a read and EPERM for a change; none may reach a mount it does
// not name.
func TestGuestView(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a wasm guest")
	}
	base := t.TempDir()
	tree(t, base, map[string]string{
		"sandbox/out/":        "",
		"sandbox/outside.txt": "keep",
		"reports/":            "",
		"secret.txt":          "secret",
	})
	e := newEnv(t, base, []string{"$T/sandbox/out/**", "$T/reports/**"}, nil, 0)
	e.command = "view"
	before := snapshot(t, base, "sandbox/out")
	top := strings.Split(base, "/")[1] // the first name of $T, the only one in "/"
	got := runGuest(t, e,
		"write|$T/sandbox/outside.txt|owned",
		"write|$T/reportsX.md|owned",
		"write|$T/sandbox/out.bak|owned",
		"read|$T/sandbox/outside.txt",
		"read|/proc/self/environ",
		"stat|/etc/passwd",
		"ls|/",
		"ls|$T",
		"ls|$T/sandbox",
		"stat|$T/sandbox",
		"mkdir|$T/new",
		"openat|/|../etc/passwd",
		"openat|/|/proc/self/environ",
		"openat|$T/sandbox/out|../../secret.txt",
		"openatw|$T/sandbox/out|../../secret.txt",
		"openat|$T/sandbox/out|\xffx",
		"openatw|$T/sandbox/out|\xffx",
		"write|$T/sandbox/out/ok.txt|ok",
		"openat|$T/sandbox|out/ok.txt",
	)
	want := `write $T/sandbox/outside.txt: open $T/sandbox/outside.txt: Operation not permitted
write $T/reportsX.md: open $T/reportsX.md: Operation not permitted
write $T/sandbox/out.bak: open $T/sandbox/out.bak: Operation not permitted
read $T/sandbox/outside.txt: open $T/sandbox/outside.txt: Permission denied
read /proc/self/environ: open /proc/self/environ: Permission denied
stat /etc/passwd: stat /etc/passwd: Permission denied
ls /: ok ` + top + `
ls $T: ok reports,sandbox
ls $T/sandbox: ok out
stat $T/sandbox: ok d--------- 0
mkdir $T/new: mkdir $T/new: Operation not permitted
openat /: Permission denied
openat /: Permission denied
openat $T/sandbox/out: Permission denied
openatw $T/sandbox/out: Operation not permitted
openat $T/sandbox/out: Permission denied
openatw $T/sandbox/out: Operation not permitted
write $T/sandbox/out/ok.txt: ok
openat $T/sandbox: ok
`
	if got != want {
		t.Errorf("guest output:\n%s\nwant:\n%s", got, want)
	}
	const (
		writes = "is not in its write allowlist ($T/sandbox/out/**, $T/reports/**)"
		reads  = "is not in its read allowlist ($T/sandbox/out/**, $T/reports/**)"
		dotdot = `leads out of its directory descriptor with ".."`
	)
	wantDenials := []string{
		"deny $T/sandbox/outside.txt: " + writes,
		"deny $T/reportsX.md: " + writes,
		"deny $T/sandbox/out.bak: " + writes,
		"deny $T/sandbox/outside.txt: " + reads,
		"deny /proc/self/environ: " + reads,
		"deny /etc/passwd: " + reads,
		"deny $T/new: " + writes,
		"deny /../etc/passwd: " + dotdot,
		"deny /proc/self/environ: is an absolute path; a WASI path is relative to its directory descriptor",
		"deny $T/sandbox/out/../../secret.txt: " + dotdot,
		"deny $T/sandbox/out/../../secret.txt: " + dotdot,
		`deny $T/sandbox/out/\xffx: is not valid UTF-8`,
		`deny $T/sandbox/out/\xffx: is not valid UTF-8`,
	}
	var denials []string
	for _, line := range strings.Split(summary(e.rec, base), "\n") {
		if strings.HasPrefix(line, "deny ") {
			denials = append(denials, line)
		}
	}
	if !slices.Equal(denials, wantDenials) {
		t.Errorf("denials:\n%s\nwant:\n%s", strings.Join(denials, "\n"), strings.Join(wantDenials, "\n"))
	}
	for _, d := range e.rec.All() {
		if d.Module != "dave/probe" || d.Command != "view" || d.Capability != "filesystem" {
			t.Errorf("decision %+v: wrong attribution", d)
		}
	}
	if len(e.violations) != len(wantDenials) {
		t.Errorf("%d violations reported to the instance, want %d", len(e.violations), len(wantDenials))
	}
	unchanged(t, base, before, "sandbox/out")
	for _, p := range []string{"sandbox/out/side.txt", "sandbox/out/.bak", "reports/X.md"} {
		if _, err := os.Lstat(base + "/" + p); err == nil {
			t.Errorf("the guest wrote %s, a path it never named", p)
		}
	}
}

// Outside the mounts the module sees "/" and the directories on the way to
// its mount roots, listing only those names and telling nothing about the
// host's directories; everything else does not exist for it.
func TestAbove(t *testing.T) {
	base := t.TempDir()
	tree(t, base, map[string]string{"m/out/a.txt": "a", "m/other/": "", "data/x.csv": "x", "other.txt": "o"})
	e := newEnv(t, base, []string{"$T/m/out/**"}, []string{"$T/data/*.csv"}, 0)
	root, T := e.root, strings.TrimPrefix(base, "/")
	list := func(p string) (string, experimentalsys.Errno) {
		f, errno := root.OpenFile(p, rdonly, 0)
		if errno != 0 {
			return "", errno
		}
		defer f.Close()
		var names []string
		for {
			ds, errno := f.Readdir(1)
			if errno != 0 {
				return "", errno
			}
			if len(ds) == 0 {
				break
			}
			if ds[0].Type != fs.ModeDir {
				t.Errorf("%s/%s: type %v, want a directory", p, ds[0].Name, ds[0].Type)
			}
			names = append(names, ds[0].Name)
		}
		if _, errno := f.Seek(0, 0); errno != 0 {
			return "", errno
		}
		if again, _ := f.Readdir(-1); len(again) != len(names) {
			t.Errorf("%s after rewind: %d entries, want %d", p, len(again), len(names))
		}
		return strings.Join(names, " "), 0
	}
	for _, c := range []struct {
		dir, want string
	}{
		{".", strings.Split(T, "/")[0]},
		{"/", strings.Split(T, "/")[0]},
		{T, "data m"},
		{T + "/m", "out"},
		{T + "/", "data m"},
	} {
		if got, errno := list(c.dir); errno != 0 || got != c.want {
			t.Errorf("list %s = %q, %v; want %q", c.dir, got, errno, c.want)
		}
	}
	st, errno := root.Stat(T + "/m")
	if errno != 0 || st.Mode != fs.ModeDir|0o555 || st.Ino != aboveIno(base+"/m") || st.Dev != 0 || st.Mtim != 0 || st.Size != 0 {
		t.Errorf("stat $T/m = %+v, %v; want a bare directory", st, errno)
	}
	if st, errno := root.Stat(T + "/m/out"); errno != 0 || st.Mode&fs.ModeDir == 0 || st.Ino == aboveIno(base+"/m/out") {
		t.Errorf("stat of the mount root = %+v, %v; want the host's directory", st, errno)
	}
	if d := e.rec.All(); len(d) != 0 {
		t.Errorf("seeing the way to the roots recorded decisions:\n%s", summary(e.rec, base))
	}

	f, errno := root.OpenFile(T, rdonly, 0)
	if errno != 0 {
		t.Fatal(errno)
	}
	defer f.Close()
	for _, c := range []struct {
		name string
		do   func() experimentalsys.Errno
		want experimentalsys.Errno
		deny string // the denial, base written as $T; "" for none
	}{
		{"stat a sibling", func() experimentalsys.Errno { _, e := root.Stat(T + "/other.txt"); return e },
			experimentalsys.EACCES, "$T/other.txt: is not in its read allowlist ($T/m/out/**, $T/data/*.csv)"},
		{"stat a host path", func() experimentalsys.Errno { _, e := root.Lstat("etc"); return e },
			experimentalsys.EACCES, "/etc: is not in its read allowlist ($T/m/out/**, $T/data/*.csv)"},
		{"stat a name that does not exist", func() experimentalsys.Errno { _, e := root.Stat(T + "/nothing"); return e },
			experimentalsys.EACCES, "$T/nothing: is not in its read allowlist"},
		{"list a hidden directory in a directory above", func() experimentalsys.Errno { return open(root, T+"/m/other", rdonly) },
			experimentalsys.EACCES, "$T/m/other: is not in its read allowlist"},
		{"open a directory above for writing", func() experimentalsys.Errno { return open(root, T, wronly) },
			experimentalsys.EPERM, "$T: is not in its write allowlist ($T/m/out/**)"},
		{"create in a directory above", func() experimentalsys.Errno { return put(root, T+"/new.txt", wronly|creat, "x") },
			experimentalsys.EPERM, "$T/new.txt: is not in its write allowlist"},
		{"mkdir in a directory above", func() experimentalsys.Errno { return root.Mkdir(T+"/m2", 0o755) },
			experimentalsys.EPERM, "$T/m2: is not in its write allowlist"},
		{"rmdir a directory above", func() experimentalsys.Errno { return root.Rmdir(T + "/m") },
			experimentalsys.EPERM, "$T/m: is not in its write allowlist"},
		{"unlink a sibling", func() experimentalsys.Errno { return root.Unlink(T + "/other.txt") },
			experimentalsys.EPERM, "$T/other.txt: is not in its write allowlist"},
		{"chmod /", func() experimentalsys.Errno { return root.Chmod("/", 0o777) },
			experimentalsys.EPERM, "/: is not in its write allowlist"},
		{"set times of a directory above", func() experimentalsys.Errno { return root.Utimens(T, 1, 1) },
			experimentalsys.EPERM, "$T: is not in its write allowlist"},
		{"set times through its descriptor", func() experimentalsys.Errno { return f.Utimens(1, 1) },
			experimentalsys.EBADF, "$T: is not in its write allowlist"},
		{"write through its descriptor", func() experimentalsys.Errno { _, e := f.Write([]byte("x")); return e },
			experimentalsys.EISDIR, ""},
		{"symlink in a directory above", func() experimentalsys.Errno { return root.Symlink("m/out", T+"/l") },
			experimentalsys.EPERM, "$T/l: is not in its write allowlist"},
		{"rename out of the mount", func() experimentalsys.Errno { return root.Rename(T+"/m/out/a.txt", T+"/a.txt") },
			experimentalsys.EPERM, "$T/m/out/a.txt -> $T/a.txt: destination is not in its write allowlist ($T/m/out/**)"},
		{"link from outside into the mount", func() experimentalsys.Errno { return root.Link(T+"/other.txt", T+"/m/out/o") },
			experimentalsys.EPERM, "$T/other.txt -> $T/m/out/o: source is not in its write allowlist ($T/m/out/**)"},
		{"readlink of a directory above", func() experimentalsys.Errno { _, e := root.Readlink(T); return e },
			experimentalsys.EINVAL, ""},
		{"rename between two mounts", func() experimentalsys.Errno { return root.Rename(T+"/data/x.csv", T+"/m/out/x.csv") },
			experimentalsys.EPERM, "$T/data/x.csv -> $T/m/out/x.csv: source is not in its write allowlist ($T/m/out/**)"},
	} {
		e.rec.Reset()
		if got := c.do(); got != c.want {
			t.Errorf("%s: errno %v, want %v", c.name, got, c.want)
		}
		got := strings.TrimSpace(strings.ReplaceAll(summary(e.rec, base), "deny ", ""))
		if c.deny == "" && got != "" || c.deny != "" && (strings.Count(got, "\n") != 0 || !strings.HasPrefix(got, c.deny)) {
			t.Errorf("%s: decisions %q, want one denial %q", c.name, got, c.deny)
		}
	}
	if got := listing(t, base); got != "./\ndata/\ndata/x.csv x\nm/\nm/other/\nm/out/\nm/out/a.txt a\nother.txt o\n" {
		t.Errorf("the tree changed:\n%s", got)
	}
}

// A link's target is shown only if everything it names on the way is a
// path the module may see: readlink of any other link is refused, and lstat
// shows such a link without a size (the length of its target).
func TestReadlinkHidesHostPaths(t *testing.T) {
	base := t.TempDir()
	tree(t, base, stdTree)
	plant(t, base, map[string]string{
		"m/out/etc":    "->/etc",
		"m/out/abs":    "->$T/m/out/a.txt",
		"m/out/up":     "->../../outside.txt",
		"m/out/hidden": "->../secret/key",
		"m/out/via":    "->../secret/../out/a.txt",
		"m/out/rel":    "->a.txt",
		"m/out/notes":  "->../notes.txt",
		"m/out/sub/l":  "->../../out/sub",
		"m/out/dots":   "->./../out/./a.txt",
		"m/out/new":    "->not-yet.txt",
	})
	e := newEnv(t, base, stdWrites, stdReads, 0)
	fsys := e.mount("m/out")
	for _, c := range []struct {
		link, want string // want "" means refused
	}{
		{"etc", ""},
		{"abs", base + "/m/out/a.txt"},
		{"up", ""},
		{"hidden", ""},
		{"via", ""},
		{"rel", "a.txt"},
		{"notes", "../notes.txt"},
		{"sub/l", "../../out/sub"},
		{"dots", "./../out/./a.txt"},
		{"new", "not-yet.txt"},
	} {
		e.rec.Reset()
		got, errno := fsys.Readlink(c.link)
		st, serr := fsys.Lstat(c.link)
		switch {
		case c.want == "" && (errno != experimentalsys.EACCES || got != ""):
			t.Errorf("readlink %s = %q, %v; want EACCES", c.link, got, errno)
		case c.want == "" && !strings.Contains(summary(e.rec, base), "deny $T/m/out/"+c.link+": is a symlink whose target is not in its read allowlist"):
			t.Errorf("readlink %s: decisions\n%s", c.link, summary(e.rec, base))
		case c.want != "" && (errno != 0 || got != c.want):
			t.Errorf("readlink %s = %q, %v; want %q", c.link, got, errno, c.want)
		case serr != 0 || st.Size != int64(len(c.want)):
			t.Errorf("lstat %s: size %d, %v; want %d", c.link, st.Size, serr, len(c.want))
		}
	}
}

// runtimeRefuses refuses exactly what wazero's WASI layer refuses.
func TestRuntimeRefuses(t *testing.T) {
	for _, p := range []string{
		"", ".", "a", "a/b", "a/", "a//b", "./a", "a/.", "..", "../", "../a", "a/../..", "a/../../b", "a/..", "a/../b",
		"..a", "a..", "a/..b/c", "/", "/a", "//a", "/..", "\xff", "a/\xffb", "\x00", "a\x00/../..", "...", ".../a",
	} {
		got := runtimeRefuses([]byte(p)) != ""
		if want := !fs.ValidPath(path.Clean(p)); got != want {
			t.Errorf("runtimeRefuses(%q) = %v, want %v", p, got, want)
		}
	}
}

// The path arguments InstantiateWASI looks at are the ones wazero's WASI
// functions take.
func TestWASIPathArgs(t *testing.T) {
	ctx := context.Background()
	r := wazero.NewRuntime(ctx)
	defer r.Close(ctx)
	defs, err := wasiDefinitions(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for name := range defs {
		if strings.HasPrefix(name, "path_") {
			names = append(names, name)
		}
	}
	var wrapped []string
	for _, w := range pathFuncs {
		wrapped = append(wrapped, w.name)
		params := defs[w.name].ParamNames()
		for _, p := range w.paths {
			fd, ptr, n := params[p.fd], params[p.ptr], params[p.len]
			if !strings.HasSuffix(fd, "fd") || !strings.HasSuffix(ptr, "path") || n != ptr+"_len" {
				t.Errorf("%s: arguments %q %q %q are not a descriptor, a path and its length", w.name, fd, ptr, n)
			}
		}
	}
	slices.Sort(names)
	if !slices.Equal(names, wrapped) {
		t.Errorf("wrapped %q, want every path function %q", wrapped, names)
	}
}

// A rename or link between two mounts is decided like one inside a mount
// (wazero's WASI layer refused it with ENOSYS when each mount was its own
// preopened directory).
func TestAcrossMounts(t *testing.T) {
	base := t.TempDir()
	tree(t, base, map[string]string{"a/x": "x", "b/": ""})
	e := newEnv(t, base, []string{"$T/a/**", "$T/b/**"}, nil, 0)
	fsys := e.mount(".")
	for _, c := range []struct {
		name string
		do   func() experimentalsys.Errno
		want experimentalsys.Errno
	}{
		{"rename", func() experimentalsys.Errno { return fsys.Rename("a/x", "b/y") }, 0},
		{"link", func() experimentalsys.Errno { return fsys.Link("b/y", "a/z") }, 0},
		{"rename a mount root into another", func() experimentalsys.Errno { return fsys.Rename("b", "a/b") }, experimentalsys.EPERM},
	} {
		if got := c.do(); got != c.want {
			t.Errorf("%s: errno %v, want %v\n%s", c.name, got, c.want, summary(e.rec, base))
		}
	}
	if got := summary(e.rec, base); got != `allow $T/a/x -> $T/b/y: rename (allowed by $T/a/**)
allow $T/b/y -> $T/a/z: link (allowed by $T/b/**)
deny $T/b -> $T/a/b: source is the root of a mount
` {
		t.Errorf("decisions:\n%s", got)
	}
	if got := listing(t, base); got != "./\na/\na/z x\nb/\nb/y x\n" {
		t.Errorf("tree:\n%s", got)
	}
}

func TestScanRel(t *testing.T) {
	for _, c := range []struct {
		rel     string
		clean   bool
		longest int
	}{
		{"", true, 0},
		{"a", true, 1},
		{"a/bcd/ef", true, 3},
		{"a//b", false, 1},
		{"./a", false, 1},
		{"a/.", false, 1},
		{"a/../bb", false, 2},
		{"..", false, 2},
		{"...", true, 3},
		{"a/", false, 1},
	} {
		clean, longest := scanRel(c.rel)
		if clean != c.clean || longest != c.longest {
			t.Errorf("scanRel(%q) = %v, %d; want %v, %d", c.rel, clean, longest, c.clean, c.longest)
		}
		if want := c.rel == "" || path.Clean(c.rel) == c.rel && c.rel != "." && !escapes(c.rel) && !strings.HasPrefix(c.rel, "/"); clean != want {
			t.Errorf("scanRel(%q) clean = %v, path.Clean says %v", c.rel, clean, want)
		}
	}
}
