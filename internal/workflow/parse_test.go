package workflow

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

const goodWorkflow = `name: invoice-and-summarize
description: Create an invoice, then summarize it
inputs:
  customer:
    type: string
    required: true
  amount:
    type: integer
    default: 1200
max_parallel: 2
steps:
  - id: invoice
    uses: dave/stripe-invoicing create-invoice
    with:
      customer: ${{ inputs.customer }}
      amount: ${{ inputs.amount }}
      note: "for ${{ inputs.customer }}"
    timeout: 30s
    retry: {attempts: 3, backoff: 2s, max_backoff: 5s}
  - id: audit
    uses: station/hello greet
    with: {name: auditor}
  - id: summary
    uses: llm
    needs: [audit]
    if: steps.invoice.output.status == "draft"
    continue_on_error: true
    with:
      system: You summarize invoices.
      prompt: "Summarize ${{ toJSON(steps.invoice.output) }}"
      json: true
output:
  invoice: ${{ steps.invoice.output.id }}
  summary: ${{ steps.summary.output?.content }}
`

func TestParseGood(t *testing.T) {
	wf, err := Parse("invoice.yaml", []byte(goodWorkflow))
	if err != nil {
		t.Fatal(err)
	}
	if wf.Name != "invoice-and-summarize" || wf.MaxParallel != 2 || !strings.HasPrefix(wf.Digest, "sha256:") {
		t.Errorf("workflow = %+v", wf)
	}
	if got, want := wf.Inputs, []Input{
		{Name: "customer", Type: "string", Required: true},
		{Name: "amount", Type: "integer", Default: 1200, HasDefault: true},
	}; !reflect.DeepEqual(got, want) {
		t.Errorf("inputs = %+v, want %+v", got, want)
	}
	inv, audit, sum := wf.Steps[0], wf.Steps[1], wf.Steps[2]
	if inv.Module != "dave/stripe-invoicing" || inv.Command != "create-invoice" || inv.Timeout != 30*time.Second ||
		inv.Retry != (Retry{Attempts: 3, Backoff: 2 * time.Second, MaxBackoff: 5 * time.Second}) || len(inv.Deps) != 0 {
		t.Errorf("invoice step = %+v", inv)
	}
	if audit.Timeout != DefaultTimeout || audit.Retry.Attempts != 1 {
		t.Errorf("audit step defaults = %+v", audit)
	}
	// Deps: the explicit need plus the step its condition and input use, in file order.
	if sum.Builtin != BuiltinLLM || !sum.ContinueOnError || !reflect.DeepEqual(sum.Deps, []string{"invoice", "audit"}) {
		t.Errorf("summary step = %+v", sum)
	}
	if got := wf.Output.Steps(); !reflect.DeepEqual(got, []string{"invoice", "summary"}) {
		t.Errorf("output references %v", got)
	}
	// A file without a name is named after the file.
	wf, err = Parse("dir/nightly.yaml", []byte("steps:\n  - id: a\n    uses: station/hello greet\n"))
	if err != nil || wf.Name != "nightly" {
		t.Errorf("unnamed workflow: %v, %v", wf, err)
	}
}

