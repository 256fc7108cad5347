package workflow

import (
	"encoding/base64"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"regexp/syntax"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/expr-lang/expr/builtin"
	"github.com/expr-lang/expr/conf"
	"github.com/expr-lang/expr/vm/runtime"
)

// A boundedFunc is an operation an expression calls through the station:
// cost says, before anything is built, how many bytes the call may
// allocate (an upper bound, from the sizes of its arguments), and call then
// does what expr's own builtin or operator does. room is what the budget
// has left, so that measuring a huge value stops early.
type boundedFunc struct {
	cost func(args []any, room int) (int, error)
	call func(b *budget, args []any) (any, error)
	// for an operator: what its errors call it, and how many operands it
	// takes (a builtin's errors name it, and it checks its own arguments)
	what  string
	arity int
}

// boundedBuiltins are the expr builtins that build a value larger than a
// number, each called as __name(budget, args...) (growth, bounds.go).
// TestEveryBuiltinIsClassified keeps this list, unboundedBuiltins,
// predicates and disabled a partition of expr's builtins.
var boundedBuiltins = map[string]boundedFunc{
	"upper":      {cost: caseCost, call: exprBuiltin("upper")},
	"lower":      {cost: caseCost, call: exprBuiltin("lower")},
	"split":      {cost: splitCost, call: exprBuiltin("split")},
	"splitAfter": {cost: splitCost, call: exprBuiltin("splitAfter")},
	"replace":    {cost: replaceCost, call: exprBuiltin("replace")},
	"repeat":     {cost: repeatCost, call: exprBuiltin("repeat")},
	"join":       {cost: joinCost, call: exprBuiltin("join")},
	"toJSON":     {cost: toJSONCost, call: exprBuiltin("toJSON")},
	"fromJSON":   {cost: fromJSONCost, call: exprBuiltin("fromJSON")},
	"string":     {cost: stringCost, call: exprBuiltin("string")},
	"toBase64":   {cost: toBase64Cost, call: exprBuiltin("toBase64")},
	"fromBase64": {cost: fromBase64Cost, call: exprBuiltin("fromBase64")},
	"keys":       {cost: keysCost, call: exprBuiltin("keys")},
	"values":     {cost: keysCost, call: exprBuiltin("values")},
	"toPairs":    {cost: toPairsCost, call: exprBuiltin("toPairs")},
	"fromPairs":  {cost: fromPairsCost, call: exprBuiltin("fromPairs")},
	"reverse":    {cost: copyCost, call: exprBuiltin("reverse")},
	"sort":       {cost: copyCost, call: exprBuiltin("sort")},
	"concat":     {cost: concatCost, call: concat},
	"flatten":    {cost: flattenCost, call: flatten},
	"uniq":       {cost: uniqCost, call: uniqList},
	"max":        {cost: walkCostOf(false), call: exprBuiltin("max")},
	"min":        {cost: walkCostOf(false), call: exprBuiltin("min")},
	"mean":       {cost: walkCostOf(false), call: exprBuiltin("mean")},
	"median":     {cost: walkCostOf(true), call: exprBuiltin("median")},
	"int":        {cost: quotedCost, call: exprBuiltin("int")},
	"float":      {cost: quotedCost, call: exprBuiltin("float")},
	"duration":   {cost: quotedCost, call: exprBuiltin("duration")},
}

// unboundedBuiltins allocate at most a boxed number, a string or slice
// header, or a substring of their argument: the static cost of their call
// (bounds.go) covers them.
var unboundedBuiltins = []string{
	"len", "type", "abs", "ceil", "floor", "round", "trim", "trimPrefix", "trimSuffix",
	"indexOf", "lastIndexOf", "hasPrefix", "hasSuffix", "first", "last", "get", "take",
	"bitand", "bitor", "bitxor", "bitnand", "bitnot", "bitshl", "bitshr", "bitushr",
}

