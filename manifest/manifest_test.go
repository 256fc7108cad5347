package manifest

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/station-dev/station/internal/yamlx"
)

// head is the smallest valid manifest; tests append a requires or limits
// section to it.
const head = `id: dave/test
version: 1.0.0
wasm: module.wasm
commands: [{name: run}]
`

func TestParseExamples(t *testing.T) {
	tests := []struct {
		file string
		want *Manifest
	}{
		{"stripe-invoicing.yaml", &Manifest{
			ID:          "dave/stripe-invoicing",
			Version:     "1.4.0",
			Description: "Create Stripe invoices and summarize them",
			Wasm:        "module.wasm",
			Commands: []Command{
				{Name: "create-invoice", Description: "Create an invoice for a customer"},
				{Name: "summarize", Description: "Summarize this month's invoices"},
			},
			Requires: Requires{
				Network:          Network{Allow: []string{"api.stripe.com", "api.groq.com"}},
				FilesystemWrites: []string{},
			},
			Limits: Limits{MemoryBytes: 64 << 20, Timeout: 30 * time.Second, Concurrency: 4},
		}},
		{"minimal.yaml", &Manifest{
			ID: "station/hello", Version: "0.1.0", Wasm: "hello.wasm",
			Commands: []Command{{Name: "greet"}},
		}},
		{"everything.yaml", &Manifest{
			ID:          "acme-corp/report-builder-2",
			Version:     "2.0.0-rc.1+build.7",
			Description: "Build weekly reports.\nReads the team's tracker and writes a Markdown report.\n",
			Wasm:        "bin/report.wasm",
			Commands:    []Command{{Name: "build", Description: "Build this week's report"}, {Name: "preview-2"}},
			Requires: Requires{
				Network: Network{Allow: []string{
					"api.tracker.example", "*.cdn.example", "http://intranet.example:8080", "https://uploads.example:8443",
				}},
				Subprocess:       Subprocess{Allow: []string{"git", "pandoc", "/usr/local/bin/typst"}},
				FilesystemWrites: []string{"~/reports/**", "~/Documents/weekly/*.md", "/srv/shared/reports/{drafts,final}/*.md"},
				Secrets: []Secret{
					{Name: "TRACKER_TOKEN", Description: "A tracker API token (Settings, API tokens)", Hosts: []string{"api.tracker.example"}},
					{Name: "CDN_KEY", Hosts: []string{"*.cdn.example", "uploads.example:8443"}, Query: true, Body: true},
				},
			},
			Limits: Limits{MemoryBytes: 1536 << 10, Timeout: 150 * time.Second, Concurrency: 1, Fresh: true},
		}},
		{"subprocess-any.yaml", &Manifest{
			ID: "dave/git-helper", Version: "1.0.0", Wasm: "module.wasm",
			Commands: []Command{{Name: "status", Description: "Show the status of a repository"}},
			Requires: Requires{Subprocess: Subprocess{Any: true}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			got, err := Load2(t, filepath.Join("testdata", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			tt.want.File = tt.file
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Parse(%s):\ngot  %+v\nwant %+v", tt.file, got, tt.want)
			}
		})
	}
}

// Load2 parses a testdata file under its base name.
func Load2(t *testing.T, file string) (*Manifest, error) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return Parse(filepath.Base(file), data)
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	data, err := os.ReadFile("testdata/minimal.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, FileName), data, 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := m.File, filepath.Join(dir, FileName); got != want {
		t.Errorf("File = %q, want %q", got, want)
	}
	if _, err := Load(t.TempDir()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load(empty dir) = %v, want an error wrapping os.ErrNotExist", err)
	}
}

func TestParseTooLarge(t *testing.T) {
	data := []byte(head + "description: " + strings.Repeat("x", MaxFileSize) + "\n")
	_, err := Parse(FileName, data)
	var e *Error
	if !errors.As(err, &e) || !strings.Contains(e.Msg, "larger than") {
		t.Errorf("Parse(huge) = %v, want a size error", err)
	}
}

func TestCommand(t *testing.T) {
	m := &Manifest{Commands: []Command{{Name: "a", Description: "first"}, {Name: "b"}}}
	tests := []struct {
		name   string
		want   Command
		wantOK bool
	}{
		{"a", Command{Name: "a", Description: "first"}, true},
		{"b", Command{Name: "b"}, true},
		{"c", Command{}, false},
		{"", Command{}, false},
	}
	for _, tt := range tests {
		got, ok := m.Command(tt.name)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("Command(%q) = %+v, %v; want %+v, %v", tt.name, got, ok, tt.want, tt.wantOK)
		}
	}
}

