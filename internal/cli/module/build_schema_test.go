package module

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/station-dev/station/internal/cli/clitest"
	"github.com/station-dev/station/internal/wasmbuild"
	"github.com/station-dev/station/manifest"
)

// quoteManifest is examples/quote's module.yaml before a build wrote
// schemas into it, with comments and blank lines a build must keep.
const quoteManifest = `# An order, priced.
id: station/quote
version: "1.0.0"
description: Prices an order from its line items; typed commands whose schemas station module build derives
wasm: module.wasm

commands:
  # The one that matters.
  - name: quote
    description: Price an order (line items, a currency, an optional discount)

  - name: currencies # a list
    description: The currencies quote knows
requires:
  network:
    allow: []
`

// schemaBuild returns the options of building dir for real, but fast: the
// wasm is examples/quote from wasmbuild's cache, and the module is asked
// for its schemas as station module build asks it.
func schemaBuild(t *testing.T, tm *term, dir string) *BuildOptions {
	t.Helper()
	wasm := wasmbuild.ForTest(t, "examples/quote")
	return &BuildOptions{
		IO:            &tm.f.IO,
		Build:         func(_ context.Context, _, out string) error { return os.WriteFile(out, wasm, 0o600) },
		Describe:      describe,
		StartProgress: tm.f.StartProgress,
		Dir:           dir,
	}
}

// writeManifest writes text as dir's module.yaml and returns its path.
func writeManifest(t *testing.T, dir, text string) string {
	t.Helper()
	file := filepath.Join(dir, manifest.FileName)
	if err := os.WriteFile(file, []byte(text), 0o640); err != nil {
		t.Fatal(err)
	}
	return file
}

func TestBuildWritesSchemas(t *testing.T) {
	dir := t.TempDir()
	file := writeManifest(t, dir, quoteManifest)
	tm := newTerm("", false)
	if err := buildRun(context.Background(), schemaBuild(t, tm, dir)); err != nil {
		t.Fatal(err)
	}
	want := "wrote the schemas derived from the Go types into " + file + ":\n  quote: input, output\n  currencies: input, output\n"
	if out := tm.out.String(); !strings.HasPrefix(out, "built ") || !strings.HasSuffix(out, want) {
		t.Errorf("printed %q, want it to end with %q", out, want)
	}
	written, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, keep := range []string{"# An order, priced.\n", "wasm: module.wasm\n\ncommands:\n  # The one that matters.\n", "\n  - name: currencies # a list\n", "requires:\n  network:\n    allow: []\n"} {
		if !bytes.Contains(written, []byte(keep)) {
			t.Errorf("module.yaml lost %q:\n%s", keep, written)
		}
	}
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("module.yaml's mode: %v (%v), want 0640 as it was", fi.Mode(), err)
	}
	got, err := manifest.Load(dir)
	if err != nil {
		t.Fatalf("%v\n%s", err, written)
	}
	example, err := manifest.Load(filepath.Join(repoRoot(t), "examples", "quote"))
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range got.Commands {
		for _, s := range []string{c.InputSchema, c.OutputSchema} {
			if _, err := manifest.CompileSchema([]byte(s)); s == "" || err != nil {
				t.Errorf("%s: schema %q: %v", c.Name, s, err)
			}
		}
		if e := example.Commands[i]; !sameJSON(t, c.InputSchema, e.InputSchema) || !sameJSON(t, c.OutputSchema, e.OutputSchema) {
			t.Errorf("%s: the schemas are not examples/quote's", c.Name)
		}
	}

	// Again: nothing changes, and --json says so.
	tm = newTerm("", false)
	opts := schemaBuild(t, tm, dir)
	opts.JSON = true
	if err := buildRun(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.ReadFile(file); !bytes.Equal(again, written) {
		t.Errorf("a second build changed module.yaml:\n%s", again)
	}
	var r struct {
		Manifest *string  `json:"manifest"`
		Schemas  []string `json:"schemas"`
		Notes    []string `json:"notes"`
	}
	if err := json.Unmarshal(tm.out.Bytes(), &r); err != nil || r.Manifest != nil || r.Schemas == nil || len(r.Schemas) != 0 || r.Notes == nil || len(r.Notes) != 0 {
		t.Errorf("--json of a build that wrote nothing: %s (%v)", tm.out, err)
	}

	// The example as committed is what a build leaves it.
	committed, err := os.ReadFile(filepath.Join(repoRoot(t), "examples", "quote", manifest.FileName))
	if err != nil {
		t.Fatal(err)
	}
	dir = t.TempDir()
	file = writeManifest(t, dir, string(committed))
	if err := buildRun(context.Background(), schemaBuild(t, newTerm("", false), dir)); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.ReadFile(file); !bytes.Equal(after, committed) {
		t.Errorf("building examples/quote changes its module.yaml: run station module build examples/quote, and commit what it writes")
	}
}