// boundedOps are the operators (and checks) growth rewrites.
var boundedOps = map[string]boundedFunc{
	"__add":     {what: "+", arity: 2, cost: addCost, call: func(_ *budget, a []any) (any, error) { return runtime.Add(a[0], a[1]), nil }},
	"__range":   {what: "a range", arity: 2, cost: rangeCost, call: makeRange},
	"__in":      {what: "in", arity: 2, cost: inCost, call: func(_ *budget, a []any) (any, error) { return runtime.In(a[0], a[1]), nil }},
	"__inrange": {what: "in", arity: 3, cost: func([]any, int) (int, error) { return 0, nil }, call: inRange},
	"__eq":      {what: "==", arity: 2, cost: eqArgsCost, call: func(_ *budget, a []any) (any, error) { return runtime.Equal(a[0], a[1]), nil }},
	"__ne":      {what: "!=", arity: 2, cost: eqArgsCost, call: func(_ *budget, a []any) (any, error) { return !runtime.Equal(a[0], a[1]), nil }},
	"__matches": {what: "matches", arity: 2, cost: matchesCost, call: matches},
	"__iter":    {what: "the loop of sum or count", arity: 1, cost: iterCost, call: func(_ *budget, a []any) (any, error) { return a[0], nil }},
	"__key":     {what: "index", arity: 1, cost: keyCost, call: func(_ *budget, a []any) (any, error) { return a[0], nil }},
}

// boundedFuncs are the functions an expression calls, by name (__concat,
// __add, ...): each charges its cost, then calls.
var boundedFuncs = map[string]func(params ...any) (any, error){}

func init() {
	for name, f := range boundedBuiltins {
		f.what = name
		boundedFuncs["__"+name] = f.fn
	}
	for name, f := range boundedOps {
		boundedFuncs[name] = f.fn
	}
}

// fn is what expr calls: the budget, then the arguments.
func (f boundedFunc) fn(params ...any) (any, error) {
	b, err := budgetOf(params)
	if err != nil {
		return nil, err
	}
	args := params[1:]
	if f.arity > 0 && len(args) != f.arity {
		return nil, fmt.Errorf("internal: %s takes %d operands", f.what, f.arity)
	}
	n, err := f.cost(args, b.room())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.what, err)
	}
	if err := b.charge(f.what, n); err != nil {
		return nil, err
	}
	return f.call(b, args)
}

// boundedOption registers the bounded functions, untyped (growth adds the
// typed variants it needs), and the tick.
func boundedOption(c *conf.Config) {
	for name, f := range boundedDefs {
		c.Functions[name] = f
	}
}

var boundedDefs = map[string]*builtin.Function{}

func init() {
	boundedFuncs[tickFunc] = tick
	for name, f := range boundedFuncs {
		boundedDefs[name] = &builtin.Function{Name: name, Func: f}
	}
}

// exprBuiltin calls expr's own builtin, so a bounded one behaves exactly as
// it did: same results, same errors.
func exprBuiltin(name string) func(*budget, []any) (any, error) {
	f := builtin.Builtins[builtin.Index[name]]
	switch {
	case f.Fast != nil:
		return func(_ *budget, args []any) (any, error) {
			if len(args) != 1 {
				return nil, fmt.Errorf("invalid number of arguments (expected 1, got %d)", len(args))
			}
			return f.Fast(args[0]), nil
		}
	case f.Safe != nil:
		return func(_ *budget, args []any) (any, error) {
			v, _, err := f.Safe(args...)
			return v, err
		}
	default:
		return func(_ *budget, args []any) (any, error) { return f.Func(args...) }
	}
}

func str(args []any, i int) (string, bool) {
	if i >= len(args) {
		return "", false
	}
	s, ok := args[i].(string)
	return s, ok
}

// Costs. A cost of 0 for arguments the builtin refuses: it fails on them
// before it allocates.

// upper, lower: a copy, larger by half at most (a few runes grow when
// their case changes), built by a builder that may double once.
func caseCost(args []any, _ int) (int, error) {
	s, _ := str(args, 0)
	return strCost(4*len(s) + 8), nil
}

