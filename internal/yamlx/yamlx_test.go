package yamlx

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// testFile decodes data as a small format that uses every helper:
//
//	name: a string       on: true or false    count: 1 to 9
//	wait: up to 2m       size: 1KiB to 4KiB   tags: [strings]
//	nested: {the same fields}
//
// It returns the problems, rendered, and what it decoded, flattened to
// "field=value" lines.
func testFile(data string) (problems []string, got []string) {
	d, got := walk(New("f.yaml", "a test file"), data)
	for _, p := range d.Problems() {
		problems = append(problems, p.Error())
	}
	return problems, got
}

// walk is testFile's decoding with d; it returns d after Sort.
func walk(d *Decoder, data string) (_ *Decoder, got []string) {
	doc, ok := d.Document([]byte(data))
	if root := Root(doc); ok && root != nil && d.NoAliases(root) {
		var fields func(prefix string) []Field
		fields = func(prefix string) []Field {
			set := func(name, v string) { got = append(got, prefix+name+"="+v) }
			return []Field{
				{"name", func(v *yaml.Node) {
					if s, ok := d.Str(v, prefix+"name"); ok {
						set("name", s)
					}
				}},
				{"on", func(v *yaml.Node) {
					if b, ok := d.Bool(v, prefix+"on"); ok {
						set("on", strconv.FormatBool(b))
					}
				}},
				{"count", func(v *yaml.Node) {
					if i, ok := d.Int(v, prefix+"count", 1, 9); ok {
						set("count", strconv.Itoa(i))
					}
				}},
				{"wait", func(v *yaml.Node) {
					if t, ok := d.Duration(v, prefix+"wait", 2*time.Minute); ok {
						set("wait", t.String())
					}
				}},
				{"size", func(v *yaml.Node) {
					if n, ok := d.Size(v, prefix+"size", "2KiB", 1<<10, 4<<10); ok {
						set("size", strconv.FormatUint(n, 10))
					}
				}},
				{"tags", func(v *yaml.Node) {
					if v.Kind != yaml.SequenceNode {
						d.TypeError(v, prefix+"tags", "a list")
						return
					}
					for _, e := range v.Content {
						if s, ok := d.Str(e, prefix+"tags"); ok {
							set("tags", s)
						}
					}
				}},
				{"nested", func(v *yaml.Node) { d.Mapping(v, prefix+"nested", fields(prefix+"nested.")) }},
			}
		}
		d.Mapping(root, "", fields(""))
	}
	d.Sort()
	return d, got
}

