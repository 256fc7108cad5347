package moduletest

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseSpec(t *testing.T) {
	spec, err := ParseSpec("tests.yaml", []byte(`fixtures:
  API.Example.test.: testdata/hello.json   # folded to lower case
  "[2001:db8::1]": ip.json
tests:
  - name: greets Ada
    command: greet
    input: {name: Ada}
    want: {greeting: "Hello, Ada!"}
  - command: fetch
    input: {url: "https://evil.example/"}
    want_error: not in its allowlist
  - command: ping
  - command: echo
    input: null
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(spec.Fixtures) != 2 || spec.Fixtures[0].Host != "api.example.test" || spec.Fixtures[0].File != "testdata/hello.json" ||
		spec.Fixtures[1].Host != "2001:db8::1" || spec.Fixtures[0].Line != 2 {
		t.Errorf("fixtures %+v", spec.Fixtures)
	}
	if len(spec.Tests) != 4 {
		t.Fatalf("tests %+v", spec.Tests)
	}
	a, b, c, d := spec.Tests[0], spec.Tests[1], spec.Tests[2], spec.Tests[3]
	if a.Title() != "greets Ada" || string(a.Input) != `{"name":"Ada"}` || string(a.Want) != `{"greeting":"Hello, Ada!"}` || a.Line != 5 {
		t.Errorf("first test %+v", a)
	}
	if b.Title() != `fetch {"url":"https://evil.example/"}` || b.WantError != "not in its allowlist" || b.Want != nil {
		t.Errorf("second test %+v (%q)", b, b.Title())
	}
	if c.Input != nil || c.Title() != "ping" {
		t.Errorf("a test without input: %+v", c)
	}
	if string(d.Input) != "null" {
		t.Errorf("input: null sends null, got %q", d.Input)
	}
	// Empty and null values in a flow mapping are values, not a comma's
	// mistake.
	if _, err := ParseSpec("tests.yaml", []byte("tests:\n  - {command: x, input: {a: , b: ~, c: null, d: [1, 2], e: \"x, y\"}}\n")); err != nil {
		t.Errorf("flow mappings with empty values: %v", err)
	}
	long := Test{Command: "x", Input: []byte(`"` + strings.Repeat("é", 200) + `"`)}
	if got := long.Title(); len(got) > 2+maxTitle || !strings.HasSuffix(got, "...") {
		t.Errorf("a long input's title is %d bytes: %q", len(got), got)
	}
}

func TestParseSpecErrors(t *testing.T) {
	for _, tc := range []struct{ name, src, want string }{
		{"unknown field", "tests:\n  - command: greet\n    wnat: {}\n", `tests.yaml:3:5: tests[0]: unknown field "wnat"; did you mean "want"?`},
		{"unknown top-level field", "test:\n  - command: greet\n", `tests.yaml:1:1: unknown field "test"; did you mean "tests"?`},
		{"duplicate key", "tests:\n  - command: greet\n    command: fetch\n", `tests.yaml:3:5: tests[0]: duplicate field "command" (first at line 2)`},
		{"duplicate top-level key", "tests: []\ntests: []\n", `tests.yaml:2:1: duplicate field "tests"`},
		{"missing command", "tests:\n  - name: x\n", `tests.yaml:2:5: tests[0]: missing required field "command"`},
		{"want and want_error", "tests:\n  - command: x\n    want: 1\n    want_error: boom\n", "want and want_error exclude each other"},
		{"empty want_error", "tests:\n  - command: x\n    want_error: \"\"\n", "tests[0].want_error: must not be empty"},
		{"same name twice", "tests:\n  - {name: a, command: x}\n  - {name: a, command: y}\n", "tests.yaml:3:12: tests[1].name: another test has this name (at line 2)"},
		{"tests not a list", "tests: {command: x}\n", "tests: must be a list of tests, not a mapping"},
		{"a test not a mapping", "tests:\n  - greet\n", "tests[0]: must be a mapping, not a string"},
		{"input not JSON", "tests:\n  - command: x\n    input: 2024-01-01\n", "is not a JSON value"},
		{"a comma in a flow mapping", "tests:\n  - command: greet\n    want: {greeting: Hello, Ada!}\n", `tests.yaml:3:29: tests[0].want: "Ada!" has no value: in {...} a comma ends a plain value, so quote a string that has one, e.g. "Hello, Ada!"`},
		{"alias", "tests:\n  - &a {command: x}\n  - *a\n", "anchors (&a) are not allowed in tests.yaml"},
		{"not YAML", "tests: [\n", "invalid YAML"},
		{"two documents", "tests: []\n---\ntests: []\n", "found a second one"},
		{"empty file", "# nothing\n", "the file is empty"},
		{"escape with ..", "fixtures:\n  api.example.test: ../../etc/passwd\n", `tests.yaml:2:21: fixtures.api.example.test: entry "../../etc/passwd": must be a path relative to the module directory that stays inside it`},
		{"escape within", "fixtures:\n  api.example.test: testdata/../../x.json\n", "stays inside it"},
		{"absolute path", "fixtures:\n  api.example.test: /etc/passwd\n", "no absolute path"},
		{"a scheme in the host", "fixtures:\n  https://api.example.test: x.json\n", "no scheme, port or wildcard"},
		{"a port in the host", "fixtures:\n  api.example.test:8443: x.json\n", "no scheme, port or wildcard"},
		{"a wildcard host", "fixtures:\n  \"*.example.test\": x.json\n", "no scheme, port or wildcard"},
		{"a host twice", "fixtures:\n  api.example.test: a.json\n  API.example.test: b.json\n", "duplicate host (first at line 2)"},
		{"fixtures not a map", "fixtures: [a.json]\n", "fixtures: must be a map of host: file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseSpec("tests.yaml", []byte(tc.src))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
			var e *Error
			if err != nil && !errors.As(err, &e) {
				t.Errorf("%T is not an *Error", err)
			}
		})
	}
	// Every problem is reported, in file order.
	_, err := ParseSpec("tests.yaml", []byte("tests:\n  - command: x\n    wnat: 1\n  - nmae: y\n"))
	if err == nil || strings.Count(err.Error(), "\n") != 2 || !strings.HasPrefix(err.Error(), "tests.yaml:3:") {
		t.Errorf("several problems: %v", err)
	}
	if _, err := ParseSpec("tests.yaml", make([]byte, MaxSpecSize+1)); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("a file over the limit: %v", err)
	}
}

func TestLoadSpecStaysInTheDirectory(t *testing.T) {
	dir := t.TempDir()
	if _, err := LoadSpec(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("no tests.yaml: %v, want fs.ErrNotExist", err)
	}
	outside := filepath.Join(t.TempDir(), "tests.yaml")
	os.WriteFile(outside, []byte("tests: [{command: x}]\n"), 0o644)
	if err := os.Symlink(outside, filepath.Join(dir, SpecFile)); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadSpec(dir); err == nil || errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a tests.yaml linked from outside the directory was read (%v)", err)
	}
}