// split, splitAfter: a []string of the parts (substrings of s), as
// strings.SplitN sizes it.
func splitCost(args []any, _ int) (int, error) {
	s, ok1 := str(args, 0)
	sep, ok2 := str(args, 1)
	if !ok1 || !ok2 || len(args) > 3 {
		return 0, nil
	}
	n := -1
	if len(args) == 3 {
		n = runtime.ToInt(args[2])
	}
	parts := n
	switch {
	case n == 0:
		parts = 0
	case sep == "":
		if l := utf8.RuneCountInString(s); n < 0 || n > l {
			parts = l
		}
	default:
		if n < 0 {
			parts = strings.Count(s, sep) + 1
		}
		if parts > len(s)+1 {
			parts = len(s) + 1
		}
	}
	return listCost(parts), nil
}

func replaceCost(args []any, _ int) (int, error) {
	s, ok1 := str(args, 0)
	old, ok2 := str(args, 1)
	repl, ok3 := str(args, 2)
	if !ok1 || !ok2 || !ok3 || len(args) > 4 {
		return 0, nil
	}
	k := strings.Count(s, old) // 1 + the runes when old is ""
	if len(args) == 4 {
		if c := runtime.ToInt(args[3]); c >= 0 && c < k {
			k = c
		}
	}
	if k == 0 {
		return 0, nil // s itself
	}
	grow := len(repl) - len(old)
	if grow <= 0 {
		return strCost(len(s)), nil
	}
	return strCost(len(s) + mul(k, grow)), nil
}

func repeatCost(args []any, _ int) (int, error) {
	s, ok := str(args, 0)
	if !ok || len(args) != 2 {
		return 0, nil
	}
	n := runtime.ToInt(args[1])
	if n < 0 || n > 1e6 {
		return 0, nil // expr refuses it
	}
	return strCost(mul(len(s), n)), nil
}

// join: the result, and the []string expr's join collects a []any into
// (appending, so up to about six times the final list).
func joinCost(args []any, room int) (int, error) {
	if len(args) < 1 || len(args) > 2 {
		return 0, nil
	}
	sep := ""
	if len(args) == 2 {
		sep, _ = str(args, 1)
	}
	var total, n int
	switch l := args[0].(type) {
	case []string:
		for _, p := range l {
			if total += len(p) + len(sep); total > room {
				return huge, nil
			}
		}
		n = 0
	case []any:
		for _, e := range l {
			p, _ := e.(string)
			if total += len(p) + len(sep); total > room {
				return huge, nil
			}
		}
		n = len(l)
	default:
		return 0, nil
	}
	return strCost(total) + obj(112*n), nil
}

// toJSON is json.MarshalIndent: a compact encoding in a growing buffer and
// its copy, an indented one in another and the string; a sorted list of
// keys for every map.
func toJSONCost(args []any, room int) (int, error) {
	if len(args) != 1 {
		return 0, nil
	}
	o := output{html: true, limit: room}
	if !o.measure(args[0]) {
		return o.refused()
	}
	nc, ni := o.n, o.n+o.indent
	// Marshal's buffer doubles; Indent's starts at twice the compact size
	// and grows by appending (about six times its final size in all).
	indent := obj(2 * nc)
	if ni > 2*nc {
		indent += obj(mul(ni, 6))
	}
	return obj(4*nc) + obj(nc) + indent + strCost(ni) + 96*o.keys + 256*o.maps + 256, nil
}

// string is fmt's %v: a buffer grown by appending (about six times its
// final size in all), the string, and for every map its keys and values
// sorted.
func stringCost(args []any, room int) (int, error) {
	if len(args) != 1 {
		return 0, nil
	}
	o := output{fmt: true, limit: room}
	if !o.measure(args[0]) {
		return o.refused()
	}
	return obj(mul(o.n, 6)) + strCost(o.n) + 128*o.keys + 256*o.maps + 256, nil
}

// refused is the cost of a value measure stopped at.
func (o *output) refused() (int, error) {
	if o.deep {
		return 0, fmt.Errorf("the value is nested more than %d deep", maxDepth)
	}
	return huge, nil
}

func toBase64Cost(args []any, _ int) (int, error) {
	s, _ := str(args, 0)
	n := base64.StdEncoding.EncodedLen(len(s))
	return obj(len(s)) + obj(n) + strCost(n), nil
}

func fromBase64Cost(args []any, _ int) (int, error) {
	s, _ := str(args, 0)
	n := base64.StdEncoding.DecodedLen(len(s))
	return obj(n) + strCost(n), nil
}

