package workflow

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/builtin"
	"github.com/expr-lang/expr/conf"
)

// The bounds of one evaluation (RATIONALE.md, "Why expr, and how is an
// expression bounded?" and "Why one budget, charged before building?";
// docs/workflows.md, "Bounds").
const (
	// maxBuilt is the evaluation budget: the bytes one rendering of a
	// template (or one if:) may allocate, counted before each allocation
	// with an upper bound of its size. Every operation that builds a value
	// is charged for what it builds — a range, a list or map literal, a
	// string, each builtin's result and its scratch space, an encoding —
	// and every run of a predicate body for the fixed allocations the VM
	// makes in it; a reference to an existing value (a let, an input, #)
	// costs nothing. So a value shared by reference is charged once for
	// each copy that is actually made, and never for the references.
	maxBuilt = 64 << 20
	// maxTicks bounds how many times one evaluation may run the body of a
	// predicate (map, filter, all, ...): nested loops over large outputs
	// stop with an error instead of running for hours.
	maxTicks = 1_000_000
)

// budget is what one rendering has spent: predicate bodies run (ticks) and
// bytes charged (built), against limit (maxBuilt; tests lower it).
type budget struct {
	ticks, built, limit int
}

func newBudget() *budget { return &budget{limit: maxBuilt} }

// room is how many bytes may still be charged.
func (b *budget) room() int { return b.limit - b.built }

// charge adds n bytes for what, or refuses them, before they are allocated.
func (b *budget) charge(what string, n int) error {
	if n < 0 || n > b.limit-b.built {
		return &overBudget{what: what, limit: b.limit}
	}
	b.built += n
	return nil
}

// overBudget is the error of a charge refused; the VM adds the column of
// the operation that asked for it.
type overBudget struct {
	what  string
	limit int
}

func (e *overBudget) Error() string {
	return fmt.Sprintf("expression builds too much data: %s would take it past its budget of %s", e.what, sizeText(e.limit))
}

func sizeText(n int) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

var errBudget = fmt.Errorf("expression ran too long (more than %d loop iterations)", maxTicks)

func budgetOf(params []any) (*budget, error) {
	if len(params) > 0 {
		if b, ok := params[0].(*budget); ok && b != nil {
			return b, nil
		}
	}
	return nil, errors.New("internal: no evaluation budget")
}

// tick counts one run of a predicate body and charges what the VM
// allocates in it (params[1], computed when the expression is compiled).
func tick(params ...any) (any, error) {
	b, err := budgetOf(params)
	if err != nil {
		return nil, err
	}
	if b.ticks++; b.ticks > maxTicks {
		return nil, errBudget
	}
	n, _ := params[1].(int)
	if err := b.charge("a loop", n); err != nil {
		return nil, err
	}
	return nil, nil
}

// huge is a cost no budget admits: the size of something that would not
// fit in memory.
const huge = 1 << 62

// mul is a*b for sizes, huge when it would pass it.
func mul(a, b int) int {
	if a < 0 || b < 0 {
		return huge
	}
	if a != 0 && b > huge/a {
		return huge
	}
	return a * b
}

// Static costs: what running an operation once allocates besides what its
// bounded function charges: the boxing of a number, the arguments of a
// call, a literal's list or map. Outside predicates each node runs at most
// once per evaluation, so their sum is charged when the evaluation starts;
// inside a predicate, the body's sum is charged by each tick.
const (
	boxing   = 16  // a number, a string header, one element of a typed list
	loopCost = 256 // a predicate builtin's scope and accumulator
	tickCost = 16*2 + 16
)

// elemCost is what a predicate builtin allocates for each element besides
// its body: map and filter push every result on the VM's stack (which
// grows by copying) and then into the result list; groupBy and sortBy
// append to their groups and to two lists.
func elemCost(name string) int {
	switch name {
	case "map", "filter":
		return 128
	case "groupBy", "sortBy":
		return 256
	}
	return 0
}

// isPredicateBuiltin reports whether a builtin runs predicate bodies.
func isPredicateBuiltin(n *ast.BuiltinNode) bool {
	for _, a := range n.Arguments {
		if _, ok := a.(*ast.PredicateNode); ok {
			return true
		}
	}
	return predicates[n.Name]
}

