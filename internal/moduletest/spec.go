package moduletest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/station-dev/station/internal/netgate"
	"github.com/station-dev/station/internal/yamlx"
)

// SpecFile is the name of the tests file in a module directory.
const SpecFile = "tests.yaml"

// MaxSpecSize bounds tests.yaml.
const MaxSpecSize = 1 << 20

// MaxTests bounds how many tests tests.yaml may hold.
const MaxTests = 1000

// Error is one problem found in tests.yaml or in a fixture file. The
// errors of one file are joined with errors.Join, sorted by position.
type Error struct {
	File   string // the file, as named to the reader (DIR/tests.yaml)
	Line   int    // 1-based; 0 when the problem has no position
	Column int    // 1-based; 0 when unknown
	Field  string // the field path, e.g. "tests[2].want_error" or "routes[0].path"
	Entry  string // the offending entry, when there is one
	Msg    string // what is wrong, lower case, no trailing period
}

// Error renders e as one line:
//
//	examples/hello/tests.yaml:7:5: tests[1]: unknown field "wnat"; did you mean "want"?
func (e *Error) Error() string { return (*yamlx.Problem)(e).Error() }

// Spec is a module's tests.yaml.
type Spec struct {
	// File is the path it was read from.
	File string
	// Fixtures are its fixtures map, in file order: hosts and files
	// relative to the module directory.
	Fixtures []FixtureRef
	// Tests are its tests, in file order.
	Tests []Test
}

// FixtureRef is one entry of the fixtures map of tests.yaml (or one
// --fixture HOST=FILE).
type FixtureRef struct {
	// Host is the canonical host: lower case, no trailing dot, an IPv6
	// address without brackets.
	Host string
	// File is the file as written. In tests.yaml it is relative to the
	// module directory and never leaves it.
	File string
	// Line is where tests.yaml names it; 0 for --fixture.
	Line int
}

// Test is one call to make and what to expect of it.
type Test struct {
	// Name is the name given, "" for none (Title makes one).
	Name    string
	Command string
	// Input is the input document sent; nil sends none.
	Input json.RawMessage
	// Want, if set, is the result the call must return (compared as JSON
	// values, not bytes).
	Want json.RawMessage
	// WantError, if set, is text the call's error must contain; the call
	// must fail.
	WantError string
	// Line is where the test starts in tests.yaml; 0 for --command.
	Line int
}

// maxTitle bounds the default title of a test.
const maxTitle = 80

// Title is the test's name, or "COMMAND INPUT" (the input as compact JSON,
// cut) when it has none.
func (t Test) Title() string {
	if t.Name != "" {
		return t.Name
	}
	if t.Input == nil {
		return t.Command
	}
	return t.Command + " " + Cut(compact(t.Input), maxTitle)
}

// LoadSpec reads DIR/tests.yaml, confined to dir: a tests.yaml that is a
// link out of the directory is not read. A directory without one is an
// error that matches fs.ErrNotExist.
func LoadSpec(dir string) (*Spec, error) {
	name := filepath.Join(dir, SpecFile)
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	f, err := root.Open(SpecFile)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxSpecSize+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	return ParseSpec(name, data)
}

// ParseSpec parses a tests.yaml file's contents strictly, the way the
// station reads its other YAML files: unknown fields (with the closest
// known one), duplicate keys, wrong types, anchors and aliases are errors
// with the file, line and column; every problem is reported. filename is
// used in errors and recorded in Spec.File.
func ParseSpec(filename string, data []byte) (*Spec, error) {
	if len(data) > MaxSpecSize {
		return nil, &Error{File: filename, Msg: fmt.Sprintf("the file is larger than %d bytes", MaxSpecSize)}
	}
	d := &specDecoder{Decoder: yamlx.New(filename, SpecFile)}
	spec := d.decode(data)
	if d.Len() > 0 {
		d.Sort()
		return nil, errors.Join(errorsOf(d.Problems())...)
	}
	spec.File = filename
	return spec, nil
}