// decodeTests are testFile's golden problems; they also seed FuzzDecode.
var decodeTests = []struct {
	name, in string
	want     []string // problems
	got      []string // decoded values, when there are no problems
}{
	{"every field", "name: x\non: true\ncount: 3\nwait: 1m30s\nsize: 2KiB\ntags: [a, b]\nnested: {name: y}\n", nil,
		[]string{"name=x", "on=true", "count=3", "wait=1m30s", "size=2048", "tags=a", "tags=b", "nested.name=y"}},
	{"empty", "", nil, nil},
	{"only a comment", "# nothing\n", nil, nil},

	// Positions, and every problem reported in document order.
	{"positions", "name: 1\nnested:\n  count: 12\n  on: maybe\n", []string{
		`f.yaml:1:7: name: must be a string, not an integer; quote it: "1"`,
		`f.yaml:3:10: nested.count: 12 is out of range (1 to 9)`,
		`f.yaml:4:7: nested.on: must be true or false, not a string`,
	}, nil},

	// Syntax errors: a 1-based line inside the file, whatever the library
	// counts; a column where the cause is found.
	{"syntax error", "name: x\ntags: [a\n", []string{`f.yaml:2: invalid YAML: did not find expected ',' or ']'`}, nil},
	{"syntax error on the first line", "name: [x\n", []string{`f.yaml:1: invalid YAML: did not find expected ',' or ']'`}, nil},
	{"scanner error on the first line", "\tname: x\n", []string{`f.yaml:1: invalid YAML: found character that cannot start any token`}, nil},
	{"scanner error", "name: x\non: true\n  tags: y\n", []string{`f.yaml:3: invalid YAML: mapping values are not allowed in this context`}, nil},
	{"parser error", "name: x\ntags:\n  - a\n b: c\n", []string{`f.yaml:4: invalid YAML: did not find expected key`}, nil},
	{"unterminated quote", "name: 'x\n", []string{`f.yaml:1: invalid YAML: found unexpected end of stream`}, nil},
	{"unquoted star", "name: x\ntags: [a, *.b]\n",
		[]string{`f.yaml:2:11: invalid YAML: did not find expected alphabetic or numeric character; a value that starts with "*" must be quoted: "*.b"`}, nil},
	{"unquoted star in a block list", "name: x\ntags:\n  - *.example.com\n",
		[]string{`f.yaml:3:5: invalid YAML: did not find expected alphabetic or numeric character; a value that starts with "*" must be quoted: "*.example.com"`}, nil},
	{"undefined alias", "name: x\ntags:\n  - a\n  - *b\n",
		[]string{`f.yaml:4:5: aliases (*b) are not allowed in a test file; a value that starts with "*" must be quoted: "*b"`}, nil},
	{"control character", "name: x\non: true # \x1b[31m\n", []string{`f.yaml:2:12: invalid YAML: character U+001B is not allowed; remove it (in a double-quoted string, write it as \x1b)`}, nil},
	{"not UTF-8", "name: x\nnested: {name: \"\xff\"}\n", []string{`f.yaml:2:17: invalid YAML: byte 0xff is not valid UTF-8; save the file as UTF-8`}, nil},
	{"CR line breaks", "name: x\ron: true\r  tags: y\r", []string{`f.yaml:3: invalid YAML: mapping values are not allowed in this context`}, nil},
	{"CRLF line breaks", "name: x\r\non: true\r\ntags: [a, *.b]\r\n",
		[]string{`f.yaml:3:11: invalid YAML: did not find expected alphabetic or numeric character; a value that starts with "*" must be quoted: "*.b"`}, nil},
	{"only a quote", "\"\r\n", []string{`f.yaml:1: invalid YAML: found unexpected end of stream`}, nil},

	// Unknown fields: the closest known field, or all of them.
	{"typo", "nmae: x\n", []string{`f.yaml:1:1: unknown field "nmae"; did you mean "name"?`}, nil},
	{"typo in case", "Count: 1\n", []string{`f.yaml:1:1: unknown field "Count"; did you mean "count"?`}, nil},
	{"nothing close", "colour: red\n", []string{`f.yaml:1:1: unknown field "colour" (known fields: name, on, count, wait, size, tags, nested)`}, nil},
	{"short name", "no: 1\n", []string{`f.yaml:1:1: unknown field "no" (known fields: name, on, count, wait, size, tags, nested)`}, nil},
	{"long unknown field", "nested:\n  " + strings.Repeat("n", 70) + ": 1\n",
		[]string{`f.yaml:2:3: nested: unknown field "` + strings.Repeat("n", 70) + `" (known fields: name, on, count, wait, size, tags, nested)`}, nil},

	// Keys.
	{"duplicate", "name: a\non: true\nname: b\n", []string{`f.yaml:3:1: duplicate field "name" (first at line 1)`}, nil},
	{"flow duplicate", "nested: {on: true, on: false}\n", []string{`f.yaml:1:20: nested: duplicate field "on" (first at line 1)`}, nil},
	{"key not a string", "1: x\n", []string{`f.yaml:1:1: keys must be field names, not an integer`}, nil},
	{"merge key", "nested:\n  <<: {name: x}\n", []string{`f.yaml:2:3: nested: merge keys (<<) are not allowed in a test file; write the fields out in this mapping`}, nil},

	// Anchors and aliases: refused before anything is decoded.
	{"anchor", "name: &n x\n", []string{`f.yaml:1:7: anchors (&n) are not allowed in a test file; write the value out where it is used`}, nil},
	{"anchor and alias", "nested: &n {name: x}\ntags: [*n]\ncount: 100\n", []string{
		`f.yaml:1:9: anchors (&n) are not allowed in a test file; write the value out where it is used`,
		`f.yaml:2:8: aliases (*n) are not allowed in a test file; write the value out here`,
	}, nil},
	{"long anchor escaped", "name: &" + strings.Repeat("a", 130) + " x\n",
		[]string{`f.yaml:1:7: anchors (&"` + strings.Repeat("a", 128) + `"...) are not allowed in a test file; write the value out where it is used`}, nil},

	// One document.
	{"two documents", "name: x\n---\nname: y\n", []string{`f.yaml:2:1: a test file is one YAML document; found a second one`}, nil},
	{"second document broken", "name: x\n---\nname: [\n", []string{`f.yaml:3: invalid YAML: did not find expected node content`}, nil},
	{"explicit end", "name: x\n...\n", nil, []string{"name=x"}},

	// Types.
	{"not a mapping", "[1, 2]\n", []string{`f.yaml:1:1: must be a mapping, not a list`}, nil},
	{"tagged mapping", "nested: !big {}\n", []string{`f.yaml:1:9: nested: must be a mapping, not a mapping tagged !big`}, nil},
	{"tagged list", "tags: !set [a]\n", nil, []string{"tags=a"}},
	{"tagged value", "name: !secret x\n", []string{`f.yaml:1:7: name: must be a string, not a value tagged !secret`}, nil},
	{"escaped tag", "name: !x%01 y\n", []string{`f.yaml:1:7: name: must be a string, not a value tagged "!x\x01"`}, nil},
	{"explicit string", "name: !!str 12\n", nil, []string{"name=12"}},
	{"quoted", "name: '12'\n", nil, []string{"name=12"}},
	{"timestamp", "name: 2024-01-01\n", []string{`f.yaml:1:7: name: must be a string, not a timestamp; quote it: "2024-01-01"`}, nil},
	{"float", "name: 1.5\n", []string{`f.yaml:1:7: name: must be a string, not a number; quote it: "1.5"`}, nil},
	{"quoted boolean", "on: 'true'\n", []string{`f.yaml:1:5: on: must be true or false, not a string`}, nil},
	{"null", "name:\n", []string{`f.yaml:1:6: name: must be a string, not empty`}, nil},
	{"list for a string", "name: [a]\n", []string{`f.yaml:1:7: name: must be a string, not a list`}, nil},
	{"integer overflow", "count: 99999999999999999999\n", []string{`f.yaml:1:8: count: must be an integer, not a number`}, nil},
	{"not a duration", "wait: soon\n", []string{`f.yaml:1:7: wait: "soon" is not a duration (write it like 30s, 5m or 1h30m)`}, nil},
	{"duration as integer", "wait: 30\n", []string{`f.yaml:1:7: wait: must be a duration such as "30s", not an integer`}, nil},
	{"duration too long", "wait: 121s\n", []string{`f.yaml:1:7: wait: "121s" is out of range (more than 0, at most 2m)`}, nil},
	{"duration zero", "wait: 0s\n", []string{`f.yaml:1:7: wait: "0s" is out of range (more than 0, at most 2m)`}, nil},
	{"size as integer", "size: 2000\n", nil, []string{"size=2000"}},
	{"size out of range", "size: 8KiB\n", []string{`f.yaml:1:7: size: "8KiB" is out of range (1KiB to 4KiB)`}, nil},
	{"size syntax", "size: lots\n", []string{`f.yaml:1:7: size: "lots" is not a size (write it like 64MiB or 1GiB)`}, nil},
	{"size unit", "size: 2KB\n", []string{`f.yaml:1:7: size: "2KB" has an unknown unit "KB" (use B, KiB, MiB or GiB)`}, nil},
	{"size type", "size: [1]\n", []string{`f.yaml:1:7: size: must be a size such as "2KiB", not a list`}, nil},
}

