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

// testStyle is the zero Style with what a document needs to decode sizes
// and name itself.
var testStyle = Style{Doc: "a test file", ParseSize: parseKiB, FormatSize: formatKiB}

// parseKiB and formatKiB are a small size syntax for the tests: "12" or
// "12KiB".
func parseKiB(s string) (uint64, error) {
	num, kib := strings.CutSuffix(s, "KiB")
	n, err := strconv.ParseUint(num, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("%s is not a size", Quote(s))
	}
	if kib {
		n <<= 10
	}
	return n, nil
}

func formatKiB(n uint64) string {
	if n%1024 == 0 {
		return strconv.FormatUint(n>>10, 10) + "KiB"
	}
	return strconv.FormatUint(n, 10)
}

// testFile decodes data as a small format that uses every helper:
//
//	name: a string       on: true or false    count: 1 to 9
//	wait: up to 1m       size: 1KiB to 4KiB   tags: [strings]
//	nested: {the same fields}
//
// It returns the problems, rendered, and what it decoded, flattened to
// "field=value" lines.
func testFile(s Style, data string) (problems []string, got []string) {
	d, got := walk(s, data)
	for _, p := range d.Problems() {
		problems = append(problems, p.Error())
	}
	return problems, got
}

// walk is testFile's decoding; it returns the Decoder after Sort.
func walk(s Style, data string) (d *Decoder, got []string) {
	d = New("f.yaml", s)
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
					if t, ok := d.Duration(v, prefix+"wait"); ok {
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
	{"syntax error", "name: [x\n", []string{`f.yaml:1: did not find expected ',' or ']'`}, nil},
	{"syntax error without a line", "name: *x\n", []string{`f.yaml: unknown anchor 'x' referenced`}, nil},

	// Unknown fields: the closest known field, or all of them.
	{"typo", "nmae: x\n", []string{`f.yaml:1:1: unknown field "nmae"; did you mean "name"?`}, nil},
	{"typo in case", "Count: 1\n", []string{`f.yaml:1:1: unknown field "Count"; did you mean "count"?`}, nil},
	{"nothing close", "colour: red\n", []string{`f.yaml:1:1: unknown field "colour" (known fields: name, on, count, wait, size, tags, nested)`}, nil},
	{"long unknown field", "nested:\n  " + strings.Repeat("n", 70) + ": 1\n",
		[]string{`f.yaml:2:3: nested: unknown field "` + strings.Repeat("n", 70) + `" (known fields: name, on, count, wait, size, tags, nested)`}, nil},

	// Keys.
	{"duplicate", "name: a\non: true\nname: b\n", []string{`f.yaml:3:1: duplicate field "name" (first at line 1)`}, nil},
	{"flow duplicate", "nested: {on: true, on: false}\n", []string{`f.yaml:1:20: nested: duplicate field "on" (first at line 1)`}, nil},
	{"key not a string", "1: x\n", []string{`f.yaml:1:1: keys must be field names, not an integer`}, nil},
	{"merge key", "nested:\n  <<: {name: x}\n", []string{`f.yaml:2:3: nested: merge keys (<<) are not allowed in a test file`}, nil},

	// Anchors and aliases: refused before anything is decoded.
	{"anchor", "name: &n x\n", []string{`f.yaml:1:7: anchors (&n) are not allowed in a test file`}, nil},
	{"anchor and alias", "nested: &n {name: x}\ntags: [*n]\ncount: 100\n", []string{
		`f.yaml:1:9: anchors (&n) are not allowed in a test file`,
		`f.yaml:2:8: aliases (*n) are not allowed in a test file`,
	}, nil},

	// One document.
	{"two documents", "name: x\n---\nname: y\n", []string{`f.yaml:2:1: a test file is one YAML document; found a second one`}, nil},
	{"second document broken", "name: x\n---\nname: [\n", []string{`f.yaml:3: did not find expected node content`}, nil},
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
	{"not a duration", "wait: soon\n", []string{`f.yaml:1:7: wait: "soon" is not a duration (write it like 30s, 2m or 1m30s)`}, nil},
	{"duration as integer", "wait: 30\n", []string{`f.yaml:1:7: wait: must be a duration such as "30s", not an integer`}, nil},
	{"size as integer", "size: 2000\n", nil, []string{"size=2000"}},
	{"size out of range", "size: 8KiB\n", []string{`f.yaml:1:7: size: "8KiB" is out of range (1KiB to 4KiB)`}, nil},
	{"size syntax", "size: lots\n", []string{`f.yaml:1:7: size: "lots" is not a size`}, nil},
	{"size type", "size: [1]\n", []string{`f.yaml:1:7: size: must be a size such as "2KiB", not a list`}, nil},
}

func TestDecode(t *testing.T) {
	for _, tt := range decodeTests {
		t.Run(tt.name, func(t *testing.T) {
			problems, got := testFile(testStyle, tt.in)
			if !reflect.DeepEqual(problems, tt.want) {
				t.Errorf("problems:\n got %q\nwant %q", problems, tt.want)
			}
			if tt.want == nil && !reflect.DeepEqual(got, tt.got) {
				t.Errorf("decoded %q, want %q", got, tt.got)
			}
		})
	}
}

// styleTests show the wording each field of Style changes; they also seed
// FuzzDecode.
var styleTests = []struct {
	name  string
	style func(*Style)
	in    string
	want  []string
}{
	{"ListFields", func(s *Style) { s.ListFields = true }, "nmae: x\n",
		[]string{`f.yaml:1:1: unknown field "nmae" (known fields: name, on, count, wait, size, tags, nested)`}},
	{"PlainMergeKeys", func(s *Style) { s.PlainMergeKeys = true }, "<<: {name: x}\n",
		[]string{`f.yaml:1:1: keys must be field names, not a value tagged !!merge`}},
	{"long alias escaped", func(*Style) {}, "name: &" + strings.Repeat("a", 130) + " x\n",
		[]string{`f.yaml:1:7: anchors (&"` + strings.Repeat("a", 128) + `"...) are not allowed in a test file`}},
	{"PlainTypes", func(s *Style) { s.PlainTypes = true }, "nested: !big {}\n",
		[]string{`f.yaml:1:9: nested: must be a mapping, not a mapping`}},
	{"BasicTypes timestamp", func(s *Style) { s.BasicTypes = true }, "name: 2024-01-01\n",
		[]string{`f.yaml:1:7: name: must be a string, not a value of another type; quote it: "2024-01-01"`}},
	{"BasicTypes tagged mapping", func(s *Style) { s.BasicTypes = true }, "nested: !big {}\n",
		[]string{`f.yaml:1:9: nested: must be a mapping, not a mapping`}},
	{"BasicTypes merge key", func(s *Style) { s.BasicTypes, s.PlainMergeKeys = true, true }, "<<: {name: x}\n",
		[]string{`f.yaml:1:1: keys must be field names, not a value of another type`}},
	{"NoQuoteHint", func(s *Style) { s.NoQuoteHint = true }, "name: 1\n",
		[]string{`f.yaml:1:7: name: must be a string, not an integer`}},
	{"Syntax", func(s *Style) {
		s.Syntax = func(msg string, line []byte) string { return fmt.Sprintf("invalid YAML: %s (in %q)", msg, line) }
	}, "name: x\ntags: [a\n", []string{`f.yaml:1: invalid YAML: did not find expected ',' or ']' (in "name: x")`}},
	{"Syntax line text", func(s *Style) {
		s.Syntax = func(msg string, line []byte) string { return fmt.Sprintf("%s (in %q)", msg, line) }
	}, "name: x\n  tags: y\n", []string{`f.yaml:2: mapping values are not allowed in this context (in "  tags: y")`}},
	{"Syntax without a line", func(s *Style) {
		s.Syntax = func(msg string, line []byte) string { return fmt.Sprintf("%s (in %q)", msg, line) }
	}, "name: *x\n", []string{`f.yaml: unknown anchor 'x' referenced (in "")`}},
}

func TestStyle(t *testing.T) {
	for _, tt := range styleTests {
		t.Run(tt.name, func(t *testing.T) {
			s := testStyle
			tt.style(&s)
			if got, _ := testFile(s, tt.in); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("problems:\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

// TestMaxProblems checks that a bounded Decoder keeps the first problems
// and, once sorted, says that it dropped the rest.
func TestMaxProblems(t *testing.T) {
	var in strings.Builder
	for i := range 5 {
		fmt.Fprintf(&in, "colour%d: 1\n", i)
	}
	s := testStyle
	s.MaxProblems = 3
	got, _ := testFile(s, in.String())
	want := []string{
		`f.yaml:1:1: unknown field "colour0" (known fields: name, on, count, wait, size, tags, nested)`,
		`f.yaml:2:1: unknown field "colour1" (known fields: name, on, count, wait, size, tags, nested)`,
		`f.yaml:3:1: unknown field "colour2" (known fields: name, on, count, wait, size, tags, nested)`,
		`f.yaml: too many errors (more than 3); fix these first`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("problems:\n got %q\nwant %q", got, want)
	}

	// Before Sort, Problems is what was found, without the last line.
	d := New("f.yaml", s)
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
}

func TestSort(t *testing.T) {
	d := New("f.yaml", Style{})
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
		{"nmae", "name", 2},
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
		d := New("", Style{})
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

// TestDurationBounds checks that Duration leaves bounds to its caller.
func TestDurationBounds(t *testing.T) {
	for in, want := range map[string]time.Duration{"0s": 0, "-1s": -time.Second, "100h": 100 * time.Hour} {
		d := New("", Style{})
		got, ok := d.Duration(&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: in}, "t")
		if !ok || got != want || d.Len() != 0 {
			t.Errorf("Duration(%q) = %v, %v, want %v", in, got, ok, want)
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
	d := New("f.yaml", Style{})
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
	d := New("f.yaml", Style{})
	doc, _ := d.Document([]byte("b: 1\na: 2\n"))
	d.Mapping(Root(doc), "", Fields([]field{
		{"a", func(v *yaml.Node) { got = append(got, "a="+v.Value) }},
		{"b", func(v *yaml.Node) { got = append(got, "b="+v.Value) }},
	}))
	if want := []string{"b=1", "a=2"}; !reflect.DeepEqual(got, want) || d.Len() != 0 {
		t.Errorf("decoded %q (%d problems), want %q in document order", got, d.Len(), want)
	}
}