func errorsOf(ps []yamlx.Problem) []error {
	errs := make([]error, len(ps))
	for i, p := range ps {
		e := Error(p)
		errs[i] = &e
	}
	return errs
}

type specDecoder struct {
	*yamlx.Decoder
}

func (d *specDecoder) decode(data []byte) *Spec {
	spec := &Spec{}
	doc, ok := d.Document(data)
	if !ok {
		return spec
	}
	root := yamlx.Root(doc)
	if root == nil || yamlx.IsNull(root) {
		d.Add(doc, "", "the file is empty; it needs tests: (a list) or fixtures: (a map)")
		return spec
	}
	if !d.NoAliases(root) {
		return spec
	}
	d.Mapping(root, "", []yamlx.Field{
		{Name: "fixtures", Decode: func(v *yaml.Node) { spec.Fixtures = d.fixtures(v) }},
		{Name: "tests", Decode: func(v *yaml.Node) { spec.Tests = d.tests(v) }},
	})
	return spec
}

func (d *specDecoder) fixtures(n *yaml.Node) []FixtureRef {
	const path = "fixtures"
	if yamlx.IsNull(n) {
		return nil
	}
	if n.Kind != yaml.MappingNode || n.ShortTag() != "!!map" {
		d.TypeError(n, path, "a map of host: file")
		return nil
	}
	var out []FixtureRef
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if d.MergeKey(k, path) {
			continue
		}
		if k.Kind != yaml.ScalarNode || k.ShortTag() != "!!str" {
			d.Addf(k, path, "keys must be host names, not %s", d.Describe(k))
			continue
		}
		host, err := ParseHost(k.Value)
		if err != nil {
			d.AddEntry(k, path, k.Value, err.Error())
			continue
		}
		if line, dup := seen[host]; dup {
			d.AddEntry(k, path, k.Value, fmt.Sprintf("duplicate host (first at line %d)", line))
			continue
		}
		seen[host] = k.Line
		file, ok := d.Str(v, path+"."+k.Value)
		if !ok {
			continue
		}
		if msg := localPath(file); msg != "" {
			d.AddEntry(v, path+"."+k.Value, file, msg)
			continue
		}
		out = append(out, FixtureRef{Host: host, File: file, Line: v.Line})
	}
	return out
}

// localPath says what is wrong with a fixture path of tests.yaml, or "":
// it must name a file inside the module directory, so that a module's
// tests.yaml (which may come from anyone) cannot make the author's station
// serve /etc/passwd or ~/.ssh to the module.
func localPath(p string) string {
	switch {
	case p == "":
		return "empty path"
	case strings.ContainsRune(p, 0):
		return "a path cannot contain NUL"
	case filepath.IsAbs(p), !filepath.IsLocal(p):
		return "must be a path relative to the module directory that stays inside it (no absolute path, no ..); --fixture HOST=FILE may name any file"
	}
	return ""
}