func TestDecode(t *testing.T) {
	for _, tt := range decodeTests {
		t.Run(tt.name, func(t *testing.T) {
			problems, got := testFile(tt.in)
			if !reflect.DeepEqual(problems, tt.want) {
				t.Errorf("problems:\n got %q\nwant %q", problems, tt.want)
			}
			if tt.want == nil && !reflect.DeepEqual(got, tt.got) {
				t.Errorf("decoded %q, want %q", got, tt.got)
			}
		})
	}
}

// TestMaxProblems checks that a Decoder keeps the first MaxProblems
// problems and, once sorted, says that it dropped the rest.
func TestMaxProblems(t *testing.T) {
	var in strings.Builder
	for i := range MaxProblems + 5 {
		fmt.Fprintf(&in, "colour%d: 1\n", i)
	}
	got, _ := testFile(in.String())
	if len(got) != MaxProblems+1 {
		t.Fatalf("%d problems, want %d and the last line", len(got), MaxProblems)
	}
	if want := `f.yaml:50:1: unknown field "colour49" (known fields: name, on, count, wait, size, tags, nested)`; got[MaxProblems-1] != want {
		t.Errorf("last problem kept: %q, want %q", got[MaxProblems-1], want)
	}
	if want := fmt.Sprintf("f.yaml: too many errors (more than %d); fix these first", MaxProblems); got[MaxProblems] != want {
		t.Errorf("last line: %q, want %q", got[MaxProblems], want)
	}

	// Before Sort, Problems is what was found, without the last line.
	d := New("f.yaml", "a test file")
	d.max = 3
	for i := range 5 {
		d.Add(&yaml.Node{Line: 5 - i, Column: 1}, "", "p")
	}
	if got := d.Problems(); len(got) != 3 || got[0].Line != 5 {
		t.Errorf("before Sort: %+v, want the first 3 found", got)
	}
	d.Sort()
	if got := d.Problems(); len(got) != 4 || got[0].Line != 3 || got[3].Line != 0 {
		t.Errorf("after Sort: %+v, want lines 3, 4, 5 and the last line", got)
	}

	// AddFunc works out a message only for a problem it keeps, and a
	// problem it drops counts.
	d = New("f.yaml", "a test file")
	d.max = 1
	calls := 0
	msg := func() string { calls++; return "p" }
	d.AddFunc(&yaml.Node{Line: 1, Column: 1}, "", msg)
	d.AddFunc(&yaml.Node{Line: 2, Column: 1}, "", msg)
	d.Sort()
	if got := d.Problems(); calls != 1 || len(got) != 2 || got[0].Msg != "p" || !strings.Contains(got[1].Msg, "too many errors") {
		t.Errorf("AddFunc: %d calls, problems %+v; want 1 call, p and the last line", calls, got)
	}
}

