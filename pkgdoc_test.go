package stationroot

import (
	"go/build"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestPackageDocs checks, in the manner of tailscale's pkgdoc_test.go, that
// every package of the module has exactly one package doc comment, where go
// doc finds it:
//
//   - Every directory of the module with a .go file is a package, main
//     packages included: the station command, the example modules and the
//     probe's guest are read with go doc too, and say what they are
//     ("Command station runs ..."). Skipped are testdata directories (the go
//     tool ignores them; they hold sources the tests build, not packages of
//     the module), directories whose name starts with . or _ (the go tool
//     ignores them too) and nested modules (bench/ is its own module, with
//     its own packages).
//   - Exactly one non-test file carries the comment. It starts with
//     "Package NAME " ("Command DIR " for a main package), the form go doc
//     and pkg.go.dev make the synopsis of, and the file is built on every
//     platform any file of the package is (a comment in a _linux.go file of a
//     package that also builds elsewhere would vanish from go doc there).
//   - No _test.go file carries one: go doc never shows it, so it would only
//     be a second description that drifts from the first.
func TestPackageDocs(t *testing.T) {
	type pkg struct {
		files []string // non-test .go files
		docs  []string // files with a package doc comment, test files included
		name  string
	}
	pkgs := map[string]*pkg{}
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if p != "." && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil && p != "." {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			return err
		}
		dir := filepath.Dir(p)
		k := pkgs[dir]
		if k == nil {
			k = &pkg{}
			pkgs[dir] = k
		}
		test := strings.HasSuffix(p, "_test.go")
		if !test {
			k.files = append(k.files, p)
			k.name = f.Name.Name
		}
		if f.Doc == nil {
			return nil
		}
		k.docs = append(k.docs, p)
		if test {
			t.Errorf("%s: a test file carries a package doc comment, which go doc never shows; the package's is in a non-test file", p)
			return nil
		}
		want := "Package " + f.Name.Name + " "
		if f.Name.Name == "main" {
			want = "Command " + path.Base(filepath.ToSlash(dir)) + " "
		}
		if text := f.Doc.Text(); !strings.HasPrefix(text, want) {
			t.Errorf("%s: the package doc comment starts %q, want %q", p, firstLine(text), want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) < 10 {
		t.Fatalf("found %d packages: is the test running at the module's root?", len(pkgs))
	}
	for _, dir := range slices.Sorted(maps.Keys(pkgs)) {
		k := pkgs[dir]
		if len(k.files) == 0 {
			continue // test files only: nothing for go doc to show
		}
		var docs []string
		for _, d := range k.docs {
			if !strings.HasSuffix(d, "_test.go") {
				docs = append(docs, d)
			}
		}
		switch len(docs) {
		case 0:
			t.Errorf("%s: package %s has no package doc comment", dir, k.name)
		case 1:
			if p := missing(docs[0], k.files); p != "" {
				t.Errorf("%s: the package doc comment is in %s, which is not built for %s, where the package is", dir, docs[0], p)
			}
		default:
			slices.Sort(docs)
			t.Errorf("%s: more than one file carries the package doc comment: %s", dir, strings.Join(docs, ", "))
		}
	}
}

// platforms are the ones missing checks a package doc comment's file for:
// the station's (linux) and the guests' (wasip1), and two others a
// package may build for.
var platforms = [][2]string{{"linux", "amd64"}, {"wasip1", "wasm"}, {"darwin", "arm64"}, {"windows", "amd64"}}

// missing returns a platform some file of files is built for and doc is
// not, or "".
func missing(doc string, files []string) string {
	for _, p := range platforms {
		ctxt := build.Default
		ctxt.GOOS, ctxt.GOARCH = p[0], p[1]
		if ok, _ := ctxt.MatchFile(filepath.Dir(doc), filepath.Base(doc)); ok {
			continue
		}
		for _, f := range files {
			if ok, _ := ctxt.MatchFile(filepath.Dir(f), filepath.Base(f)); ok {
				return p[0] + "/" + p[1]
			}
		}
	}
	return ""
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