func (d *specDecoder) tests(n *yaml.Node) []Test {
	const path = "tests"
	if yamlx.IsNull(n) {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		d.TypeError(n, path, "a list of tests")
		return nil
	}
	if len(n.Content) > MaxTests {
		d.Addf(n, path, "%d tests are more than the %d one file may hold", len(n.Content), MaxTests)
		return nil
	}
	var out []Test
	names := map[string]int{}
	for i, e := range n.Content {
		at := fmt.Sprintf("%s[%d]", path, i)
		t := Test{Line: e.Line}
		var wantAt, wantErrAt *yaml.Node
		seen := d.Mapping(e, at, []yamlx.Field{
			{Name: "name", Decode: func(v *yaml.Node) {
				if s, ok := d.Str(v, at+".name"); ok {
					if strings.TrimSpace(s) == "" {
						d.Add(v, at+".name", "must not be empty (leave it out for the default, COMMAND INPUT)")
						return
					}
					if line, dup := names[s]; dup {
						d.Addf(v, at+".name", "another test has this name (at line %d); names tell the tests apart", line)
						return
					}
					names[s] = v.Line
					t.Name = s
				}
			}},
			{Name: "command", Decode: func(v *yaml.Node) {
				if s, ok := d.Str(v, at+".command"); ok {
					if s == "" {
						d.Add(v, at+".command", "must not be empty")
						return
					}
					t.Command = s
				}
			}},
			{Name: "input", Decode: func(v *yaml.Node) { t.Input = d.json(v, at+".input") }},
			{Name: "want", Decode: func(v *yaml.Node) { wantAt = v; t.Want = d.json(v, at+".want") }},
			{Name: "want_error", Decode: func(v *yaml.Node) {
				wantErrAt = v
				if s, ok := d.Str(v, at+".want_error"); ok {
					if s == "" {
						d.Add(v, at+".want_error", "must not be empty: write the text the error must contain")
						return
					}
					t.WantError = s
				}
			}},
		})
		if seen == nil {
			continue
		}
		if seen["command"] == nil {
			d.Add(e, at, `missing required field "command"`)
		}
		if wantAt != nil && wantErrAt != nil {
			d.Add(wantErrAt, at, "want and want_error exclude each other: a call returns a result or fails")
		}
		out = append(out, t)
	}
	return out
}

// json decodes the YAML value n as the JSON document it spells.
func (d *specDecoder) json(n *yaml.Node, path string) json.RawMessage {
	if !d.flowCommas(n, path) {
		return nil
	}
	v, ok := d.JSON(n, path)
	if !ok {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		d.Addf(n, path, "cannot be written as JSON: %v", err)
		return nil
	}
	return b
}

// flowCommas reports whether no flow mapping under n ({...}) has a key
// without a value where the comma of a plain string ended the value
// before it — {greeting: Hello, Ada!} is {"greeting": "Hello", "Ada!":
// null} — after recording each such key.
func (d *specDecoder) flowCommas(n *yaml.Node, path string) bool {
	ok := true
	if n.Kind == yaml.MappingNode && n.Style&yaml.FlowStyle != 0 {
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if i == 0 || k.Style != 0 || v.Value != "" || !yamlx.IsNull(v) || v.Line != k.Line || v.Column != k.Column+len(k.Value) {
				continue
			}
			prev := n.Content[i-1]
			hint := ""
			if prev.Kind == yaml.ScalarNode && prev.Style == 0 {
				hint = ", e.g. " + strconv.Quote(prev.Value+", "+k.Value)
			}
			d.Addf(k, path, "%s has no value: in {...} a comma ends a plain value, so quote a string that has one%s", yamlx.Quote(k.Value), hint)
			ok = false
		}
	}
	for _, c := range n.Content {
		ok = d.flowCommas(c, path) && ok
	}
	return ok
}

// ParseHost checks that s is a host a fixture can stand for — a name or an
// IP address, without a scheme, a port or a wildcard — and returns it in
// canonical form (lower case, no trailing dot, IPv6 without brackets).
func ParseHost(s string) (string, error) {
	r, err := netgate.ParseRule(s)
	if err != nil {
		if inner := errors.Unwrap(err); inner != nil {
			err = inner
		}
		return "", err
	}
	canon := strings.TrimSuffix(strings.ToLower(s), ".")
	if r.Wildcard || r.Scheme != "https" || r.Port != 443 || r.String() != canon {
		return "", errors.New(`must be a host name or an IP address alone, e.g. "api.example.com": no scheme, port or wildcard (a fixture answers on every port the allowlist grants for it)`)
	}
	return r.Host, nil
}

// compact is b as compact JSON (b itself when it is not JSON).
func compact(b []byte) string {
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		return string(b)
	}
	return out.String()
}

// Cut cuts s to at most n bytes (not inside a UTF-8 sequence), marking
// the cut with "...".
func Cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - 3
	for cut > 0 && s[cut]&0xc0 == 0x80 {
		cut--
	}
	return s[:cut] + "..."
}