// TestSuggest checks Unknown's hint, the "did you mean" of every format.
func TestSuggest(t *testing.T) {
	many := make([]string, 25)
	for i := range many {
		many[i] = fmt.Sprintf("field%02d", i)
	}
	tests := []struct {
		what, name string
		known      []string
		want       string
	}{
		{"field", "nmae", []string{"id", "name"}, `unknown field "nmae"; did you mean "name"?`},
		{"field", "Name", []string{"id", "name"}, `unknown field "Name"; did you mean "name"?`},
		{"step", "invoce", []string{"invoice", "audit"}, `unknown step "invoce"; did you mean "invoice"?`},
		{"step", "b", []string{"a", "c"}, `unknown step "b" (known steps: a, c)`},
		{"field", "any", []string{"allow", "env"}, `unknown field "any" (known fields: allow, env)`},
		{"input", "x", nil, `unknown input "x"`},
		{"field", "zzz", many, `unknown field "zzz" (known fields: ` + strings.Join(many[:20], ", ") + ` and 5 more)`},
		{"field", "a\x1bb", []string{"zz\x1b"}, `unknown field "a\x1bb" (known fields: "zz\x1b")`},
	}
	for _, tt := range tests {
		if got := Unknown(tt.what, tt.name, tt.known); got != tt.want {
			t.Errorf("Unknown(%q, %q, %q) = %s, want %s", tt.what, tt.name, tt.known, got, tt.want)
		}
	}
}

