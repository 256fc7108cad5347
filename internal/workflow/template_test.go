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
	env := &Env{Inputs: map[string]any{"big": big}}
	tests := []struct{ name, in, want string }{
		{"nested loops over an input", `${{ len(filter(inputs.big, all(inputs.big, # >= 0))) }}`, "ran too long"},
		{"triple nesting over ranges", `${{ all(1..300, all(1..300, all(1..300, true))) }}`, ""},
		{"huge range", `${{ len(1..100000000) }}`, "memory budget"},
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
