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

	"github.com/station-dev/station/internal/sandbox"
)

// recorder collects decisions.
type recorder struct {
	mu sync.Mutex
	ds []sandbox.Decision
}

func (r *recorder) Record(d sandbox.Decision) {
	r.mu.Lock()
	r.ds = append(r.ds, d)
	r.mu.Unlock()
}

func (r *recorder) all() []sandbox.Decision {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]sandbox.Decision(nil), r.ds...)
}

func (r *recorder) reset() {
	r.mu.Lock()
	r.ds = nil
	r.mu.Unlock()
}

// summary renders the decisions one per line as "allow|deny target: reason",
// with the test's base directory written as $T.
func (r *recorder) summary(base string) string {
	var b strings.Builder
	for _, d := range r.all() {
		verb := "deny"
		if d.Allowed {
			verb = "allow"
		}
		fmt.Fprintf(&b, "%s %s: %s\n", verb, d.Target, d.Reason)
	}
	return strings.ReplaceAll(b.String(), base, "$T")
}

// env is a gate over a test tree, with one instance's mounts.
type env struct {
	t          *testing.T
	base       string
	g          *Gate
	rec        *recorder
	fs         map[string]experimentalsys.FS // by mount path relative to base
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
	e := &env{t: t, base: base, rec: &recorder{}, fs: map[string]experimentalsys.FS{}, command: "run"}
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
	ms, err := g.Mounts(e.hooks())
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		rel, err := filepath.Rel(base, m.Path)
		if err != nil {
			t.Fatal(err)
		}
		e.fs[rel] = m.FS
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

// mount returns the file system mounted at the base-relative path.
func (e *env) mount(rel string) experimentalsys.FS {
	e.t.Helper()
	fsys, ok := e.fs[rel]
	if !ok {
		e.t.Fatalf("no mount at %s (have %v)", rel, e.fs)
	}
	return fsys
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
