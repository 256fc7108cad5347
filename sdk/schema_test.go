package sdk

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
	"unsafe"
)

// encoded returns s as the JSON the SDK writes.
func encoded(s schemaObject) string {
	var b bytes.Buffer
	s.appendJSON(&b)
	return b.String()
}

// Hostile and unsupported types.
type (
	withChan struct {
		C chan int `json:"c"`
	}
	withFunc struct {
		Deep struct {
			F []func() `json:"f"`
		} `json:"deep"`
	}
	withComplex struct {
		Z map[string]complex128 `json:"z"`
	}
	withUnsafe struct {
		P unsafe.Pointer `json:"p"`
	}
	badKeys struct {
		M map[bool]string `json:"m"`
	}
	structKeys struct {
		M map[inner]string `json:"m"`
	}
	emptyTag struct {
		X int `json:"x" jsonschema:""`
	}
	reservedTag struct {
		X int `json:"x" jsonschema:"minimum=3"`
	}
	skippedChan struct {
		C chan int `json:"-"`
		X int      `json:"x"`
	}
	selfPointer *selfPointer
	loopy       struct {
		P selfPointer `json:"p"`
	}
)

// wide doubles its subschemas with every level: 2^24 of them, inline.
type (
	wide0  struct{ A, B wide1 }
	wide1  struct{ A, B wide2 }
	wide2  struct{ A, B wide3 }
	wide3  struct{ A, B wide4 }
	wide4  struct{ A, B wide5 }
	wide5  struct{ A, B wide6 }
	wide6  struct{ A, B wide7 }
	wide7  struct{ A, B wide8 }
	wide8  struct{ A, B wide9 }
	wide9  struct{ A, B wide10 }
	wide10 struct{ A, B wide11 }
	wide11 struct{ A, B wide12 }
	wide12 struct{ A, B wide13 }
	wide13 struct{ A, B wide14 }
	wide14 struct{ A, B wide15 }
	wide15 struct{ A, B wide16 }
	wide16 struct{ A, B wide17 }
	wide17 struct{ A, B wide18 }
	wide18 struct{ A, B wide19 }
	wide19 struct{ A, B wide20 }
	wide20 struct{ A, B wide21 }
	wide21 struct{ A, B wide22 }
	wide22 struct{ A, B wide23 }
	wide23 struct{ A, B int }
)

func TestSchemaRefusals(t *testing.T) {
	tests := []struct {
		typ    reflect.Type
		input  string // the input schema's error
		output string // the output schema's error, "" when it has one
	}{
		{reflect.TypeFor[withChan](), "c: chan int (a chan) has no JSON form", "c: chan int (a chan) has no JSON form"},
		{reflect.TypeFor[withFunc](), "deep.f[]: func() (a func) has no JSON form", "deep.f[]"},
		{reflect.TypeFor[withComplex](), "z{}: complex128 (a complex128) has no JSON form", "z{}"},
		{reflect.TypeFor[withUnsafe](), "p: unsafe.Pointer", "p: unsafe.Pointer"},
		{reflect.TypeFor[badKeys](), "m: map[bool]string: a map's keys must be", "m: map[bool]string"},
		{reflect.TypeFor[structKeys](), "m: map[sdk.inner]string", "m: map[sdk.inner]string"},
		{reflect.TypeFor[emptyTag](), "x: an empty jsonschema tag", "x: an empty jsonschema tag"},
		{reflect.TypeFor[reservedTag](), `x: a jsonschema tag may not start with "minimum="`, "minimum="},
		{reflect.TypeFor[loopy](), "p: more than 16 pointers in a row", "more than 16 pointers"},
		{reflect.TypeFor[selfPointer](), "more than 16 pointers in a row", "more than 16 pointers"},
		{reflect.TypeFor[wide0](), errTooLarge.Error(), errTooLarge.Error()},
		{reflect.TypeFor[string](), "string is not a struct or a map (a command's input is a JSON object): no input schema", ""},
		{reflect.TypeFor[[]inner](), "[]sdk.inner is not a struct or a map", ""},
		{reflect.TypeFor[**int](), "**int is not a struct or a map", ""},
		{reflect.TypeFor[time.Time](), "time.Time is not a struct or a map", ""},
		{reflect.TypeFor[any](), "interface {} is not a struct or a map", ""},
		{reflect.TypeFor[json.RawMessage](), "json.RawMessage is not a struct or a map", ""},
		{reflect.TypeFor[*unmarshalsJSON](), "*sdk.unmarshalsJSON decodes itself (UnmarshalJSON or UnmarshalText), so its JSON form is unknown", ""},
		{reflect.TypeFor[map[bool]int](), "the value: map[bool]int: a map's keys must be", "the value: map[bool]int"},
	}
	for _, tt := range tests {
		start := time.Now()
		if _, err := inputSchema(tt.typ); err == nil || !strings.Contains(err.Error(), tt.input) {
			t.Errorf("%s: input schema error %v, want %q", tt.typ, err, tt.input)
		}
		_, err := outputSchema(tt.typ)
		if tt.output == "" && err != nil || tt.output != "" && (err == nil || !strings.Contains(err.Error(), tt.output)) {
			t.Errorf("%s: output schema error %v, want %q", tt.typ, err, tt.output)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("%s: took %s", tt.typ, d)
		}
	}
	if !errors.Is(func() error { _, err := outputSchema(reflect.TypeFor[wide0]()); return err }(), errTooLarge) {
		t.Error("wide0: not errTooLarge")
	}
	// A field skipped with "-" may have any type.
	if s, err := inputSchema(reflect.TypeFor[skippedChan]()); err != nil || encoded(s) != `{"type":"object","properties":{"x":{"type":"integer"}},"required":["x"],"additionalProperties":false}` {
		t.Errorf("skipped chan: %s, %v", encoded(s), err)
	}
}

