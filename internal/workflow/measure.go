package workflow

import (
	"reflect"
	"unicode/utf8"
)

// The heap sizes the evaluation budget charges (bounds.go). Each is an
// upper bound of what the Go runtime allocates, as counted by
// runtime.MemStats.TotalAlloc; TestChargesCoverAllocations and
// FuzzEvalBudget check them against it.

// obj is the heap taken by one allocation of n bytes: small objects are
// rounded up to a size class, large ones to whole pages.
func obj(n int) int {
	switch {
	case n <= 0:
		return 0
	case n <= 1024:
		return n + n/2 + 16
	default:
		return n + n/8 + 8192
	}
}

// strCost is a new string of n bytes, returned as an interface.
func strCost(n int) int { return obj(n) + 16 }

// listCost is a new []any of n elements, returned as an interface.
func listCost(n int) int { return obj(16*n) + 24 }

// mapCost is a new map of n entries: its header, its groups, and the
// tables it outgrows on the way.
func mapCost(n int) int { return 512 + 160*n }

// boxCost is what putting one element of list into an interface costs:
// nothing for a []any, the element's size for a typed slice ([]int from a
// range, []string from split).
func boxCost(list any) int {
	switch list.(type) {
	case []any, nil:
		return 0
	case []int, []float64:
		return 8
	case []string:
		return 16
	}
	t := reflect.TypeOf(list)
	if k := t.Kind(); k != reflect.Slice && k != reflect.Array {
		return 0
	}
	switch e := t.Elem(); e.Kind() {
	case reflect.Interface, reflect.Pointer, reflect.Map, reflect.Chan, reflect.Func, reflect.UnsafePointer:
		return 0
	default:
		return obj(int(e.Size()))
	}
}

// listLen is the length of a list, typed or not; false if v is no list.
func listLen(v any) (int, bool) {
	switch l := v.(type) {
	case []any:
		return len(l), true
	case []int:
		return len(l), true
	case []string:
		return len(l), true
	case []float64:
		return len(l), true
	case nil:
		return 0, false
	}
	r := reflect.ValueOf(v)
	if k := r.Kind(); k == reflect.Slice || k == reflect.Array {
		return r.Len(), true
	}
	return 0, false
}

// maxDepth bounds how deep a value may be nested for the builtins that
// write it out (toJSON, string, a rendered value).
const maxDepth = 100

// output measures what a value takes when written out: as JSON (compact,
// or indented as toJSON does, with or without HTML escaping) or with fmt's
// %v (string). It counts every occurrence of a value shared by reference,
// and stops once the count passes limit, so measuring a list of a million
// references to one large string costs no more than the limit.
type output struct {
	fmt    bool // %v rather than JSON
	html   bool // JSON escapes <, > and &
	limit  int
	n      int // bytes written compactly
	indent int // bytes the two-space indentation adds
	maps   int // maps written
	keys   int // map entries written
	deep   bool
}

// measure walks v; false when it passes the limit or maxDepth.
func (o *output) measure(v any) bool {
	return o.walk(v, 0) && o.n+o.indent <= o.limit
}

func (o *output) over() bool { return o.n+o.indent > o.limit }

func (o *output) walk(v any, depth int) bool {
	if depth > maxDepth {
		o.deep = true
		return false
	}
	switch v := v.(type) {
	case nil:
		o.n += 5 // null, <nil>
	case bool:
		o.n += 5
	case string:
		o.str(v)
	case int, float64, int64, int32, int16, int8, uint, uint64, uint32, uint16, uint8, float32:
		o.n += 32 // the longest int, float or time.Duration
	case []any:
		o.open(len(v), depth)
		for _, e := range v {
			if !o.walk(e, depth+1) {
				return false
			}
		}
	case map[string]any:
		o.openMap(len(v), depth)
		for k, e := range v {
			o.str(k)
			if !o.walk(e, depth+1) {
				return false
			}
		}
	case []int:
		o.open(len(v), depth)
		o.n += 32 * len(v)
	case []float64:
		o.open(len(v), depth)
		o.n += 32 * len(v)
	case []string:
		o.open(len(v), depth)
		for _, s := range v {
			if o.str(s); o.over() {
				return false
			}
		}
	case []byte:
		// JSON: base64 in quotes; %v: [1 2 3].
		o.n += 4*len(v) + 4
	default:
		return o.reflect(reflect.ValueOf(v), depth)
	}
	return !o.over()
}

func (o *output) reflect(v reflect.Value, depth int) bool {
	switch v.Kind() {
	case reflect.Invalid:
		o.n += 5
	case reflect.Interface, reflect.Pointer:
		if v.IsNil() {
			o.n += 5
			return true
		}
		return o.walk(v.Elem().Interface(), depth)
	case reflect.Slice, reflect.Array:
		o.open(v.Len(), depth)
		for i := 0; i < v.Len(); i++ {
			if !o.walk(v.Index(i).Interface(), depth+1) {
				return false
			}
		}
	case reflect.Map:
		o.openMap(v.Len(), depth)
		it := v.MapRange()
		for it.Next() {
			if !o.walk(it.Key().Interface(), depth+1) || !o.walk(it.Value().Interface(), depth+1) {
				return false
			}
		}
	case reflect.String:
		o.str(v.String())
	default:
		o.n += 32
	}
	return !o.over()
}

// open counts a list's brackets and separators, and the line and
// indentation toJSON gives each element and the closing bracket.
func (o *output) open(n, depth int) {
	o.n += 2 + n
	if n > 0 {
		o.indent += (n + 1) * (1 + 2*(depth+1))
	}
}

func (o *output) openMap(n, depth int) {
	o.maps++
	o.keys += n
	o.n += 5 + 2*n // map[ ], or { } with : and ,
	if n > 0 {
		o.indent += (n+1)*(1+2*(depth+1)) + n // and a space after each colon
	}
}

// str counts a string as it is written: raw by %v, quoted and escaped in
// JSON (at most 6 bytes for one: \u00XX, \ufffd for invalid UTF-8).
func (o *output) str(s string) {
	if o.fmt {
		o.n += len(s)
		return
	}
	n := 2
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c < 0x20:
				n += 6
			case c == '"' || c == '\\':
				n += 2
			case o.html && (c == '<' || c == '>' || c == '&'):
				n += 6
			default:
				n++
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			n += 6
		case r == '\u2028' || r == '\u2029':
			n += 6
		default:
			n += size
		}
		i += size
	}
	o.n += n
}

// walkCost counts the work of the builtins that walk nested lists
// (max, min, mean, median): the lists they recurse into, and for median
// every number once for each level it is copied through.
type walkCost struct {
	lists, copies, limit int
}

func (w *walkCost) walk(v any, depth int) bool {
	if depth > 10_000 || w.lists+w.copies > w.limit {
		return false
	}
	switch v := v.(type) {
	case []any:
		w.lists++
		for _, e := range v {
			if !w.walk(e, depth+1) {
				return false
			}
		}
	case []int:
		w.lists++
		w.copies += len(v) * (depth + 1)
	case []float64:
		w.lists++
		w.copies += len(v) * (depth + 1)
	case nil, string, bool, map[string]any:
	default:
		r := reflect.ValueOf(v)
		if k := r.Kind(); k == reflect.Slice || k == reflect.Array {
			w.lists++
			for i := 0; i < r.Len(); i++ {
				if !w.walk(r.Index(i).Interface(), depth+1) {
					return false
				}
			}
			return true
		}
		w.copies += depth + 1
	}
	return true
}
