package workflow

import (
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/builtin"
	"github.com/expr-lang/expr/vm"
)

// overhead is what one evaluation allocates whatever it does: the VM, its
// stack and argument buffer, an error's message.
const overhead = 64 << 10

// measured renders src in env with a fresh budget and returns what the
// budget was charged and what the evaluation allocated.
func measured(t testing.TB, src string, env *Env, limit int, cold bool) (charged, alloc int, err error) {
	t.Helper()
	n, err := parseString(src)
	if err != nil {
		t.Fatalf("parse %q: %v", src, err)
	}
	vars := env.vars()
	b := &budget{limit: limit}
	var before, after runtime.MemStats
	if cold {
		runtime.GC() // and empty the pools (a second GC drops their victims)
		runtime.GC()
	}
	runtime.ReadMemStats(&before)
	_, err = n.render(vars, b)
	runtime.ReadMemStats(&after)
	return b.built, int(after.TotalAlloc - before.TotalAlloc), err
}

// fuzzEnv holds a little of every kind of value (FuzzEvalBudget,
// TestBoundedBehavesAsExpr).
func fuzzEnv() *Env {
	nested := []any{}
	for i := 0; i < 50; i++ {
		nested = append(nested, map[string]any{"k0": i, "k1": []any{"x", i, 1.5}, "k2": nil})
	}
	return &Env{Inputs: map[string]any{
		"s": "a,b<é\x01", "n": 3, "f": 0.5, "l": []any{1, "two", 3.0, nil, []any{4}},
		"m":  map[string]any{"k0": "v", "k1": []any{1, 2}, "k2": map[string]any{"a": 1}},
		"kb": strings.Repeat("k", 1024), "nested": nested,
	}}
}

func calibrationEnv() *Env {
	big := make([]any, 20000)
	for i := range big {
		big[i] = map[string]any{"amount": i, "id": "in_" + strings.Repeat("x", i%7), "tags": []any{"a", "b"}}
	}
	nums := make([]any, 20000)
	for i := range nums {
		nums[i] = i * 1000
	}
	obj := map[string]any{}
	for i := 0; i < 5000; i++ {
		obj["k"+strings.Repeat("y", i%5)+string(rune('a'+i%26))+strings.Repeat("z", i/26)] = i
	}
	return &Env{Inputs: map[string]any{
		"big": big, "nums": nums, "obj": obj,
		"kb": strings.Repeat("k", 1024), "html": strings.Repeat("<&\x01é\u2028", 2000),
		"csv": strings.Repeat("a,bb,ccc,", 5000), "json": `[` + strings.Repeat(`{"a":[1,2,{}],"b":"x"},`, 3000) + `1]`,
	}}
}

