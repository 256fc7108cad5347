package host

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
)

// Request documents are decoded strictly: encoding/json ignores unknown
// fields, matches keys without regard to case and keeps the last of
// duplicate keys, so a guest could believe it set something (a TLS option
// the ABI does not have, a second "url") that the station never read.
// checkDoc refuses all three after json.Unmarshal has checked the syntax
// (and refused trailing data): one more pass over the bytes, without
// allocating unless it fails. See RATIONALE.md, "Why are host-call
// documents strict?".

// docShape is what a request document may hold at one level, derived once
// from its Go type's json tags.
type docShape struct {
	kind   shapeKind
	names  []string    // kindObject: the keys, exact case, in field order
	fields []*docShape // kindObject: the shape of each key's value
	elem   *docShape   // kindMap, kindArray: the element's shape
}

type shapeKind uint8

const (
	kindLeaf   shapeKind = iota // a string, number, boolean or base64 bytes: nothing to check inside
	kindObject                  // a struct: only its keys, each at most once
	kindMap                     // a map: any keys, each at most once
	kindArray
)

// shapeOf derives the shape of documents that decode into t.
func shapeOf(t reflect.Type) *docShape {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		s := &docShape{kind: kindObject}
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" {
				continue
			}
			if name == "" {
				name = f.Name
			}
			s.names = append(s.names, name)
			s.fields = append(s.fields, shapeOf(f.Type))
		}
		if len(s.names) > 64 {
			panic("host: a request document type has more than 64 fields")
		}
		return s
	case reflect.Map:
		return &docShape{kind: kindMap, elem: shapeOf(t.Elem())}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return &docShape{kind: kindLeaf} // base64
		}
		return &docShape{kind: kindArray, elem: shapeOf(t.Elem())}
	}
	return &docShape{kind: kindLeaf}
}

// docError is a key a request document may not hold. Its text names the
// key, quoted and bounded, and where it is.
type docError struct {
	what string // "unknown field", "duplicate key"
	key  string
	at   string // ".messages[0]", "" at the top level
}

// maxKeyInError bounds a guest's key quoted in an error.
const maxKeyInError = 64

func quoteKey(k string) string {
	if len(k) > maxKeyInError {
		return strconv.Quote(k[:maxKeyInError]) + "..."
	}
	return strconv.Quote(k)
}

func (e *docError) Error() string {
	s := e.what + " " + quoteKey(e.key)
	if e.at != "" {
		s += " in " + strings.TrimPrefix(e.at, ".")
	}
	return s
}

// checkDoc reports the first unknown field or duplicate key of doc, which
// json.Unmarshal has already accepted as one valid JSON value.
func checkDoc(doc []byte, s *docShape) error {
	sc := scanner{b: doc}
	if err := sc.value(s); err != nil {
		return err
	}
	return nil
}

type scanner struct {
	b []byte
	i int
}

func (sc *scanner) ws() {
	for sc.i < len(sc.b) {
		switch sc.b[sc.i] {
		case ' ', '\t', '\r', '\n':
			sc.i++
		default:
			return
		}
	}
}

// value checks the value at sc.i against s (nil: anything) and moves past it.
func (sc *scanner) value(s *docShape) *docError {
	sc.ws()
	if sc.i >= len(sc.b) {
		return nil
	}
	switch sc.b[sc.i] {
	case '{':
		return sc.object(s)
	case '[':
		return sc.array(s)
	case '"':
		sc.str()
		return nil
	}
	for sc.i < len(sc.b) { // a number, true, false or null
		switch sc.b[sc.i] {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
			return nil
		}
		sc.i++
	}
	return nil
}

// more moves past whitespace and a ',' and reports whether another member
// or element follows; at close (or the end of the document) it moves past
// it and reports false.
func (sc *scanner) more(close byte) bool {
	sc.ws()
	if sc.i < len(sc.b) && sc.b[sc.i] == ',' {
		sc.i++
		sc.ws()
	}
	if sc.i >= len(sc.b) {
		return false
	}
	if sc.b[sc.i] == close {
		sc.i++
		return false
	}
	return true
}

func (sc *scanner) array(s *docShape) *docError {
	var elem *docShape
	if s != nil && s.kind == kindArray {
		elem = s.elem
	}
	sc.i++ // '['
	for n := 0; sc.more(']'); n++ {
		if err := sc.value(elem); err != nil {
			err.at = "[" + strconv.Itoa(n) + "]" + err.at
			return err
		}
	}
	return nil
}

func (sc *scanner) object(s *docShape) *docError {
	sc.i++                       // '{'
	var seen uint64              // kindObject: the keys seen, by index
	var keys map[string]struct{} // kindMap: the keys seen
	for sc.more('}') {
		kb, esc := sc.key()
		sc.ws()
		if sc.i < len(sc.b) && sc.b[sc.i] == ':' {
			sc.i++
		}
		var child *docShape
		k, key := -1, "" // the field's index (kindObject) or the key (kindMap)
		if s != nil {
			switch s.kind {
			case kindObject:
				if esc {
					kb = []byte(unescape(kb, esc))
				}
				for j, name := range s.names {
					if string(kb) == name {
						k = j
						break
					}
				}
				if k < 0 {
					return &docError{what: "unknown field", key: string(kb)}
				}
				if seen&(1<<k) != 0 {
					return &docError{what: "duplicate key", key: s.names[k]}
				}
				seen |= 1 << k
				child = s.fields[k]
			case kindMap:
				if keys == nil {
					keys = make(map[string]struct{})
				}
				key = unescape(kb, esc)
				if _, dup := keys[key]; dup {
					return &docError{what: "duplicate key", key: key}
				}
				keys[key] = struct{}{}
				child = s.elem
			}
		}
		if err := sc.value(child); err != nil {
			// Where the error is, built only now: an accepted document
			// pays nothing for it.
			switch {
			case k >= 0:
				err.at = "." + s.names[k] + err.at
			case child != nil:
				err.at = "[" + quoteKey(key) + "]" + err.at
			}
			return err
		}
	}
	return nil
}

// str moves past the string at sc.i and returns its raw contents (between
// the quotes, escapes not undone) and whether it has escapes.
func (sc *scanner) str() ([]byte, bool) {
	sc.i++ // '"'
	start, esc := sc.i, false
	for {
		j := bytes.IndexByte(sc.b[sc.i:], '"')
		if j < 0 {
			sc.i = len(sc.b)
			return sc.b[start:], esc
		}
		end := sc.i + j
		// The quote ends the string unless an odd number of backslashes
		// precede it.
		bs := 0
		for k := end - 1; k >= start && sc.b[k] == '\\'; k-- {
			bs++
		}
		if !esc && bytes.IndexByte(sc.b[start:end], '\\') >= 0 {
			esc = true
		}
		sc.i = end + 1
		if bs%2 == 0 {
			return sc.b[start:end], esc
		}
	}
}

// key reads an object key: its raw bytes, and whether they hold escapes.
func (sc *scanner) key() ([]byte, bool) {
	if sc.i >= len(sc.b) || sc.b[sc.i] != '"' {
		return nil, false
	}
	return sc.str()
}

// unescape returns a key as encoding/json reads it.
func unescape(raw []byte, esc bool) string {
	if esc {
		var k string
		if json.Unmarshal(append(append([]byte{'"'}, raw...), '"'), &k) == nil {
			return k
		}
	}
	return string(raw)
}
