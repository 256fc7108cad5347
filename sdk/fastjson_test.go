package sdk

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
	"unsafe"
)

// The fast path's contract is that whenever it answers, encoding/json (as
// Handle uses it: strict decoding, encoding without HTML escaping) would
// have answered the same. These tests compare the two.

type fjString string

type fjInner struct {
	X int8    `json:"x"`
	Y float32 `json:"y,omitempty"`
	S string
}

type fjAll struct {
	S     string   `json:"s"`
	E     string   `json:"e,omitempty"`
	B     bool     `json:"b"`
	BE    bool     `json:"be,omitempty"`
	I     int      `json:"i"`
	I8    int8     `json:"i8"`
	I16   int16    `json:"i16,omitempty"`
	I32   int32    `json:"i32"`
	I64   int64    `json:"i64"`
	U     uint     `json:"u"`
	U8    uint8    `json:"u8"`
	U16   uint16   `json:"u16"`
	U32   uint32   `json:"u32,omitempty"`
	U64   uint64   `json:"u64"`
	F32   float32  `json:"f32"`
	F64   float64  `json:"f64,omitempty"`
	In    fjInner  `json:"in"`
	Named fjString `json:"named"`
	NoTag string
	Opt   string `json:",omitempty"`
	//lint:ignore SA5008 a field named "-" is what this tag is here to test, as encoding/json defines it
	Dash       string `json:"-,"`
	Skip       string `json:"-"`
	unexported int
}

var fjPlan = planFor(reflect.TypeFor[fjAll]())

func TestPlanFor(t *testing.T) {
	type embedded struct{ fjInner }
	type withMap struct{ M map[string]int }
	type withPtr struct{ P *int }
	type withSlice struct{ S []string }
	type withAny struct{ A any }
	type withStringOpt struct {
		N int `json:"n,string"`
	}
	type withOmitZero struct {
		N int `json:"n,omitzero"`
	}
	type withTime struct{ T time.Time }
	// Two fields with one name (built at run time: go vet rightly refuses
	// it in source).
	withDup := reflect.StructOf([]reflect.StructField{
		{Name: "A", Type: reflect.TypeFor[string](), Tag: `json:"x"`},
		{Name: "B", Type: reflect.TypeFor[string](), Tag: `json:"x"`},
	})
	type withOddName struct {
		A string `json:"a b"`
	}
	type nested struct{ In withMap }
	type raw struct{ R json.RawMessage }
	tests := []struct {
		typ  reflect.Type
		want bool
	}{
		{reflect.TypeFor[fjAll](), true},
		{reflect.TypeFor[struct{}](), true},
		{reflect.TypeFor[fjInner](), true},
		{reflect.TypeFor[embedded](), false},
		{reflect.TypeFor[withMap](), false},
		{reflect.TypeFor[withPtr](), false},
		{reflect.TypeFor[withSlice](), false},
		{reflect.TypeFor[withAny](), false},
		{reflect.TypeFor[withStringOpt](), false},
		{reflect.TypeFor[withOmitZero](), false},
		{reflect.TypeFor[withTime](), false},
		{withDup, false},
		{reflect.TypeFor[withOddName](), false},
		{reflect.TypeFor[nested](), false},
		{reflect.TypeFor[raw](), false},
		{reflect.TypeFor[time.Time](), false},
		{reflect.TypeFor[*fjAll](), false},
		{reflect.TypeFor[map[string]any](), false},
		{reflect.TypeFor[string](), false},
		{reflect.TypeFor[any](), false},
	}
	for _, tt := range tests {
		if got := planFor(tt.typ) != nil; got != tt.want {
			t.Errorf("planFor(%v) != nil = %v, want %v", tt.typ, got, tt.want)
		}
	}
}

// compareDecode decodes in both ways and fails t if the fast path answered
// differently from encoding/json. It reports whether the fast path answered.
func compareDecode(t *testing.T, in []byte) bool {
	t.Helper()
	var fast fjAll
	ok := decodeFast(in, unsafe.Pointer(&fast), fjPlan)
	var slow fjAll
	err := decodeInput(in, &slow)
	if !ok {
		return false
	}
	if err != nil {
		t.Fatalf("decode %q: fast path accepted it as %+v; encoding/json: %v", in, fast, err)
	}
	if !reflect.DeepEqual(fast, slow) {
		t.Fatalf("decode %q:\nfast path     %+v\nencoding/json %+v", in, fast, slow)
	}
	return true
}

