package manifest_test

// The schemas the Go SDK derives from a command's types (sdk.InputSchema,
// sdk.OutputSchema, what station module build writes into module.yaml) are
// schemas this package takes, and they accept what encoding/json writes.
// These tests live here, not in the SDK, because the SDK is its own module
// and does not depend on the station's.

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"testing/quick"
	"time"

	"github.com/station-dev/station/manifest"
	"github.com/station-dev/station/sdk"
)

func inputSchema(t reflect.Type) ([]byte, error)  { return sdk.InputSchema(t) }
func outputSchema(t reflect.Type) ([]byte, error) { return sdk.OutputSchema(t) }
func encoded(b []byte) string                     { return string(b) }

// Types for the table below.
type (
	scalars struct {
		B   bool    `json:"b"`
		S   string  `json:"s"`
		F32 float32 `json:"f32"`
		F64 float64 `json:"f64"`
		I   int     `json:"i"`
		I8  int8    `json:"i8"`
		I16 int16   `json:"i16"`
		I32 int32   `json:"i32"`
		I64 int64   `json:"i64"`
		U   uint    `json:"u"`
		U8  uint8   `json:"u8"`
		U16 uint16  `json:"u16"`
		U32 uint32  `json:"u32"`
		U64 uint64  `json:"u64"`
		UP  uintptr `json:"up"`
	}
	tagged struct {
		Plain    string // no tag: its Go name
		Renamed  string `json:"renamed"`
		Optional string `json:"optional,omitempty"`
		Zero     int    `json:"zero,omitzero"`
		Skipped  string `json:"-"`
		//lint:ignore SA5008 a field named "-", as encoding/json reads it
		Dash      string `json:"-,"`
		Quoted    int    `json:"quoted,string"`
		QuotedPtr *bool  `json:"quoted_ptr,string"`
		//lint:ignore SA5008 not a name encoding/json takes: the field is BadName
		BadName   string  `json:"a\\b"`
		Described float64 `json:"described" jsonschema:"a number, with \"quotes\" and <html> & a -> b"`
		//lint:ignore U1000 encoding/json skips it, and so must the schema
		unexported string
	}
	containers struct {
		Ptr    *string           `json:"ptr"`
		PtrPtr **int             `json:"ptr_ptr"`
		Slice  []string          `json:"slice"`
		Bytes  []byte            `json:"bytes"`
		Array  [3]int            `json:"array"`
		BArray [2]byte           `json:"barray"`
		Map    map[string]int    `json:"map"`
		IntMap map[int64]bool    `json:"int_map"`
		AnyMap map[string]any    `json:"any_map"`
		Nested []map[string]*int `json:"nested"`
	}
	special struct {
		Time    time.Time          `json:"time"`
		TimePtr *time.Time         `json:"time_ptr"`
		Raw     json.RawMessage    `json:"raw"`
		Any     any                `json:"any"`
		Err     error              `json:"err"`
		Dur     time.Duration      `json:"dur"`
		Num     json.Number        `json:"num"`
		Addr    netip.Addr         `json:"addr"` // MarshalText and UnmarshalText
		AddrMap map[netip.Addr]int `json:"addr_map"`
	}
	// Embedding, as encoding/json resolves it.
	inner struct {
		A int `json:"a"`
		B int `json:"b"`
	}
	other struct {
		C int `json:"c"`
	}
	Named    string
	embedded struct {
		inner           // unexported, promoted all the same
		other           //
		*Pointed        // promoted, never required (a nil one writes nothing)
		Named           // a named non-struct: a field "Named"
		Tagged   inner  `json:"tagged"` // a tagged struct is a field, not promoted
		C        string `json:"c"`      // shallower than other.C: wins
	}
	Pointed struct {
		P int `json:"p"`
	}
	empty struct{}
	// SelfEmbed embeds a pointer to itself: encoding/json visits it once.
	SelfEmbed struct {
		*SelfEmbed
		X int `json:"x"`
	}
)

