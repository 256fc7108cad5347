package workflow

import (
	"context"
	"runtime"
	"strings"
	"testing"
)

// allocated runs f and returns the bytes the process allocated meanwhile.
func allocated(f func()) int {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return int(after.TotalAlloc - before.TotalAlloc)
}

// The issue's expression: ten references to one let value, each of which
// concat copied into one list (2.6 GiB), charged only after it was built.
const issueCondition = `len(let x = 1..3000000; concat(x, x, x, x, x, x, x, x, x, x)) > 0`

// TestAttackExpressionMemory (issue 13, item 3): a workflow's owner — and
// with a team lockfile, every member's station — evaluates expressions
// that build large values out of small ones: a let value copied by
// concat, flatten, sort, ...; a builtin run in a loop over a shared
// value; an encoding or an error message that multiplies its input. Every
// such expression stops with an error that names the operation, its
// column and the budget, after allocating no more than the budget.
func TestAttackExpressionMemory(t *testing.T) {
	big := map[string]any{}
	for i := 0; i < 100_000; i++ {
		big["key"+strings.Repeat("k", i%10)+string(rune('a'+i%26))+itoa(i)] = i
	}
	env := &Env{Inputs: map[string]any{"obj": big, "kb": strings.Repeat("k", 1024)}}
	tests := []struct{ name, src, want string }{
		{"the issue's concat", issueCondition, "concat"},
		{"flatten of copies", `len(let x = 1..1000000; flatten([x, x, x, x, x])) > 0`, "flatten"},
		{"sort in a loop", `len(let x = 1..3000000; map(1..10, len(sort(x)))) > 0`, "sort"},
		{"reverse in a loop", `len(let x = 1..3000000; map(1..10, len(reverse(x)))) > 0`, "reverse"},
		{"uniq in a loop", `len(let x = split(repeat("a,", 1000000), ","); map(1..10, len(uniq(x)))) > 0`, "uniq"},
		{"split in a loop", `len(let s = repeat("a", 1000000); map(1..30, len(split(s, "")))) > 0`, "split"},
		{"splitAfter in a loop", `len(let s = repeat("a", 1000000); map(1..30, len(splitAfter(s, "")))) > 0`, "splitAfter"},
		{"keys in a loop", `len(map(1..100, len(keys(inputs.obj)))) > 0`, "keys"},
		{"values in a loop", `len(map(1..100, len(values(inputs.obj)))) > 0`, "values"},
		{"toPairs in a loop", `len(map(1..100, len(toPairs(inputs.obj)))) > 0`, "toPairs"},
		{"fromPairs in a loop", `len(let p = toPairs(inputs.obj); map(1..50, len(fromPairs(p)))) > 0`, "fromPairs"},
		{"upper in a loop", `len(let s = repeat("a", 1000000); map(1..200, len(upper(s)))) > 0`, "upper"},
		{"lower in a loop", `len(let s = repeat("A", 1000000); map(1..200, len(lower(s)))) > 0`, "lower"},
		{"toBase64 in a loop", `len(let s = repeat("a", 1000000); map(1..100, len(toBase64(s)))) > 0`, "toBase64"},
		{"fromBase64 in a loop", `len(let s = toBase64(repeat("a", 1000000)); map(1..200, len(fromBase64(s)))) > 0`, "fromBase64"},
		{"fromJSON in a loop", `len(let j = "[" + join(map(1..100000, "1"), ",") + "]"; map(1..50, len(fromJSON(j)))) > 0`, "fromJSON"},
		{"max in a loop", `len(let x = map(1..100000, [#]); map(1..300, max(x))) > 0`, "max"},
		{"min in a loop", `len(let x = map(1..100000, [#]); map(1..300, min(x))) > 0`, "min"},
		{"mean in a loop", `len(let x = map(1..100000, [#]); map(1..300, mean(x))) > 0`, "mean"},
		{"median of deep nesting", `median(reduce(1..1000, [#acc], 1..10000)) > 0`, "median"},
		{"toJSON escaping", `len(let s = repeat("<", 1000000); join(map(1..60, toJSON(s)), "")) > 0`, "toJSON"},
		{"toJSON indentation", `len(let x = map(1..100000, 1); map(1..10, len(toJSON(` + strings.Repeat("[", 50) + "x" + strings.Repeat("]", 50) + `)))) > 0`, "toJSON"},
		{"string of shared references", `len(string(map(1..40000, inputs.kb))) > 0`, "string"},
		{"in over a range, in a loop", `len(let x = 1..1000000; filter(1..300, -1 in x)) >= 0`, "in"},
		{"== of lists of maps, in a loop", `len(let x = map(1..30000, ({"a": #})); let y = map(1..30000, ({"a": #})); filter(1..100, x == y)) > 0`, "=="},
		{"sum of a range, in a loop", `len(let x = 1..1000000; filter(1..300, sum(x) > 0)) > 0`, "sum or count"},
		{"a pattern computed at run time", `len(let p = repeat("a{1000}", 500); filter(1..5, "x" matches p)) >= 0`, "matches"},
		{"an error printing an index", `len(let l = map(1..1000, inputs.kb); let ll = map(1..1000, l); inputs.none[ll]) > 0`, "index"},
		{"an error printing the start of a slice", `len(let l = map(1..1000, inputs.kb); let ll = map(1..1000, l); inputs.none[ll:1]) > 0`, "index"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x, err := parseCondition(tt.src)
			if err != nil {
				t.Fatal(err)
			}
			runtime.GC()
			var got error
			n := allocated(func() { _, got = x.EvalBool(env) })
			if got == nil {
				t.Fatalf("%s: evaluated, allocating %d MiB; want an error", tt.src, n>>20)
			}
			msg := got.Error()
			if !strings.Contains(msg, tt.want) || !strings.Contains(msg, "(at column ") {
				t.Errorf("%s:\n%.300s\nwant an error naming %q and its column", tt.src, msg, tt.want)
			}
			if strings.Contains(msg, "too much data") && !strings.Contains(msg, "budget of 64 MiB") {
				t.Errorf("%.300s: the error does not name the budget", msg)
			}
			if len(msg) > 2*maxExprLenForTest {
				t.Errorf("the error is %d bytes long", len(msg))
			}
			if n > maxBuilt+overhead && !raceDetector {
				t.Errorf("%s: allocated %d MiB, more than the budget (%d MiB)", tt.src, n>>20, maxBuilt>>20)
			}
		})
	}
}

