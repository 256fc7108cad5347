package fsgate

import (
	"path"
	"strings"
	"testing"

	"github.com/bmatcuk/doublestar/v4"
)

// The policies of the path tests, by name.
var policies = map[string]struct{ writes, reads []string }{
	"out":    {[]string{"/h/u/out/**"}, nil},
	"star":   {[]string{"/data/*.csv"}, []string{"/data/in/**"}},
	"mixed":  {[]string{"/h/u/out/**", "/h/u/notes/todo.txt"}, []string{"/srv/r/{drafts,final/v*}/*.md", "/m/**/x/*.log"}},
	"nested": {[]string{"/w/a/**", "/w/*.txt"}, []string{"/w/**/keep"}},
}

// pathCases are the path decisions: w is writable, r readable, v visible, s
// subtree writable.
var pathCases = []struct {
	policy, path string
	w, r, v, s   bool
}{
	// out/** : the directory itself and everything below, nothing beside.
	{"out", "/h/u/out", true, true, true, true},
	{"out", "/h/u/out/a.txt", true, true, true, true},
	{"out", "/h/u/out/deep/er/a.txt", true, true, true, true},
	{"out", "/h/u/out2", false, false, false, false},
	{"out", "/h/u/out2/a.txt", false, false, false, false},
	{"out", "/h/u/out.bak", false, false, false, false},
	{"out", "/h/u", false, false, true, false},
	{"out", "/h", false, false, true, false},
	{"out", "/", false, false, true, false},
	{"out", "/h/u/.station", false, false, false, false},
	{"out", "/h/x/out/a", false, false, false, false},

	// * is one segment, ** any depth.
	{"star", "/data/a.csv", true, true, true, false},
	{"star", "/data/.hidden.csv", true, true, true, false},
	{"star", "/data/sub/a.csv", false, false, false, false},
	{"star", "/data/a.csv.bak", false, false, false, false},
	{"star", "/data/a.txt", false, false, false, false},
	{"star", "/data", false, false, true, false},
	{"star", "/data/in", false, true, true, false},
	{"star", "/data/in/x/y.bin", false, true, true, false},
	{"star", "/data/inx", false, false, false, false},

	// Literal files, brace alternatives with slashes, ** in the middle.
	{"mixed", "/h/u/notes/todo.txt", true, true, true, false},
	{"mixed", "/h/u/notes/todo.txt.swp", false, false, false, false},
	{"mixed", "/h/u/notes", false, false, true, false},
	{"mixed", "/h/u/notes/other.txt", false, false, false, false},
	{"mixed", "/srv/r/drafts/a.md", false, true, true, false},
	{"mixed", "/srv/r/final/v2/a.md", false, true, true, false},
	{"mixed", "/srv/r/final", false, false, true, false},
	{"mixed", "/srv/r/final/x", false, false, false, false},
	{"mixed", "/srv/r/other", false, false, false, false},
	{"mixed", "/m/x/a.log", false, true, true, false},
	{"mixed", "/m/a/b/x/a.log", false, true, true, false},
	{"mixed", "/m/a/b", false, false, true, false},
	{"mixed", "/m/a/b/x/sub/a.log", false, false, true, false},

	// A glob with a wildcard before "**", and "*" beside it.
	{"nested", "/w/a/b/c", true, true, true, true},
	{"nested", "/w/b.txt", true, true, true, false},
	{"nested", "/w/b.txt/inner", false, false, true, false},
	{"nested", "/w/z/keep", false, true, true, false},
	{"nested", "/w/z", false, false, true, false},
}

func compiled(t testing.TB, name string) *policy {
	t.Helper()
	p, ok := policies[name]
	if !ok {
		t.Fatalf("no policy %q", name)
	}
	pol, err := compilePolicy(p.writes, p.reads)
	if err != nil {
		t.Fatal(err)
	}
	return pol
}

func TestPathDecisions(t *testing.T) {
	for _, c := range pathCases {
		pol := compiled(t, c.policy)
		_, w := pol.writable(c.path)
		_, r := pol.readable(c.path)
		v := pol.visible(c.path)
		s := pol.subtreeWritable(c.path)
		if w != c.w || r != c.r || v != c.v || s != c.s {
			t.Errorf("%s %s: got writable %v, readable %v, visible %v, subtree %v; want %v, %v, %v, %v",
				c.policy, c.path, w, r, v, s, c.w, c.r, c.v, c.s)
		}
	}
}

