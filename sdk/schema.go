package sdk

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"time"
	"unicode"
)

// JSON Schemas of the In and Out types of typed commands (Describe).
//
// A schema describes what encoding/json — and so the SDK — reads into a
// command's In or writes from its Out, with the conventions of
// github.com/google/jsonschema-go's jsonschema.For:
//
//   - a struct is an object of its fields as encoding/json names them (the
//     json tag's name, else the field's; "-" skips a field; embedded
//     structs' fields are promoted, and of fields with one name the one
//     encoding/json keeps is kept), with additionalProperties false: the
//     SDK decodes inputs strictly, and encodes exactly those fields. A
//     field without omitempty or omitzero is required, unless it is
//     promoted from an embedded pointer (a nil one writes none of its
//     fields). A field's jsonschema tag is its description;
//   - bool is boolean, a string kind string, a float kind number, an
//     integer kind integer, with its range when it is 32 bits or less
//     (int8 is -128 to 127) and minimum 0 when it is unsigned; a field
//     tagged ",string" is a string;
//   - a slice is an array of its element, or null (a nil slice encodes as
//     null); []byte is a base64 string, or null; an array [N]T is an array
//     of exactly N items;
//   - a map with string, integer or text-marshaling keys is an object whose
//     values are its element, or null;
//   - a pointer is its element, or null;
//   - time.Time is a string of format date-time, json.Number a number; a
//     type that encodes itself (MarshalJSON for Out, UnmarshalJSON for In)
//     is any value, and one that encodes itself as text (MarshalText,
//     UnmarshalText) is a string; an interface (any, error) and
//     json.RawMessage are any value;
//   - a recursive type is written once, under $defs, and referred to with
//     $ref.
//
// Channels, functions, complex numbers and unsafe pointers have no JSON
// form: a type that contains one (in a field not skipped with "-") has no
// schema, and neither has one whose schema would be larger than a
// manifest takes.

// A schemaObject is a JSON object — a JSON Schema, or the document
// Describe returns — with its members in the order they are written.
type schemaObject []member

// A member is one member of a schemaObject. Its value is a string, bool,
// int64, []string, schemaObject or []schemaObject.
type member struct {
	key   string
	value any
}

// get returns the value of the member key, or nil.
func (o schemaObject) get(key string) any {
	for _, m := range o {
		if m.key == key {
			return m.value
		}
	}
	return nil
}

// appendJSON writes o as compact JSON, without encoding/json's HTML
// escapes (a description "a -> b" stays readable).
func (o schemaObject) appendJSON(b *bytes.Buffer) {
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		appendJSONString(b, m.key)
		b.WriteByte(':')
		appendJSONValue(b, m.value)
	}
	b.WriteByte('}')
}

// appendJSONValue writes one member value.
func appendJSONValue(b *bytes.Buffer, v any) {
	switch v := v.(type) {
	case schemaObject:
		v.appendJSON(b)
	case []schemaObject:
		b.WriteByte('[')
		for i, s := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			s.appendJSON(b)
		}
		b.WriteByte(']')
	case []string:
		b.WriteByte('[')
		for i, s := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			appendJSONString(b, s)
		}
		b.WriteByte(']')
	case string:
		appendJSONString(b, v)
	case bool:
		fmt.Fprint(b, v)
	case int64:
		fmt.Fprint(b, v)
	default:
		panic(fmt.Sprintf("sdk: a schema member of type %T", v)) // a bug in this file
	}
}

// appendJSONString writes s as a JSON string, as encoding/json does
// without HTML escaping (invalid UTF-8 becomes U+FFFD).
func appendJSONString(b *bytes.Buffer, s string) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	enc.Encode(s)           // a string always encodes
	b.Truncate(b.Len() - 1) // Encode's newline
}

// direction says whether a schema describes what the SDK decodes (a
// command's input) or what it encodes (its result): a type may implement
// only one of json.Marshaler and json.Unmarshaler.
type direction int

const (
	forInput direction = iota
	forOutput
)

// maxSchemaNodes bounds the subschemas of one schema. Each is at least six
// bytes of JSON, so a schema that reaches the bound is far over the 64 KiB
// a manifest takes (manifest.MaxSchemaBytes); the bound keeps a type that
// nests the same struct in several fields at every level (2^depth
// subschemas) from running the module out of memory or time at build.
const maxSchemaNodes = 16384

// maxPointers bounds the pointers followed in a row (type P *P has no end).
const maxPointers = 16

// errTooLarge is the error of a schema over maxSchemaNodes.
var errTooLarge = errors.New("the schema would be larger than a manifest takes (64 KiB as JSON)")

