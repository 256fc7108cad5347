package workflow

import (
	"strconv"
	"strings"
	"testing"
)

// gen writes an expression from fuzz bytes: each byte picks a production
// of a grammar of expr's syntax (operators, literals, let, predicates and
// every builtin a workflow may call), so that most inputs are expressions
// that compile, and many build large values out of small ones.
type gen struct {
	data []byte
	b    strings.Builder
	vars []string // lets in scope
	pred int      // predicates we are in: # is defined
	acc  int      // reduces we are in: #acc is defined
}

func (g *gen) next() int {
	if len(g.data) == 0 {
		return 0
	}
	c := int(g.data[0])
	g.data = g.data[1:]
	return c
}

func (g *gen) pick(n int) int { return g.next() % n }

func (g *gen) w(s ...string) {
	for _, x := range s {
		g.b.WriteString(x)
	}
}

var (
	genInts    = []string{"0", "1", "2", "3", "7", "10", "100", "255", "1000", "30000", "100000", "1000000", "-1", "2.5"}
	genStrings = []string{`""`, `"a"`, `"ab"`, `","`, `"<&>"`, `"a,b,c"`, `"\u0001é"`, `"x{10}"`, `"^a.*$"`, `"1"`, `"[1,{\"a\":\"b\"}]"`, `"YWJj"`, `"1h"`}
	genInputs  = []string{"inputs.s", "inputs.n", "inputs.f", "inputs.l", "inputs.m", "inputs.none", "inputs.kb", "inputs.nested"}
	genBinary  = []string{"+", "-", "*", "/", "%", "**", "==", "!=", "<", ">=", "and", "or", "??", "in", "not in", "matches", "contains", "startsWith", "endsWith", ".."}
	// the builtins a workflow may call, with how many arguments
	genCalls = []struct {
		name string
		args int
	}{
		{"len", 1}, {"type", 1}, {"abs", 1}, {"ceil", 1}, {"round", 1}, {"int", 1}, {"float", 1}, {"string", 1},
		{"trim", 1}, {"upper", 1}, {"lower", 1}, {"split", 2}, {"splitAfter", 3}, {"replace", 3}, {"repeat", 2},
		{"join", 2}, {"indexOf", 2}, {"hasPrefix", 2}, {"max", 1}, {"min", 2}, {"mean", 1}, {"median", 1},
		{"toJSON", 1}, {"fromJSON", 1}, {"toBase64", 1}, {"fromBase64", 1}, {"duration", 1}, {"first", 1},
		{"last", 1}, {"get", 2}, {"take", 2}, {"keys", 1}, {"values", 1}, {"toPairs", 1}, {"fromPairs", 1},
		{"reverse", 1}, {"uniq", 1}, {"concat", 3}, {"flatten", 1}, {"sort", 1}, {"bitand", 2}, {"sum", 1}, {"count", 1},
	}
	genPredicates = []string{"map", "filter", "all", "any", "none", "one", "find", "findIndex", "findLast", "count", "sum", "groupBy", "sortBy", "reduce"}
)

func (g *gen) expr(depth int) {
	if depth <= 0 || len(g.data) == 0 {
		g.leaf()
		return
	}
	switch g.pick(14) {
	case 0, 1:
		g.leaf()
	case 2:
		g.w("(")
		g.expr(depth - 1)
		g.w(" ", genBinary[g.pick(len(genBinary))], " ")
		g.expr(depth - 1)
		g.w(")")
	case 3:
		g.w([]string{"-", "not "}[g.pick(2)], "(")
		g.expr(depth - 1)
		g.w(")")
	case 4:
		c := genCalls[g.pick(len(genCalls))]
		g.w(c.name, "(")
		for i := 0; i < c.args; i++ {
			if i > 0 {
				g.w(", ")
			}
			g.expr(depth - 1)
		}
		g.w(")")
	case 5, 6:
		name := genPredicates[g.pick(len(genPredicates))]
		g.w(name, "(")
		g.expr(depth - 1)
		g.w(", ")
		g.pred++
		if name == "reduce" {
			g.acc++
		}
		g.expr(depth - 1)
		g.pred--
		if name == "reduce" {
			g.acc--
			g.w(", ")
			g.expr(depth - 1)
		}
		g.w(")")
	case 7:
		g.w("[")
		for i, n := 0, g.pick(4); i < n; i++ {
			if i > 0 {
				g.w(", ")
			}
			g.expr(depth - 1)
		}
		g.w("]")
	case 8:
		g.w("({")
		for i, n := 0, g.pick(3); i < n; i++ {
			if i > 0 {
				g.w(", ")
			}
			g.w(`"k`, strconv.Itoa(i), `": `)
			g.expr(depth - 1)
		}
		g.w("})")
	case 9:
		v := "v" + strconv.Itoa(len(g.vars))
		g.w("(let ", v, " = ")
		g.expr(depth - 1)
		g.w("; ")
		g.vars = append(g.vars, v)
		g.expr(depth - 1)
		g.vars = g.vars[:len(g.vars)-1]
		g.w(")")
	case 10:
		g.expr(depth - 1)
		switch g.pick(4) {
		case 0:
			g.w("[")
			g.expr(depth - 1)
			g.w("]")
		case 1:
			g.w("[")
			g.expr(depth - 1)
			g.w(":")
			g.expr(depth - 1)
			g.w("]")
		case 2:
			g.w("?.k0")
		default:
			g.w(".k1")
		}
	case 11:
		g.w("(")
		g.expr(depth - 1)
		g.w(" ? ")
		g.expr(depth - 1)
		g.w(" : ")
		g.expr(depth - 1)
		g.w(")")
	default:
		g.w("(")
		g.expr(depth - 1)
		g.w(" | ", []string{"upper()", "len()", "toJSON()", "split(\",\")", "reverse()", "string()"}[g.pick(6)], ")")
	}
}