// errorsOf returns the *Error values joined in err.
func errorsOf(t *testing.T, err error) []*Error {
	t.Helper()
	if err == nil {
		return nil
	}
	var list []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		list = j.Unwrap()
	} else {
		list = []error{err}
	}
	out := make([]*Error, len(list))
	for i, e := range list {
		var me *Error
		if !errors.As(e, &me) {
			t.Fatalf("error %v is %T, want *Error", e, e)
		}
		out[i] = me
	}
	return out
}

// TestErrorPosition checks that errors carry the position, field and entry
// a caller (or an editor) needs, not only the rendered text.
func TestErrorPosition(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want Error
	}{
		{"unknown nested key", head + "requires:\n  netwrok: {}\n",
			Error{File: FileName, Line: 6, Column: 3, Field: "requires", Msg: `unknown field "netwrok"; did you mean "network"?`}},
		{"glob entry", head + "requires:\n  filesystem_writes:\n    - ~/ok/**\n    - /etc/**\n",
			Error{File: FileName, Line: 8, Column: 7, Field: "requires.filesystem_writes", Entry: "/etc/**",
				Msg: "is inside the system directory /etc; it needs an operator grant: the exact glob in filesystem.grant of the station config"}},
		{"wrong type", head + "limits:\n  concurrency: lots\n",
			Error{File: FileName, Line: 6, Column: 16, Field: "limits.concurrency", Msg: "must be an integer, not a string"}},
		{"missing id", "version: 1.0.0\nwasm: m.wasm\ncommands: [{name: run}]\n",
			Error{File: FileName, Line: 1, Column: 1, Msg: `missing required field "id"`}},
		{"empty network entry", head + "requires:\n  network:\n    allow: [\"\"]\n",
			Error{File: FileName, Line: 7, Column: 13, Field: "requires.network.allow", Msg: "empty entry"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(FileName, []byte(tt.yaml))
			errs := errorsOf(t, err)
			if len(errs) != 1 {
				t.Fatalf("Parse = %v, want exactly one error", err)
			}
			if got := *errs[0]; got != tt.want {
				t.Errorf("error:\ngot  %#v\nwant %#v", got, tt.want)
			}
		})
	}
}

func TestErrorString(t *testing.T) {
	tests := []struct {
		e    Error
		want string
	}{
		{Error{File: "module.yaml", Line: 12, Column: 5, Field: "requires.network.allow", Entry: "*", Msg: "too broad"},
			`module.yaml:12:5: requires.network.allow: entry "*": too broad`},
		{Error{File: "module.yaml", Msg: "the manifest is empty"}, "module.yaml: the manifest is empty"},
		{Error{Line: 3, Msg: "bad"}, "3: bad"},
		{Error{Msg: "bad"}, "bad"},
		{Error{File: "m.yaml", Line: 1, Column: 1, Entry: "a\x1b[2Jb", Msg: "bad"}, `m.yaml:1:1: entry "a\x1b[2Jb": bad`},
		{Error{File: "m.yaml", Entry: strings.Repeat("é", 100), Msg: "long"},
			`m.yaml: entry "` + strings.Repeat("é", 64) + `"...: long`},
	}
	for _, tt := range tests {
		if got := tt.e.Error(); got != tt.want {
			t.Errorf("Error() = %s, want %s", got, tt.want)
		}
	}
}