var (
	timeType     = reflect.TypeFor[time.Time]()
	numberType   = reflect.TypeFor[json.Number]()
	anySchema    = schemaObject{}
	stringSchema = schemaObject{{"type", "string"}}
)

// inputSchema returns the schema of a command's input, decoded into a t: an
// object schema, so t (after its pointers) must be a struct or a map.
func inputSchema(t reflect.Type) (schemaObject, error) {
	base := t
	for i := 0; base.Kind() == reflect.Pointer; i++ {
		if i == maxPointers {
			return nil, fmt.Errorf("%s: more than %d pointers in a row", t, maxPointers)
		}
		base = base.Elem()
	}
	switch {
	case base == timeType || base.Kind() != reflect.Struct && base.Kind() != reflect.Map:
		return nil, fmt.Errorf("%s is not a struct or a map (a command's input is a JSON object): no input schema", t)
	case decodesItself(base):
		return nil, fmt.Errorf("%s decodes itself (UnmarshalJSON or UnmarshalText), so its JSON form is unknown: no input schema", t)
	}
	g := newSchemaGen(forInput)
	s, err := g.schema(base, "")
	if err != nil {
		return nil, err
	}
	// An input is an object, never null: the schema says so in so many
	// words, even when the rest of it is a reference ($defs).
	typed := schemaObject{{"type", "object"}}
	for _, m := range s {
		if m.key != "type" {
			typed = append(typed, m)
		}
	}
	return g.finish(typed), nil
}

// outputSchema returns the schema of a command's result, encoded from a t,
// or nil when it would be any value ({}: an interface, json.RawMessage, a
// type with its own MarshalJSON).
func outputSchema(t reflect.Type) (schemaObject, error) {
	g := newSchemaGen(forOutput)
	s, err := g.schema(t, "")
	if err != nil || len(s) == 0 {
		return nil, err
	}
	return g.finish(s), nil
}

// InputSchema returns the JSON Schema station module build writes into
// module.yaml for the input of a command that decodes it into a t (the In
// of Handle), or why there is none: t must be a struct or a map, after its
// pointers. Describe returns the same for every registered command.
func InputSchema(t reflect.Type) ([]byte, error) {
	s, err := inputSchema(t)
	if err != nil {
		return nil, err
	}
	return s.encode(), nil
}

// OutputSchema returns the JSON Schema of a command's result encoded from
// a t (the Out of Handle), or nil when the result may be any JSON value (an
// interface, json.RawMessage, a type with its own MarshalJSON), or an error
// when t has no JSON form.
func OutputSchema(t reflect.Type) ([]byte, error) {
	s, err := outputSchema(t)
	if err != nil || s == nil {
		return nil, err
	}
	return s.encode(), nil
}

// encode returns o as appendJSON writes it.
func (o schemaObject) encode() []byte {
	var b bytes.Buffer
	o.appendJSON(&b)
	return b.Bytes()
}

// decodesItself reports whether encoding/json decodes into t with t's own
// UnmarshalJSON or UnmarshalText.
func decodesItself(t reflect.Type) bool {
	pt := reflect.PointerTo(t)
	return pt.Implements(jsonUnmarshaler) || pt.Implements(textUnmarshaler)
}

// schemaGen builds one schema.
type schemaGen struct {
	dir       direction
	active    map[reflect.Type]bool   // the named types being built, outermost first
	recursive map[reflect.Type]bool   // active types referred to from inside themselves
	defined   map[reflect.Type]string // recursive types built, by $defs name
	taken     map[string]bool         // $defs names in use
	defs      schemaObject            // the $defs, in the order built
	nodes     int                     // subschemas built so far
}

func newSchemaGen(dir direction) *schemaGen {
	return &schemaGen{
		dir:       dir,
		active:    map[reflect.Type]bool{},
		recursive: map[reflect.Type]bool{},
		defined:   map[reflect.Type]string{},
		taken:     map[string]bool{},
	}
}

// finish returns the root schema s with the $defs the build made.
func (g *schemaGen) finish(s schemaObject) schemaObject {
	if len(g.defs) == 0 {
		return s
	}
	return append(s, member{"$defs", g.defs})
}

// schema returns the schema of t at path (JSON keys, for errors): its
// element's, or null, for a pointer.
func (g *schemaGen) schema(t reflect.Type, path string) (schemaObject, error) {
	nullable := false
	for i := 0; t.Kind() == reflect.Pointer; i++ {
		if i == maxPointers {
			return nil, fmt.Errorf("%s: more than %d pointers in a row", at(path), maxPointers)
		}
		nullable, t = true, t.Elem()
	}
	s, err := g.named(t, path)
	if err != nil || !nullable {
		return s, err
	}
	return orNull(s), nil
}

