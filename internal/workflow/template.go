package workflow

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/vm"
)

// Bounds on expressions (see RATIONALE.md, "Why expr, and how
// is an expression bounded?").
const (
	// MaxExprLen bounds the source of one expression, in bytes.
	MaxExprLen = 4 << 10
	// maxNodes bounds the syntax tree of one expression.
	maxNodes = 1000
	// maxTicks bounds how many times one evaluation may run the body of a
	// predicate (map, filter, all, ...): nested loops over large outputs
	// stop with an error instead of running for hours.
	maxTicks = 1_000_000
	// memoryBudget is expr's allocation budget per evaluation (ranges,
	// arrays, maps, repeated strings), in its own units (elements, bytes).
	memoryBudget = 4_000_000
	// MaxValue bounds the JSON a template renders, in bytes.
	MaxValue = 16 << 20
)

// Names the station reserves in the expression environment. A workflow
// cannot use names starting with "__".
const (
	budgetVar = "__budget"
	tickFunc  = "__tick"
)

// disabled are expr builtins a workflow cannot call: date, timezone and now
// read the clock and the zone database (I/O, and a run that resumes must
// compute the same values as the one that stopped).
var disabled = []string{"now", "date", "timezone"}

// budget counts one evaluation's predicate bodies and the bytes it builds
// (bounds.go).
type budget struct{ ticks, built int }

var errBudget = fmt.Errorf("expression ran too long (more than %d loop iterations)", maxTicks)

func tick(params ...any) (any, error) {
	b, ok := params[0].(*budget)
	if !ok || b == nil {
		return nil, errors.New("internal: no evaluation budget")
	}
	if b.ticks++; b.ticks > maxTicks {
		return nil, errBudget
	}
	return nil, nil
}

// compileEnv is the shape of the environment expressions are checked
// against: unknown names are compile errors.
var compileEnv = map[string]any{
	"inputs":  map[string]any{},
	"steps":   map[string]any{},
	budgetVar: (*budget)(nil),
}

// Expr is one compiled expression.
type Expr struct {
	// Source is the expression as written (inside ${{ }}).
	Source string
	prog   *vm.Program
	// steps are the step ids it references (steps.<id>), inputs the input
	// names (inputs.<name>).
	steps  []string
	inputs []string
}

// refs collects what an expression references, and refuses what the
// station reserves and dynamic references to steps.
type refs struct {
	steps, inputs []string
	stepsIdents   int // identifiers "steps"
	stepsNamed    int // ... used as steps.<id>
	errs          []string
}

func (r *refs) Visit(node *ast.Node) {
	switch n := (*node).(type) {
	case *ast.IdentifierNode:
		if strings.HasPrefix(n.Value, "__") {
			r.errs = append(r.errs, fmt.Sprintf("names starting with __ are reserved (%s)", n.Value))
		}
		if n.Value == "steps" {
			r.stepsIdents++
		}
	case *ast.MemberNode:
		id, ok := n.Node.(*ast.IdentifierNode)
		if !ok {
			return
		}
		prop, isStr := n.Property.(*ast.StringNode)
		switch {
		case id.Value == "steps" && isStr:
			r.stepsNamed++
			r.steps = append(r.steps, prop.Value)
		case id.Value == "inputs" && isStr:
			r.inputs = append(r.inputs, prop.Value)
		}
	}
}

// bound wraps the body of every predicate in a call that counts it against
// the evaluation's budget: predicate bodies are the only code that runs more
// than once (expr has no other loops and no recursion).
type bound struct{}

func (bound) Visit(node *ast.Node) {
	p, ok := (*node).(*ast.PredicateNode)
	if !ok {
		return
	}
	call := &ast.CallNode{Callee: &ast.IdentifierNode{Value: tickFunc}, Arguments: []ast.Node{&ast.IdentifierNode{Value: budgetVar}}}
	p.Node = &ast.SequenceNode{Nodes: []ast.Node{call, p.Node}}
}

// compileExpr compiles one expression.
func compileExpr(src string) (*Expr, error) {
	if strings.TrimSpace(src) == "" {
		return nil, errors.New("empty expression")
	}
	if len(src) > MaxExprLen {
		return nil, fmt.Errorf("expression is longer than %d bytes", MaxExprLen)
	}
	r := &refs{}
	opts := []expr.Option{
		expr.Env(compileEnv),
		expr.MaxNodes(maxNodes),
		expr.Function(tickFunc, tick, new(func(*budget) any)),
		expr.Patch(r), // runs first: sees the expression as written
		expr.Patch(bound{}),
		expr.Patch(growth{}),
		expr.Function("__add", add),
		expr.Function("__replace", replaceBounded),
		expr.Function("__join", joinBounded),
		expr.Function("__toJSON", toJSONBounded),
		expr.Function("__string", stringBounded),
	}
	for _, name := range disabled {
		opts = append(opts, expr.DisableBuiltin(name))
	}
	prog, err := expr.Compile(src, opts...)
	if len(r.errs) > 0 {
		return nil, errors.New(r.errs[0])
	}
	if err != nil {
		return nil, exprError(err)
	}
	if r.stepsIdents > r.stepsNamed {
		return nil, errors.New("steps must be followed by a step id, as in steps.invoice.output")
	}
	return &Expr{Source: strings.TrimSpace(src), prog: prog, steps: uniq(r.steps), inputs: uniq(r.inputs)}, nil
}