// TestAllErrorsReported checks that Parse does not stop at the first
// problem.
func TestAllErrorsReported(t *testing.T) {
	doc := "id: BAD\nversion: x\nwasm: /abs\ncommands: [{name: Run}]\nlimits: {memory: 1KiB, timeout: 2h}\n"
	_, err := Parse(FileName, []byte(doc))
	var fields []string
	for _, e := range errorsOf(t, err) {
		fields = append(fields, e.Field)
	}
	want := []string{"id", "version", "wasm", "commands[0].name", "limits.memory", "limits.timeout"}
	if !reflect.DeepEqual(fields, want) {
		t.Errorf("error fields = %q, want %q\n%v", fields, want, err)
	}
}

func TestTooManyErrors(t *testing.T) {
	var b strings.Builder
	b.WriteString(head)
	for i := range 200 {
		b.WriteString("x" + strings.Repeat("y", i) + ": 1\n")
	}
	_, err := Parse(FileName, []byte(b.String()))
	errs := errorsOf(t, err)
	if got, want := len(errs), yamlx.MaxProblems+1; got != want {
		t.Fatalf("got %d errors, want %d", got, want)
	}
	if last := errs[len(errs)-1]; !strings.Contains(last.Msg, "too many errors") {
		t.Errorf("last error = %v, want a too-many-errors note", last)
	}
}

func TestID(t *testing.T) {
	tests := []struct {
		id string
		ok bool
	}{
		{"dave/stripe-invoicing", true},
		{"a/b", true},
		{"0/9", true},
		{strings.Repeat("a", 39) + "/" + strings.Repeat("b", 64), true},
		{strings.Repeat("a", 40) + "/b", false},
		{"a/" + strings.Repeat("b", 65), false},
		{"dave", false},
		{"dave/", false},
		{"/stripe", false},
		{"dave/stripe/x", false},
		{"Dave/stripe", false},
		{"dave/stripe_invoicing", false},
		{"-dave/stripe", false},
		{"dave-/stripe", false},
		{"dave/-stripe", false},
		{"dave/stripe-", false},
		{"da--ve/stripe", false},
		{"dave/str--ipe", false},
		{"dave/strïpe", false},
		{"dave/stripe ", false},
	}
	for _, tt := range tests {
		if got := CheckID(tt.id) == ""; got != tt.ok {
			t.Errorf("CheckID(%q) ok = %v, want %v (%s)", tt.id, got, tt.ok, CheckID(tt.id))
		}
	}
}

func TestVersion(t *testing.T) {
	tests := []struct {
		v  string
		ok bool
	}{
		{"1.4.0", true},
		{"0.0.0", true},
		{"10.20.30", true},
		{"1.0.0-alpha", true},
		{"1.0.0-alpha.1", true},
		{"1.0.0-0.3.7", true},
		{"1.0.0-x-y-z.--", true},
		{"1.0.0+20130313144700", true},
		{"1.0.0-beta+exp.sha.5114f85", true},
		{"1.4", false},
		{"1", false},
		{"v1.4.0", false},
		{"01.4.0", false},
		{"1.04.0", false},
		{"1.0.0-01", false},
		{"1.0.0-", false},
		{"1.0.0+", false},
		{"1.0.0-a..b", false},
		{"1.0.0 ", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := CheckVersion(tt.v) == ""; got != tt.ok {
			t.Errorf("CheckVersion(%q) ok = %v, want %v", tt.v, got, tt.ok)
		}
	}
}

func TestWasmPath(t *testing.T) {
	tests := []struct {
		p  string
		ok bool
	}{
		{"module.wasm", true},
		{"bin/module.wasm", true},
		{"a/b/c.wasm", true},
		{"", false},
		{".", false},
		{"/module.wasm", false},
		{"../module.wasm", false},
		{"bin/../../module.wasm", false},
		{"bin/../module.wasm", false},
		{"./module.wasm", false},
		{"bin//module.wasm", false},
		{"bin/", false},
		{`bin\module.wasm`, false},
		{"mod\x00.wasm", false},
	}
	for _, tt := range tests {
		if got := checkWasmPath(tt.p) == ""; got != tt.ok {
			t.Errorf("checkWasmPath(%q) ok = %v, want %v", tt.p, got, tt.ok)
		}
	}
}

func TestCommandName(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
	}{
		{"run", true},
		{"create-invoice", true},
		{"a1", true},
		{"a-", true},
		{"", false},
		{"Run", false},
		{"1run", false},
		{"-run", false},
		{"run_it", false},
		{"run it", false},
		{strings.Repeat("a", 64), true},
		{strings.Repeat("a", 65), false},
	}
	for _, tt := range tests {
		if got := checkCommandName(tt.name) == ""; got != tt.ok {
			t.Errorf("checkCommandName(%q) ok = %v, want %v", tt.name, got, tt.ok)
		}
	}
}