// fromJSON is json.Unmarshal into interfaces: the input copied to bytes,
// strings unquoted into new ones, and for every value its box and its
// slot in a growing list or map. Counting the bytes that open a value or
// separate one is an upper bound of the values, whatever they contain.
func fromJSONCost(args []any, _ int) (int, error) {
	s, _ := str(args, 0)
	c := 3*obj(len(s)) + 1024
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ',', '[':
			c += 128
		case '{':
			c += 512
		case '"':
			c += 24
		}
	}
	return c, nil
}

func mapLen(v any) (int, bool) {
	if m, ok := v.(map[string]any); ok {
		return len(m), true
	}
	r := reflect.ValueOf(v)
	if r.Kind() != reflect.Map {
		return 0, false
	}
	return r.Len(), true
}

// keys, values: reflect's copy of the keys, each key or value copied out
// of the map and boxed, and the result.
func keysCost(args []any, _ int) (int, error) {
	if len(args) != 1 {
		return 0, nil
	}
	n, _ := mapLen(args[0])
	return obj(40*n) + 32*n + listCost(n), nil
}

func toPairsCost(args []any, _ int) (int, error) {
	if len(args) != 1 {
		return 0, nil
	}
	n, _ := mapLen(args[0])
	return obj(40*n) + 32*n + obj(32*n) + 24, nil
}

// fromPairs: a map of every pair. The pairs are checked here, because
// expr's errors for a bad one print the whole value.
func fromPairsCost(args []any, _ int) (int, error) {
	if len(args) != 1 {
		return 0, nil
	}
	v := reflect.ValueOf(args[0])
	if k := v.Kind(); k != reflect.Slice && k != reflect.Array {
		return 0, fmt.Errorf("cannot transform %s from pairs", v.Kind())
	}
	for i := 0; i < v.Len(); i++ {
		p := deref(v.Index(i))
		if k := p.Kind(); k != reflect.Slice && k != reflect.Array {
			return 0, fmt.Errorf("element %d is not a pair but %s", i, kindName(p))
		}
		if p.Len() != 2 {
			return 0, fmt.Errorf("element %d is not a pair: it has %d elements", i, p.Len())
		}
	}
	return mapCost(v.Len()) + 64*v.Len(), nil
}

func deref(v reflect.Value) reflect.Value {
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return v
		}
		v = v.Elem()
	}
	return v
}

func kindName(v reflect.Value) string {
	if !v.IsValid() || (v.Kind() == reflect.Interface && v.IsNil()) {
		return "null"
	}
	return v.Kind().String()
}

// reverse, sort: a []any of the same length, each element boxed.
func copyCost(args []any, _ int) (int, error) {
	if len(args) < 1 {
		return 0, nil
	}
	n, _ := listLen(args[0])
	return listCost(n) + mul(n, boxCost(args[0])), nil
}

// concat builds exactly one list (expr's appends, growing it ~6 times).
func concatCost(args []any, _ int) (int, error) {
	n, box := 0, 0
	for _, a := range args {
		l, ok := listLen(a)
		if !ok {
			return 0, nil
		}
		n += l
		box += mul(l, boxCost(a))
	}
	return listCost(n) + box, nil
}

func concat(_ *budget, args []any) (any, error) {
	if len(args) == 0 {
		return nil, fmt.Errorf("invalid number of arguments (expected at least 1, got 0)")
	}
	total := 0
	for _, a := range args {
		v := reflect.ValueOf(a)
		if v.Kind() != reflect.Slice && v.Kind() != reflect.Array {
			return nil, fmt.Errorf("cannot concat %s", v.Kind())
		}
		total += v.Len()
	}
	if total == 0 {
		return []any(nil), nil // as expr's, which appends to a nil list
	}
	out := make([]any, 0, total)
	for _, a := range args {
		if l, ok := a.([]any); ok {
			out = append(out, l...)
			continue
		}
		v := reflect.ValueOf(a)
		for i := 0; i < v.Len(); i++ {
			out = append(out, v.Index(i).Interface())
		}
	}
	return out, nil
}