// exprError keeps the message of an expr error and its column, without the
// multi-line snippet.
func exprError(err error) error {
	var fe *file.Error
	if errors.As(err, &fe) {
		msg := fe.Message
		if fe.Prev != nil && !strings.Contains(msg, fe.Prev.Error()) {
			msg += ": " + fe.Prev.Error()
		}
		if fe.Column > 0 || fe.Line > 1 {
			return fmt.Errorf("%s (at column %d)", msg, fe.Column+1)
		}
		return errors.New(msg)
	}
	return err
}

func uniq(ss []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range ss {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// Env is what expressions see: the run's inputs and the steps that have
// finished.
type Env struct {
	Inputs map[string]any
	Steps  map[string]StepValue
}

// StepValue is what steps.<id> holds for a finished step.
type StepValue struct {
	Status string // succeeded, failed (with continue_on_error) or skipped
	Output any    // the decoded JSON output; nil unless succeeded
	Error  string // the error of a failed step
}

func (e *Env) vars() map[string]any {
	steps := make(map[string]any, len(e.Steps))
	for id, s := range e.Steps {
		steps[id] = map[string]any{"status": s.Status, "output": s.Output, "error": s.Error}
	}
	inputs := e.Inputs
	if inputs == nil {
		inputs = map[string]any{}
	}
	return map[string]any{"inputs": inputs, "steps": steps, budgetVar: &budget{}}
}

// eval runs the expression in vars.
func (x *Expr) eval(vars map[string]any) (any, error) {
	vars[budgetVar] = &budget{}
	m := vm.VM{MemoryBudget: memoryBudget}
	v, err := m.Run(x.prog, vars)
	if err != nil {
		return nil, fmt.Errorf("${{ %s }}: %w", x.Source, exprError(err))
	}
	return v, nil
}

// Template is a value whose strings may hold ${{ expression }}s: a field
// that is exactly one expression takes the expression's value; a string
// with expressions and text is interpolated; mappings and lists are
// rendered element by element.
type Template struct {
	root tnode
}

type tnode interface {
	render(vars map[string]any) (any, error)
	exprs(yield func(*Expr))
}

type literal struct{ v any }

func (l literal) render(map[string]any) (any, error) { return l.v, nil }
func (literal) exprs(func(*Expr))                    {}

type whole struct{ x *Expr }

func (w whole) render(vars map[string]any) (any, error) { return w.x.eval(vars) }
func (w whole) exprs(yield func(*Expr))                 { yield(w.x) }

type interp struct {
	text []string // len(text) == len(xs)+1
	xs   []*Expr
}

func (p interp) render(vars map[string]any) (any, error) {
	var b strings.Builder
	for i, x := range p.xs {
		b.WriteString(p.text[i])
		v, err := x.eval(vars)
		if err != nil {
			return nil, err
		}
		s, err := toText(v)
		if err != nil {
			return nil, fmt.Errorf("${{ %s }}: %w", x.Source, err)
		}
		b.WriteString(s)
		if b.Len() > MaxValue {
			return nil, fmt.Errorf("the string is longer than %d bytes", MaxValue)
		}
	}
	b.WriteString(p.text[len(p.text)-1])
	return b.String(), nil
}

func (p interp) exprs(yield func(*Expr)) {
	for _, x := range p.xs {
		yield(x)
	}
}

type object struct {
	keys []string
	vals []tnode
}

func (o object) render(vars map[string]any) (any, error) {
	m := make(map[string]any, len(o.keys))
	for i, k := range o.keys {
		v, err := o.vals[i].render(vars)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		m[k] = v
	}
	return m, nil
}

func (o object) exprs(yield func(*Expr)) {
	for _, v := range o.vals {
		v.exprs(yield)
	}
}

type array []tnode

func (a array) render(vars map[string]any) (any, error) {
	out := make([]any, len(a))
	for i, v := range a {
		r, err := v.render(vars)
		if err != nil {
			return nil, fmt.Errorf("[%d]: %w", i, err)
		}
		out[i] = r
	}
	return out, nil
}

func (a array) exprs(yield func(*Expr)) {
	for _, v := range a {
		v.exprs(yield)
	}
}

// toText renders an interpolated value: strings as they are, null as
// nothing, anything else as compact JSON.
func toText(v any) (string, error) {
	switch v := v.(type) {
	case string:
		return v, nil
	case nil:
		return "", nil
	}
	b, err := toJSON(v)
	return string(b), err
}

// toJSON encodes a rendered value.
func toJSON(v any) ([]byte, error) {
	if _, ok := size(v, MaxValue); !ok {
		return nil, fmt.Errorf("the value is larger than %d bytes", MaxValue)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("the value is not JSON: %w", err)
	}
	if buf.Len() > MaxValue {
		return nil, fmt.Errorf("the value is larger than %d bytes", MaxValue)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// Render evaluates the template in env.
func (t *Template) Render(env *Env) (any, error) {
	if t == nil || t.root == nil {
		return nil, nil
	}
	return t.root.render(env.vars())
}

// RenderJSON evaluates the template in env and encodes the result.
func (t *Template) RenderJSON(env *Env) ([]byte, error) {
	v, err := t.Render(env)
	if err != nil {
		return nil, err
	}
	return toJSON(v)
}

// Steps returns the step ids the template references.
func (t *Template) Steps() []string {
	if t == nil || t.root == nil {
		return nil
	}
	var out []string
	t.root.exprs(func(x *Expr) { out = append(out, x.steps...) })
	return uniq(out)
}

// expressions calls yield for every expression of the template.
func (t *Template) expressions(yield func(*Expr)) {
	if t != nil && t.root != nil {
		t.root.exprs(yield)
	}
}

// EvalBool evaluates a condition.
func (x *Expr) EvalBool(env *Env) (bool, error) {
	v, err := x.eval(env.vars())
	if err != nil {
		return false, err
	}
	b, ok := v.(bool)
	if !ok {
		return false, fmt.Errorf("${{ %s }}: a condition must be true or false, not %s", x.Source, typeName(v))
	}
	return b, nil
}

func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case int, int64, float64:
		return "a number"
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	}
	return fmt.Sprintf("%T", v)
}

// splitTemplate splits s into text and expression sources: "a ${{ x }} b"
// is ["a ", " b"] and ["x"]. An expression ends at the first "}}" outside a
// string literal and outside braces opened in it.
func splitTemplate(s string) (text, xs []string, err error) {
	for {
		i := strings.Index(s, "${{")
		if i < 0 {
			return append(text, s), xs, nil
		}
		text = append(text, s[:i])
		rest := s[i+3:]
		end, err := exprEnd(rest)
		if err != nil {
			return nil, nil, err
		}
		xs = append(xs, rest[:end])
		s = rest[end+2:]
	}
}

// exprEnd returns the index of the "}}" that closes an expression.
func exprEnd(s string) (int, error) {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"', '\'', '`':
			j := i + 1
			for ; j < len(s) && s[j] != c; j++ {
				if s[j] == '\\' && c != '`' {
					j++
				}
			}
			if j >= len(s) {
				return 0, errors.New("unterminated string in ${{ }}")
			}
			i = j
		case '{':
			depth++
		case '}':
			if depth == 0 {
				if i+1 < len(s) && s[i+1] == '}' {
					return i, nil
				}
				return 0, errors.New(`unbalanced "}" in ${{ }}`)
			}
			depth--
		}
	}
	return 0, errors.New(`"${{" without a closing "}}"`)
}