// calibration exercises every bounded operation on values large enough
// that what it allocates dwarfs the fixed overhead.
var calibration = []string{
	`${{ len(let x = 1..30000; concat(x, x, x)) }}`,
	`${{ len(concat(inputs.big, inputs.nums)) }}`,
	`${{ len(flatten([1..10000, [1..10000, [inputs.nums]]])) }}`,
	`${{ len(flatten(map(1..5000, [#, [#, [#]]]))) }}`,
	`${{ len(sort(1..50000)) }}`,
	`${{ len(sort(inputs.nums, "desc")) }}`,
	`${{ len(reverse(1..50000)) }}`,
	`${{ len(uniq(map(1..50000, # % 100))) }}`,
	`${{ len(uniq(inputs.nums)) }}`,
	`${{ len(uniq(map(1..3000, [# % 10]))) }}`,
	`${{ len(split(inputs.csv, ",")) }}`,
	`${{ len(split(inputs.csv, "")) }}`,
	`${{ len(splitAfter(inputs.csv, ",", 100000)) }}`,
	`${{ len(keys(inputs.obj)) }}`,
	`${{ len(values(inputs.obj)) }}`,
	`${{ len(toPairs(inputs.obj)) }}`,
	`${{ len(fromPairs(toPairs(inputs.obj))) }}`,
	`${{ len(toJSON(inputs.big)) }}`,
	`${{ len(toJSON(inputs.obj)) }}`,
	`${{ len(toJSON(inputs.html)) }}`,
	`${{ len(toJSON([[[[[[[[[[inputs.nums]]]]]]]]]])) }}`,
	`${{ len(string(inputs.big)) }}`,
	`${{ len(string(inputs.obj)) }}`,
	`${{ len(string(inputs.kb)) }}`,
	`${{ len(fromJSON(inputs.json)) }}`,
	`${{ len(fromJSON("[" + join(map(1..20000, "1"), ",") + "]")) }}`,
	`${{ len(fromJSON("[" + join(map(1..20000, "{}"), ",") + "]")) }}`,
	`${{ len(fromJSON("{" + join(map(1..20000, toJSON(string(#)) + ":1"), ",") + "}")) }}`,
	`${{ len(toBase64(inputs.csv)) }}`,
	`${{ len(fromBase64(toBase64(inputs.csv))) }}`,
	`${{ len(upper(inputs.csv)) }}`,
	`${{ len(lower(upper(inputs.html))) }}`,
	`${{ len(replace(inputs.csv, ",", ";;;")) }}`,
	`${{ len(replace(inputs.kb, "", "-")) }}`,
	`${{ len(repeat(inputs.kb, 1000)) }}`,
	`${{ len(join(map(1..20000, inputs.kb), ",")) }}`,
	`${{ len(join(split(inputs.csv, ","), ",")) }}`,
	`${{ len(reduce(1..20, #acc + #acc, "ab")) }}`,
	`${{ max(inputs.nums) + min(map(1..1000, [#, [#]])) + mean(inputs.nums) }}`,
	`${{ median(map(1..3000, [#, [#, [#]]])) }}`,
	`${{ sum(inputs.nums) + sum(1..30000) + count(map(1..20000, # > 5)) }}`,
	`${{ sum(map(1..20000, # * 1000)) }}`,
	`${{ len(map(1..20000, #)) }}`,
	`${{ len(map(inputs.big, #)) }}`,
	`${{ len(map(inputs.big, #.amount * 2.5)) }}`,
	`${{ len(filter(inputs.big, #.amount > 600)) }}`,
	`${{ all(inputs.big, #.amount >= 0) }}`,
	`${{ len(map(inputs.big, [#, #.id])) }}`,
	`${{ len(map(inputs.big, ({"a": #, "b": #.amount, "c": #index}))) }}`,
	`${{ len(groupBy(inputs.big, #.amount % 10)) }}`,
	`${{ len(groupBy(inputs.big, #.amount)) }}`,
	`${{ len(sortBy(inputs.big, -#.amount)) }}`,
	`${{ reduce(inputs.big, #acc + #.amount, 0) }}`,
	`${{ len(filter(1..20000, # in inputs.nums)) }}`,
	`${{ len(filter(1..2000, # * 1000 in 1..20000)) }}`,
	`${{ len(filter(1..50, let s = split(inputs.csv, ","); "bb" in s)) }}`,
	`${{ inputs.big == map(inputs.big, #) }}`,
	`${{ 1..3000 == map(1..3000, #) }}`,
	`${{ len(filter(inputs.big, #.tags == ["a", "b"])) }}`,
	`${{ len(filter(1..2000, inputs.csv matches "^(a,bb,ccc,)*$")) }}`,
	`${{ len(filter(1..200, "abc" matches "^[a-z]{" + string(# % 50 + 1) + "}$")) }}`,
	`${{ len(map(1..20000, inputs.obj["kaa"])) }}`,
	`${{ len(map(1..20000, inputs.nums[#:# + 2])) }}`,
	`${{ len(map(1..20000, inputs.kb[#:])) }}`,
	`${{ int(repeat("1", 10000)) }}`,
	`${{ float(repeat("x", 10000)) }}`,
	`${{ duration(repeat("x", 10000)) }}`,
	`${{ inputs.none[repeat("x", 10000)] }}`,
	`a ${{ inputs.big }} b ${{ inputs.obj }} c ${{ inputs.html }}`,
}

// TestChargesCoverAllocations: for every bounded operation, on large
// values, an evaluation allocates no more than it is charged plus a small
// fixed overhead. The charges are the budget's only measure, so this is
// what makes the budget a bound on memory.
func TestChargesCoverAllocations(t *testing.T) {
	if raceDetector {
		t.Skip("the race detector changes what is allocated")
	}
	env := calibrationEnv()
	for _, src := range calibration {
		charged, alloc, err := measured(t, src, env, maxBuilt, true)
		if err != nil && !strings.Contains(src, "repeat(\"") {
			t.Errorf("%s: %v", src, err)
		}
		if alloc > charged+overhead {
			t.Errorf("%.70s: allocated %d bytes, charged %d", src, alloc, charged)
		}
		t.Logf("%8.2f %10d %10d %.80s", float64(charged)/float64(max(alloc, 1)), charged, alloc, src)
	}
}

// TestEveryBuiltinIsClassified: each of expr's builtins is bounded (called
// through a charged function), runs predicates (charged by its ticks),
// allocates no more than its call's static cost, or is disabled. A new
// builtin in a new version of expr fails here until it is classified.
func TestEveryBuiltinIsClassified(t *testing.T) {
	classes := map[string]string{}
	add := func(class string, names ...string) {
		for _, n := range names {
			if c, ok := classes[n]; ok {
				t.Errorf("%s is both %s and %s", n, c, class)
			}
			classes[n] = class
		}
	}
	for n := range boundedBuiltins {
		add("bounded", n)
	}
	for n := range predicates {
		add("a predicate", n)
	}
	add("unbounded", unboundedBuiltins...)
	add("disabled", disabled...)
	for _, n := range builtin.Names {
		if _, ok := classes[n]; !ok {
			t.Errorf("expr's builtin %s is not classified", n)
		}
		delete(classes, n)
	}
	for n, c := range classes {
		t.Errorf("%s (%s) is not one of expr's builtins", n, c)
	}
}