// flatten builds exactly one list (expr's copies every element once for
// each level it is nested in).
func flattenCost(args []any, _ int) (int, error) {
	if len(args) != 1 {
		return 0, nil
	}
	v := reflect.ValueOf(args[0])
	if k := v.Kind(); k != reflect.Slice && k != reflect.Array {
		return 0, nil
	}
	n, box, err := flatCount(v, 0)
	if err != nil {
		return 0, err
	}
	return listCost(n) + box, nil
}

func flatCount(v reflect.Value, depth int) (n, box int, err error) {
	if depth > builtin.MaxDepth {
		return 0, 0, builtin.ErrorMaxDepth
	}
	b := boxCost(v.Interface())
	for i := 0; i < v.Len(); i++ {
		e := deref(v.Index(i))
		if k := e.Kind(); k == reflect.Slice || k == reflect.Array {
			m, c, err := flatCount(e, depth+1)
			if err != nil {
				return 0, 0, err
			}
			n, box = n+m, box+c
		} else {
			n, box = n+1, box+b
		}
	}
	return n, box, nil
}

func flatten(_ *budget, args []any) (any, error) {
	if len(args) != 1 {
		return nil, fmt.Errorf("invalid number of arguments (expected 1, got %d)", len(args))
	}
	v := reflect.ValueOf(args[0])
	if k := v.Kind(); k != reflect.Array && k != reflect.Slice {
		return nil, fmt.Errorf("cannot flatten %s", v.Kind())
	}
	n, _, err := flatCount(v, 0)
	if err != nil {
		return nil, err
	}
	out := make([]any, 0, n)
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		for i := 0; i < v.Len(); i++ {
			e := deref(v.Index(i))
			if k := e.Kind(); k == reflect.Slice || k == reflect.Array {
				walk(e)
			} else {
				out = append(out, e.Interface())
			}
		}
	}
	walk(v)
	return out, nil
}

// uniq keeps the first of every group of equal elements (runtime.Equal,
// as expr's), in order. expr's compares every element with every one kept
// (quadratic, and boxing both each time for a typed list); this one looks
// numbers, strings and booleans up in a map, so only lists, maps and null
// are compared one by one — each comparison charged as == is.
func uniqCost(args []any, _ int) (int, error) {
	if len(args) != 1 {
		return 0, nil
	}
	n, ok := listLen(args[0])
	if !ok {
		return 0, nil
	}
	// the result, the boxes, the map of keys, the list of the others
	return listCost(n) + mul(n, boxCost(args[0])+16) + obj(40*n) + 1024 + listCost(n), nil
}

// uniqKey is the key under which runtime.Equal's equal scalars meet: the
// string, the boolean, or the number as a float64 when it converts exactly
// both ways (|x| < 2^53), which is how Equal compares an int to a float.
func uniqKey(v any) (any, bool) {
	var f float64
	switch x := v.(type) {
	case string, bool:
		return x, true
	case int:
		f = float64(x)
	case float64:
		f = x
	case int64:
		f = float64(x)
	case int32:
		f = float64(x)
	case int16:
		f = float64(x)
	case int8:
		f = float64(x)
	case uint:
		f = float64(x)
	case uint64:
		f = float64(x)
	case uint32:
		f = float64(x)
	case uint16:
		f = float64(x)
	case uint8:
		f = float64(x)
	case float32:
		f = float64(x)
	default:
		return nil, false
	}
	if !(math.Abs(f) < 1<<53) { // and not NaN
		return nil, false
	}
	return f, true
}

func uniqList(b *budget, args []any) (any, error) {
	if len(args) != 1 {
		return nil, fmt.Errorf("invalid number of arguments (expected 1, got %d)", len(args))
	}
	v := reflect.ValueOf(args[0])
	if k := v.Kind(); k != reflect.Array && k != reflect.Slice {
		return nil, fmt.Errorf("cannot uniq %s", v.Kind())
	}
	out := make([]any, 0, v.Len())
	seen := make(map[any]struct{}, v.Len())
	var others []any
	for i := 0; i < v.Len(); i++ {
		e := v.Index(i).Interface()
		if k, ok := uniqKey(e); ok {
			if _, dup := seen[k]; dup {
				continue
			}
			seen[k] = struct{}{}
		} else {
			dup := false
			for _, r := range others {
				if err := b.charge("uniq", eqCost(e, r, b.room())); err != nil {
					return nil, err
				}
				if runtime.Equal(e, r) {
					dup = true
					break
				}
			}
			if dup {
				continue
			}
			others = append(others, e)
		}
		out = append(out, e)
	}
	return out, nil
}