// compareEncode encodes v in both ways; see compareDecode.
func compareEncode(t *testing.T, v fjAll) bool {
	t.Helper()
	fast, ok := encodeFast(nil, unsafe.Pointer(&v), fjPlan)
	slow, err := encodeOutput(v)
	if !ok {
		return false
	}
	if err != nil {
		t.Fatalf("encode %+v: fast path gave %s; encoding/json: %v", v, fast, err)
	}
	if !bytes.Equal(fast, slow) {
		t.Fatalf("encode %+v:\nfast path     %s\nencoding/json %s", v, fast, slow)
	}
	return true
}

var decodeCases = []struct {
	in   string
	fast bool // the fast path answers (else it must leave it to encoding/json)
}{
	{`{}`, true},
	{` {"s":"x"} `, true},
	{"\t{\n\"s\"\r:\"x\" , \"b\":true}\n", true},
	{`{"s":"héllo ✓"}`, true},
	{`{"s":"a long string with more than eight bytes in it"}`, true},
	{`{"s":null,"b":null,"i":null,"in":null}`, true},
	{`{"b":false,"be":true}`, true},
	{`{"i":-9223372036854775808,"i64":9223372036854775807,"u64":18446744073709551615}`, true},
	{`{"i8":-128,"i16":32767,"i32":-2147483648,"u8":255,"u16":65535,"u32":4294967295}`, true},
	{`{"i":0,"i8":-0}`, true},
	{`{"f32":3.4028234e38,"f64":1e-7}`, true},
	{`{"f32":1.5,"f64":-0.0}`, true},
	{`{"f64":1E+2,"f32":2e-3}`, true},
	{`{"in":{"x":1,"y":2.5,"S":"s"}}`, true},
	{`{"named":"n","NoTag":"t","Opt":"o","-":"dash"}`, true},
	{`{"s":"a"`, false},                    // truncated
	{`{"s":"a\n"}`, false},                 // escape
	{`{"s":"a\u0041"}`, false},             // escape
	{"{\"s\":\"a\x01\"}", false},           // control character
	{"{\"s\":\"\xff\"}", false},            // invalid UTF-8
	{`{"S":"x"}`, false},                   // only a case-insensitive match
	{`{"noTag":"x"}`, false},               // case-insensitive
	{`{"s":"x","s":"y"}`, false},           // duplicate key
	{`{"unknown":1}`, false},               // unknown field
	{`{"Skip":"x"}`, false},                // ignored field
	{`{"unexported":1}`, false},            // unexported field
	{`{"i8":128}`, false},                  // out of range
	{`{"u8":-1}`, false},                   // out of range
	{`{"i":1.0}`, false},                   // not an integer
	{`{"i":1e2}`, false},                   // not an integer
	{`{"i":01}`, false},                    // not JSON
	{`{"i":-}`, false},                     // not JSON
	{`{"f64":1.}`, false},                  // not JSON
	{`{"f64":.5}`, false},                  // not JSON
	{`{"f32":1e39}`, false},                // out of range
	{`{"f64":1e400}`, false},               // out of range
	{`{"i":"1"}`, false},                   // wrong type
	{`{"s":1}`, false},                     // wrong type
	{`{"b":nul}`, false},                   // not JSON
	{`{"b":truex}`, false},                 // not JSON
	{`{"in":{"x":1,}}`, false},             // trailing comma
	{`{"s":"x",}`, false},                  // trailing comma
	{`{"s":"x"}{}`, false},                 // data after the document
	{`{"s":"x"} x`, false},                 // data after the document
	{`null`, false},                        // not an object
	{`[]`, false},                          // not an object
	{``, false},                            // empty
	{"\ufeff{}", false},                    // byte order mark
	{`{"in":{"x":1},"in":{"y":2}}`, false}, // duplicate (encoding/json merges)
}

func TestDecodeFast(t *testing.T) {
	for _, tt := range decodeCases {
		if got := compareDecode(t, []byte(tt.in)); got != tt.fast {
			t.Errorf("decodeFast(%q) answered = %v, want %v", tt.in, got, tt.fast)
		}
	}
}

