package workflow

import (
	"strings"
	"testing"
)

func testEnv() *Env {
	out, _ := fromJSON([]byte(`{"id":"in_1","amount_due":1200,"lines":[{"amount":500},{"amount":700}],"big":12345678901234567,"ratio":0.5}`))
	return &Env{
		Inputs: map[string]any{"customer": "cus_42", "count": 3, "tags": []any{"a", "b"}},
		Steps: map[string]StepValue{
			"invoice": {Status: "succeeded", Output: out},
			"flaky":   {Status: "failed", Error: "boom"},
			"never":   {Status: "skipped"},
		},
	}
}

func TestTemplateRender(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"literal", `hello`, `"hello"`},
		{"whole keeps the type", `${{ steps.invoice.output.amount_due }}`, `1200`},
		{"whole with spaces around", `  ${{ inputs.count + 1 }}  `, `4`},
		{"whole object", `${{ steps.invoice.output.lines[1] }}`, `{"amount":700}`},
		{"interpolation", `Invoice ${{ steps.invoice.output.id }} for ${{ inputs.customer }}`, `"Invoice in_1 for cus_42"`},
		{"interpolated object is JSON", `lines: ${{ steps.invoice.output.lines }}`, `"lines: [{\"amount\":500},{\"amount\":700}]"`},
		{"interpolated null is empty", `[${{ steps.never.output }}]`, `"[]"`},
		{"big integers stay exact", `${{ steps.invoice.output.big }}`, `12345678901234567`},
		{"floats", `${{ steps.invoice.output.ratio * 2 }}`, `1`},
		{"status and error", `${{ steps.flaky.status }}: ${{ steps.flaky.error }}`, `"failed: boom"`},
		{"builtins", `${{ sum(map(steps.invoice.output.lines, .amount)) }}`, `1200`},
		{"filter and len", `${{ len(filter(steps.invoice.output.lines, .amount > 600)) }}`, `1`},
		{"join", `${{ join(inputs.tags, ",") }}`, `"a,b"`},
		{"optional chaining", `${{ steps.never.output?.id ?? "none" }}`, `"none"`},
		{"conditional", `${{ inputs.count > 2 ? "many" : "few" }}`, `"many"`},
		{"map literal with braces", `${{ {"a": {"b": 1}} }}`, `{"a":{"b":1}}`},
		{"string with }} inside", `${{ "}}" + inputs.customer }}`, `"}}cus_42"`},
		{"escape ${{ with an expression", `${{ "${{" }} not an expression }}`, `"${{ not an expression }}"`},
		{"toJSON", `${{ toJSON(inputs.tags) }}`, `"[\n  \"a\",\n  \"b\"\n]"`},
		{"upper and no HTML escaping", `${{ upper("<a&b>") }}`, `"<A&B>"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, err := parseString(tt.in)
			if err != nil {
				t.Fatalf("parse %q: %v", tt.in, err)
			}
			got, err := (&Template{root: n}).RenderJSON(testEnv())
			if err != nil {
				t.Fatalf("render %q: %v", tt.in, err)
			}
			if string(got) != tt.want {
				t.Errorf("render %q = %s, want %s", tt.in, got, tt.want)
			}
		})
	}
}

func TestTemplateErrors(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"unterminated", `${{ inputs.customer `, `"${{" without a closing "}}"`},
		{"unterminated string", `${{ "abc }}`, "unterminated string"},
		{"empty", `${{ }}`, "empty expression"},
		{"unknown name", `${{ env.HOME }}`, "unknown name env"},
		{"syntax", `${{ inputs. }}`, "column"},
		{"reserved name", `${{ __budget }}`, "reserved"},
		{"reserved function", `${{ __tick(__budget) }}`, "reserved"},
		{"dynamic step reference", `${{ steps[inputs.customer].output }}`, "steps must be followed by a step id"},
		{"whole steps", `${{ toJSON(steps) }}`, "steps must be followed by a step id"},
		{"now is disabled", `${{ now() }}`, "unknown name now"},
		{"date is disabled", `${{ date("2024-01-01") }}`, "unknown name date"},
		{"timezone is disabled", `${{ timezone("Europe/Paris") }}`, "unknown name timezone"},
		{"too long", "${{ " + strings.Repeat("1+", MaxExprLen) + "1 }}", "longer than"},
		{"too many nodes", "${{ " + strings.Repeat("1+", 1500) + "1 }}", "exceeds maximum allowed nodes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseString(tt.in)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("parse %.60q: got %v, want an error containing %q", tt.in, err, tt.want)
			}
		})
	}
}

// TestExpressionBudget runs expressions that would loop for a very long
// time or allocate without bound; each stops with an error.
func TestExpressionBudget(t *testing.T) {
	big := make([]any, 5000)
	for i := range big {
		big[i] = i
	}
	env := &Env{Inputs: map[string]any{"big": big, "t": true}}
	tests := []struct{ name, in, want string }{
		{"nested loops over an input", `${{ len(filter(inputs.big, all(inputs.big, inputs.t))) }}`, "ran too long"},
		{"nested loops that box", `${{ len(filter(inputs.big, all(inputs.big, # >= 0))) }}`, "too much data"},
		{"triple nesting over ranges", `${{ all(1..300, all(1..300, all(1..300, true))) }}`, ""},
		{"huge range", `${{ len(1..100000000) }}`, "too much data: a range would take it past its budget of 64 MiB (at column 7)"},
		{"huge repeat", `${{ repeat("x", 100000000) }}`, "memory budget"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, err := parseString(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			_, err = (&Template{root: n}).Render(env)
			if err == nil {
				t.Fatalf("render %q succeeded, want an error", tt.in)
			}
			if tt.want != "" && !strings.Contains(err.Error(), tt.want) {
				t.Errorf("render %q: %v, want %q", tt.in, err, tt.want)
			}
		})
	}
	// A single loop over the same input is fine.
	n, _ := parseString(`${{ len(filter(inputs.big, # % 2 == 0)) }}`)
	if got, err := (&Template{root: n}).RenderJSON(env); err != nil || string(got) != "2500" {
		t.Errorf("single loop = %s, %v", got, err)
	}
}

func TestConditions(t *testing.T) {
	tests := []struct {
		in      string
		want    bool
		wantErr string
	}{
		{`steps.invoice.status == "succeeded"`, true, ""},
		{`${{ steps.flaky.status == "succeeded" }}`, false, ""},
		{`inputs.count`, false, "must be true or false, not a number"},
	}
	for _, tt := range tests {
		x, err := parseCondition(tt.in)
		if err != nil {
			t.Fatalf("%s: %v", tt.in, err)
		}
		got, err := x.EvalBool(testEnv())
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: err %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%s = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
	if _, err := parseCondition(`x ${{ true }}`); err == nil {
		t.Error("a condition with text around ${{ }} was accepted")
	}
}

// TestExpressionGrowthIsBounded: the operations that build values larger
// than their inputs (+, replace, join, toJSON, string, and rendering a value
// of shared references) are charged before they run, so an expression that
// doubles a string or multiplies a module's output fails with an error
// instead of taking the station's memory. Each case builds a few hundred
// megabytes without the bound: enough to fail, not enough to kill the test.
func TestExpressionGrowthIsBounded(t *testing.T) {
	env := &Env{Inputs: map[string]any{
		"a500": strings.Repeat("a", 500),
		"kb":   strings.Repeat("k", 1024),
	}}
	tests := []struct{ name, in string }{
		{"doubling with +", `${{ len(reduce(1..28, #acc + #acc, "x")) }}`},
		{"doubling with let", `${{ let a = inputs.kb + inputs.kb; let b = a + a; let c = b + b; let d = c + c; let e = d + d; let f = e + e; let g = f + f; let h = g + g; let i = h + h; let j = i + i; let k = j + j; let l = k + k; let m = l + l; let n = m + m; let o = n + n; let p = o + o; len(p + p) }}`},
		{"nested replace", `${{ len(replace(replace(replace(inputs.a500, "a", inputs.a500), "a", inputs.a500), "a", inputs.a500)) }}`},
		{"replace in a pipe", `${{ len(inputs.a500 | replace("a", inputs.a500) | replace("a", inputs.a500) | replace("a", inputs.a500)) }}`},
		{"join of shared references", `${{ len(join(map(1..100000, inputs.kb), "")) }}`},
		{"toJSON of shared references", `${{ len(toJSON(map(1..100000, inputs.kb))) }}`},
		{"string of shared references", `${{ len(string(map(1..100000, inputs.kb))) }}`},
		{"rendering shared references", `${{ map(1..100000, inputs.kb) }}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, err := parseString(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			_, err = (&Template{root: n}).RenderJSON(env)
			if err == nil || !(strings.Contains(err.Error(), "too much data") || strings.Contains(err.Error(), "larger than") || strings.Contains(err.Error(), "memory budget")) {
				t.Fatalf("render %q: %v, want a size error", tt.in, err)
			}
		})
	}
	// What the bound must not change.
	for in, want := range map[string]string{
		`${{ "a" + "b" }}`:                          `"ab"`,
		`${{ 1 + 2 }}`:                              `3`,
		`${{ 1.5 + 2 }}`:                            `3.5`,
		`${{ replace("a-b-c", "-", "+") }}`:         `"a+b+c"`,
		`${{ replace("aaa", "a", "b", 2) }}`:        `"bba"`,
		`${{ join(["a", "b"], ", ") }}`:             `"a, b"`,
		`${{ join(["a", "b"]) }}`:                   `"ab"`,
		`${{ toJSON({"a": 1}) }}`:                   `"{\n  \"a\": 1\n}"`,
		`${{ string(5) }}`:                          `"5"`,
		`${{ reduce(1..3, #acc + string(#), "") }}`: `"123"`,
		`${{ inputs.kb | len() }}`:                  `1024`,
	} {
		n, err := parseString(in)
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		got, err := (&Template{root: n}).RenderJSON(env)
		if err != nil || string(got) != want {
			t.Errorf("%s = %s, %v; want %s", in, got, err, want)
		}
	}
}
