package workflow

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"unicode/utf8"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/vm/runtime"
)

// maxBuilt bounds the bytes one evaluation may build with the operations
// that can grow a value beyond their inputs: +, replace, join, toJSON and
// string. expr's own memory budget counts ranges, arrays and repeat, not
// these; without this bound, reduce(1..40, #acc + #acc, "x") or nested
// replace calls build terabytes and take the station down (RATIONALE.md,
// "Why expr, and how is an expression bounded?").
const maxBuilt = 64 << 20

// bounded are the builtins an expression calls through a size-checked
// version, with the evaluation's budget as first argument.
var bounded = map[string]string{"replace": "__replace", "join": "__join", "toJSON": "__toJSON", "string": "__string"}

var errBuilt = fmt.Errorf("expression builds too much data (more than %d bytes)", maxBuilt)

// charge adds n bytes to the evaluation's budget.
func (b *budget) charge(n int) error {
	if n < 0 || n > maxBuilt-b.built {
		return errBuilt
	}
	b.built += n
	return nil
}

func budgetOf(params []any) (*budget, error) {
	b, ok := params[0].(*budget)
	if !ok || b == nil {
		return nil, fmt.Errorf("internal: no evaluation budget")
	}
	return b, nil
}

// growth rewrites + and the growing builtins into their bounded forms. It
// runs after refs, so the names it adds are never the expression's own.
type growth struct{}

func (growth) Visit(node *ast.Node) {
	budgetArg := &ast.IdentifierNode{Value: budgetVar}
	switch n := (*node).(type) {
	case *ast.BinaryNode:
		if n.Operator == "+" {
			ast.Patch(node, &ast.CallNode{Callee: &ast.IdentifierNode{Value: "__add"}, Arguments: []ast.Node{budgetArg, n.Left, n.Right}})
		}
	case *ast.BuiltinNode: // the parser's node for a call of a builtin
		if to, ok := bounded[n.Name]; ok {
			ast.Patch(node, &ast.CallNode{Callee: &ast.IdentifierNode{Value: to}, Arguments: append([]ast.Node{budgetArg}, n.Arguments...)})
		}
	}
}

// add is +: strings and arrays are charged for the result before it is
// built; everything else is expr's own +.
func add(params ...any) (any, error) {
	b, err := budgetOf(params)
	if err != nil {
		return nil, err
	}
	x, y := params[1], params[2]
	xs, xok := x.(string)
	ys, yok := y.(string)
	if xok && yok {
		if err := b.charge(len(xs) + len(ys)); err != nil {
			return nil, err
		}
		return xs + ys, nil
	}
	if isList(x) || isList(y) {
		n, ok := size(x, maxBuilt)
		m, ok2 := size(y, maxBuilt)
		if !ok || !ok2 {
			return nil, errBuilt
		}
		if err := b.charge(n + m); err != nil {
			return nil, err
		}
	}
	return safeAdd(x, y)
}

func safeAdd(x, y any) (v any, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	return runtime.Add(x, y), nil
}

func isList(v any) bool {
	k := reflect.ValueOf(v).Kind()
	return k == reflect.Slice || k == reflect.Array
}

// replaceBounded is replace(s, old, new[, n]), charged before it runs.
func replaceBounded(params ...any) (any, error) {
	b, err := budgetOf(params)
	if err != nil {
		return nil, err
	}
	args := params[1:]
	if len(args) != 3 && len(args) != 4 {
		return nil, fmt.Errorf("replace takes 3 or 4 arguments, not %d", len(args))
	}
	s, ok1 := args[0].(string)
	old, ok2 := args[1].(string)
	repl, ok3 := args[2].(string)
	if !ok1 || !ok2 || !ok3 {
		return nil, fmt.Errorf("replace wants strings")
	}
	count := -1
	if len(args) == 4 {
		count = runtime.ToInt(args[3])
	}
	k := strings.Count(s, old)
	if old == "" {
		k = utf8.RuneCountInString(s) + 1
	}
	if count >= 0 && count < k {
		k = count
	}
	if len(repl) > len(old) && k > 0 && len(repl)-len(old) > (maxBuilt-len(s))/k {
		return nil, errBuilt
	}
	if err := b.charge(len(s) + k*max(0, len(repl)-len(old))); err != nil {
		return nil, err
	}
	return strings.Replace(s, old, repl, count), nil
}