// named returns the schema of t (not a pointer), by reference when t is
// recursive.
func (g *schemaGen) named(t reflect.Type, path string) (schemaObject, error) {
	if g.nodes++; g.nodes > maxSchemaNodes {
		return nil, errTooLarge
	}
	if t.Name() == "" { // an unnamed type cannot contain itself
		return g.build(t, path)
	}
	if name, ok := g.defined[t]; ok {
		return ref(name), nil
	}
	if g.active[t] {
		g.recursive[t] = true
		return ref(g.defName(t)), nil
	}
	g.active[t] = true
	s, err := g.build(t, path)
	delete(g.active, t)
	if err != nil || !g.recursive[t] {
		return s, err
	}
	name := g.defName(t)
	g.defined[t] = name
	g.defs = append(g.defs, member{name, s})
	return ref(name), nil
}

// defName returns the $defs name of the named type t: its name with what
// a JSON Pointer or a reader would stumble on replaced, made unique.
func (g *schemaGen) defName(t reflect.Type) string {
	if name, ok := g.defined[t]; ok {
		return name
	}
	base := strings.Map(func(r rune) rune {
		if r < 0x80 && (unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' || r == '.' || r == '-') {
			return r
		}
		return '_'
	}, t.Name())
	name := base
	for i := 2; g.taken[name]; i++ {
		name = fmt.Sprintf("%s%d", base, i)
	}
	g.taken[name] = true
	g.defined[t] = name // reserved now, so that every reference agrees
	return name
}

// build returns the schema of t (not a pointer) by its kind.
func (g *schemaGen) build(t reflect.Type, path string) (schemaObject, error) {
	switch t {
	case timeType:
		return schemaObject{{"type", "string"}, {"format", "date-time"}}, nil
	case numberType: // encoding/json writes its text as a number
		return schemaObject{{"type", "number"}}, nil
	}
	if s, ok := g.custom(t); ok {
		return s, nil
	}
	switch t.Kind() {
	case reflect.Bool:
		return schemaObject{{"type", "boolean"}}, nil
	case reflect.String:
		return schemaObject{{"type", "string"}}, nil
	case reflect.Float32, reflect.Float64:
		return schemaObject{{"type", "number"}}, nil
	case reflect.Int, reflect.Int64:
		return schemaObject{{"type", "integer"}}, nil
	case reflect.Int8:
		return integer(math.MinInt8, math.MaxInt8), nil
	case reflect.Int16:
		return integer(math.MinInt16, math.MaxInt16), nil
	case reflect.Int32:
		return integer(math.MinInt32, math.MaxInt32), nil
	case reflect.Uint8:
		return integer(0, math.MaxUint8), nil
	case reflect.Uint16:
		return integer(0, math.MaxUint16), nil
	case reflect.Uint32:
		return integer(0, math.MaxUint32), nil
	case reflect.Uint, reflect.Uint64, reflect.Uintptr:
		return schemaObject{{"type", "integer"}, {"minimum", int64(0)}}, nil
	case reflect.Interface:
		return anySchema, nil
	case reflect.Slice:
		if g.bytes(t) {
			return schemaObject{{"type", []string{"null", "string"}}, {"contentEncoding", "base64"}}, nil
		}
		items, err := g.schema(t.Elem(), path+"[]")
		if err != nil {
			return nil, err
		}
		return schemaObject{{"type", []string{"null", "array"}}, {"items", items}}, nil
	case reflect.Array:
		items, err := g.schema(t.Elem(), path+"[]")
		if err != nil {
			return nil, err
		}
		n := int64(t.Len())
		return schemaObject{{"type", "array"}, {"items", items}, {"minItems", n}, {"maxItems", n}}, nil
	case reflect.Map:
		if !g.mapKey(t.Key()) {
			return nil, fmt.Errorf("%s: %s: a map's keys must be strings, integers or encoding.TextMarshaler values to be JSON object keys", at(path), t)
		}
		values, err := g.schema(t.Elem(), path+"{}")
		if err != nil {
			return nil, err
		}
		s := schemaObject{{"type", []string{"null", "object"}}}
		if len(values) > 0 {
			s = append(s, member{"additionalProperties", values})
		}
		return s, nil
	case reflect.Struct:
		return g.object(t, path)
	}
	return nil, fmt.Errorf("%s: %s (a %s) has no JSON form; skip the field with `json:\"-\"`", at(path), t, t.Kind())
}