func TestClosest(t *testing.T) {
	known := []string{"name", "network", "timeout", "max_tokens_per_call", "commands", "on"}
	for name, want := range map[string]string{
		"nmae": "name", "netwrok": "network", "timout": "timeout", "max_token_per_call": "max_tokens_per_call",
		"comands": "commands", "COMMANDS": "commands", "Commandz": "commands", "ON": "on",
		"nam": "name", "no": "", "nest": "", "time": "", "x": "", "": "",
	} {
		if got := Closest(name, known); got != want {
			t.Errorf("Closest(%q) = %q, want %q", name, got, want)
		}
	}
}

func TestFormatDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		time.Hour: "1h", 10 * time.Minute: "10m", 90 * time.Second: "1m30s", 1500 * time.Millisecond: "1.5s",
		time.Hour + time.Second: "1h0m1s", 2*time.Hour + 30*time.Minute: "2h30m", 0: "0s",
	} {
		if got := FormatDuration(d); got != want {
			t.Errorf("FormatDuration(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestSort(t *testing.T) {
	d := New("f.yaml", "a test file")
	for _, p := range []Problem{{Line: 3, Column: 2, Msg: "a"}, {Msg: "b"}, {Line: 1, Column: 9, Msg: "c"}, {Line: 3, Column: 1, Msg: "d"}, {Line: 1, Column: 9, Msg: "e"}} {
		d.Report(p)
	}
	d.Sort()
	var got []string
	for _, p := range d.Problems() {
		got = append(got, p.Msg)
	}
	if want := []string{"b", "c", "e", "d", "a"}; !reflect.DeepEqual(got, want) {
		t.Errorf("sorted %q, want %q", got, want)
	}
}

func TestProblemError(t *testing.T) {
	tests := []struct {
		p    Problem
		want string
	}{
		{Problem{File: "m.yaml", Line: 12, Column: 5, Field: "requires.network.allow", Entry: "*", Msg: "bad"}, `m.yaml:12:5: requires.network.allow: entry "*": bad`},
		{Problem{File: "m.yaml", Line: 3, Msg: "bad"}, `m.yaml:3: bad`},
		{Problem{File: "m.yaml", Msg: "bad"}, `m.yaml: bad`},
		{Problem{Line: 2, Column: 1, Msg: "bad"}, `2:1: bad`},
		{Problem{Field: "id", Msg: "bad"}, `id: bad`},
		{Problem{Entry: "a\x00b", Msg: "bad"}, `entry "a\x00b": bad`},
	}
	for _, tt := range tests {
		if got := tt.p.Error(); got != tt.want {
			t.Errorf("%+v: got %q, want %q", tt.p, got, tt.want)
		}
	}
	var err error = &Problem{Msg: "x"}
	var p *Problem
	if !errors.As(err, &p) {
		t.Error("a *Problem is not found by errors.As")
	}
}

func TestQuote(t *testing.T) {
	long := strings.Repeat("é", 100) // 200 bytes: the cut falls inside a character
	tests := []struct{ in, quote, printable string }{
		{"abc", `"abc"`, "abc"},
		{"a\nb", `"a\nb"`, `"a\nb"`},
		{"\xff", `"\xff"`, `"\xff"`},
		{`say "hi"`, `"say \"hi\""`, `"say \"hi\""`},
		{long, strconv.Quote(long[:128]) + "...", strconv.Quote(long[:128]) + "..."},
	}
	for _, tt := range tests {
		if got := Quote(tt.in); got != tt.quote {
			t.Errorf("Quote(%q) = %s, want %s", tt.in, got, tt.quote)
		}
		if got := Printable(tt.in); got != tt.printable {
			t.Errorf("Printable(%q) = %s, want %s", tt.in, got, tt.printable)
		}
	}
}

func TestEditDistance(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"name", "name", 0},
		{"nmae", "name", 1},
		{"abcd", "badc", 2},
		{"ca", "abc", 3},
		{"nam", "name", 1},
		{"names", "name", 1},
		{"", "abc", 3},
		{strings.Repeat("a", 65), "a", 64},
	}
	for _, tt := range tests {
		if got := editDistance(tt.a, tt.b); got != tt.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestDocument(t *testing.T) {
	tests := []struct {
		in       string
		ok, null bool // ok: no problem; null: no root, or a null one
	}{
		{"", true, true},
		{"# c\n", true, true},
		{"~\n", true, true},
		{"---\n", true, true},
		{"a: 1\n", true, false},
		{"a: 1\n---\n", false, true},
		{"a: [\n", false, true},
	}
	for _, tt := range tests {
		d := New("", "a test file")
		doc, ok := d.Document([]byte(tt.in))
		root := Root(doc)
		if ok != tt.ok || (root == nil || IsNull(root)) != tt.null || (d.Len() == 0) != tt.ok {
			t.Errorf("Document(%q) = %v, %v (root %v, %d problems), want ok %v, null %v", tt.in, doc, ok, root, d.Len(), tt.ok, tt.null)
		}
	}
	if Root(&yaml.Node{Kind: yaml.MappingNode}) != nil {
		t.Error("Root of a mapping is not nil")
	}
}

// TestDurationWithoutBound checks Duration with no upper bound: more than
// 0 is all it asks.
func TestDurationWithoutBound(t *testing.T) {
	for in, want := range map[string]string{
		"100h": "",
		"0s":   `t: "0s" is out of range (more than 0)`,
		"-1s":  `t: "-1s" is out of range (more than 0)`,
	} {
		d := New("", "a test file")
		got, ok := d.Duration(&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: in}, "t", 0)
		var msg string
		if p := d.Problems(); len(p) > 0 {
			msg = p[0].Error()
		}
		if msg != want || ok != (want == "") || (ok && got != 100*time.Hour) {
			t.Errorf("Duration(%q) = %v, %v, %q; want %q", in, got, ok, msg, want)
		}
	}
}

func TestErrors(t *testing.T) {
	type fileError struct { // the shape of manifest.Error and config.Error
		File         string
		Line, Column int
		Field, Entry string
		Msg          string
	}
	d := New("f.yaml", "a test file")
	if got := Errors[fileError](d); got != nil {
		t.Errorf("no problems: got %v, want nil", got)
	}
	d.AddEntry(&yaml.Node{Line: 2, Column: 3}, "a.b", "x", "bad")
	got := Errors[fileError](d)
	if want := (fileError{File: "f.yaml", Line: 2, Column: 3, Field: "a.b", Entry: "x", Msg: "bad"}); len(got) != 1 || *got[0] != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func TestFields(t *testing.T) {
	type field Field // as the packages that use yamlx declare it
	var got []string
	d := New("f.yaml", "a test file")
	doc, _ := d.Document([]byte("b: 1\na: 2\n"))
	d.Mapping(Root(doc), "", Fields([]field{
		{"a", func(v *yaml.Node) { got = append(got, "a="+v.Value) }},
		{"b", func(v *yaml.Node) { got = append(got, "b="+v.Value) }},
	}))
	if want := []string{"b=1", "a=2"}; !reflect.DeepEqual(got, want) || d.Len() != 0 {
		t.Errorf("decoded %q (%d problems), want %q in document order", got, d.Len(), want)
	}
}