// maxExprLenForTest bounds the length of an error: the expression and a
// bounded message.
const maxExprLenForTest = 4 << 10

func itoa(i int) string {
	var b []byte
	for {
		b = append([]byte{byte('0' + i%10)}, b...)
		if i /= 10; i == 0 {
			return string(b)
		}
	}
}

// TestAttackLinearFlatten: flatten and median of a deeply nested list
// built cheaply by reduce copied every element once for each level; now
// they build one list, and succeed within the budget.
func TestAttackLinearFlatten(t *testing.T) {
	for _, src := range []string{
		`len(flatten(reduce(1..200, [#acc], 1..100000))) == 100000`,
		`len(uniq(1..100000)) == 100000`,
	} {
		x, err := parseCondition(src)
		if err != nil {
			t.Fatal(err)
		}
		runtime.GC()
		var ok bool
		n := allocated(func() { ok, err = x.EvalBool(&Env{}) })
		if err != nil || !ok {
			t.Errorf("%s = %v, %v", src, ok, err)
		}
		if n > maxBuilt+overhead && !raceDetector {
			t.Errorf("%s: allocated %d MiB", src, n>>20)
		}
	}
}

// TestAttackConstantPattern: a constant pattern is compiled with the
// expression, when the workflow is parsed; a 4 KiB one compiled to 150 MB.
func TestAttackConstantPattern(t *testing.T) {
	for _, src := range []string{
		`inputs.s matches "` + strings.Repeat("a{1000}", 500) + `"`,
		strings.Repeat(`inputs.s matches "[a-z]{1000}" or `, 110) + "false",
	} {
		runtime.GC()
		var err error
		n := allocated(func() { _, err = parseCondition(src) })
		if err == nil || !strings.Contains(err.Error(), "matches: the pattern is too large") {
			t.Errorf("parse: %v, want the pattern refused", err)
		}
		if n > 16<<20 && !raceDetector {
			t.Errorf("parsing allocated %d MiB", n>>20)
		}
	}
	// An ordinary pattern is compiled once, with the expression.
	x, err := parseCondition(`inputs.s matches "^[a-z]{3}-[0-9]+$"`)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := x.EvalBool(&Env{Inputs: map[string]any{"s": "abc-42"}}); !ok || err != nil {
		t.Errorf("match = %v, %v", ok, err)
	}
}

// TestAttackRenderedEscapes: a rendered value's JSON was measured by its
// length, not its escapes (a control character takes six bytes).
func TestAttackRenderedEscapes(t *testing.T) {
	n, err := parseString(`${{ join(map(1..100000, inputs.c), "") }}`)
	if err != nil {
		t.Fatal(err)
	}
	env := &Env{Inputs: map[string]any{"c": strings.Repeat("\x01", 150)}} // 15 MB, 90 MB as JSON
	runtime.GC()
	var got error
	alloc := allocated(func() { _, got = (&Template{root: n}).RenderJSON(env) })
	if got == nil || !strings.Contains(got.Error(), "larger than") {
		t.Errorf("render: %v, want the value refused", got)
	}
	if alloc > maxBuilt+overhead && !raceDetector {
		t.Errorf("rendering allocated %d MiB", alloc>>20)
	}
}

// TestAttackIfInAWorkflow runs the issue's workflow: the step's if: fails
// the run with the error, and the module is never called.
func TestAttackIfInAWorkflow(t *testing.T) {
	h := newHarness(t)
	h.handle("a/a run", echo)
	wf := h.parse("steps:\n  - id: gate\n    uses: a/a run\n    if: " + issueCondition + "\n")
	runtime.GC()
	var err error
	n := allocated(func() { _, err = h.engine().Start(context.Background(), wf, nil) })
	want := "step gate: if: ${{ " + issueCondition + " }}: expression builds too much data: concat would take it past its budget of 64 MiB (at column 25)"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v\nwant %s", err, want)
	}
	if h.mods.count("a/a run") != 0 {
		t.Error("the step ran")
	}
	if n > maxBuilt+4*overhead && !raceDetector {
		t.Errorf("the run allocated %d MiB", n>>20)
	}
}
