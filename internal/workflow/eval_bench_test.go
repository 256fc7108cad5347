package workflow

import "testing"

// BenchmarkEvalCondition evaluates typical if: conditions: what the
// budget's accounting costs an ordinary workflow (BENCHMARKS.md).
func BenchmarkEvalCondition(b *testing.B) {
	out, _ := fromJSON([]byte(`{"id":"in_1","status":"draft","currency":"eur","amount_due":1200,"lines":[{"amount":500},{"amount":700}]}`))
	env := &Env{
		Inputs: map[string]any{"customer": "cus_42", "force": false, "min": 100},
		Steps:  map[string]StepValue{"invoice": {Status: "succeeded", Output: out}},
	}
	for _, bc := range []struct{ name, src string }{
		{"compare", `steps.invoice.output.status == "draft" && steps.invoice.output.amount_due > inputs.min`},
		{"builtins", `inputs.force or (len(steps.invoice.output.lines) > 0 and upper(steps.invoice.output.currency) == "EUR")`},
		{"loop", `sum(map(steps.invoice.output.lines, .amount)) == steps.invoice.output.amount_due`},
	} {
		x, err := parseCondition(bc.src)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if ok, err := x.EvalBool(env); err != nil || !ok {
					b.Fatal(ok, err)
				}
			}
		})
	}
}

// BenchmarkCompileCondition compiles one: as written, then bounded (twice
// the work of one compile, paid when the workflow is parsed).
func BenchmarkCompileCondition(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := parseCondition(`inputs.force or (len(steps.invoice.output.lines) > 0 and upper(steps.invoice.output.currency) == "EUR")`); err != nil {
			b.Fatal(err)
		}
	}
}