// max, min, mean, median recurse into nested lists (an argument list for
// each); median also copies every number once for each level it is nested
// in.
func walkCostOf(copies bool) func([]any, int) (int, error) {
	return func(args []any, room int) (int, error) {
		w := walkCost{limit: room / 24}
		for _, a := range args {
			if !w.walk(a, 0) {
				return huge, nil
			}
		}
		c := 48*w.lists + 256
		if copies {
			c += 24 * w.copies
		}
		return c, nil
	}
}

// int, float, duration: a string they cannot parse is quoted, whole, in
// their error, which is copied a few times on its way out.
func quotedCost(args []any, _ int) (int, error) {
	s, _ := str(args, 0)
	return mul(len(s), 32), nil
}

func addCost(args []any, _ int) (int, error) {
	x, ok1 := args[0].(string)
	y, ok2 := args[1].(string)
	if !ok1 || !ok2 {
		return 0, nil // numbers: the call's static cost; anything else fails
	}
	return strCost(len(x) + len(y)), nil
}

// rangeSize is how many numbers lo..hi holds, computed as expr does.
func rangeSize(args []any) int {
	size := runtime.ToInt(args[1]) - runtime.ToInt(args[0]) + 1
	return max(size, 0)
}

func rangeCost(args []any, _ int) (int, error) {
	return obj(mul(rangeSize(args), 8)) + 24, nil
}

func makeRange(_ *budget, args []any) (any, error) {
	return runtime.MakeRange(runtime.ToInt(args[0]), runtime.ToInt(args[1])), nil
}

// in over a typed list boxes every element it compares.
func inCost(args []any, _ int) (int, error) {
	n, ok := listLen(args[1])
	if !ok {
		return 0, nil
	}
	return mul(n, boxCost(args[1])), nil
}

// inRange is x in m..n without the range: runtime.In compares each of its
// ints i with x by runtime.Equal, which is int(x) == i for an integer x and
// float64(i) == x for a float (true exactly when x is integral and between
// float64(m) and float64(n), float64 being monotonic).
func inRange(_ *budget, args []any) (any, error) {
	m, n := runtime.ToInt(args[1]), runtime.ToInt(args[2])
	if n-m+1 <= 0 { // as expr sizes a range: an empty one
		return false, nil
	}
	v := reflect.ValueOf(args[0])
	switch v.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if v.Type() == reflect.TypeOf(time.Duration(0)) {
			return false, nil
		}
		i := int(v.Int())
		return m <= i && i <= n, nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		i := int(v.Uint())
		return m <= i && i <= n, nil
	case reflect.Float32, reflect.Float64:
		f := v.Float()
		return f == math.Trunc(f) && float64(m) <= f && f <= float64(n), nil
	}
	return false, nil
}

// == and != between two lists or maps compare element by element, boxing
// the elements of typed lists and, in reflect.DeepEqual, recording every
// pair of lists, maps and interfaces it compares.
func eqArgsCost(args []any, room int) (int, error) { return eqCost(args[0], args[1], room), nil }

func eqCost(x, y any, room int) int {
	if scalar(x) || scalar(y) {
		return 0
	}
	limit := room/128 + 1
	return mul(min(elements(x, limit), elements(y, limit)), 128)
}

func scalar(v any) bool {
	switch v.(type) {
	case nil, string, bool, int, float64:
		return true
	}
	k := reflect.ValueOf(v).Kind()
	return k != reflect.Slice && k != reflect.Array && k != reflect.Map
}