func TestEncodeFast(t *testing.T) {
	tests := []struct {
		v    fjAll
		fast bool
	}{
		{fjAll{}, true},
		{fjAll{S: "x", E: "e", B: true, BE: true, I: -1, I8: -128, I16: 7, I32: 1 << 30, I64: math.MinInt64}, true},
		{fjAll{U: 1, U8: 255, U16: 65535, U32: 1, U64: math.MaxUint64}, true},
		{fjAll{F32: 1.1, F64: 1e21}, true},
		{fjAll{F32: 1e-7, F64: 1e-7}, true},
		{fjAll{F32: float32(math.Copysign(0, -1)), F64: math.Copysign(0, -1)}, true},
		{fjAll{F32: math.MaxFloat32, F64: math.SmallestNonzeroFloat64}, true},
		{fjAll{In: fjInner{X: 3, Y: 0.5, S: "in"}, Named: "n", NoTag: "t", Opt: "o", Dash: "d", Skip: "never", unexported: 9}, true},
		{fjAll{S: "héllo ✓ <&> a longer string"}, true},
		{fjAll{S: "quote\""}, false},
		{fjAll{S: `back\slash`}, false},
		{fjAll{S: "new\nline"}, false},
		{fjAll{S: "\xff"}, false},
		{fjAll{S: "line\u2028separator"}, false},
		{fjAll{In: fjInner{S: "\t"}}, false},
		{fjAll{F64: math.NaN()}, false},
		{fjAll{F32: float32(math.Inf(1))}, false},
	}
	for _, tt := range tests {
		if got := compareEncode(t, tt.v); got != tt.fast {
			t.Errorf("encodeFast(%+v) answered = %v, want %v", tt.v, got, tt.fast)
		}
	}
}

// TestHandleFallback checks that what the fast path declines still gets
// encoding/json's result and error text through a typed command.
func TestHandleFallback(t *testing.T) {
	tests := []struct{ input, want, wantErr string }{
		{input: `{"a":1,"b":"x\n"}`, want: `{"a":2,"b":"x\n<&>"}`},
		{input: `{"A":1}`, want: `{"a":2,"b":"<&>"}`},
		{input: `{"a":1,"a":5}`, want: `{"a":6,"b":"<&>"}`},
		{input: `{"a":1.5}`, wantErr: `invalid input: json: cannot unmarshal number 1.5 into Go struct field pair.a of type int`},
		{input: `{"a":1} x`, wantErr: `invalid input: data after the JSON document`},
	}
	for _, tt := range tests {
		got, err := Invoke(t.Context(), "add", []byte(tt.input))
		if tt.wantErr != "" {
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("Invoke(add, %q) error = %v, want %q", tt.input, err, tt.wantErr)
			}
			continue
		}
		if err != nil || string(got) != tt.want {
			t.Errorf("Invoke(add, %q) = %s, %v; want %s", tt.input, got, err, tt.want)
		}
	}
}

func FuzzFastJSONDecode(f *testing.F) {
	for _, tt := range decodeCases {
		f.Add([]byte(tt.in))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		compareDecode(t, in)
	})
}

func FuzzFastJSONEncode(f *testing.F) {
	f.Add("x", int64(1), uint64(2), 1.5, float32(2.5), true)
	f.Add("h\u00e9llo \"q\" \\ \n", int64(math.MinInt64), uint64(math.MaxUint64), 1e21, float32(1e-7), false)
	f.Add(strings.Repeat("ab", 9)+"\u2028", int64(-1), uint64(0), math.SmallestNonzeroFloat64, float32(math.MaxFloat32), true)
	f.Fuzz(func(t *testing.T, s string, i int64, u uint64, f64 float64, f32 float32, b bool) {
		v := fjAll{
			S: s, E: s, B: b, BE: b, I: int(i), I8: int8(i), I16: int16(i), I32: int32(i), I64: i,
			U: uint(u), U8: uint8(u), U16: uint16(u), U32: uint32(u), U64: u, F32: f32, F64: f64,
			In: fjInner{X: int8(i), Y: f32, S: s}, Named: fjString(s), NoTag: s, Opt: s, Dash: s,
		}
		compareEncode(t, v)
		// And back: what the fast path wrote, it must read as encoding/json does.
		if enc, ok := encodeFast(nil, unsafe.Pointer(&v), fjPlan); ok {
			compareDecode(t, enc)
		}
	})
}