func TestDescribe(t *testing.T) {
	var doc struct {
		Commands map[string]struct {
			InputSchema  json.RawMessage `json:"input_schema"`
			OutputSchema json.RawMessage `json:"output_schema"`
			Raw          bool            `json:"raw"`
			Notes        []string        `json:"notes"`
		} `json:"commands"`
	}
	b := Describe()
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	want := `{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"}},"required":["a"],"additionalProperties":false}`
	add := doc.Commands["add"]
	if string(add.InputSchema) != want || string(add.OutputSchema) != want || add.Notes != nil {
		t.Errorf("add: %+v", add)
	}
	if fail := doc.Commands["fail"]; !strings.Contains(string(fail.OutputSchema), `"type":["null","object"]`) {
		t.Errorf("fail (Out *pair): %s", fail.OutputSchema)
	}
	if n := doc.Commands["nothing"]; n.OutputSchema != nil || len(n.Notes) != 1 || n.Notes[0] != "output: interface {} may be any JSON value: no output schema" {
		t.Errorf("nothing (Out any): %+v", n)
	}
	if e := doc.Commands["echo"]; !e.Raw || e.InputSchema != nil || e.Notes != nil {
		t.Errorf("echo (raw): %+v", e)
	}
	if !bytes.Equal(Describe(), b) {
		t.Error("a second Describe differs")
	}

	// A command whose types have no schema says why.
	d := describe(&handler{name: "x", in: reflect.TypeFor[string](), out: reflect.TypeFor[withChan]()})
	if got := encoded(d); got != `{"notes":["input: string is not a struct or a map (a command's input is a JSON object): no input schema","output: c: chan int (a chan) has no JSON form; skip the field with `+"`json:\\\"-\\\"`"+`"]}` {
		t.Errorf("no schemas: %s", got)
	}
}

// TestAppendJSONString: strings are written as encoding/json writes them,
// without its HTML escapes.
func TestAppendJSONString(t *testing.T) {
	for _, s := range []string{"", "plain", `"quoted" \ back`, "a -> b <c> & d", "ctl \x00\x1f\n\t", "bad \xff utf-8", "\u2028\u2029", "日本"} {
		var b bytes.Buffer
		appendJSONString(&b, s)
		var back string
		if err := json.Unmarshal(b.Bytes(), &back); err != nil || back != strings.ToValidUTF8(s, "\uFFFD") {
			t.Errorf("%q: wrote %s, read back %q (%v)", s, b.Bytes(), back, err)
		}
		if strings.Contains(b.String(), `\u003c`) || strings.Contains(b.String(), `\u0026`) {
			t.Errorf("%q: HTML-escaped: %s", s, b.Bytes())
		}
	}
}

// Types the tests above name.
type (
	inner struct {
		A int `json:"a"`
		B int `json:"b"`
	}
	unmarshalsJSON struct {
		X int `json:"x"`
	}
	tree struct {
		Name     string `json:"name"`
		Children []tree `json:"children,omitempty"`
	}
	list[T any] struct {
		Value T        `json:"value"`
		Next  *list[T] `json:"next"`
	}
)

func (*unmarshalsJSON) UnmarshalJSON([]byte) error { return nil }

// TestDefNames: $defs names are the types' names with what a JSON Pointer
// or a reader would stumble on replaced, and unique.
func TestDefNames(t *testing.T) {
	g := newSchemaGen(forOutput)
	a := g.defName(reflect.TypeFor[list[int]]())
	b := g.defName(reflect.TypeFor[list[string]]())
	c := g.defName(reflect.TypeFor[list[int]]())
	if a != "list_int_" || b != "list_string_" || c != a {
		t.Errorf("names %q, %q, %q", a, b, c)
	}
	g.taken["tree"] = true
	if n := g.defName(reflect.TypeFor[tree]()); n != "tree2" {
		t.Errorf("a taken name: %q, want tree2", n)
	}
}