// elements counts the elements and entries in v, at every depth, up to
// limit.
func elements(v any, limit int) int {
	n := 0
	var walk func(v any, depth int) bool
	walk = func(v any, depth int) bool {
		if depth > builtin.MaxDepth {
			return false
		}
		switch v := v.(type) {
		case []any:
			n += len(v) + 1
			for _, e := range v {
				if n > limit || !walk(e, depth+1) {
					return false
				}
			}
		case map[string]any:
			n += len(v) + 4 // DeepEqual's record of the pair, its MapIndex copies
			for _, e := range v {
				if n > limit || !walk(e, depth+1) {
					return false
				}
			}
		default:
			if scalar(v) {
				return true
			}
			r := reflect.ValueOf(v)
			n += r.Len() + 1
			if r.Kind() == reflect.Map {
				it := r.MapRange()
				for it.Next() {
					if n > limit || !walk(it.Value().Interface(), depth+1) {
						return false
					}
				}
				return n <= limit
			}
			for i := 0; i < r.Len(); i++ {
				if n > limit || !walk(r.Index(i).Interface(), depth+1) {
					return false
				}
			}
		}
		return n <= limit
	}
	walk(v, 0)
	return n
}

// sum(list), count(list): their loop boxes each element of a typed list
// and each partial sum.
func iterCost(args []any, _ int) (int, error) {
	n, _ := listLen(args[0])
	return mul(n, boxCost(args[0])+8), nil
}

// A computed index, or end of a slice, must be a string, a number, a
// boolean or null: for any other value expr's error would print it whole. A string is charged for
// the few copies of it such an error makes.
func keyCost(args []any, _ int) (int, error) {
	if s, ok := args[0].(string); ok {
		return mul(len(s), 4), nil
	}
	if !scalar(args[0]) {
		return 0, fmt.Errorf("must be a string or a number, not %s", typeName(args[0]))
	}
	return 0, nil
}

// Patterns. A pattern is parsed into a tree (up to ~1.5 KB for each byte:
// \pL is a table of ranges), compiled to one instruction for each rune,
// class or operator, with repetitions written out (a{1000} is a thousand
// instructions), and matched with threads that each carry the capture
// positions.
const (
	maxPattern     = 4 << 10 // bytes
	maxPatternCost = 1 << 20 // a constant pattern, compiled with the expression
	parseCost      = 2048    // for each byte of the pattern
	instCost       = 512     // for each instruction: compiling it, and its matcher's queues
)

// patternCost is what compiling and matching p allocates.
func patternCost(p string) (int, error) {
	if len(p) > maxPattern {
		return 0, fmt.Errorf("the pattern is longer than %d bytes", maxPattern)
	}
	re, err := syntax.Parse(p, syntax.Perl)
	if err != nil {
		return mul(len(p), parseCost), nil // the match fails with this error
	}
	insts := progSize(re)
	return mul(len(p), parseCost) + mul(insts, instCost+16*re.MaxCap()) + 64<<10, nil
}

// matchCost is what matching a constant pattern, compiled with the
// expression, allocates in one evaluation: its matcher.
func matchCost(p string) int {
	re, err := syntax.Parse(p, syntax.Perl)
	if err != nil {
		return 0
	}
	return mul(progSize(re), 64+16*re.MaxCap()) + 64<<10
}

// progSize is an upper bound of the instructions syntax.Compile makes of
// re once simplified.
func progSize(re *syntax.Regexp) int {
	n := 0
	for _, s := range re.Sub {
		n += progSize(s)
	}
	switch re.Op {
	case syntax.OpLiteral:
		return len(re.Rune) + 1
	case syntax.OpCharClass:
		return 2 + len(re.Rune)/16
	case syntax.OpRepeat:
		if re.Max == -1 {
			return mul(n, re.Min+1) + re.Min + 2
		}
		return mul(n, re.Max) + re.Max + 2
	}
	return n + len(re.Sub) + 2
}

func matchesCost(args []any, _ int) (int, error) {
	if runtime.IsNil(args[0]) || runtime.IsNil(args[1]) {
		return 0, nil
	}
	p, ok := args[1].(string)
	if !ok {
		return 0, nil
	}
	return patternCost(p)
}

// matches is the VM's matches with a pattern computed at run time.
func matches(_ *budget, args []any) (any, error) {
	a, b := args[0], args[1]
	if runtime.IsNil(a) || runtime.IsNil(b) {
		return false, nil
	}
	if s, ok := a.(string); ok {
		return regexp.MatchString(b.(string), s)
	}
	return regexp.Match(b.(string), a.([]byte))
}