func TestWriteGlob(t *testing.T) {
	tests := []struct {
		glob string
		ok   bool
	}{
		{"~/reports/**", true},
		{"~/reports/*.md", true},
		{"~/reports/2026/{q1,q2}/*.csv", true},
		{"~/notes.txt", true},
		{"~/.config/myapp/**", false}, // a dot-directory of the home: the operator's grant (issue 11)
		{"/srv/reports/**", true},
		{"/data/out/[a-z]*.json", true},
		{"/tmp/myapp/**", true},
		{"/home/dave/reports/**", true},
		{"", false},
		{"**", false},
		{"/**", false},
		{"/", false},
		{"/*", false},
		{"/*/x", false},
		{"/etc/**", false},
		{"/usr/**", false},
		{"/ETC/passwd", false},
		{"/etc", false},
		{"/var/tmp/x/**", false},
		{"/proc/self/mem", false},
		{"/Library/LaunchDaemons/x.plist", false},
		{"../**", false},
		{"~/../**", false},
		{"~/a/../b", false},
		{"~/{..,a}/b", false},
		{"~/a/{b,..}/c", false},
		{"relative/**", false},
		{"./x", false},
		{"~", false},
		{"~/", false},
		{"~/**", false},
		{"~/*", false},
		{"~/*/x", false},
		{"~user/x", false},
		{"~/.ssh/**", false},
		{"~/.SSH/config", false},
		{"~/.gnupg/x", false},
		{"~/.station/station.db", false},
		{"~/.local/bin/x", false},
		{"~/.bashrc", false},
		{"~/.profile", false},
		{"~/Library/LaunchAgents/x.plist", false},
		{"/tmp/**", false},
		{"/data/**", false},
		{"/home/**", false},
		{"/home/dave/**", false},
		{"/Users/dave/*.txt", false},
		{"~/a//b", false},
		{"~/a/./b", false},
		{"~/a/", false},
		{"~/a/[b", false},
		{"~/a/{b", false},
		{`~/a\*`, false},
		{"~/a\x00b", false},
		{"~/a\nb", false},
		{"~/" + strings.Repeat("a", 5000), false},
	}
	for _, tt := range tests {
		msg := checkWriteGlob(tt.glob)
		if got := msg == ""; got != tt.ok {
			t.Errorf("checkWriteGlob(%q) ok = %v, want %v (%s)", tt.glob, got, tt.ok, msg)
		}
	}
}

func TestProgram(t *testing.T) {
	tests := []struct {
		p  string
		ok bool
	}{
		{"git", true},
		{"pandoc", true},
		{"clang-18", true},
		{"/usr/bin/git", true},
		{"", false},
		{"bin/git", false},
		{"./git", false},
		{"../git", false},
		{".", false},
		{"..", false},
		{"/", false},
		{"/usr/bin/../bin/sh", false},
		{"/usr//bin/git", false},
		{"git status", false},
		{"git\t", false},
		{"-c", false},
		{"git\x00", false},
	}
	for _, tt := range tests {
		if got := checkProgram(tt.p) == ""; got != tt.ok {
			t.Errorf("checkProgram(%q) ok = %v, want %v", tt.p, got, tt.ok)
		}
	}
}