// parseString parses a string that may hold expressions.
func parseString(s string) (tnode, error) {
	text, srcs, err := splitTemplate(s)
	if err != nil {
		return nil, err
	}
	if len(srcs) == 0 {
		return literal{s}, nil
	}
	xs := make([]*Expr, len(srcs))
	for i, src := range srcs {
		if xs[i], err = compileExpr(src); err != nil {
			return nil, fmt.Errorf("${{%s}}: %w", src, err)
		}
	}
	if len(xs) == 1 && strings.TrimSpace(text[0]) == "" && strings.TrimSpace(text[1]) == "" {
		return whole{xs[0]}, nil
	}
	return interp{text: text, xs: xs}, nil
}

// parseCondition parses an if: either one ${{ expression }} or a bare
// expression.
func parseCondition(s string) (*Expr, error) {
	n, err := parseString(s)
	if err != nil {
		return nil, err
	}
	switch n := n.(type) {
	case whole:
		return n.x, nil
	case literal:
		return compileExpr(s)
	}
	return nil, errors.New("a condition is one expression, not text with ${{ }} in it")
}

// fromJSON decodes JSON for the expression environment: objects, lists,
// strings, booleans and null as encoding/json does; integers that fit in
// an int as int (so they stay exact and integer arithmetic works), other
// numbers as float64.
func fromJSON(b []byte) (any, error) {
	if len(b) == 0 {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return numbers(v), nil
}

func numbers(v any) any {
	switch v := v.(type) {
	case json.Number:
		if i, err := v.Int64(); err == nil && i >= math.MinInt && i <= math.MaxInt {
			return int(i)
		}
		f, _ := v.Float64()
		return f
	case map[string]any:
		for k, e := range v {
			v[k] = numbers(e)
		}
	case []any:
		for i, e := range v {
			v[i] = numbers(e)
		}
	}
	return v
}
