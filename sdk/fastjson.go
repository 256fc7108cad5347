package sdk

import (
	"encoding"
	"encoding/json"
	"math"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/station-dev/station/sdk/internal/jsonscan"
)

// The fast path for the JSON of typed commands.
//
// Inside the station every loop iteration and every function call of a Go
// guest costs an exit to the host (wazero checks for the call's deadline
// there), so encoding/json's reflection, scanner and allocations make up
// most of a trivial command's time. For the common shape of a command's input
// and result — a struct of strings, booleans, numbers and nested such structs
// — Handle builds a plan once, at registration, and decodes (with
// sdk/internal/jsonscan, the scanner package shttp uses too) and encodes
// with it directly.
//
// The fast path never decides anything encoding/json would decide
// differently: whenever it meets something it does not handle exactly as
// encoding/json does (an escape sequence, a key that only matches a field
// case-insensitively, a duplicate key, a number out of range, a string that
// would need escaping, a malformed document), it gives up and the call goes
// through encoding/json from the start, which then produces the result or
// the error. FuzzFastJSON checks the two against each other.

// jkind is the kind of value a plan field holds.
type jkind uint8

const (
	jString jkind = iota + 1
	jBool
	jInt
	jUint
	jFloat
	jStruct
)

// jfield is one struct field of a plan.
type jfield struct {
	name      string // the JSON key
	offset    uintptr
	kind      jkind
	size      uintptr // of the Go value, for jInt, jUint and jFloat
	omitEmpty bool
	sub       *jplan // for jStruct
}

// jplan is how a struct type's fields map to JSON object members.
type jplan struct {
	fields []jfield
}

// maxPlanFields bounds a struct the fast path decodes (a bit per field
// detects duplicate keys).
const maxPlanFields = 64