// Custom encodings: each implements what its name says, and no more.
type (
	marshalsJSON   struct{ X int }
	unmarshalsJSON struct {
		X int `json:"x"`
	}
	marshalsText   struct{ X int } // and *marshalsText unmarshals text
	ptrText        struct{ X int } // *ptrText marshals and unmarshals text
	byteWithMethod byte            // marshals JSON, and *byteWithMethod unmarshals it
)

func (marshalsJSON) MarshalJSON() ([]byte, error)   { return []byte(`1`), nil }
func (*unmarshalsJSON) UnmarshalJSON([]byte) error  { return nil }
func (marshalsText) MarshalText() ([]byte, error)   { return []byte("t"), nil }
func (*marshalsText) UnmarshalText([]byte) error    { return nil }
func (*ptrText) MarshalText() ([]byte, error)       { return []byte("t"), nil }
func (*ptrText) UnmarshalText([]byte) error         { return nil }
func (byteWithMethod) MarshalJSON() ([]byte, error) { return []byte(`0`), nil }
func (*byteWithMethod) UnmarshalJSON([]byte) error  { return nil }

type customs struct {
	MJ marshalsJSON     `json:"mj"`
	UJ unmarshalsJSON   `json:"uj"`
	MT marshalsText     `json:"mt"`
	PT ptrText          `json:"pt"`
	BM []byteWithMethod `json:"bm"`
}

// Recursive types.
type (
	tree struct {
		Name     string  `json:"name"`
		Children []tree  `json:"children,omitempty"`
		Parent   *tree   `json:"parent,omitempty"`
		Meta     treeMap `json:"meta,omitempty"`
	}
	treeMap map[string]treeMap
	holder  struct {
		Root  tree  `json:"root"`
		Again *tree `json:"again"`
	}
	ping struct {
		Pong *pong `json:"pong"`
	}
	pong struct {
		Ping *ping `json:"ping"`
	}
)