func (g *gen) leaf() {
	switch n := g.pick(6); {
	case n == 0:
		g.w(genInts[g.pick(len(genInts))])
	case n == 1:
		g.w(genStrings[g.pick(len(genStrings))])
	case n == 2 && len(g.vars) > 0:
		g.w(g.vars[g.pick(len(g.vars))])
	case n == 3 && g.pred > 0:
		g.w([]string{"#", "#index", "#", "#acc"}[g.pick(3+min(g.acc, 1))])
	case n == 4:
		g.w([]string{"true", "false", "nil"}[g.pick(3)])
	default:
		g.w(genInputs[g.pick(len(genInputs))])
	}
}

// fuzzBudget is the budget the fuzz target evaluates with: lower than
// maxBuilt, so that an input reaches it in milliseconds.
const fuzzBudget = 4 << 20

// FuzzEvalBudget evaluates generated expressions (or, for an input that
// starts with "=", the rest as an expression) and checks the budget's
// promise: one evaluation allocates no more than it was charged plus the
// fixed overhead of any evaluation, and is never charged past its budget.
// So nothing an expression does escapes the accounting.
func FuzzEvalBudget(f *testing.F) {
	for _, seed := range []string{
		"\x05\x00\x0a\x00\x04\x24\x00\x09",
		"\x04\x23\x09\x05\x00\x00\x0b\x00\x00",
		"\x09\x02\x00\x0a\x00\x0c\x06\x00\x05\x02",
		"\x05\x05\x00\x0b\x05\x05\x00\x0b\x02\x00\x00\x02",
		"\x04\x25\x07\x03\x09\x00\x07\x09\x00\x07",
		"\x0d\x02\x05\x00\x08\x05\x04\x17",
		"\x02\x01\x03\x0f\x00\x0b",
		"\x04\x1d\x04\x0e\x00\x0a",
		// "=" and an expression: taken as written (and mutated as bytes)
		"=" + issueCondition,
		"=len(flatten(reduce(1..50, [#acc], map(1..100, [#, string(#)]))))",
		`=len(toJSON(map(1..1000, ({"a": [#, inputs.s]}))))`,
		`=len(join(map(split(repeat(inputs.s, 100), ","), upper(#) + toBase64(#)), ";"))`,
		`=let m = fromPairs(map(1..300, [string(#), #])); len(keys(m)) + len(uniq(values(m)))`,
		`=filter(inputs.nested, #.k1 == [ "x", #.k0, 1.5 ] or string(#.k0) matches "^[0-9]+$")`,
	} {
		f.Add([]byte(seed))
	}
	env := fuzzEnv()
	f.Fuzz(func(t *testing.T, data []byte) {
		var src string
		if len(data) > 0 && data[0] == '=' {
			src = "${{ " + string(data[1:]) + " }}"
		} else {
			g := &gen{data: data}
			g.expr(6)
			src = "${{ " + g.b.String() + " }}"
		}
		if _, err := parseString(src); err != nil {
			if strings.Contains(err.Error(), "internal:") {
				t.Errorf("%s: %v", src, err) // accepted as written, but not bounded
			}
			return // not an expression the station accepts
		}
		charged, alloc, err := measured(t, src, env, fuzzBudget, true)
		if alloc > charged+overhead {
			// Once more, in case something else in the process allocated.
			charged, alloc, err = measured(t, src, env, fuzzBudget, true)
		}
		if alloc > charged+overhead && !raceDetector {
			t.Errorf("%s: allocated %d bytes, charged %d (%v)", src, alloc, charged, err)
		}
		if charged > fuzzBudget {
			t.Errorf("%s: charged %d bytes, past the budget of %d", src, charged, fuzzBudget)
		}
	})
}