// static is the cost of running n once, without the bodies of the
// predicates in it (their ticks charge them). Costs paid once per
// evaluation wherever the node is (the matcher of a constant pattern) are
// added to once.
func static(n ast.Node, once *int) int {
	s := func(m ast.Node) int { return static(m, once) }
	switch n := n.(type) {
	case nil, *ast.NilNode, *ast.IdentifierNode, *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode,
		*ast.StringNode, *ast.BytesNode, *ast.ConstantNode:
		return 0
	case *ast.PointerNode:
		return 2 * boxing // #: an element of a typed list or a [2]any pair
	case *ast.UnaryNode:
		c := s(n.Node)
		if n.Operator == "-" {
			c += boxing
		}
		return c
	case *ast.BinaryNode:
		c := s(n.Left) + s(n.Right)
		switch n.Operator {
		case "+", "-", "*", "/", "%", "**", "^":
			c += boxing
		case "matches":
			if p, ok := n.Right.(*ast.StringNode); ok {
				*once += matchCost(p.Value)
			}
		}
		return c
	case *ast.ChainNode:
		return s(n.Node)
	case *ast.MemberNode:
		return boxing + s(n.Node) + s(n.Property)
	case *ast.SliceNode:
		return 2*boxing + s(n.Node) + s(n.From) + s(n.To)
	case *ast.CallNode:
		c := 16*len(n.Arguments) + boxing
		for _, a := range n.Arguments {
			c += s(a)
		}
		return c
	case *ast.BuiltinNode:
		c := 16*len(n.Arguments) + 2*boxing
		if isPredicateBuiltin(n) {
			c = loopCost
		}
		for _, a := range n.Arguments {
			c += s(a)
		}
		if n.Map != nil {
			static(n.Map, once) // fused into the loop: charged by its tick
		}
		return c
	case *ast.PredicateNode:
		static(n.Node, once) // charged by its tick
		return 0
	case *ast.ConditionalNode:
		return s(n.Cond) + s(n.Exp1) + s(n.Exp2)
	case *ast.VariableDeclaratorNode:
		return s(n.Value) + s(n.Expr)
	case *ast.SequenceNode:
		c := 0
		for _, m := range n.Nodes {
			c += s(m)
		}
		return c
	case *ast.ArrayNode:
		c := listCost(len(n.Nodes))
		for _, m := range n.Nodes {
			c += s(m)
		}
		return c
	case *ast.MapNode:
		c := mapCost(len(n.Pairs))
		for _, m := range n.Pairs {
			c += s(m)
		}
		return c
	case *ast.PairNode:
		return s(n.Key) + s(n.Value)
	}
	return 4 * boxing // a node this version does not know: a generous guess
}

// Compile-time patches. They run in this order: refs (template.go) sees
// the expression as written; growth rewrites every operation that builds a
// value into its bounded function (builtins.go); bound wraps every
// predicate body in a tick that counts it and charges its static cost.

// predicates are the builtins that take a predicate.
var predicates = map[string]bool{
	"all": true, "none": true, "any": true, "one": true, "filter": true, "map": true,
	"find": true, "findIndex": true, "findLast": true, "findLastIndex": true,
	"count": true, "sum": true, "groupBy": true, "sortBy": true, "reduce": true,
}

// folded reports whether r is sum's range in sum(m..n): expr's optimizer
// turns it into arithmetic, so it is never built, and growth leaves it.
func folded(parent ast.Node, r ast.Node) bool {
	rng, ok := r.(*ast.BinaryNode)
	if !ok || rng.Operator != ".." {
		return false
	}
	_, lok := rng.Left.(*ast.IntegerNode)
	_, rok := rng.Right.(*ast.IntegerNode)
	p, ok := parent.(*ast.BuiltinNode)
	return lok && rok && ok && p.Name == "sum" && len(p.Arguments) == 1 && p.Arguments[0] == r
}

// constRange returns the ends of m..n written with integer literals.
func constRange(n ast.Node) (lo, hi *ast.IntegerNode, ok bool) {
	r, isRange := n.(*ast.BinaryNode)
	if !isRange || r.Operator != ".." {
		return nil, nil, false
	}
	lo, lok := r.Left.(*ast.IntegerNode)
	hi, hok := r.Right.(*ast.IntegerNode)
	return lo, hi, lok && hok
}

// growth rewrites what builds values into bounded calls that charge the
// evaluation's budget before they build. It runs after the checker has
// typed the tree, and gives each call the type of the node it replaces
// (registering a typed variant of the function), so the expression is
// typed as written and compiles as it did.
type growth struct {
	keep   map[ast.Node]bool // ranges the optimizer folds (folded)
	config *conf.Config      // where the typed variants go
}

// withConfig lets growth register functions in the compile's config.
func (g *growth) withConfig() expr.Option { return func(c *conf.Config) { g.config = c } }

func budgetIdent() ast.Node { return &ast.IdentifierNode{Value: budgetVar} }

var (
	budgetType = reflect.TypeOf((*budget)(nil))
	anysType   = reflect.TypeOf([]any(nil))
)