var (
	jsonMarshaler   = reflect.TypeFor[json.Marshaler]()
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textMarshaler   = reflect.TypeFor[encoding.TextMarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// planFor returns the plan of t, or nil when the fast path does not cover t.
func planFor(t reflect.Type) *jplan { return planStruct(t, 0) }

func planStruct(t reflect.Type, depth int) *jplan {
	if t.Kind() != reflect.Struct || depth > 16 || customJSON(t) || t.NumField() > maxPlanFields {
		return nil
	}
	p := &jplan{}
	for i := range t.NumField() {
		sf := t.Field(i)
		if sf.Anonymous {
			return nil // encoding/json promotes an embedded struct's fields
		}
		if !sf.IsExported() {
			continue // encoding/json ignores it
		}
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" {
			name = sf.Name
		}
		if !plainName(name) {
			return nil
		}
		f := jfield{name: name, offset: sf.Offset, size: sf.Type.Size()}
		for opts != "" {
			var o string
			o, opts, _ = strings.Cut(opts, ",")
			switch o {
			case "omitempty":
				f.omitEmpty = true
			case "string", "omitzero":
				return nil
			}
		}
		if customJSON(sf.Type) {
			return nil
		}
		switch sf.Type.Kind() {
		case reflect.String:
			f.kind = jString
		case reflect.Bool:
			f.kind = jBool
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			f.kind = jInt
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			f.kind = jUint
		case reflect.Float32, reflect.Float64:
			f.kind = jFloat
		case reflect.Struct:
			f.kind = jStruct
			if f.sub = planStruct(sf.Type, depth+1); f.sub == nil {
				return nil
			}
		default:
			return nil
		}
		for _, g := range p.fields {
			if g.name == name {
				return nil // encoding/json drops both; leave it to encoding/json
			}
		}
		p.fields = append(p.fields, f)
	}
	return p
}

// customJSON reports whether t (or *t) has its own JSON or text encoding.
func customJSON(t reflect.Type) bool {
	pt := reflect.PointerTo(t)
	for _, i := range []reflect.Type{jsonMarshaler, jsonUnmarshaler, textMarshaler, textUnmarshaler} {
		if t.Implements(i) || pt.Implements(i) {
			return true
		}
	}
	return false
}

// plainName reports whether a JSON key needs no escaping and is a tag name
// encoding/json accepts as it is.
func plainName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// decodeFast decodes the JSON document b into the struct at p. It reports
// false when encoding/json must decode b instead; p may then be partly
// written.
func decodeFast(b []byte, p unsafe.Pointer, plan *jplan) bool {
	d := jdecoder{jsonscan.New(b)}
	d.Space()
	return d.object(p, plan) && d.End()
}

// jdecoder decodes a document into plan-described structs.
type jdecoder struct {
	jsonscan.Scanner
}

func (d *jdecoder) object(p unsafe.Pointer, plan *jplan) bool {
	if !d.Byte('{') {
		return false
	}
	d.Space()
	if d.Byte('}') {
		return true
	}
	var seen uint64
	for {
		key, ok := d.Str()
		if !ok {
			return false
		}
		d.Space()
		if !d.Byte(':') {
			return false
		}
		d.Space()
		fi := -1
		for i := range plan.fields {
			if plan.fields[i].name == string(key) {
				fi = i
				break
			}
		}
		if fi < 0 || seen&(1<<fi) != 0 {
			return false // unknown, only a case-insensitive match, or a duplicate
		}
		seen |= 1 << fi
		f := &plan.fields[fi]
		if !d.value(unsafe.Add(p, f.offset), f) {
			return false
		}
		d.Space()
		switch {
		case d.Byte(','):
			d.Space()
		case d.Byte('}'):
			return true
		default:
			return false
		}
	}
}

// value decodes one member's value into the field at p.
func (d *jdecoder) value(p unsafe.Pointer, f *jfield) bool {
	if d.Peek() == 'n' {
		return d.Null() // null leaves every kind here unchanged
	}
	switch f.kind {
	case jString:
		s, ok := d.Str()
		if !ok {
			return false
		}
		*(*string)(p) = string(s)
	case jBool:
		switch {
		case d.Literal("true"):
			*(*bool)(p) = true
		case d.Literal("false"):
			*(*bool)(p) = false
		default:
			return false
		}
	case jInt:
		tok, integer, ok := d.Number()
		if !ok || !integer {
			return false
		}
		n, err := strconv.ParseInt(tok, 10, int(f.size*8))
		if err != nil {
			return false
		}
		switch f.size {
		case 1:
			*(*int8)(p) = int8(n)
		case 2:
			*(*int16)(p) = int16(n)
		case 4:
			*(*int32)(p) = int32(n)
		default:
			*(*int64)(p) = n
		}
	case jUint:
		tok, integer, ok := d.Number()
		if !ok || !integer {
			return false
		}
		n, err := strconv.ParseUint(tok, 10, int(f.size*8))
		if err != nil {
			return false
		}
		switch f.size {
		case 1:
			*(*uint8)(p) = uint8(n)
		case 2:
			*(*uint16)(p) = uint16(n)
		case 4:
			*(*uint32)(p) = uint32(n)
		default:
			*(*uint64)(p) = n
		}
	case jFloat:
		tok, _, ok := d.Number()
		if !ok {
			return false
		}
		n, err := strconv.ParseFloat(tok, int(f.size*8))
		if err != nil {
			return false
		}
		if f.size == 4 {
			*(*float32)(p) = float32(n)
		} else {
			*(*float64)(p) = n
		}
	case jStruct:
		return d.object(p, f.sub)
	default:
		return false
	}
	return true
}

// encodeFast appends the JSON encoding of the struct at p to b, exactly as
// encodeOutput would produce it. It reports false when encodeOutput must
// encode the value instead.
func encodeFast(b []byte, p unsafe.Pointer, plan *jplan) ([]byte, bool) {
	b = append(b, '{')
	first := true
	for i := range plan.fields {
		f := &plan.fields[i]
		fp := unsafe.Add(p, f.offset)
		if f.omitEmpty && f.empty(fp) {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, '"')
		b = append(b, f.name...)
		b = append(b, '"', ':')
		switch f.kind {
		case jString:
			s := *(*string)(fp)
			if !plainString(s) {
				return b, false
			}
			b = append(b, '"')
			b = append(b, s...)
			b = append(b, '"')
		case jBool:
			b = strconv.AppendBool(b, *(*bool)(fp))
		case jInt:
			b = strconv.AppendInt(b, loadInt(fp, f.size), 10)
		case jUint:
			b = strconv.AppendUint(b, loadUint(fp, f.size), 10)
		case jFloat:
			var ok bool
			if b, ok = appendFloat(b, fp, f.size); !ok {
				return b, false
			}
		case jStruct:
			var ok bool
			if b, ok = encodeFast(b, fp, f.sub); !ok {
				return b, false
			}
		}
	}
	return append(b, '}'), true
}

// empty is encoding/json's omitempty test for the kinds a plan holds; a
// struct is never empty.
func (f *jfield) empty(p unsafe.Pointer) bool {
	switch f.kind {
	case jString:
		return *(*string)(p) == ""
	case jBool:
		return !*(*bool)(p)
	case jInt:
		return loadInt(p, f.size) == 0
	case jUint:
		return loadUint(p, f.size) == 0
	case jFloat:
		if f.size == 4 {
			return *(*float32)(p) == 0
		}
		return *(*float64)(p) == 0
	}
	return false
}

func loadInt(p unsafe.Pointer, size uintptr) int64 {
	switch size {
	case 1:
		return int64(*(*int8)(p))
	case 2:
		return int64(*(*int16)(p))
	case 4:
		return int64(*(*int32)(p))
	}
	return *(*int64)(p)
}

func loadUint(p unsafe.Pointer, size uintptr) uint64 {
	switch size {
	case 1:
		return uint64(*(*uint8)(p))
	case 2:
		return uint64(*(*uint16)(p))
	case 4:
		return uint64(*(*uint32)(p))
	}
	return *(*uint64)(p)
}

// plainString reports whether encoding/json writes s unchanged between
// quotes (with HTML escaping off): valid UTF-8 without control characters,
// quotes, backslashes, U+2028 or U+2029.
func plainString(s string) bool {
	i := jsonscan.PlainRun(unsafe.Slice(unsafe.StringData(s), len(s)))
	if i == len(s) {
		return true
	}
	ascii := true
	for ; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == '"' || c == '\\' {
			return false
		}
		if c >= utf8.RuneSelf {
			ascii = false
		}
	}
	return ascii || utf8.ValidString(s) && !strings.Contains(s, "\u2028") && !strings.Contains(s, "\u2029")
}

// appendFloat is encoding/json's float encoding.
func appendFloat(b []byte, p unsafe.Pointer, size uintptr) ([]byte, bool) {
	bits := int(size * 8)
	var f float64
	if size == 4 {
		f = float64(*(*float32)(p))
	} else {
		f = *(*float64)(p)
	}
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return b, false
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 {
		if bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			format = 'e'
		}
	}
	b = strconv.AppendFloat(b, f, format, -1, bits)
	if format == 'e' {
		// clean up e-09 to e-9
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, true
}