// custom returns the schema of a type that encodes or decodes itself, in
// the schema's direction: any value for MarshalJSON or UnmarshalJSON, a
// string for MarshalText or UnmarshalText. encoding/json calls a method on
// *T only for a value it can address, so a T whose *T alone marshals
// itself is any value too (it may be written either way).
func (g *schemaGen) custom(t reflect.Type) (schemaObject, bool) {
	if t.Kind() == reflect.Interface {
		return nil, false
	}
	pt := reflect.PointerTo(t)
	if g.dir == forInput {
		switch {
		case pt.Implements(jsonUnmarshaler):
			return anySchema, true
		case pt.Implements(textUnmarshaler):
			return stringSchema, true
		}
		return nil, false
	}
	switch {
	case t.Implements(jsonMarshaler), pt.Implements(jsonMarshaler):
		return anySchema, true
	case t.Implements(textMarshaler):
		return stringSchema, true
	case pt.Implements(textMarshaler):
		return anySchema, true
	}
	return nil, false
}

// bytes reports whether encoding/json writes and reads the slice type t as
// a base64 string: a slice of a byte kind (one that marshals itself is an
// array when encoded).
func (g *schemaGen) bytes(t reflect.Type) bool {
	e := t.Elem()
	if e.Kind() != reflect.Uint8 {
		return false
	}
	if g.dir == forInput {
		return true
	}
	pe := reflect.PointerTo(e)
	return !pe.Implements(jsonMarshaler) && !pe.Implements(textMarshaler)
}

// mapKey reports whether encoding/json takes k as a map key type.
func (g *schemaGen) mapKey(k reflect.Type) bool {
	switch k.Kind() {
	case reflect.String,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return true
	}
	if g.dir == forInput {
		return reflect.PointerTo(k).Implements(textUnmarshaler)
	}
	return k.Implements(textMarshaler)
}

// object returns the schema of the struct type t.
func (g *schemaGen) object(t reflect.Type, path string) (schemaObject, error) {
	var props schemaObject
	var required []string
	for _, f := range jsonFields(t) {
		fpath := path + "." + f.name
		var fs schemaObject
		if f.quoted {
			fs = stringSchema
			if f.typ.Kind() == reflect.Pointer {
				fs = orNull(fs)
			}
		} else {
			var err error
			if fs, err = g.schema(f.typ, fpath); err != nil {
				return nil, err
			}
		}
		if desc, ok := f.tag.Lookup("jsonschema"); ok {
			if desc == "" {
				return nil, fmt.Errorf("%s: an empty jsonschema tag (it is the field's description)", at(fpath))
			}
			if word, _, found := strings.Cut(desc, "="); found && !strings.ContainsAny(word, " \t\n") {
				return nil, fmt.Errorf("%s: a jsonschema tag may not start with %q (reserved, as in jsonschema-go)", at(fpath), word+"=")
			}
			fs = withDescription(fs, desc)
		}
		props = append(props, member{f.name, fs})
		if !f.omit && !f.viaPointer {
			required = append(required, f.name)
		}
	}
	s := schemaObject{{"type", "object"}}
	if len(props) > 0 {
		s = append(s, member{"properties", props})
	}
	if len(required) > 0 {
		s = append(s, member{"required", required})
	}
	return append(s, member{"additionalProperties", false}), nil
}

// withDescription returns s with the description desc, after its type (where a
// reader looks first).
func withDescription(s schemaObject, desc string) schemaObject {
	at := 0
	if len(s) > 0 && s[0].key == "type" {
		at = 1
	}
	return slices.Insert(slices.Clone(s), at, member{"description", desc})
}

// ref returns a reference to the $defs entry name.
func ref(name string) schemaObject { return schemaObject{{"$ref", "#/$defs/" + name}} }

// integer returns the schema of an integer in [lo, hi].
func integer(lo, hi int64) schemaObject {
	return schemaObject{{"type", "integer"}, {"minimum", lo}, {"maximum", hi}}
}

// orNull returns s that also allows null.
func orNull(s schemaObject) schemaObject {
	if len(s) == 0 {
		return s // any value is null too
	}
	if s.get("$ref") != nil {
		return schemaObject{{"anyOf", []schemaObject{{{"type", "null"}}, s}}}
	}
	out := slices.Clone(s)
	for i, m := range out {
		if m.key != "type" {
			continue
		}
		switch v := m.value.(type) {
		case string:
			out[i].value = []string{"null", v}
		case []string:
			if !slices.Contains(v, "null") {
				out[i].value = append([]string{"null"}, v...)
			}
		}
	}
	return out
}

