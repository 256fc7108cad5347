package fsgate

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"golang.org/x/sys/unix"
)

func TestNew(t *testing.T) {
	base := t.TempDir()
	tree(t, base, map[string]string{
		"out/":             "",
		"out/in/":          "",
		"data/":            "",
		"notes/todo.txt":   "x",
		"station/state.db": "x",
		"home/":            "",
		"file":             "x",
		"link":             "->station",
	})
	for _, c := range []struct {
		name          string
		writes, reads []string
		mounts        string // mount paths, base written as $T
		str           string
		err           string
	}{
		{name: "no globs", mounts: "", str: "allow: (none)"},
		{name: "one tree", writes: []string{"$T/out/**"}, mounts: "$T/out", str: "allow: $T/out/**"},
		{name: "reads too", writes: []string{"$T/out/**"}, reads: []string{"$T/data/*.csv"},
			mounts: "$T/data $T/out", str: "allow: $T/out/** (reads: $T/data/*.csv)"},
		{name: "reads only", reads: []string{"$T/data/**"}, mounts: "$T/data", str: "allow: (none) (reads: $T/data/**)"},
		{name: "a literal file mounts its directory", writes: []string{"$T/notes/todo.txt"}, mounts: "$T/notes"},
		{name: "nested roots collapse", writes: []string{"$T/out/in/**", "$T/out/*.txt"}, reads: []string{"$T/out/in/x/**"}, mounts: "$T/out"},
		{name: "a missing root", writes: []string{"$T/missing/**"},
			err: `write glob "$T/missing/**": mount root $T/missing does not exist (the operator creates it)`},
		{name: "a root that is a file", writes: []string{"$T/file/*"}, err: "mount root $T/file is not a directory"},
		{name: "the protected directory", writes: []string{"$T/station/**"},
			err: `write glob "$T/station/**": mount root $T/station contains the protected directory $T/station`},
		{name: "inside the protected directory", reads: []string{"$T/station/modules/**"},
			err: "mount root $T/station"},
		{name: "above the protected directory", writes: []string{"$T/*.txt"},
			err: `write glob "$T/*.txt": mount root $T contains the protected directory $T/station`},
		{name: "the protected directory through a link", writes: []string{"$T/link/**"},
			err: `write glob "$T/link/**": mount root $T/link contains the protected directory $T/station`},
		{name: "an invalid glob", writes: []string{"$T/out/[**"}, err: `write glob "$T/out/[**": is not a valid glob`},
		{name: "a relative glob", reads: []string{"out/**"}, err: `read glob "out/**": must be an absolute path`},
	} {
		t.Run(c.name, func(t *testing.T) {
			g, err := New(Options{
				Module:    "dave/probe",
				Writes:    expand(base, c.writes),
				Reads:     expand(base, c.reads),
				Protected: []string{filepath.Join(base, "station")},
			})
			if c.err != "" {
				if err == nil || !strings.Contains(strings.ReplaceAll(err.Error(), base, "$T"), c.err) {
					t.Fatalf("New error = %v, want one containing %q", err, c.err)
				}
				if !strings.HasPrefix(err.Error(), "fsgate: module dave/probe: ") {
					t.Errorf("New error %q does not name the module", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			fsys, err := g.FS(Hooks{})
			if err != nil {
				t.Fatal(err)
			}
			if (fsys == nil) != (c.mounts == "") {
				t.Errorf("FS = %v, want a file system only with mounts", fsys)
			}
			var got []string
			for _, m := range g.Roots() {
				got = append(got, strings.ReplaceAll(m, base, "$T"))
			}
			if strings.Join(got, " ") != c.mounts {
				t.Errorf("mounts = %q, want %q", got, c.mounts)
			}
			if c.str != "" {
				if s := strings.ReplaceAll(g.String(), base, "$T"); s != c.str {
					t.Errorf("String() = %q, want %q", s, c.str)
				}
			}
			if w := g.WriteGlobs(); !slices.Equal(w, expand(base, c.writes)) && len(w)+len(c.writes) > 0 {
				t.Errorf("WriteGlobs() = %q, want %q", w, c.writes)
			}
		})
	}
	if _, err := New(Options{}); err == nil {
		t.Error("New without a module id succeeded")
	}
	if _, err := New(Options{Module: "m", QuotaBytes: -1}); err == nil {
		t.Error("New with a negative quota succeeded")
	}
}

// A root replaced (here by a link to the protected directory) between New
// and the first FS is refused.
func TestMountsRootReplaced(t *testing.T) {
	base := t.TempDir()
	tree(t, base, map[string]string{"out/": "", "station/x": "x"})
	g, err := New(Options{Module: "m", Writes: []string{base + "/out/**"}, Protected: []string{base + "/station"}})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if err := os.Remove(base + "/out"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("station", base+"/out"); err != nil {
		t.Fatal(err)
	}
	if _, err := g.FS(Hooks{}); err == nil || !strings.Contains(err.Error(), "replaced") {
		t.Fatalf("FS error = %v, want one saying the root was replaced", err)
	}
}

func TestClose(t *testing.T) {
	base := t.TempDir()
	tree(t, base, map[string]string{"out/a": "a"})
	e := newEnv(t, base, []string{"$T/out/**"}, nil, 0)
	fsys := e.mount("out")
	f, errno := fsys.OpenFile("a", rdonly, 0)
	if errno != 0 {
		t.Fatal(errno)
	}
	defer f.Close()
	if err := e.g.Close(); err != nil {
		t.Fatal(err)
	}
	if _, errno := fsys.Stat("a"); errno != experimentalsys.EBADF {
		t.Errorf("Stat after Close: errno %v, want EBADF", errno)
	}
	if n, errno := f.Read(make([]byte, 4)); n != 1 || errno != 0 {
		t.Errorf("Read of a file opened before Close = %d, %v; want 1, success", n, errno)
	}
	if _, err := e.g.FS(Hooks{}); err == nil {
		t.Error("FS after Close succeeded")
	}
}

// The mount root cannot be removed or renamed, even when it is writable.
func TestMountRoot(t *testing.T) {
	base := t.TempDir()
	tree(t, base, map[string]string{"out/a": "a"})
	e := newEnv(t, base, []string{"$T/out/**"}, nil, 0)
	fsys := e.mount("out")
	for _, c := range []struct {
		name string
		do   func() experimentalsys.Errno
		want experimentalsys.Errno
	}{
		{"rmdir", func() experimentalsys.Errno { return fsys.Rmdir(".") }, experimentalsys.EPERM},
		{"unlink", func() experimentalsys.Errno { return fsys.Unlink("") }, experimentalsys.EPERM},
		{"rename away", func() experimentalsys.Errno { return fsys.Rename(".", "x") }, experimentalsys.EPERM},
		{"rename over", func() experimentalsys.Errno { return fsys.Rename("a", "/") }, experimentalsys.EPERM},
		{"mkdir", func() experimentalsys.Errno { return fsys.Mkdir(".", 0o755) }, experimentalsys.EEXIST},
		{"chmod", func() experimentalsys.Errno { return fsys.Chmod(".", 0o750) }, 0},
		{"list", func() experimentalsys.Errno { return open(fsys, "/", rdonly) }, 0},
	} {
		if got := c.do(); got != c.want {
			t.Errorf("%s: errno %v, want %v", c.name, got, c.want)
		}
	}
	if fi, err := os.Stat(base + "/out/a"); err != nil || fi.Size() != 1 {
		t.Errorf("out/a after the attempts: %v, %v", fi, err)
	}
	if !strings.Contains(summary(e.rec, base), "deny $T/out: is the root of a mount") {
		t.Errorf("decisions:\n%s", summary(e.rec, base))
	}
}

// Directory listings show only what the module may see.
func TestReaddir(t *testing.T) {
	base := t.TempDir()
	tree(t, base, stdTree)
	plant(t, base, map[string]string{"m/out/l": "->../out2", "m/out/fifo": "|"})
	e := newEnv(t, base, stdWrites, stdReads, 0)
	fsys := e.mount("m")
	for _, c := range []struct {
		dir, want string
	}{
		{".", "notes.txt out"},
		{"out", "a.txt fifo l sub"},
	} {
		f, errno := fsys.OpenFile(c.dir, rdonly, 0)
		if errno != 0 {
			t.Fatalf("open %s: %v", c.dir, errno)
		}
		var names []string
		for {
			ds, errno := f.Readdir(1) // one at a time, to exercise the filter across batches
			if errno != 0 {
				t.Fatal(errno)
			}
			if len(ds) == 0 {
				break
			}
			names = append(names, ds[0].Name)
		}
		if _, errno := f.Seek(0, 0); errno != 0 {
			t.Fatal(errno)
		}
		again, _ := f.Readdir(-1)
		f.Close()
		slices.Sort(names)
		if got := strings.Join(names, " "); got != c.want {
			t.Errorf("Readdir(%s) = %q, want %q", c.dir, got, c.want)
		}
		if len(again) != len(names) {
			t.Errorf("Readdir(%s) after rewind: %d entries, want %d", c.dir, len(again), len(names))
		}
	}
	if d := e.rec.All(); len(d) != 0 {
		t.Errorf("listing recorded decisions:\n%s", summary(e.rec, base))
	}
}

// `*` is one path segment, `**` any depth; a directory may only be renamed
// where everything below it is writable.
func TestStarAndDoubleStar(t *testing.T) {
	base := t.TempDir()
	tree(t, base, map[string]string{"s/a.txt": "a", "s/sub/": "", "s/w/d/f": "f"})
	e := newEnv(t, base, []string{"$T/s/*.txt", "$T/s/w/**"}, nil, 0)
	fsys := e.mount("s")
	before := snapshot(t, base, "s/w")
	delete(before, "s") // its entries change, as allowed
	for _, c := range []struct {
		name string
		do   func() experimentalsys.Errno
		want experimentalsys.Errno
	}{
		{"* matches a file", func() experimentalsys.Errno { return put(fsys, "b.txt", wronly|creat, "b") }, 0},
		{"* is one segment", func() experimentalsys.Errno { return put(fsys, "sub/c.txt", wronly|creat, "c") }, experimentalsys.EPERM},
		{"* is not a suffix match", func() experimentalsys.Errno { return put(fsys, "a.txt.sh", wronly|creat, "c") }, experimentalsys.EPERM},
		{"** any depth", func() experimentalsys.Errno {
			if e := fsys.Mkdir("w/d/e", 0o755); e != 0 {
				return e
			}
			return put(fsys, "w/d/e/f", wronly|creat, "f")
		}, 0},
		{"a directory into a * place", func() experimentalsys.Errno { return fsys.Rename("w/d", "dir.txt") }, experimentalsys.EPERM},
		{"a file into a * place", func() experimentalsys.Errno { return fsys.Rename("w/d/f", "f.txt") }, 0},
		{"a directory within **", func() experimentalsys.Errno { return fsys.Rename("w/d", "w/d2") }, 0},
	} {
		if got := c.do(); got != c.want {
			t.Errorf("%s: errno %v, want %v\n%s", c.name, got, c.want, summary(e.rec, base))
		}
	}
	if err := os.Remove(base + "/s/b.txt"); err != nil {
		t.Error(err)
	}
	if err := os.Rename(base+"/s/f.txt", base+"/s/w/d2/f"); err != nil {
		t.Error(err)
	}
	after := snapshot(t, base, "s/w")
	for k, v := range before {
		if after[k] != v {
			t.Errorf("%s changed", k)
		}
	}
	if s := summary(e.rec, base); !strings.Contains(s, "deny $T/s/w/d -> $T/s/dir.txt: destination is a directory whose contents would not all be in its write allowlist") {
		t.Errorf("decisions:\n%s", s)
	}
}

// Decisions name the module, the command, the target and the rule.
func TestDecisions(t *testing.T) {
	base := t.TempDir()
	tree(t, base, stdTree)
	e := newEnv(t, base, stdWrites, stdReads, 0)
	fsys := e.mount("m")
	e.command = "export"
	put(fsys, "out/new.txt", wronly|creat|trunc, "x")
	fsys.Rename("out/new.txt", "out/sub/new.txt")
	fsys.Rename("out/sub/new.txt", "out2/new.txt")
	fsys.Symlink("../a.txt", "out/sub/l")
	fsys.Mkdir("out/d", 0o755)
	fsys.Unlink("out/sub/l")
	open(fsys, "notes.txt", rdonly) // allowed reads are not recorded
	e.command = ""
	fsys.Unlink("out\x1b[31m.txt")
	want := `allow $T/m/out/new.txt: open for writing (create, truncate) (allowed by $T/m/out/**)
allow $T/m/out/new.txt -> $T/m/out/sub/new.txt: rename (allowed by $T/m/out/**)
deny $T/m/out/sub/new.txt -> $T/m/out2/new.txt: destination is not in its write allowlist ($T/m/out/**)
allow $T/m/out/sub/l: symlink to ../a.txt (allowed by $T/m/out/**)
allow $T/m/out/d: mkdir (allowed by $T/m/out/**)
allow $T/m/out/sub/l: unlink (allowed by $T/m/out/**)
deny $T/m/out\x1b[31m.txt: is not in its write allowlist ($T/m/out/**)
`
	if got := summary(e.rec, base); got != want {
		t.Errorf("decisions:\n%s\nwant:\n%s", got, want)
	}
	ds := e.rec.All()
	for i, d := range ds {
		wantCmd := "export"
		if i == len(ds)-1 {
			wantCmd = ""
		}
		if d.Module != "dave/probe" || d.Command != wantCmd || d.Capability != "filesystem" || d.Time.IsZero() {
			t.Errorf("decision %d: %+v", i, d)
		}
	}
	if len(e.violations) != 2 {
		t.Fatalf("violations: %v", e.violations)
	}
	if got, want := strings.ReplaceAll(e.violations[0].Error(), base, "$T"),
		`sandbox violation: module dave/probe: filesystem: "$T/m/out/sub/new.txt -> $T/m/out2/new.txt" destination is not in its write allowlist ($T/m/out/**)`; got != want {
		t.Errorf("violation:\n%s\nwant\n%s", got, want)
	}
}

// The quota counts growth across all instances of the module.
func TestQuota(t *testing.T) {
	base := t.TempDir()
	tree(t, base, map[string]string{"out/": ""})
	e := newEnv(t, base, []string{"$T/out/**"}, nil, 100)
	one := e.mount("out")
	root, err := e.g.FS(e.hooks()) // a second instance
	if err != nil {
		t.Fatal(err)
	}
	two := under(root, base+"/out")

	steps := []struct {
		name string
		do   func() experimentalsys.Errno
		want experimentalsys.Errno
	}{
		{"60 bytes", func() experimentalsys.Errno { return put(one, "a", wronly|creat, strings.Repeat("a", 60)) }, 0},
		{"60 more from another instance", func() experimentalsys.Errno { return put(two, "b", wronly|creat, strings.Repeat("b", 60)) }, experimentalsys.EPERM},
		{"40 more", func() experimentalsys.Errno { return put(two, "b", wronly|creat, strings.Repeat("b", 40)) }, 0},
		{"overwriting does not grow", func() experimentalsys.Errno { return put(one, "a", wronly, strings.Repeat("x", 60)) }, 0},
		{"appending does", func() experimentalsys.Errno { return put(one, "a", wronly|appnd, "x") }, experimentalsys.EPERM},
		{"a sparse write far away", func() experimentalsys.Errno {
			return withFile(one, "a", wronly, func(f experimentalsys.File) experimentalsys.Errno { _, e := f.Pwrite([]byte("x"), 1<<40); return e })
		}, experimentalsys.EPERM},
		{"setting the size", func() experimentalsys.Errno {
			return withFile(one, "a", wronly, func(f experimentalsys.File) experimentalsys.Errno { return f.Truncate(1 << 40) })
		}, experimentalsys.EPERM},
		{"truncating on open returns bytes", func() experimentalsys.Errno { return open(one, "a", wronly|trunc) }, 0},
		{"so 60 fit again", func() experimentalsys.Errno { return put(one, "c", wronly|creat, strings.Repeat("c", 60)) }, 0},
		{"unlinking returns bytes", func() experimentalsys.Errno { return two.Unlink("b") }, 0},
		{"renaming over a file returns its bytes", func() experimentalsys.Errno {
			if e := put(one, "d", wronly|creat, strings.Repeat("d", 40)); e != 0 {
				return e
			}
			return one.Rename("d", "c") // 40 in use
		}, 0},
		{"so 60 fit again", func() experimentalsys.Errno { return put(two, "e", wronly|creat, strings.Repeat("e", 60)) }, 0},
		{"and no more", func() experimentalsys.Errno { return put(two, "f", wronly|creat, "f") }, experimentalsys.EPERM},
	}
	for _, s := range steps {
		if got := s.do(); got != s.want {
			t.Fatalf("%s: errno %v, want %v\n%s", s.name, got, s.want, summary(e.rec, base))
		}
	}
	sizes := map[string]int64{}
	entries, _ := os.ReadDir(base + "/out")
	for _, d := range entries {
		fi, _ := d.Info()
		sizes[d.Name()] = fi.Size()
	}
	if want := map[string]int64{"a": 0, "c": 40, "e": 60, "f": 0}; !maps(sizes, want) {
		t.Errorf("sizes = %v, want %v", sizes, want)
	}
	var quota []string
	for _, d := range e.rec.All() {
		if !d.Allowed {
			quota = append(quota, d.Reason)
		}
	}
	if len(quota) != 5 || quota[0] != "would exceed its disk quota of 100 B (60 B in use)" {
		t.Errorf("quota denials = %q", quota)
	}
}

func maps(a, b map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// A symbolic link swapped in while the gate works, for the last element or
// for a directory on the way, never redirects a change out of out/. This is
// the statistical companion of TestRaceAfterDecision: other
// goroutines atomically exchange (renameat2 RENAME_EXCHANGE) a real file or
// directory with a link to outside the mount or to a readable file, as fast
// as they can, while the gate writes, truncates, changes modes and times,
// creates and removes.
func TestSymlinkSwapHammer(t *testing.T) {
	base := t.TempDir()
	tree(t, base, stdTree)
	plant(t, base, map[string]string{
		"m/out/f": "f", "m/out/f.swap": "->../../outside.txt",
		"m/out/g": "g", "m/out/g.swap": "->../notes.txt",
		"m/out/d/": "", "m/out/d.swap": "->../out2",
		"m/out/e/": "", "m/out/e.swap": "->../..",
	})
	e := newEnv(t, base, stdWrites, stdReads, 0)
	fsys := e.mount("m")
	before := snapshot(t, base, "m/out")
	out := base + "/m/out/"

	var wg sync.WaitGroup
	var swaps atomic.Int64
	stop := make(chan struct{})
	for _, name := range []string{"f", "g", "d", "e"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				err := unix.Renameat2(unix.AT_FDCWD, out+name, unix.AT_FDCWD, out+name+".swap", unix.RENAME_EXCHANGE)
				if err == unix.ENOENT {
					continue // f is away in d for a moment
				}
				if err != nil {
					t.Error(err)
					return
				}
				swaps.Add(1)
			}
		}()
	}
	for i := 0; i < 4000 || swaps.Load() < 40000; i++ {
		if i > 400000 {
			t.Fatalf("only %d swaps", swaps.Load())
		}
		put(fsys, "f", wronly|trunc, "pwned")
		put(fsys, "g", wronly|creat|appnd, "pwned")
		put(fsys, "d/b.txt", wronly|creat|trunc, "pwned")
		put(fsys, "e/outside.txt", wronly|trunc, "pwned")
		fsys.Chmod("f", 0o777)
		fsys.Utimens("g", 1e9, 1e9)
		fsys.Unlink("d/b.txt")
		fsys.Mkdir("e/x", 0o755)
		fsys.Rename("f", "d/f")
		fsys.Rename("d/f", "f")
	}
	close(stop)
	wg.Wait()
	unchanged(t, base, before, "m/out")
}