func TestSchemas(t *testing.T) {
	tests := []struct {
		name   string
		typ    reflect.Type
		input  string // "" when the input schema is refused
		output string // "" when there is none
	}{
		{
			name:  "scalars",
			typ:   reflect.TypeFor[scalars](),
			input: `{"type":"object","properties":{"b":{"type":"boolean"},"s":{"type":"string"},"f32":{"type":"number"},"f64":{"type":"number"},"i":{"type":"integer"},"i8":{"type":"integer","minimum":-128,"maximum":127},"i16":{"type":"integer","minimum":-32768,"maximum":32767},"i32":{"type":"integer","minimum":-2147483648,"maximum":2147483647},"i64":{"type":"integer"},"u":{"type":"integer","minimum":0},"u8":{"type":"integer","minimum":0,"maximum":255},"u16":{"type":"integer","minimum":0,"maximum":65535},"u32":{"type":"integer","minimum":0,"maximum":4294967295},"u64":{"type":"integer","minimum":0},"up":{"type":"integer","minimum":0}},"required":["b","s","f32","f64","i","i8","i16","i32","i64","u","u8","u16","u32","u64","up"],"additionalProperties":false}`,
		},
		{
			name:  "tags",
			typ:   reflect.TypeFor[tagged](),
			input: `{"type":"object","properties":{"Plain":{"type":"string"},"renamed":{"type":"string"},"optional":{"type":"string"},"zero":{"type":"integer"},"-":{"type":"string"},"quoted":{"type":"string"},"quoted_ptr":{"type":["null","string"]},"BadName":{"type":"string"},"described":{"type":"number","description":"a number, with \"quotes\" and <html> & a -> b"}},"required":["Plain","renamed","-","quoted","quoted_ptr","BadName","described"],"additionalProperties":false}`,
		},
		{
			name:  "containers",
			typ:   reflect.TypeFor[containers](),
			input: `{"type":"object","properties":{"ptr":{"type":["null","string"]},"ptr_ptr":{"type":["null","integer"]},"slice":{"type":["null","array"],"items":{"type":"string"}},"bytes":{"type":["null","string"],"contentEncoding":"base64"},"array":{"type":"array","items":{"type":"integer"},"minItems":3,"maxItems":3},"barray":{"type":"array","items":{"type":"integer","minimum":0,"maximum":255},"minItems":2,"maxItems":2},"map":{"type":["null","object"],"additionalProperties":{"type":"integer"}},"int_map":{"type":["null","object"],"additionalProperties":{"type":"boolean"}},"any_map":{"type":["null","object"]},"nested":{"type":["null","array"],"items":{"type":["null","object"],"additionalProperties":{"type":["null","integer"]}}}},"required":["ptr","ptr_ptr","slice","bytes","array","barray","map","int_map","any_map","nested"],"additionalProperties":false}`,
		},
		{
			name:  "special",
			typ:   reflect.TypeFor[special](),
			input: `{"type":"object","properties":{"time":{"type":"string","format":"date-time"},"time_ptr":{"type":["null","string"],"format":"date-time"},"raw":{},"any":{},"err":{},"dur":{"type":"integer"},"num":{"type":"number"},"addr":{"type":"string"},"addr_map":{"type":["null","object"],"additionalProperties":{"type":"integer"}}},"required":["time","time_ptr","raw","any","err","dur","num","addr","addr_map"],"additionalProperties":false}`,
		},
		{
			name:  "embedding",
			typ:   reflect.TypeFor[embedded](),
			input: `{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"},"p":{"type":"integer"},"Named":{"type":"string"},"tagged":{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"],"additionalProperties":false},"c":{"type":"string"}},"required":["a","b","Named","tagged","c"],"additionalProperties":false}`,
		},
		{
			name:   "embedding itself",
			typ:    reflect.TypeFor[SelfEmbed](),
			output: `{"type":"object","properties":{"x":{"type":"integer"}},"required":["x"],"additionalProperties":false}`,
		},
		{
			name:   "empty struct",
			typ:    reflect.TypeFor[empty](),
			input:  `{"type":"object","additionalProperties":false}`,
			output: `{"type":"object","additionalProperties":false}`,
		},
		{
			name:   "pointer to a struct",
			typ:    reflect.TypeFor[*inner](),
			input:  `{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"],"additionalProperties":false}`,
			output: `{"type":["null","object"],"properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"],"additionalProperties":false}`,
		},
		{
			name:   "map",
			typ:    reflect.TypeFor[map[string][]int](),
			input:  `{"type":"object","additionalProperties":{"type":["null","array"],"items":{"type":"integer"}}}`,
			output: `{"type":["null","object"],"additionalProperties":{"type":["null","array"],"items":{"type":"integer"}}}`,
		},
		{
			name:   "custom encodings",
			typ:    reflect.TypeFor[customs](),
			input:  `{"type":"object","properties":{"mj":{"type":"object","properties":{"X":{"type":"integer"}},"required":["X"],"additionalProperties":false},"uj":{},"mt":{"type":"string"},"pt":{"type":"string"},"bm":{"type":["null","string"],"contentEncoding":"base64"}},"required":["mj","uj","mt","pt","bm"],"additionalProperties":false}`,
			output: `{"type":"object","properties":{"mj":{},"uj":{"type":"object","properties":{"x":{"type":"integer"}},"required":["x"],"additionalProperties":false},"mt":{"type":"string"},"pt":{},"bm":{"type":["null","array"],"items":{}}},"required":["mj","uj","mt","pt","bm"],"additionalProperties":false}`,
		},
		{
			name:   "recursive",
			typ:    reflect.TypeFor[tree](),
			input:  `{"type":"object","$ref":"#/$defs/tree","$defs":{"treeMap":{"type":["null","object"],"additionalProperties":{"$ref":"#/$defs/treeMap"}},"tree":{"type":"object","properties":{"name":{"type":"string"},"children":{"type":["null","array"],"items":{"$ref":"#/$defs/tree"}},"parent":{"anyOf":[{"type":"null"},{"$ref":"#/$defs/tree"}]},"meta":{"$ref":"#/$defs/treeMap"}},"required":["name"],"additionalProperties":false}}}`,
			output: `{"$ref":"#/$defs/tree","$defs":{"treeMap":{"type":["null","object"],"additionalProperties":{"$ref":"#/$defs/treeMap"}},"tree":{"type":"object","properties":{"name":{"type":"string"},"children":{"type":["null","array"],"items":{"$ref":"#/$defs/tree"}},"parent":{"anyOf":[{"type":"null"},{"$ref":"#/$defs/tree"}]},"meta":{"$ref":"#/$defs/treeMap"}},"required":["name"],"additionalProperties":false}}}`,
		},
		{
			name:   "a recursive type used twice",
			typ:    reflect.TypeFor[holder](),
			output: `{"type":"object","properties":{"root":{"$ref":"#/$defs/tree"},"again":{"anyOf":[{"type":"null"},{"$ref":"#/$defs/tree"}]}},"required":["root","again"],"additionalProperties":false,"$defs":{"treeMap":{"type":["null","object"],"additionalProperties":{"$ref":"#/$defs/treeMap"}},"tree":{"type":"object","properties":{"name":{"type":"string"},"children":{"type":["null","array"],"items":{"$ref":"#/$defs/tree"}},"parent":{"anyOf":[{"type":"null"},{"$ref":"#/$defs/tree"}]},"meta":{"$ref":"#/$defs/treeMap"}},"required":["name"],"additionalProperties":false}}}`,
		},
		{
			name:   "mutually recursive",
			typ:    reflect.TypeFor[ping](),
			output: `{"$ref":"#/$defs/ping","$defs":{"ping":{"type":"object","properties":{"pong":{"type":["null","object"],"properties":{"ping":{"anyOf":[{"type":"null"},{"$ref":"#/$defs/ping"}]}},"required":["ping"],"additionalProperties":false}},"required":["pong"],"additionalProperties":false}}}`,
		},
		{name: "string", typ: reflect.TypeFor[string](), output: `{"type":"string"}`},
		{name: "slice", typ: reflect.TypeFor[[]inner](), output: `{"type":["null","array"],"items":{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"],"additionalProperties":false}}`},
		{name: "time", typ: reflect.TypeFor[time.Time](), output: `{"type":"string","format":"date-time"}`},
		{name: "any", typ: reflect.TypeFor[any]()},
		{name: "raw", typ: reflect.TypeFor[json.RawMessage]()},
		{name: "unmarshals itself", typ: reflect.TypeFor[unmarshalsJSON](), output: `{"type":"object","properties":{"x":{"type":"integer"}},"required":["x"],"additionalProperties":false}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in, inErr := inputSchema(tt.typ)
			if tt.input != "" {
				if inErr != nil {
					t.Fatalf("input: %v", inErr)
				}
				if got := encoded(in); got != tt.input {
					t.Errorf("input schema\n got %s\nwant %s", got, tt.input)
				}
				compiles(t, encoded(in))
			}
			out, outErr := outputSchema(tt.typ)
			if outErr != nil {
				t.Fatalf("output: %v", outErr)
			}
			if tt.output != "" {
				if got := encoded(out); got != tt.output {
					t.Errorf("output schema\n got %s\nwant %s", got, tt.output)
				}
				compiles(t, encoded(out))
			} else if tt.input == "" && out != nil {
				t.Errorf("output schema %s, want none", encoded(out))
			}
		})
	}
}

// compiles checks that s is a schema a manifest takes.
func compiles(t *testing.T, s string) {
	t.Helper()
	if _, err := manifest.CompileSchema([]byte(s)); err != nil {
		t.Errorf("%s does not compile: %v", s, err)
	}
}

// TestSchemasAcceptWhatEncodingJSONWrites encodes values, zero and filled
// in, and checks that each result's schema accepts what encoding/json
// wrote, and that the input schema accepts it too where the types read
// what they write.
func TestSchemasAcceptWhatEncodingJSONWrites(t *testing.T) {
	n := 5
	np := &n
	tm := time.Date(2026, 11, 3, 9, 30, 0, 0, time.UTC)
	values := []any{
		scalars{}, scalars{B: true, S: "x", F32: 1.5, I8: math.MinInt8, U64: math.MaxUint64, I64: math.MinInt64},
		tagged{}, tagged{Plain: "p", Optional: "o", Zero: 3, Quoted: 7, QuotedPtr: new(bool), Described: 2.5},
		containers{}, containers{Ptr: new(string), PtrPtr: &np, Slice: []string{"a"}, Bytes: []byte("hi"), Map: map[string]int{"k": 1}, IntMap: map[int64]bool{-3: true}, AnyMap: map[string]any{"x": []any{1, "y"}}, Nested: []map[string]*int{nil, {"a": nil, "b": &n}}},
		special{Num: "0"}, special{Num: "-1.5e3", Time: tm, TimePtr: &tm, Raw: json.RawMessage(`{"free":[1]}`), Any: map[string]any{"a": 1}, Dur: time.Second, Addr: netip.MustParseAddr("192.0.2.1"), AddrMap: map[netip.Addr]int{netip.MustParseAddr("::1"): 1}},
		SelfEmbed{X: 1}, SelfEmbed{SelfEmbed: &SelfEmbed{X: 2}, X: 1},
		embedded{}, embedded{inner: inner{A: 1}, Pointed: &Pointed{P: 2}, Named: "n", C: "c"},
		empty{}, &inner{A: 1}, (*inner)(nil),
		map[string][]int{"a": {1}}, map[string][]int(nil),
		customs{BM: []byteWithMethod{1, 2}},
		tree{Name: "root", Children: []tree{{Name: "leaf", Meta: treeMap{"k": treeMap{}}}}, Parent: &tree{Name: "up"}},
		holder{}, ping{Pong: &pong{Ping: &ping{}}},
		[]inner(nil), []inner{{A: 1}}, "text", tm,
	}
	for _, v := range values {
		typ := reflect.TypeOf(v)
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("%T: %v", v, err)
		}
		var doc any
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		out, err := outputSchema(typ)
		if err != nil || out == nil {
			t.Fatalf("%T: no output schema (%v)", v, err)
		}
		validates(t, fmt.Sprintf("%T output", v), encoded(out), doc, b)
		if typ == reflect.TypeFor[customs]() {
			continue // what it writes is not what it reads (MarshalJSON "1" for an object)
		}
		if in, err := inputSchema(typ); err == nil && doc != nil {
			validates(t, fmt.Sprintf("%T input", v), encoded(in), doc, b)
		}
	}
}

// validates checks that the schema s accepts doc (the JSON b).
func validates(t *testing.T, what, s string, doc any, b []byte) {
	t.Helper()
	r, err := manifest.CompileSchema([]byte(s))
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if err := r.Validate(doc); err != nil {
		t.Errorf("%s: %s does not accept %s: %v", what, s, b, err)
	}
}

// TestSchemaStrictness: an input schema refuses what the SDK's strict
// decoding refuses (an unknown field, a wrong type), and requires the
// fields without omitempty.
func TestSchemaStrictness(t *testing.T) {
	s, err := inputSchema(reflect.TypeFor[tagged]())
	if err != nil {
		t.Fatal(err)
	}
	r, err := manifest.CompileSchema([]byte(encoded(s)))
	if err != nil {
		t.Fatal(err)
	}
	good := `{"Plain":"p","renamed":"r","-":"d","quoted":"1","quoted_ptr":null,"BadName":"b","described":1}`
	for _, doc := range []string{
		`{"Plain":"p","renamed":"r","-":"d","quoted":"1","quoted_ptr":null,"BadName":"b","described":1,"extra":1}`,
		`{"Plain":1,"renamed":"r","-":"d","quoted":"1","quoted_ptr":null,"BadName":"b","described":1}`,
		`{"renamed":"r","-":"d","quoted":"1","quoted_ptr":null,"BadName":"b","described":1}`,
		`{"Plain":"p","renamed":"r","-":"d","quoted":1,"quoted_ptr":null,"BadName":"b","described":1}`,
		`{"Plain":"p","renamed":"r","-":"d","quoted":"1","quoted_ptr":null,"BadName":"b","described":1,"Skipped":"s"}`,
		`{"Plain":"p","renamed":"r","-":"d","quoted":"1","quoted_ptr":null,"BadName":"b","described":1,"unexported":"u"}`,
		`null`, `[]`,
	} {
		var v any
		json.Unmarshal([]byte(doc), &v)
		if r.Validate(v) == nil {
			t.Errorf("%s accepted", doc)
		}
	}
	var v any
	json.Unmarshal([]byte(good), &v)
	if err := r.Validate(v); err != nil {
		t.Errorf("%s refused: %v", good, err)
	}
	sdk.Handle("strictness", func(context.Context, tagged) (struct{}, error) { return struct{}{}, nil })
	if _, err := sdk.Invoke(context.Background(), "strictness", []byte(good)); err != nil {
		t.Errorf("the SDK refuses %s: %v", good, err)
	}
}

// Embedded structs whose fields have the same name at the same depth, as
// go vet rightly flags in a declared type, are made at run time.
type (
	ConflictA struct {
		A int `json:"a"`
		B int `json:"b"`
	}
	ConflictB struct {
		B int `json:"b"`
		C int `json:"c"`
	}
	Untagged struct{ N int }
	TaggedN  struct {
		X int `json:"N"`
	}
)

// TestDominance: of fields with one name at one depth, encoding/json keeps
// the only tagged one, or none; the schema has the fields it writes.
func TestDominance(t *testing.T) {
	embed := func(ts ...reflect.Type) reflect.Type {
		var fs []reflect.StructField
		for _, t := range ts {
			fs = append(fs, reflect.StructField{Name: t.Name(), Type: t, Anonymous: true})
		}
		return reflect.StructOf(fs)
	}
	tests := []struct {
		typ  reflect.Type
		want string
	}{
		{embed(reflect.TypeFor[ConflictA](), reflect.TypeFor[ConflictB]()), `{"type":"object","properties":{"a":{"type":"integer"},"c":{"type":"integer"}},"required":["a","c"],"additionalProperties":false}`},
		{embed(reflect.TypeFor[Untagged](), reflect.TypeFor[TaggedN]()), `{"type":"object","properties":{"N":{"type":"integer"}},"required":["N"],"additionalProperties":false}`},
	}
	for _, tt := range tests {
		s, err := outputSchema(tt.typ)
		if err != nil || encoded(s) != tt.want {
			t.Errorf("%s: %s (%v), want %s", tt.typ, encoded(s), err, tt.want)
			continue
		}
		b, err := json.Marshal(reflect.New(tt.typ).Elem().Interface())
		if err != nil {
			t.Fatal(err)
		}
		var doc any
		json.Unmarshal(b, &doc)
		validates(t, tt.typ.String(), encoded(s), doc, b)
	}
}

// TestGenericRecursiveDefs: a generic recursive type goes in $defs under a
// name a JSON Pointer takes, and the schema compiles.
func TestGenericRecursiveDefs(t *testing.T) {
	s, err := outputSchema(reflect.TypeFor[list[map[string]int]]())
	if err != nil {
		t.Fatal(err)
	}
	if got := encoded(s); !strings.Contains(got, `"$ref":"#/$defs/list_map_string_int_"`) {
		t.Errorf("a generic recursive type: %s", got)
	}
	compiles(t, encoded(s))
}

type list[T any] struct {
	Value T        `json:"value"`
	Next  *list[T] `json:"next"`
}

// TestSchemasOfRandomTypes builds random types (structs of scalars,
// pointers, slices, arrays, maps and structs, with json tag options) and
// random values of them, and checks that the output schema accepts what
// encoding/json writes, and the input schema too.
func TestSchemasOfRandomTypes(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	scalars := []reflect.Type{
		reflect.TypeFor[bool](), reflect.TypeFor[string](), reflect.TypeFor[int8](), reflect.TypeFor[int16](),
		reflect.TypeFor[int32](), reflect.TypeFor[int64](), reflect.TypeFor[uint8](), reflect.TypeFor[uint16](),
		reflect.TypeFor[uint32](), reflect.TypeFor[uint64](), reflect.TypeFor[float32](), reflect.TypeFor[float64](),
		reflect.TypeFor[[]byte](),
	}
	var randomType func(depth int) reflect.Type
	randomType = func(depth int) reflect.Type {
		if depth > 2 {
			return scalars[r.Intn(len(scalars))]
		}
		switch r.Intn(7) {
		case 0:
			return reflect.PointerTo(randomType(depth + 1))
		case 1:
			return reflect.SliceOf(randomType(depth + 1))
		case 2:
			return reflect.ArrayOf(r.Intn(3), randomType(depth+1))
		case 3:
			return reflect.MapOf(reflect.TypeFor[string](), randomType(depth+1))
		case 4:
			var fields []reflect.StructField
			for i := range r.Intn(4) {
				ft := randomType(depth + 1)
				tag := fmt.Sprintf(`json:"f%d`, i)
				switch r.Intn(4) {
				case 0:
					tag += ",omitempty"
				case 1:
					if k := ft.Kind(); k != reflect.Slice && k != reflect.Map && k != reflect.Array && k != reflect.Struct {
						tag += ",string"
					}
				}
				fields = append(fields, reflect.StructField{Name: fmt.Sprintf("F%d", i), Type: ft, Tag: reflect.StructTag(tag + `"`)})
			}
			return reflect.StructOf(fields)
		}
		return scalars[r.Intn(len(scalars))]
	}
	compile := func(s []byte) *manifest.CommandSchema {
		r, err := manifest.CompileSchema([]byte(encoded(s)))
		if err != nil {
			t.Fatalf("%s: %v", encoded(s), err)
		}
		return r
	}
	checked := 0
	for range 300 {
		typ := randomType(0)
		out, err := outputSchema(typ)
		if err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
		outR := compile(out)
		var inR *manifest.CommandSchema
		if in, err := inputSchema(typ); err == nil {
			inR = compile(in)
		}
		for range 5 {
			v, ok := quick.Value(typ, r)
			if !ok {
				t.Fatalf("no value of %s", typ)
			}
			b, err := json.Marshal(v.Interface())
			if err != nil {
				continue // NaN and infinities have no JSON
			}
			var doc any
			if err := json.Unmarshal(b, &doc); err != nil {
				t.Fatal(err)
			}
			if err := outR.Validate(doc); err != nil {
				t.Errorf("%s: the output schema refuses %s: %v", typ, b, err)
			}
			if inR != nil && doc != nil { // an input is an object, never null
				if err := inR.Validate(doc); err != nil {
					t.Errorf("%s: the input schema refuses %s: %v", typ, b, err)
				}
			}
			checked++
		}
	}
	if checked < 1000 {
		t.Errorf("only %d values checked", checked)
	}
}
