package fsgate

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/sys"

	"github.com/station-dev/station/internal/fixture"
	"github.com/station-dev/station/internal/sandbox"
)

// summary renders the decisions of rec one per line as "allow|deny
// target: reason", with the test's base directory written as $T.
func summary(rec *fixture.Recorder, base string) string {
	var b strings.Builder
	for _, d := range rec.All() {
		verb := "deny"
		if d.Allowed {
			verb = "allow"
		}
		fmt.Fprintf(&b, "%s %s: %s\n", verb, d.Target, d.Reason)
	}
	return strings.ReplaceAll(b.String(), base, "$T")
}

// env is a gate over a test tree, with one instance's file system.
type env struct {
	t          *testing.T
	base       string
	g          *Gate
	rec        *fixture.Recorder
	root       experimentalsys.FS // the instance's view, linked at "/"
	violations []*sandbox.Violation
	command    string
}

// tree creates files under base: names ending in "/" are directories, a
// value "->x" is a symbolic link to x, anything else is file content.
func tree(t *testing.T, base string, files map[string]string) {
	t.Helper()
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		p := filepath.Join(base, n)
		v := files[n]
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		switch {
		case strings.HasSuffix(n, "/"):
			err = os.MkdirAll(p, 0o755)
		case strings.HasPrefix(v, "->"):
			err = os.Symlink(v[2:], p)
		default:
			err = os.WriteFile(p, []byte(v), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// newEnv builds a gate with globs relative to base ("$T/..." expanded).
func newEnv(t *testing.T, base string, writes, reads []string, quota int64) *env {
	t.Helper()
	e := &env{t: t, base: base, rec: &fixture.Recorder{}, command: "run"}
	g, err := New(Options{
		Module:     "dave/probe",
		Writes:     expand(base, writes),
		Reads:      expand(base, reads),
		Protected:  []string{filepath.Join(base, "station")},
		Recorder:   e.rec,
		QuotaBytes: quota,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	e.g = g
	if e.root, err = g.FS(e.hooks()); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *env) hooks() Hooks {
	var mu sync.Mutex
	return Hooks{
		Call: func() *sandbox.Call { return &sandbox.Call{Command: e.command} },
		Denied: func(v *sandbox.Violation) {
			mu.Lock()
			e.violations = append(e.violations, v)
			mu.Unlock()
		},
	}
}

func expand(base string, globs []string) []string {
	out := make([]string, len(globs))
	for i, g := range globs {
		out[i] = strings.ReplaceAll(g, "$T", base)
	}
	return out
}

// mount returns the instance's file system as seen from the base-relative
// directory rel: paths given to it are joined to $T/rel, as the guest would
// write them in full.
func (e *env) mount(rel string) experimentalsys.FS {
	e.t.Helper()
	if e.root == nil {
		e.t.Fatal("the gate has no file system")
	}
	return under(e.root, filepath.Join(e.base, rel))
}

// under returns fsys with every path joined to the directory dir.
func under(fsys experimentalsys.FS, dir string) experimentalsys.FS {
	return &subFS{fsys: fsys, dir: strings.TrimPrefix(dir, "/")}
}

// subFS is a file system with every path joined to dir, as the guest's
// paths under dir reach the gate's view: "a/b" is dir+"/a/b".
type subFS struct {
	fsys experimentalsys.FS
	dir  string
}

func (s *subFS) join(p string) string {
	if p == "" || p == "." {
		return s.dir
	}
	return s.dir + "/" + p
}

func (s *subFS) OpenFile(p string, flag experimentalsys.Oflag, perm fs.FileMode) (experimentalsys.File, experimentalsys.Errno) {
	return s.fsys.OpenFile(s.join(p), flag, perm)
}
func (s *subFS) Lstat(p string) (sys.Stat_t, experimentalsys.Errno) { return s.fsys.Lstat(s.join(p)) }
func (s *subFS) Stat(p string) (sys.Stat_t, experimentalsys.Errno)  { return s.fsys.Stat(s.join(p)) }
func (s *subFS) Readlink(p string) (string, experimentalsys.Errno) {
	return s.fsys.Readlink(s.join(p))
}
func (s *subFS) Mkdir(p string, perm fs.FileMode) experimentalsys.Errno {
	return s.fsys.Mkdir(s.join(p), perm)
}
func (s *subFS) Chmod(p string, perm fs.FileMode) experimentalsys.Errno {
	return s.fsys.Chmod(s.join(p), perm)
}
func (s *subFS) Rename(from, to string) experimentalsys.Errno {
	return s.fsys.Rename(s.join(from), s.join(to))
}
func (s *subFS) Rmdir(p string) experimentalsys.Errno { return s.fsys.Rmdir(s.join(p)) }
func (s *subFS) Link(oldPath, newPath string) experimentalsys.Errno {
	return s.fsys.Link(s.join(oldPath), s.join(newPath))
}
func (s *subFS) Symlink(target, link string) experimentalsys.Errno {
	return s.fsys.Symlink(target, s.join(link))
}
func (s *subFS) Unlink(p string) experimentalsys.Errno { return s.fsys.Unlink(s.join(p)) }
func (s *subFS) Utimens(p string, atim, mtim int64) experimentalsys.Errno {
	return s.fsys.Utimens(s.join(p), atim, mtim)
}

// state is what the test compares to prove that a file was not changed.
type state struct {
	exists  bool
	content string
	link    string
	mode    fs.FileMode
	mtime   int64
	nlink   uint64
	entries string // a directory's names
}

// snapshot records the state of every entry under base except the
// directories in skip (base-relative).
func snapshot(t *testing.T, base string, skip ...string) map[string]state {
	t.Helper()
	out := map[string]state{}
	filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(base, p)
		for _, s := range skip {
			if rel == s || strings.HasPrefix(rel, s+"/") {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return nil
		}
		st := fi.Sys().(*syscall.Stat_t)
		s := state{exists: true, mode: fi.Mode(), mtime: fi.ModTime().UnixNano(), nlink: uint64(st.Nlink)}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			s.link, _ = os.Readlink(p)
		case fi.IsDir():
			names, _ := os.ReadDir(p)
			for _, n := range names {
				s.entries += n.Name() + ","
			}
		case fi.Mode().IsRegular():
			b, _ := os.ReadFile(p)
			s.content = string(b)
		}
		out[rel] = s
		return nil
	})
	return out
}

// unchanged fails the test if anything in before differs now.
func unchanged(t *testing.T, base string, before map[string]state, skip ...string) {
	t.Helper()
	after := snapshot(t, base, skip...)
	for k, v := range before {
		if w := after[k]; w != v {
			t.Errorf("%s changed:\n got %+v\nwant %+v", k, w, v)
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			t.Errorf("%s appeared", k)
		}
	}
}