// TestNetworkEntries checks that over-broad and malformed allowlist entries
// are refused at parse time with the entry and its position. The grammar is
// the network gate's (netgate.ParseRule); see docs/manifest.md.
func TestNetworkEntries(t *testing.T) {
	tests := []struct {
		entry string
		ok    bool
	}{
		{"api.stripe.com", true},
		{"*.stripe.com", true},
		{"http://api.stripe.com", true},
		{"https://api.stripe.com:8443", true},
		{"api.stripe.com:8443", true},
		{"*", false},
		{"*.com", false},
		{"", false},
		{"https://x.com/path", false},
		{"**.stripe.com", false},
		{"api.*.com", false},
		{"*.github.io", false},
		{"ftp://api.stripe.com", false},
		{"api.stripe.com/", false},
		{"user:pw@api.stripe.com", false},
		{"api.stripe.com:0", false},
		{"127.1", false},
		{"api.stripe.com\t", false},
	}
	for _, tt := range tests {
		t.Run(tt.entry, func(t *testing.T) {
			doc := head + "requires:\n  network:\n    allow:\n      - " + yamlQuote(tt.entry) + "\n"
			_, err := Parse(FileName, []byte(doc))
			if tt.ok {
				if err != nil {
					t.Fatalf("Parse(allow %q) = %v, want no error", tt.entry, err)
				}
				return
			}
			errs := errorsOf(t, err)
			if len(errs) != 1 {
				t.Fatalf("Parse(allow %q) = %v, want one error", tt.entry, err)
			}
			e := errs[0]
			if e.Line != 8 || e.Column != 9 || e.Field != "requires.network.allow" || e.Entry != tt.entry {
				t.Errorf("error = %#v, want line 8, column 9, field requires.network.allow, entry %q", e, tt.entry)
			}
		})
	}
}

// yamlQuote double-quotes s for a YAML flow scalar.
func yamlQuote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