// joinBounded is join(list[, sep]), charged before it runs.
func joinBounded(params ...any) (any, error) {
	b, err := budgetOf(params)
	if err != nil {
		return nil, err
	}
	args := params[1:]
	if len(args) != 1 && len(args) != 2 {
		return nil, fmt.Errorf("join takes 1 or 2 arguments, not %d", len(args))
	}
	sep := ""
	if len(args) == 2 {
		s, ok := args[1].(string)
		if !ok {
			return nil, fmt.Errorf("join: the separator must be a string")
		}
		sep = s
	}
	var parts []string
	switch l := args[0].(type) {
	case []string:
		parts = l
	case []any:
		parts = make([]string, len(l))
		for i, v := range l {
			s, ok := v.(string)
			if !ok {
				return nil, fmt.Errorf("join: element %d is not a string", i)
			}
			parts[i] = s
		}
	default:
		return nil, fmt.Errorf("join wants a list of strings")
	}
	n := len(sep) * max(0, len(parts)-1)
	for _, p := range parts {
		if n += len(p); n > maxBuilt {
			return nil, errBuilt
		}
	}
	if err := b.charge(n); err != nil {
		return nil, err
	}
	return strings.Join(parts, sep), nil
}

// toJSONBounded is toJSON(v), charged before it runs.
func toJSONBounded(params ...any) (any, error) {
	b, err := budgetOf(params)
	if err != nil {
		return nil, err
	}
	if len(params) != 2 {
		return nil, fmt.Errorf("toJSON takes 1 argument")
	}
	n, ok := size(params[1], maxBuilt)
	if !ok {
		return nil, errBuilt
	}
	if err := b.charge(n); err != nil {
		return nil, err
	}
	out, err := json.MarshalIndent(params[1], "", "  ")
	if err != nil {
		return nil, err
	}
	return string(out), nil
}

// stringBounded is string(v), charged before it runs.
func stringBounded(params ...any) (any, error) {
	b, err := budgetOf(params)
	if err != nil {
		return nil, err
	}
	if len(params) != 2 {
		return nil, fmt.Errorf("string takes 1 argument")
	}
	n, ok := size(params[1], maxBuilt)
	if !ok {
		return nil, errBuilt
	}
	if err := b.charge(n); err != nil {
		return nil, err
	}
	return fmt.Sprintf("%v", params[1]), nil
}

// size estimates the bytes v takes when written out (as JSON or with
// fmt), counting every occurrence of a value shared by reference; it stops
// and reports false once the count passes limit, so that a list of a
// million references to one large string costs nothing to measure.
func size(v any, limit int) (int, bool) {
	n := 0
	var walk func(v reflect.Value, depth int) bool
	walk = func(v reflect.Value, depth int) bool {
		if depth > 100 {
			return false
		}
		switch v.Kind() {
		case reflect.Invalid:
			n += 4
		case reflect.Interface, reflect.Pointer:
			if v.IsNil() {
				n += 4
			} else if !walk(v.Elem(), depth+1) {
				return false
			}
		case reflect.String:
			n += v.Len() + 2
		case reflect.Slice, reflect.Array:
			n += 2
			for i := 0; i < v.Len(); i++ {
				n++
				if n > limit || !walk(v.Index(i), depth+1) {
					return false
				}
			}
		case reflect.Map:
			n += 2
			it := v.MapRange()
			for it.Next() {
				n += 2
				if n > limit || !walk(it.Key(), depth+1) || !walk(it.Value(), depth+1) {
					return false
				}
			}
		case reflect.Struct:
			for i := 0; i < v.NumField(); i++ {
				if !walk(v.Field(i), depth+1) {
					return false
				}
			}
		default:
			n += 24 // numbers, booleans
		}
		return n <= limit
	}
	ok := walk(reflect.ValueOf(v), 0)
	return n, ok
}