// at names a path in errors.
func at(path string) string {
	if path == "" {
		return "the value"
	}
	return strings.TrimPrefix(path, ".")
}

// jsonField is a struct field as encoding/json sees it.
type jsonField struct {
	name       string
	tagged     bool // the name is from a json tag
	index      []int
	typ        reflect.Type // the field's type
	tag        reflect.StructTag
	omit       bool // omitempty or omitzero
	quoted     bool // ",string" on a kind it applies to
	viaPointer bool // promoted from an embedded pointer
}

// jsonFields returns the fields encoding/json writes and reads for the
// struct type t, in its order, with its rules (typeFields in
// encoding/json/encode.go): exported fields and the fields of embedded
// structs, breadth first; of the fields with one name, the shallowest, or
// of equally shallow ones the only tagged one, and none if that is not
// one field.
func jsonFields(t reflect.Type) []jsonField {
	type embedded struct {
		typ        reflect.Type
		index      []int
		viaPointer bool
	}
	var fields []jsonField
	current, next := []embedded{}, []embedded{{typ: t}}
	var count, nextCount map[reflect.Type]int
	visited := map[reflect.Type]bool{}
	for len(next) > 0 {
		current, next = next, current[:0]
		count, nextCount = nextCount, map[reflect.Type]int{}
		for _, e := range current {
			if visited[e.typ] {
				continue
			}
			visited[e.typ] = true
			for i := range e.typ.NumField() {
				sf := e.typ.Field(i)
				if sf.Anonymous {
					et := sf.Type
					if et.Kind() == reflect.Pointer {
						et = et.Elem()
					}
					if !sf.IsExported() && et.Kind() != reflect.Struct {
						continue
					}
				} else if !sf.IsExported() {
					continue
				}
				tag := sf.Tag.Get("json")
				if tag == "-" {
					continue
				}
				name, opts, _ := strings.Cut(tag, ",")
				if !validTagName(name) {
					name = ""
				}
				index := append(slices.Clone(e.index), i)
				ft := sf.Type
				if ft.Name() == "" && ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if name != "" || !sf.Anonymous || ft.Kind() != reflect.Struct {
					f := jsonField{
						name: name, tagged: name != "", index: index, typ: sf.Type, tag: sf.Tag,
						omit:       hasOption(opts, "omitempty") || hasOption(opts, "omitzero"),
						quoted:     hasOption(opts, "string") && quotable(ft),
						viaPointer: e.viaPointer,
					}
					if f.name == "" {
						f.name = sf.Name
					}
					fields = append(fields, f)
					if count[e.typ] > 1 {
						// The struct is embedded twice at this depth: a
						// duplicate, so that both copies of the name go.
						fields = append(fields, f)
					}
					continue
				}
				nextCount[ft]++
				if nextCount[ft] == 1 {
					next = append(next, embedded{typ: ft, index: index, viaPointer: e.viaPointer || sf.Type.Kind() == reflect.Pointer})
				}
			}
		}
	}
	slices.SortFunc(fields, func(a, b jsonField) int {
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		if c := cmp.Compare(len(a.index), len(b.index)); c != 0 {
			return c
		}
		if a.tagged != b.tagged {
			if a.tagged {
				return -1
			}
			return 1
		}
		return slices.Compare(a.index, b.index)
	})
	out := fields[:0]
	for i := 0; i < len(fields); {
		j := i + 1
		for j < len(fields) && fields[j].name == fields[i].name {
			j++
		}
		// Sorted by depth, then tagged first: the first dominates unless
		// the second is as deep and as tagged.
		if j-i == 1 || len(fields[i].index) != len(fields[i+1].index) || fields[i].tagged != fields[i+1].tagged {
			out = append(out, fields[i])
		}
		i = j
	}
	slices.SortFunc(out, func(a, b jsonField) int { return slices.Compare(a.index, b.index) })
	return out
}

// validTagName reports whether encoding/json takes s as a json tag's name
// (isValidTag in encoding/json).
func validTagName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
		case !unicode.IsLetter(c) && !unicode.IsDigit(c):
			return false
		}
	}
	return true
}

// hasOption reports whether the comma-separated json tag options opts
// include o.
func hasOption(opts, o string) bool {
	for opts != "" {
		var name string
		name, opts, _ = strings.Cut(opts, ",")
		if name == o {
			return true
		}
	}
	return false
}

// quotable reports whether ",string" applies to a field of type t.
func quotable(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.String:
		return true
	}
	return false
}