func TestNullsMeanDefaults(t *testing.T) {
	doc := head + "description:\nrequires:\n  network:\n  subprocess:\n  filesystem_writes:\nlimits:\n"
	m, err := Parse(FileName, []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := m.Requires, (Requires{}); !reflect.DeepEqual(got, want) {
		t.Errorf("Requires = %+v, want %+v", got, want)
	}
	if got, want := m.Limits, (Limits{}); got != want {
		t.Errorf("Limits = %+v, want %+v", got, want)
	}
}

func TestSubprocessForms(t *testing.T) {
	tests := []struct {
		yaml string
		want Subprocess
	}{
		{"false", Subprocess{}},
		{"true", Subprocess{Any: true}},
		{"True", Subprocess{Any: true}},
		{"{allow: [git]}", Subprocess{Allow: []string{"git"}}},
		{"{allow: []}", Subprocess{Allow: []string{}}},
	}
	for _, tt := range tests {
		m, err := Parse(FileName, []byte(head+"requires:\n  subprocess: "+tt.yaml+"\n"))
		if err != nil {
			t.Errorf("subprocess: %s: %v", tt.yaml, err)
			continue
		}
		if got := m.Requires.Subprocess; !reflect.DeepEqual(got, tt.want) {
			t.Errorf("subprocess: %s = %+v, want %+v", tt.yaml, got, tt.want)
		}
	}
}

func TestMemory(t *testing.T) {
	tests := []struct {
		in        string
		wantBytes uint64
		wantPages uint32
	}{
		{"1MiB", 1 << 20, 16},
		{"64MiB", 64 << 20, 1024},
		{"4GiB", 4 << 30, 65536},
		{"1048577", 1<<20 + PageSize, 17},
		{"1500KiB", 1536 << 10, 24},
		{"2 GiB", 2 << 30, 32768},
	}
	for _, tt := range tests {
		m, err := Parse(FileName, []byte(head+"limits: {memory: "+tt.in+"}\n"))
		if err != nil {
			t.Errorf("memory %s: %v", tt.in, err)
			continue
		}
		if got := m.Limits.MemoryBytes; got != tt.wantBytes {
			t.Errorf("memory %s: MemoryBytes = %d, want %d", tt.in, got, tt.wantBytes)
		}
		if got := m.Limits.MemoryPages(); got != tt.wantPages {
			t.Errorf("memory %s: MemoryPages = %d, want %d", tt.in, got, tt.wantPages)
		}
	}
}

func TestParseSize(t *testing.T) {
	tests := []struct {
		in      string
		want    uint64
		wantErr bool
	}{
		{"0", 0, false},
		{"100", 100, false},
		{"100B", 100, false},
		{"1KiB", 1 << 10, false},
		{"64MiB", 64 << 20, false},
		{"1GiB", 1 << 30, false},
		{"64 MiB", 64 << 20, false},
		{"64MB", 0, true},
		{"64mib", 0, true},
		{"1.5GiB", 0, true},
		{"-1", 0, true},
		{"", 0, true},
		{"MiB", 0, true},
		{"18446744073709551615", 1<<64 - 1, false},
		{"18446744073709551616", 0, true},
		{"17179869184GiB", 0, true},
		{"64  MiB", 0, true},
	}
	for _, tt := range tests {
		got, err := ParseSize(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestFormatSize(t *testing.T) {
	tests := []struct {
		in   uint64
		want string
	}{
		{0, "0B"},
		{100, "100B"},
		{1 << 10, "1KiB"},
		{1536 << 10, "1536KiB"},
		{64 << 20, "64MiB"},
		{4 << 30, "4GiB"},
	}
	for _, tt := range tests {
		got := FormatSize(tt.in)
		if got != tt.want {
			t.Errorf("FormatSize(%d) = %q, want %q", tt.in, got, tt.want)
		}
		if back, err := ParseSize(got); err != nil || back != tt.in {
			t.Errorf("ParseSize(FormatSize(%d)) = %d, %v", tt.in, back, err)
		}
	}
}

func TestTimeout(t *testing.T) {
	tests := []struct {
		in      string
		want    time.Duration
		wantErr bool
	}{
		{"30s", 30 * time.Second, false},
		{"1h", time.Hour, false},
		{"1m30s", 90 * time.Second, false},
		{"500ms", 500 * time.Millisecond, false},
		{"1h0m1s", 0, true},
		{"0s", 0, true},
		{"-1s", 0, true},
		{"30", 0, true},
		{"forever", 0, true},
	}
	for _, tt := range tests {
		m, err := Parse(FileName, []byte(head+"limits: {timeout: \""+tt.in+"\"}\n"))
		if (err != nil) != tt.wantErr {
			t.Errorf("timeout %s: error %v, want error %v", tt.in, err, tt.wantErr)
			continue
		}
		if err == nil && m.Limits.Timeout != tt.want {
			t.Errorf("timeout %s = %v, want %v", tt.in, m.Limits.Timeout, tt.want)
		}
	}
}

// TestStrictYAML covers YAML features a manifest refuses because they make
// what the station decodes differ from what a reviewer reads (want is the
// expected error text, "" for none).
func TestStrictYAML(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"merge key", head + "limits:\n  <<: {memory: 64MiB}\n", "merge keys (<<) are not allowed"},
		{"custom tag", head + "description: !secret hi\n", "not a value tagged !secret"},
		{"custom mapping tag", head + "limits: !big {memory: 64MiB}\n", "must be a mapping, not a mapping tagged !big"},
		{"CRLF line ends", strings.ReplaceAll(head+"description: |\n  two\n  lines\n", "\n", "\r\n"), ""},
		{"non-string key", head + "requires:\n  1: x\n", "keys must be field names, not an integer"},
		{"duplicate after typo", head + "id: mallory/test\n", `duplicate field "id" (first at line 1)`},
		{"flow duplicate", head + "limits: {memory: 2MiB, memory: 4GiB}\n", `duplicate field "memory"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(FileName, []byte(tt.yaml))
			if tt.want == "" {
				if err != nil {
					t.Errorf("Parse = %v, want no error", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

// TestExplicitStringTag checks that an explicitly tagged string is a string.
func TestExplicitStringTag(t *testing.T) {
	m, err := Parse(FileName, []byte("id: dave/x\nversion: !!str 1.0.0\nwasm: m.wasm\ncommands: [{name: run}]\ndescription: !!str 42\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := m.Description, "42"; got != want {
		t.Errorf("Description = %q, want %q", got, want)
	}
}