func TestCompileGrant(t *testing.T) {
	for _, c := range []struct {
		glob, root, err string
	}{
		{"/home/u/out/**", "/home/u/out", ""},
		{"/data/*.csv", "/data", ""},
		{"/home/u/notes/todo.txt", "/home/u/notes", ""},
		{"/srv/r/{drafts,final}/*.md", "/srv/r", ""},
		{"/srv/r/[ab]*/x", "/srv/r", ""},
		{"", "", "is empty"},
		{"home/u/**", "", "must be an absolute path"},
		{"~/out/**", "", "must be an absolute path"},
		{"/home/u/out/", "", "must be a clean path"},
		{"/home/u/../out/**", "", "must be a clean path"},
		{"/home//u/**", "", "must be a clean path"},
		{"/home/u/{..,x}/**", "", "not a clean path"},
		{"/home/u/out\\*", "", "backslash"},
		{"/home/u/[", "", "not a valid glob"},
		{"/home/u/{a", "", "not a valid glob"},
		{"/home/u/a[/]b", "", `"/" inside a character class`},
		{"/home/u/out\n/**", "", "control character"},
		{"/**", "", "would mount the whole filesystem"},
		{"/*.txt", "", "would mount the whole filesystem"},
		{"/x", "", "would mount the whole filesystem"},
		{"/a/{b,c}{d,e}{f,g}{h,i}{j,k}{l,m}{n,o}{p,q}{r,s}/*", "", "more than 256 alternatives"},
		{"/" + strings.Repeat("a", 4096), "", "longer than 4096 bytes"},
	} {
		g, err := compileGrant(c.glob)
		switch {
		case c.err == "" && err != nil:
			t.Errorf("compileGrant(%q): %v", c.glob, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("compileGrant(%q) error = %v, want one containing %q", c.glob, err, c.err)
		case c.err == "" && g.root != c.root:
			t.Errorf("compileGrant(%q) root = %q, want %q", c.glob, g.root, c.root)
		}
	}
}

func TestExpandBraces(t *testing.T) {
	for _, c := range []struct {
		glob string
		want string
	}{
		{"/a/b", "/a/b"},
		{"/a/{b,c}/d", "/a/b/d /a/c/d"},
		{"/a/{b/c,d}", "/a/b/c /a/d"},
		{"/a/{b,{c,d}e}", "/a/b /a/ce /a/de"},
		{"/a/[{]{x,y}", "/a/[{]x /a/[{]y"},
		{"/a/{,x}", "/a/ /a/x"},
	} {
		got, err := expandBraces(c.glob)
		if err != nil || strings.Join(got, " ") != c.want {
			t.Errorf("expandBraces(%q) = %q, %v; want %q", c.glob, got, err, c.want)
		}
	}
}

// FuzzCheckPath: for any path and any of the test policies, the decisions
// agree with doublestar on the cleaned path, a path that is not clean and
// absolute is never granted anything, writable implies readable implies
// visible, visibility is closed under taking parents, and a directory whose
// subtree is writable has writable children.
func FuzzCheckPath(f *testing.F) {
	names := make([]string, 0, len(policies))
	for n := range policies {
		names = append(names, n)
	}
	for _, c := range pathCases {
		for i, n := range names {
			if n == c.policy {
				f.Add(uint8(i), c.path)
			}
		}
	}
	for _, p := range []string{"/h/u/out/../../etc/passwd", "/h/u/out/./a", "/h/u/out//a", "/h/u/out/a\x00b", "h/u/out/a", "/h/u/out/"} {
		f.Add(uint8(0), p)
	}
	pols := make([]*policy, len(names))
	for i, n := range names {
		pols[i] = compiled(f, n)
	}
	f.Fuzz(func(t *testing.T, which uint8, p string) {
		name := names[int(which)%len(names)]
		pol := pols[int(which)%len(names)]
		raw := policies[name]
		g, w := pol.writable(p)
		_, r := pol.readable(p)
		v := pol.visible(p)
		s := pol.subtreeWritable(p)

		if p != path.Clean(p) || !path.IsAbs(p) || strings.ContainsRune(p, 0) {
			// Glob matching is lexical: the policy must refuse to judge
			// a path that is not clean.
			if w || r || v || s {
				t.Fatalf("%s: %q is not clean but granted (%v, %v, %v, %v)", name, p, w, r, v, s)
			}
			return
		}
		if w {
			if ok, _ := doublestar.Match(g, p); !ok {
				t.Fatalf("%s: %q writable by %q, which does not match it", name, p, g)
			}
			if !r {
				t.Fatalf("%s: %q writable but not readable", name, p)
			}
		}
		want := false
		for _, glob := range raw.writes {
			if ok, _ := doublestar.Match(glob, p); ok {
				want = true
			}
		}
		if w != want {
			t.Fatalf("%s: writable(%q) = %v, doublestar says %v", name, p, w, want)
		}
		if r && !v {
			t.Fatalf("%s: %q readable but not visible", name, p)
		}
		if v && p != "/" && !pol.visible(path.Dir(p)) {
			t.Fatalf("%s: %q visible but its parent is not", name, p)
		}
		if s && len(p) < 4000 {
			child := path.Join(p, "x", "y")
			if _, ok := pol.writable(child); !ok {
				t.Fatalf("%s: %q has a writable subtree but %q is not writable", name, p, child)
			}
		}
	})
}

// isClean accepts exactly the absolute paths that path.Clean leaves as
// they are, without a NUL byte.
func TestIsClean(t *testing.T) {
	for _, p := range []string{
		"", "/", "//", "/a", "/a/", "/a//b", "/a/./b", "/a/../b", "/..", "/.", "/...", "/a/..b", "/a..",
		"a", "a/b", "./a", "/a\x00b", "/\x00", "/a/b/c", "/a/b/.", "/a/b/..",
	} {
		want := strings.HasPrefix(p, "/") && path.Clean(p) == p && !strings.ContainsRune(p, 0)
		if got := isClean(p); got != want {
			t.Errorf("isClean(%q) = %v, want %v", p, got, want)
		}
	}
}