// TestBoundedBehavesAsExpr: the bounded builtins and operators return what
// expr's own return, and fail where they fail, on ordinary values.
func TestBoundedBehavesAsExpr(t *testing.T) {
	env := fuzzEnv()
	for _, src := range []string{
		`concat([1, 2], 3..4, ["a"])`, `concat([], [])`, `concat(inputs.l)`, `concat(1)`,
		`flatten([1, [2, [3, [4]]], "a", [[]], inputs.l])`, `flatten([])`, `flatten(1)`,
		`uniq([1, 1.0, "1", true, true, nil, nil, [1], [1], {"a": 1}, {"a": 1}, 2, 2.5, 2.5])`,
		`uniq(1..5)`, `uniq([])`, `uniq(split("a,b,a", ","))`, `uniq([9007199254740993, 9007199254740992.0, 9007199254740992])`,
		`sort([3, 1, 2])`, `sort(["b", "a"], "desc")`, `sort(3..1)`, `reverse(1..3)`, `reverse(inputs.l)`,
		`split("a,b,c", ",")`, `split("abc", "")`, `split("a,b,c", ",", 2)`, `split("a,b", ",", 0)`, `splitAfter("a,b", ",")`,
		`splitAfter("abc", "", 2)`, `replace("aaa", "a", "bb")`, `replace("abc", "", "-")`, `replace("aaa", "a", "b", 2)`,
		`repeat("ab", 3)`, `repeat("a", 0)`, `repeat("a", -1)`, `join(["a", "b"], "-")`, `join(split("a,b", ","))`, `join([1])`,
		`toJSON({"a": [1, 2.5, "<x>", nil, true]})`, `toJSON(inputs.m)`, `toJSON(1..3)`, `fromJSON("[1, {\"a\": \"b\"}, null]")`, `fromJSON("x")`,
		`string(inputs.m)`, `string(1.5)`, `string(nil)`, `string(inputs.l)`, `toBase64("abc")`, `fromBase64("YWJj")`, `fromBase64("!")`,
		`upper("abcé")`, `lower("ABCÉ")`, `upper(1)`,
		`sort(keys(inputs.m))`, `len(values(inputs.m))`, `len(toPairs(inputs.m))`, `fromPairs([["a", 1], ["b", [2]]])`, `fromPairs([1])`,
		`max(inputs.l[0], 5, [7, [9]])`, `min([3, [1]])`, `mean([1, [2, 3]])`, `median([3, [1, [2]]])`, `median([])`, `max("a")`,
		`int("12")`, `int(2.7)`, `float("2.5")`, `int("x")`, `duration("1h")`,
		`"a" + "b"`, `1 + 2.5`, `inputs.n + 1`, `"a" + 1`, `1..3`, `3..1`, `inputs.n..5`,
		`2 in 1..3`, `2.0 in 1..3`, `2.5 in 1..3`, `"2" in 1..3`, `inputs.n in 1..5`, `inputs.f in 0..1`, `nil in 1..2`, `-1 in 0..-5`,
		`2 in inputs.l[4]`, `"two" in inputs.l`, `"k0" in inputs.m`, `1 in inputs.n..9`,
		`inputs.l == inputs.l`, `[1, 2] == [1, 2]`, `inputs.m == {"k0": "v"}`, `1..2 == [1, 2]`, `inputs.l != [1]`,
		`inputs.s matches "^a"`, `inputs.s matches inputs.s`, `nil matches inputs.s`, `inputs.s matches "("`,
		`sum(inputs.l[4])`, `sum(1..10)`, `sum([1, 2.5])`, `count([true, false, true])`, `sum(map(1..3, # * 2))`,
		`inputs.m["k" + "0"]`, `inputs.l[inputs.n - 3]`, `inputs.l[1:3]`, `inputs.l[inputs.n - 2:]`, `inputs.s[1:inputs.n]`,
		`inputs.m[inputs.l]`, `inputs.none?.[inputs.s]`,
	} {
		ours, err := compileExpr(src)
		plain, perr := expr.Compile(src, expr.Env(compileEnv), expr.DisableBuiltin("now"))
		if (err != nil) != (perr != nil) {
			t.Errorf("%s: compiles: %v; expr: %v", src, err, perr)
		}
		if err != nil || perr != nil {
			continue // refused when the workflow is parsed, as by expr
		}
		want, wantErr := vm.Run(plain, env.vars())
		got, gotErr := ours.eval(env.vars(), newBudget())
		if (gotErr != nil) != (wantErr != nil) || !reflect.DeepEqual(got, want) {
			t.Errorf("%s = %#v, %v; expr: %#v, %v", src, got, gotErr, want, wantErr)
		}
	}
}