// TestParseErrors checks the message, file, line and column of each
// problem: golden errors.
func TestParseErrors(t *testing.T) {
	step := "steps:\n  - id: a\n    uses: station/hello greet\n"
	invoice := "steps:\n  - id: invoice\n    uses: station/hello greet\n  - id: b\n    uses: station/hello greet\n"
	tests := []struct {
		name, in string
		want     []string
	}{
		{"empty", "", []string{"w.yaml: the workflow file is empty"}},
		{"not yaml", "steps: [", []string{"w.yaml:1: invalid YAML: did not find expected node content"}},
		{"unquoted star", "steps:\n  - id: a\n    uses: station/hello greet\n    with: {glob: *.txt}\n",
			[]string{`w.yaml:4:18: invalid YAML: did not find expected alphabetic or numeric character; a value that starts with "*" must be quoted: "*.txt"`}},
		{"two documents", step + "---\nname: x\n", []string{"w.yaml:4:1: a workflow is one YAML document; found a second one"}},
		{"unknown top field", "nmae: x\n" + step, []string{`w.yaml:1:1: unknown field "nmae"; did you mean "name"?`}},
		{"unknown top field, nothing close", "on: push\n" + step, []string{`w.yaml:1:1: unknown field "on" (known fields: name, description, inputs, steps, output, max_parallel)`}},
		{"missing steps", "name: x\n", []string{`w.yaml:1:1: missing required field "steps"`}},
		{"no steps", "steps: []\n", []string{"w.yaml:1:8: steps: at least one step is required"}},
		{"alias", "x: &a 1\n" + step, []string{"w.yaml:1:4: anchors (&a) are not allowed in a workflow; write the value out where it is used"}},
		{"merge key", step + "    with: {<<: {a: 1}}\n", []string{`w.yaml:4:12: steps[0].with: merge keys (<<) are not allowed in a workflow; write the fields out in this mapping`}},
		{"merge key in inputs", "inputs: {<<: {a: {}}}\n" + step, []string{`w.yaml:1:10: inputs: merge keys (<<) are not allowed in a workflow; write the fields out in this mapping`}},
		{"merge key in llm with", "steps:\n  - id: a\n    uses: llm\n    with: {prompt: hi, <<: {}}\n", []string{`w.yaml:4:24: steps[0].with: merge keys (<<) are not allowed in a workflow; write the fields out in this mapping`}},
		{"unknown step field", "steps:\n  - id: a\n    uses: station/hello greet\n    timout: 1s\n",
			[]string{`w.yaml:4:5: steps[0]: unknown field "timout"; did you mean "timeout"?`}},
		{"unknown step field, nothing close", step + "    run: echo\n",
			[]string{`w.yaml:4:5: steps[0]: unknown field "run" (known fields: id, description, uses, with, needs, if, timeout, retry, continue_on_error)`}},
		{"unknown retry field", step + "    retry: {atempts: 3}\n", []string{`w.yaml:4:13: steps[0].retry: unknown field "atempts"; did you mean "attempts"?`}},
		{"unknown input field", "inputs:\n  n: {tpye: string}\n" + step, []string{`w.yaml:2:7: inputs.n: unknown field "tpye"; did you mean "type"?`}},
		{"missing id and uses", "steps:\n  - with: {}\n", []string{`w.yaml:2:5: steps[0]: missing required field "id"`, `w.yaml:2:5: steps[0]: missing required field "uses"`}},
		{"bad id", "steps:\n  - id: create-invoice\n    uses: station/hello greet\n",
			[]string{`w.yaml:2:9: steps[0].id: "create-invoice" is not a valid step id (a letter, then letters, digits or _; it is used as steps.<id> in expressions)`}},
		{"duplicate id", step + "  - id: a\n    uses: station/hello greet\n", []string{`w.yaml:4:9: steps[1].id: duplicate step id "a" (first at line 2)`}},
		{"uses without command", "steps:\n  - id: a\n    uses: station/hello\n", []string{`w.yaml:3:11: steps[0].uses: "station/hello" names no command: write "station/hello COMMAND"`}},
		{"uses unknown builtin", "steps:\n  - id: a\n    uses: shell\n", []string{`w.yaml:3:11: steps[0].uses: "shell" is not a built-in (llm) or a module command ("owner/slug command")`}},
		{"uses bad module", "steps:\n  - id: a\n    uses: Dave/x run\n", []string{`w.yaml:3:11: steps[0].uses: "Dave/x" is not a module id ("owner/slug", lower-case letters, digits and hyphens)`}},
		{"unknown need", step + "    needs: [b]\n", []string{`w.yaml:4:13: steps[0].needs: unknown step "b" (there is no other step)`}},
		{"misspelt need", invoice + "    needs: invoce\n", []string{`w.yaml:6:12: steps[1].needs: unknown step "invoce"; did you mean "invoice"?`}},
		{"unknown need, nothing close", invoice + "    needs: [x]\n", []string{`w.yaml:6:13: steps[1].needs: unknown step "x" (known steps: invoice)`}},
		{"misspelt step in with", invoice + "    with: {id: '${{ steps.invoce.output.id }}'}\n",
			[]string{`w.yaml:6:16: steps[1].with: ${{ steps.invoce.output.id }}: unknown step "invoce"; did you mean "invoice"?`}},
		{"misspelt step in if", invoice + "    if: steps.invoic.output.ok\n",
			[]string{`w.yaml:6:9: steps[1].if: ${{ steps.invoic.output.ok }}: unknown step "invoic"; did you mean "invoice"?`}},
		{"misspelt step in output", invoice + "output: ${{ steps.Invoice.output }}\n",
			[]string{`w.yaml:6:9: output: ${{ steps.Invoice.output }}: unknown step "Invoice"; did you mean "invoice"?`}},
		{"own id is not listed", invoice + "    with: {x: '${{ steps.zz.output }}'}\n",
			[]string{`w.yaml:6:15: steps[1].with: ${{ steps.zz.output }}: unknown step "zz" (known steps: invoice)`}},
		{"self need", step + "    needs: a\n", []string{`w.yaml:4:12: steps[0].needs: a step cannot need itself`}},
		{"unknown step in template", step + "    with: {x: '${{ steps.b.output }}'}\n", []string{`w.yaml:4:15: steps[0].with: ${{ steps.b.output }}: unknown step "b" (there is no other step)`}},
		{"own output", step + "    with: {x: '${{ steps.a.output }}'}\n", []string{`w.yaml:4:15: steps[0].with: ${{ steps.a.output }}: a step cannot use its own output`}},
		{"unknown input", step + "    if: inputs.force\n", []string{`w.yaml:4:9: steps[0].if: ${{ inputs.force }}: unknown input "force" (the workflow declares no inputs)`}},
		{"misspelt input", "inputs:\n  customer: {}\n  amount: {type: integer}\n" + step + "    with: {c: '${{ inputs.custmer }}'}\n",
			[]string{`w.yaml:7:15: steps[0].with: ${{ inputs.custmer }}: unknown input "custmer"; did you mean "customer"?`}},
		{"unknown input, nothing close", "inputs:\n  customer: {}\n" + step + "    if: inputs.force\n",
			[]string{`w.yaml:6:9: steps[0].if: ${{ inputs.force }}: unknown input "force" (known inputs: customer)`}},
		{"bad expression", step + "    with: {x: '${{ 1 + }}'}\n", []string{`w.yaml:4:15: steps[0].with.x: ${{ 1 + }}: unexpected token EOF (at column 5)`}},
		{"cycle", "steps:\n  - id: a\n    uses: station/hello greet\n    needs: c\n  - id: b\n    uses: station/hello greet\n    with: '${{ steps.a.output }}'\n  - id: c\n    uses: station/hello greet\n    needs: b\n",
			[]string{"w.yaml:2:5: steps[0]: dependency cycle: a -> c -> b -> a"}},
		{"bad timeout", step + "    timeout: 2 hours\n", []string{`w.yaml:4:14: steps[0].timeout: "2 hours" is not a duration (write it like 30s, 5m or 1h30m)`}},
		{"timeout too long", step + "    timeout: 2h\n", []string{`w.yaml:4:14: steps[0].timeout: "2h" is out of range (more than 0, at most 1h)`}},
		{"retry attempts", step + "    retry: {attempts: 0}\n", []string{`w.yaml:4:23: steps[0].retry.attempts: 0 is out of range (1 to 10)`}},
		{"max_backoff below backoff", step + "    retry: {backoff: 10s, max_backoff: 1s}\n", []string{`w.yaml:4:27: steps[0].retry.max_backoff: is shorter than backoff`}},
		{"continue_on_error type", step + "    continue_on_error: yes please\n", []string{`w.yaml:4:24: steps[0].continue_on_error: must be true or false, not a string`}},
		{"llm unknown field", "steps:\n  - id: a\n    uses: llm\n    with: {prompt: hi, temprature: 1}\n",
			[]string{`w.yaml:4:24: steps[0].with: unknown field "temprature" of an llm step; did you mean "temperature"?`}},
		{"llm unknown field, nothing close", "steps:\n  - id: a\n    uses: llm\n    with: {prompt: hi, stream: true}\n",
			[]string{`w.yaml:4:24: steps[0].with: unknown field "stream" of an llm step (known fields: model, system, prompt, messages, max_tokens, temperature, json)`}},
		{"llm without prompt", "steps:\n  - id: a\n    uses: llm\n    with: {model: m}\n", []string{`w.yaml:4:11: steps[0].with: an llm step needs a prompt or messages`}},
		{"llm without with", "steps:\n  - id: a\n    uses: llm\n", []string{`w.yaml:2:5: steps[0]: an llm step needs with: {prompt: ...} or with: {messages: [...]}`}},
		{"input bad type", "inputs:\n  n: {type: float}\n" + step, []string{`w.yaml:2:13: inputs.n.type: "float" is not a type (string, number, integer, boolean, object, array or any)`}},
		{"input default type", "inputs:\n  n: {type: integer, default: x}\n" + step, []string{`w.yaml:2:31: inputs.n.default: must be an integer, not a string`}},
		{"required with default", "inputs:\n  n: {required: true, default: 1, type: any}\n" + step, []string{`w.yaml:2:32: inputs.n: a required input has no default`}},
		{"input name", "inputs:\n  my-input: {}\n" + step, []string{`w.yaml:2:3: inputs: "my-input" is not a valid input name (a letter, then letters, digits or _)`}},
		{"max_parallel", "max_parallel: 0\n" + step, []string{`w.yaml:1:15: max_parallel: 0 is out of range (1 to 64)`}},
		{"output unknown step", step + "output: ${{ steps.zz.output }}\n", []string{`w.yaml:4:9: output: ${{ steps.zz.output }}: unknown step "zz" (known steps: a)`}},
		{"template key", step + "    with: {'${{ inputs.x }}': 1}\n", []string{`w.yaml:4:12: steps[0].with: keys cannot hold ${{ }}; only values can`}},
		{"timestamp value", step + "    with: {when: 2024-01-01}\n", []string{`w.yaml:4:18: steps[0].with.when: a timestamp is not a JSON value; quote it`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("w.yaml", []byte(tt.in))
			if err == nil {
				t.Fatalf("Parse succeeded, want %q", tt.want)
			}
			got := strings.Split(err.Error(), "\n")
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("errors:\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestRetryDelay(t *testing.T) {
	r := Retry{Attempts: 6, Backoff: time.Second, MaxBackoff: 5 * time.Second}
	var got []time.Duration
	for n := 1; n <= 5; n++ {
		got = append(got, r.Delay(n))
	}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("delays = %v, want %v", got, want)
	}
}

func TestResolveInputs(t *testing.T) {
	wf, err := Parse("invoice.yaml", []byte(goodWorkflow))
	if err != nil {
		t.Fatal(err)
	}
	got, err := wf.ResolveInputs(map[string]any{"customer": "cus_1"})
	if err != nil || !reflect.DeepEqual(got, map[string]any{"customer": "cus_1", "amount": 1200}) {
		t.Errorf("defaults: %v, %v", got, err)
	}
	_, err = wf.ResolveInputs(map[string]any{"amount": 1.5, "custmer": "x"})
	for _, want := range []string{`has no input "custmer"; did you mean "customer"?`, "input amount: must be an integer, not a number", "input customer is required"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("bad inputs: %v, want %q", err, want)
		}
	}
	in := wf.Input("amount")
	if v, err := in.ParseValue("42"); err != nil || v != 42 {
		t.Errorf("ParseValue(42) = %v, %v", v, err)
	}
	if _, err := in.ParseValue("lots"); err == nil {
		t.Error("ParseValue(lots) for an integer succeeded")
	}
	if v, err := wf.Input("customer").ParseValue("42"); err != nil || v != "42" {
		t.Errorf("a string input keeps the text: %v, %v", v, err)
	}
}

// TestExamplesParse keeps the example workflows valid.
func TestExamplesParse(t *testing.T) {
	files, err := filepath.Glob("../../examples/workflows/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no example workflows: %v", err)
	}
	for _, f := range files {
		if _, err := Load(f); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// TestControlBytesInTagsAreEscaped: a tag spelled with a %-escape of a
// control byte cannot put that byte into an error message (a terminal).
func TestControlBytesInTagsAreEscaped(t *testing.T) {
	_, err := Parse("w.yaml", []byte("steps:\n  - id: a\n    uses: !<tag:x,2000:%01%1b[31m> station/hello greet\n"))
	if err == nil {
		t.Fatal("a tagged uses parsed")
	}
	for _, r := range err.Error() {
		if r < 0x20 && r != '\n' {
			t.Fatalf("error %q carries control byte %#x", err, r)
		}
	}
}
