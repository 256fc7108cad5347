package workflow

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/conf"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/parser"
	"github.com/expr-lang/expr/vm"

	"github.com/station-dev/station/sdk/abi"
)

// Bounds on expressions (see RATIONALE.md, "Why expr, and how
// is an expression bounded?"; the evaluation budget is in bounds.go).
const (
	// MaxExprLen bounds the source of one expression, in bytes.
	MaxExprLen = 4 << 10
	// maxNodes bounds the syntax tree of one expression.
	maxNodes = 1000
	// memoryBudget is expr's own allocation budget per evaluation, in its
	// units (elements): a backstop behind maxBuilt, which is reached first.
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

// compileEnv is the shape of the environment expressions are checked
// against: unknown names are compile errors.
var compileEnv = map[string]any{
	"inputs":  map[string]any{},
	"steps":   map[string]any{},
	"secrets": map[string]any{},
	budgetVar: (*budget)(nil),
}

// Expr is one compiled expression.
type Expr struct {
	// Source is the expression as written (inside ${{ }}).
	Source string
	prog   *vm.Program
	// static is charged when an evaluation starts: what the expression's
	// operations outside predicates allocate besides what they charge
	// themselves (bounds.go).
	static int
	// steps are the step ids it references (steps.<id>), inputs the input
	// names (inputs.<name>), secrets the stored secrets (secrets.<NAME>).
	steps   []string
	inputs  []string
	secrets []string
	// bare is the input's name when the expression is only inputs.<name>;
	// dynamicInputs marks an expression that reads inputs other than as
	// inputs.<name> (inputs[k], the whole inputs object).
	bare          string
	dynamicInputs bool
}

// refs collects what an expression references, and refuses what the
// station reserves and dynamic references to steps.
type refs struct {
	steps, inputs, secrets []string
	stepsIdents            int // identifiers "steps"
	stepsNamed             int // ... used as steps.<id>
	inputsIdents           int // identifiers "inputs"
	inputsNamed            int // ... used as inputs.<name>
	secretsIdents          int // identifiers "secrets"
	secretsNamed           int // ... used as secrets.<NAME>
	errs                   []string
}

func (r *refs) Visit(node *ast.Node) {
	switch n := (*node).(type) {
	case *ast.IdentifierNode:
		if strings.HasPrefix(n.Value, "__") {
			r.errs = append(r.errs, fmt.Sprintf("names starting with __ are reserved (%s)", n.Value))
		}
		switch n.Value {
		case "steps":
			r.stepsIdents++
		case "secrets":
			r.secretsIdents++
		case "inputs":
			r.inputsIdents++
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
			r.inputsNamed++
			r.inputs = append(r.inputs, prop.Value)
		case id.Value == "secrets" && isStr:
			r.secretsNamed++
			if msg := abi.CheckSecretName(prop.Value); msg != "" {
				r.errs = append(r.errs, fmt.Sprintf("secrets.%s: %s", prop.Value, msg))
			}
			r.secrets = append(r.secrets, prop.Value)
		}
	}
}

// compileExpr compiles one expression twice: as written, so that its
// errors are those of the expression the author wrote (types included,
// and the optimizer's), and bounded, the program that runs.
func compileExpr(src string) (*Expr, error) {
	if strings.TrimSpace(src) == "" {
		return nil, errors.New("empty expression")
	}
	if len(src) > MaxExprLen {
		return nil, fmt.Errorf("expression is longer than %d bytes", MaxExprLen)
	}
	if err := checkPatterns(src); err != nil {
		return nil, err
	}
	base := []expr.Option{expr.Env(compileEnv), expr.MaxNodes(maxNodes)}
	for _, name := range disabled {
		base = append(base, expr.DisableBuiltin(name))
	}
	r := &refs{}
	_, err := expr.Compile(src, append(base, expr.Patch(r))...)
	if len(r.errs) > 0 {
		return nil, errors.New(r.errs[0])
	}
	if err != nil {
		return nil, exprError(err)
	}
	if r.stepsIdents > r.stepsNamed {
		return nil, errors.New("steps must be followed by a step id, as in steps.invoice.output")
	}
	if r.secretsIdents > r.secretsNamed {
		return nil, errors.New("secrets must be followed by a secret's name, as in secrets.STRIPE_KEY")
	}
	keep := &foldable{keep: map[ast.Node]bool{}}
	g := &growth{keep: keep.keep}
	b := &bound{}
	opts := append(base,
		g.withConfig(),
		expr.Patch(keep),
		expr.Patch(g),
		expr.Patch(b),
		boundedOption,
	)
	prog, err := expr.Compile(src, opts...)
	if err != nil {
		return nil, fmt.Errorf("internal: the bounded expression does not compile: %w", exprError(err))
	}
	var once, cost int
	if b.root != nil {
		cost = static(*b.root, &once) + once
	}
	return &Expr{Source: strings.TrimSpace(src), prog: prog, static: cost, steps: uniq(r.steps), inputs: uniq(r.inputs), secrets: uniq(r.secrets),
		bare: bareInput(src), dynamicInputs: r.inputsIdents > r.inputsNamed}, nil
}

// bareInput returns name when src is only inputs.<name> (or
// inputs["<name>"]), else "".
func bareInput(src string) string {
	tree, err := parser.ParseWithConfig(src, &conf.Config{MaxNodes: maxNodes})
	if err != nil {
		return ""
	}
	m, ok := tree.Node.(*ast.MemberNode)
	if !ok || m.Optional || m.Method {
		return ""
	}
	id, ok := m.Node.(*ast.IdentifierNode)
	prop, isStr := m.Property.(*ast.StringNode)
	if !ok || !isStr || id.Value != "inputs" {
		return ""
	}
	return prop.Value
}

// checkPatterns bounds the constant patterns of src (x matches "..."),
// which expr compiles with the expression (its checker, once for every
// patch, and its compiler): before expr sees them, all of them together.
func checkPatterns(src string) error {
	tree, err := parser.ParseWithConfig(src, &conf.Config{MaxNodes: maxNodes})
	if err != nil {
		return nil // expr.Compile reports it
	}
	var p patterns
	ast.Walk(&tree.Node, &p)
	if p.err == nil && p.cost > maxPatternCost {
		p.err = fmt.Errorf("matches: the pattern is too large (compiling it would take more than %s)", sizeText(maxPatternCost))
	}
	return p.err
}

type patterns struct {
	cost int
	err  error
}

func (p *patterns) Visit(node *ast.Node) {
	n, ok := (*node).(*ast.BinaryNode)
	if !ok || n.Operator != "matches" {
		return
	}
	if s, ok := n.Right.(*ast.StringNode); ok {
		c, err := patternCost(s.Value)
		if err != nil && p.err == nil {
			p.err = fmt.Errorf("matches: %w", err)
		}
		p.cost += c
	}
}

// foldable finds the ranges that are never built: sum's in sum(m..n),
// which expr's optimizer folds, and the right side of x in m..n, which
// growth decides without the range (bounds.go).
type foldable struct{ keep map[ast.Node]bool }

func (f *foldable) Visit(node *ast.Node) {
	switch n := (*node).(type) {
	case *ast.BuiltinNode:
		if len(n.Arguments) == 1 && folded(n, n.Arguments[0]) {
			f.keep[n.Arguments[0]] = true
		}
	case *ast.BinaryNode:
		if _, _, ok := constRange(n.Right); ok && n.Operator == "in" {
			f.keep[n.Right] = true
		}
	}
}

// exprError keeps the message of an expr error and its column, without the
// multi-line snippet.
func exprError(err error) error { return exprErrorAt(err, false) }

// exprErrorAt is exprError; always names the column when the error is a
// run-time one, which always has a position (column 1 included).
func exprErrorAt(err error, run bool) error {
	var fe *file.Error
	if errors.As(err, &fe) {
		msg := fe.Message
		if fe.Prev != nil && !strings.Contains(msg, fe.Prev.Error()) {
			msg += ": " + fe.Prev.Error()
		}
		if run || fe.Column > 0 || fe.Line > 1 {
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

// Env is what expressions see: the run's inputs, the steps that have
// finished, and the stored secrets the workflow references.
type Env struct {
	Inputs map[string]any
	Steps  map[string]StepValue
	// Secrets are the names secrets.NAME may take; each evaluates to the
	// secret's placeholder (abi.SecretPlaceholder), never to its value.
	Secrets []string
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
	secrets := make(map[string]any, len(e.Secrets))
	for _, name := range e.Secrets {
		secrets[name] = abi.SecretPlaceholder(name)
	}
	return map[string]any{"inputs": inputs, "steps": steps, "secrets": secrets}
}

// maxMessage bounds the message of an expression's error: a message of
// expr's may quote a value, and each caller copies it again.
const maxMessage = 1 << 10

// evalError is an expression's error: its source and a bounded message.
type evalError struct {
	msg string
	err error
}

func (e *evalError) Error() string { return e.msg }
func (e *evalError) Unwrap() error { return e.err }

// eval runs the expression in vars, charging b.
func (x *Expr) eval(vars map[string]any, b *budget) (any, error) {
	vars[budgetVar] = b
	if err := b.charge("the expression", x.static); err != nil {
		return nil, x.fail(err)
	}
	m := vm.VM{MemoryBudget: memoryBudget}
	v, err := m.Run(x.prog, vars)
	if err != nil {
		return nil, x.fail(exprErrorAt(err, true))
	}
	return v, nil
}

func (x *Expr) fail(err error) error {
	msg := err.Error()
	if len(msg) > maxMessage {
		cut := maxMessage
		for cut > 0 && !utf8.RuneStart(msg[cut]) {
			cut--
		}
		msg = msg[:cut] + "..."
	}
	return &evalError{msg: fmt.Sprintf("${{ %s }}: %s", x.Source, msg), err: err}
}

// Template is a value whose strings may hold ${{ expression }}s: a field
// that is exactly one expression takes the expression's value; a string
// with expressions and text is interpolated; mappings and lists are
// rendered element by element.
type Template struct {
	root tnode
}

// A rendering evaluates every expression of the template against one
// budget, which also pays for the text, objects and lists the template
// itself builds around them.
type tnode interface {
	render(vars map[string]any, b *budget) (any, error)
	exprs(yield func(*Expr))
}

type literal struct{ v any }

func (l literal) render(map[string]any, *budget) (any, error) { return l.v, nil }
func (literal) exprs(func(*Expr))                             {}

type whole struct{ x *Expr }

func (w whole) render(vars map[string]any, b *budget) (any, error) { return w.x.eval(vars, b) }
func (w whole) exprs(yield func(*Expr))                            { yield(w.x) }

type interp struct {
	text []string // len(text) == len(xs)+1
	xs   []*Expr
}

func (p interp) render(vars map[string]any, bud *budget) (any, error) {
	var b strings.Builder
	for i, x := range p.xs {
		b.WriteString(p.text[i])
		v, err := x.eval(vars, bud)
		if err != nil {
			return nil, err
		}
		s, err := toText(v, bud)
		if err != nil {
			return nil, fmt.Errorf("${{ %s }}: %w", x.Source, err)
		}
		if b.Len()+len(s) > MaxValue {
			return nil, fmt.Errorf("the string is longer than %d bytes", MaxValue)
		}
		// The builder grows by appending: about six times its final size.
		if err := bud.charge("the template", obj(6*(len(p.text[i])+len(s)))); err != nil {
			return nil, fmt.Errorf("${{ %s }}: %w", x.Source, err)
		}
		b.WriteString(s)
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

func (o object) render(vars map[string]any, b *budget) (any, error) {
	if err := b.charge("the template", mapCost(len(o.keys))); err != nil {
		return nil, err
	}
	m := make(map[string]any, len(o.keys))
	for i, k := range o.keys {
		v, err := o.vals[i].render(vars, b)
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

func (a array) render(vars map[string]any, b *budget) (any, error) {
	if err := b.charge("the template", listCost(len(a))); err != nil {
		return nil, err
	}
	out := make([]any, len(a))
	for i, v := range a {
		r, err := v.render(vars, b)
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
// nothing, anything else as compact JSON, charged to b.
func toText(v any, b *budget) (string, error) {
	switch v := v.(type) {
	case string:
		return v, nil
	case nil:
		return "", nil
	}
	o := output{limit: MaxValue}
	if !o.measure(v) {
		return "", valueError(&o)
	}
	// An encoder's buffer and the one it writes to, both doubling, the
	// string; sorted keys.
	if err := b.charge("the template", 2*obj(4*o.n)+strCost(o.n)+96*o.keys+256*o.maps); err != nil {
		return "", err
	}
	j, err := toJSON(v)
	return string(j), err
}

func valueError(o *output) error {
	if o.deep {
		return fmt.Errorf("the value is nested more than %d deep", maxDepth)
	}
	return fmt.Errorf("the value is larger than %d bytes", MaxValue)
}

// toJSON encodes a rendered value, at most MaxValue bytes: measured first,
// so a larger one is refused before it is encoded.
func toJSON(v any) ([]byte, error) {
	if o := (output{limit: MaxValue}); !o.measure(v) {
		return nil, valueError(&o)
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
	return t.root.render(env.vars(), newBudget())
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
	v, err := x.eval(env.vars(), newBudget())
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