// call is a call of the bounded function name, typed as at.
func (g *growth) call(name string, at ast.Node, args ...ast.Node) *ast.CallNode {
	if t := at.Type(); t != nil && t.Kind() != reflect.Interface {
		typed := name + "#" + t.String()
		if _, ok := g.config.Functions[typed]; !ok {
			g.config.Functions[typed] = &builtin.Function{
				Name:  typed,
				Func:  boundedFuncs[name],
				Types: []reflect.Type{reflect.FuncOf([]reflect.Type{budgetType, anysType}, []reflect.Type{t}, true)},
			}
		}
		name = typed
	}
	c := &ast.CallNode{Callee: &ast.IdentifierNode{Value: name}, Arguments: append([]ast.Node{budgetIdent()}, args...)}
	c.SetLocation(at.Location())
	return c
}

// isLiteral reports whether n is a literal scalar.
func isLiteral(n ast.Node) bool {
	switch n.(type) {
	case *ast.NilNode, *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.StringNode:
		return true
	}
	return false
}

func numeric(n ast.Node) bool {
	t := n.Type()
	if t == nil {
		return false
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return true
	}
	return false
}

func (g *growth) Visit(node *ast.Node) {
	switch n := (*node).(type) {
	case *ast.BinaryNode:
		switch n.Operator {
		case "+":
			if !numeric(n.Left) && !numeric(n.Right) {
				ast.Patch(node, g.call("__add", n, n.Left, n.Right))
			}
		case "..":
			if !g.keep[n] {
				ast.Patch(node, g.call("__range", n, n.Left, n.Right))
			}
		case "in":
			switch n.Right.(type) {
			case *ast.ArrayNode, *ast.MapNode:
				return
			}
			// x in m..n is decided without building the range (expr's
			// optimizer does the same for an x it knows is an int).
			if lo, hi, ok := constRange(n.Right); ok {
				ast.Patch(node, g.call("__inrange", n, n.Left, lo, hi))
				return
			}
			ast.Patch(node, g.call("__in", n, n.Left, n.Right))
		case "==", "!=":
			if !isLiteral(n.Left) && !isLiteral(n.Right) {
				name := "__eq"
				if n.Operator == "!=" {
					name = "__ne"
				}
				ast.Patch(node, g.call(name, n, n.Left, n.Right))
			}
		case "matches":
			if _, ok := n.Right.(*ast.StringNode); !ok {
				ast.Patch(node, g.call("__matches", n, n.Left, n.Right))
			}
		}
	case *ast.BuiltinNode:
		if _, ok := boundedBuiltins[n.Name]; ok {
			ast.Patch(node, g.call("__"+n.Name, n, n.Arguments...))
			return
		}
		// sum(list) and count(list) loop without a predicate: charge the
		// numbers their loop boxes, unless the optimizer folds the loop.
		if (n.Name == "sum" || n.Name == "count") && len(n.Arguments) == 1 {
			switch a := n.Arguments[0].(type) {
			case *ast.ArrayNode:
				return
			case *ast.BuiltinNode:
				if a.Name == "map" {
					return
				}
			}
			if g.keep[n.Arguments[0]] {
				return
			}
			n.Arguments[0] = g.call("__iter", n.Arguments[0], n.Arguments[0])
		}
	case *ast.MemberNode:
		// A computed index is checked to be a string or a number: expr's
		// error for any other would print the whole value.
		if !n.Method && !isLiteral(n.Property) {
			n.Property = g.call("__key", n.Property, n.Property)
		}
	case *ast.SliceNode:
		// The same for computed ends: expr's error for slicing a value that
		// is not a list prints the start.
		if n.From != nil && !isLiteral(n.From) {
			n.From = g.call("__key", n.From, n.From)
		}
		if n.To != nil && !isLiteral(n.To) {
			n.To = g.call("__key", n.To, n.To)
		}
	}
}

// bound wraps the body of every predicate in a call that counts it and
// charges its static cost: predicate bodies are the only code that runs
// more than once (expr has no other loops and no recursion). It also keeps
// the root, whose static cost is charged when an evaluation starts.
type bound struct {
	root *ast.Node
}

func (b *bound) Visit(node *ast.Node) {
	b.root = node // the walk is post-order: the root comes last
	n, ok := (*node).(*ast.BuiltinNode)
	if !ok {
		return
	}
	for _, a := range n.Arguments {
		p, ok := a.(*ast.PredicateNode)
		if !ok {
			continue
		}
		var once int
		cost := static(p.Node, &once) + elemCost(n.Name) + tickCost
		t := &ast.CallNode{Callee: &ast.IdentifierNode{Value: tickFunc}, Arguments: []ast.Node{budgetIdent(), &ast.IntegerNode{Value: cost}}}
		t.SetLocation(n.Location())
		p.Node = &ast.SequenceNode{Nodes: []ast.Node{t, p.Node}}
	}
}