// TestBuildKeepsAuthoredSchemas: a schema the author wrote stays as
// written, and the build says when it differs from the derived one.
func TestBuildKeepsAuthoredSchemas(t *testing.T) {
	dir := t.TempDir()
	authored := "    input_schema: # mine\n      type: object\n      properties:\n        customer: {type: string, minLength: 1}\n"
	text := strings.Replace(quoteManifest, "    description: Price an order (line items, a currency, an optional discount)\n",
		"    description: Price an order (line items, a currency, an optional discount)\n"+authored, 1)
	file := writeManifest(t, dir, text)
	tm := newTerm("", false)
	opts := schemaBuild(t, tm, dir)
	opts.JSON = true
	if err := buildRun(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	var r BuildResult
	if err := json.Unmarshal(tm.out.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	wantNote := "quote: module.yaml's input_schema differs from the one derived from the Go types and was left as written (delete it to have it derived)"
	if !reflect.DeepEqual(r.Schemas, []string{"quote: output", "currencies: input, output"}) || !reflect.DeepEqual(r.Notes, []string{wantNote}) || r.Manifest != file {
		t.Errorf("--json: %s", tm.out)
	}
	written, _ := os.ReadFile(file)
	if !bytes.Contains(written, []byte("Price an order (line items, a currency, an optional discount)\n"+authored+"    output_schema: "+wasmbuild.DerivedComment+"\n")) {
		t.Errorf("the authored schema changed, or the derived one is not after it:\n%s", written)
	}

	// As text, the note is printed after what was written.
	tm = newTerm("", false)
	if err := buildRun(context.Background(), schemaBuild(t, tm, dir)); err != nil {
		t.Fatal(err)
	}
	if out := tm.out.String(); strings.Count(out, "\n") != 2 || !strings.HasSuffix(out, "\nnote: "+wantNote+"\n") {
		t.Errorf("printed %q", out)
	}
}

// TestBuildWritesThroughALink: a module.yaml that is a symbolic link
// stays one; the file it leads to gets the schemas.
func TestBuildWritesThroughALink(t *testing.T) {
	dir, elsewhere := t.TempDir(), t.TempDir()
	target := writeManifest(t, elsewhere, quoteManifest)
	if err := os.Symlink(target, filepath.Join(dir, manifest.FileName)); err != nil {
		t.Fatal(err)
	}
	if err := buildRun(context.Background(), schemaBuild(t, newTerm("", false), dir)); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(filepath.Join(dir, manifest.FileName)); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("module.yaml is no longer a link: %v, %v", fi.Mode(), err)
	}
	if after, _ := os.ReadFile(target); !bytes.Contains(after, []byte("input_schema: "+wasmbuild.DerivedComment)) {
		t.Errorf("the link's target:\n%s", after)
	}
	if entries, _ := os.ReadDir(elsewhere); len(entries) != 1 {
		t.Errorf("left %d files beside the target, want only it", len(entries))
	}
}

// TestBuildNoSchemas: --no-schemas neither asks the module nor touches
// module.yaml.
func TestBuildNoSchemas(t *testing.T) {
	var opts BuildOptions
	if err := clitest.Parse(NewCmdBuild(clitest.Factory(), func(o *BuildOptions) error { opts = *o; return nil }), "dir", "--no-schemas"); err != nil || !opts.NoSchemas {
		t.Fatalf("--no-schemas: %+v, %v", opts, err)
	}
	dir := t.TempDir()
	file := writeManifest(t, dir, quoteManifest)
	tm := newTerm("", false)
	o := schemaBuild(t, tm, dir)
	o.NoSchemas = true
	o.Describe = func(context.Context, []byte) (*wasmbuild.Description, error) {
		t.Error("--no-schemas asked the module")
		return nil, nil
	}
	if err := buildRun(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.ReadFile(file); string(after) != quoteManifest || strings.Contains(tm.out.String(), "schemas") {
		t.Errorf("--no-schemas: printed %q, module.yaml:\n%s", tm.out, after)
	}
}

// TestBuildModuleThatDoesNotDescribeItself: a module without
// station_describe (not written with the Go SDK) builds as before.
func TestBuildModuleThatDoesNotDescribeItself(t *testing.T) {
	dir := t.TempDir()
	file := writeManifest(t, dir, quoteManifest)
	tm := newTerm("", false)
	opts := schemaBuild(t, tm, dir)
	opts.Build = func(_ context.Context, _, out string) error {
		return os.WriteFile(out, []byte("\x00asm\x01\x00\x00\x00"), 0o600) // the empty module
	}
	if err := buildRun(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.ReadFile(file); string(after) != quoteManifest || strings.Count(tm.out.String(), "\n") != 1 {
		t.Errorf("printed %q, module.yaml:\n%s", tm.out, after)
	}
}

// TestBuildDescribeFails: a module that describes itself and fails to
// fails the build, which says how to build without asking it.
func TestBuildDescribeFails(t *testing.T) {
	dir := t.TempDir()
	file := writeManifest(t, dir, quoteManifest)
	tm := newTerm("", false)
	opts := schemaBuild(t, tm, dir)
	boom := errors.New("station_describe: the module did not finish within 10s")
	opts.Describe = func(context.Context, []byte) (*wasmbuild.Description, error) { return nil, boom }
	err := buildRun(context.Background(), opts)
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "build station/quote: derive the commands' schemas: ") || !strings.Contains(err.Error(), "(--no-schemas skips this)") {
		t.Errorf("error %v", err)
	}
	if after, _ := os.ReadFile(file); string(after) != quoteManifest || tm.out.Len() != 0 {
		t.Errorf("printed %q, module.yaml:\n%s", tm.out, after)
	}
}

// TestBuildHelp: the help says what is written into module.yaml and how
// to keep it from happening.
func TestBuildHelp(t *testing.T) {
	c := NewCmdBuild(clitest.Factory(), nil)
	help := strings.Join(strings.Fields(c.Long+c.Example+c.Flags().FlagUsages()), " ")
	for _, want := range []string{"input_schema and output_schema", "jsonschema tag", "omitempty", "delete the comment", "--no-schemas", "never changed", "every host call refused"} {
		if !strings.Contains(help, want) {
			t.Errorf("the help lacks %q", want)
		}
	}
}

// TestBuildResultEscapes: what a module says (its notes) never reaches the
// terminal raw.
func TestBuildResultEscapes(t *testing.T) {
	h := clitest.Hostile
	var buf bytes.Buffer
	if err := (BuildResult{Wasm: h, Manifest: h, Schemas: []string{h}, Notes: []string{h, h}}).Text(&buf); err != nil {
		t.Fatal(err)
	}
	clitest.CheckPrinted(t, "build", buf.String())
	if strings.Count(buf.String(), "\n") != 5 {
		t.Errorf("a note's newline started a line of its own:\n%s", buf.String())
	}
}

// repoRoot returns the repository's root directory.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := wasmbuild.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// sameJSON reports whether the JSON texts a and b are the same value.
func sameJSON(t *testing.T, a, b string) bool {
	t.Helper()
	var va, vb any
	if err := json.Unmarshal([]byte(a), &va); err != nil {
		t.Fatalf("%q: %v", a, err)
	}
	if err := json.Unmarshal([]byte(b), &vb); err != nil {
		t.Fatalf("%q: %v", b, err)
	}
	return reflect.DeepEqual(va, vb)
}
