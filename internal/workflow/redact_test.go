package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/station-dev/station/internal/host"
	"github.com/station-dev/station/internal/sandbox"
	"github.com/station-dev/station/sdk/abi"
)

// TestRedactText: a value is taken out wherever it occurs, inside longer
// text, overlapping itself, and in the spellings an error message or a
// JSON document gives it.
func TestRedactText(t *testing.T) {
	const v = `sk_"live\42é<`
	r := newRedactor([]string{v, "tok_abcd"})
	for _, c := range []struct{ in, want string }{
		{"Bearer " + v, "Bearer [secret]"},
		{"a" + v + v + "b", "a[secret]b"},
		{`json: "sk_\"live\\42é<"`, `json: "[secret]"`},        // JSON without HTML escaping
		{`ascii: "sk_\"live\\42\u00e9<"`, `ascii: "[secret]"`}, // Go-quoted to ASCII
		{`json: "sk_\"live\\42é\u003c"`, `json: "[secret]"`},   // json.Marshal
		{"no secret here", "no secret here"},
		{"tok_abcdtok_abcd!", "[secret]!"},
	} {
		if got := r.text(c.in); got != c.want {
			t.Errorf("text(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	// A value that overlaps itself: every byte of each occurrence goes.
	r = newRedactor([]string{"abab"})
	if got := r.text("xababab-abab"); got != "x[secret]-[secret]" {
		t.Errorf("overlapping: %q", got)
	}
	if got := newRedactor([]string{"aaaa"}).text("baaaaaaab"); got != "b[secret]b" {
		t.Errorf("periodic: %q", got)
	}
	if newRedactor(nil) != nil || newRedactor([]string{""}) != nil {
		t.Error("a redactor of no values is not nil")
	}
}

// TestRedactJSON: a document is redacted through its decoded values, so a
// value escaped in any way JSON allows is found, in keys and numbers too;
// a document without the value is returned unchanged, byte for byte.
func TestRedactJSON(t *testing.T) {
	r := newRedactor([]string{"sk_test_1234", "98765432"})
	for _, c := range []struct{ in, want string }{
		{`{"auth":"Bearer \u0073k_test_1234"}`, `{"auth":"Bearer [secret]"}`},
		{`{"sk_test_1234":1,"n":98765432,"l":["x\/sk_test_1234"]}`, `{"[secret]":1,"l":["x/[secret]"],"n":"[secret]"}`},
		{`{"b": 2, "a": "untouched"}`, `{"b": 2, "a": "untouched"}`},
		{`not json sk_test_1234`, `not json [secret]`},
		{`{"a":1} sk_test_1234`, `{"a":1} [secret]`},
	} {
		if got := string(r.json([]byte(c.in))); got != c.want {
			t.Errorf("json(%s) = %s, want %s", c.in, got, c.want)
		}
	}
}

// TestRedactError: a redacted error keeps what the exit code and the
// daemon read (the call's kind, the violation), redacted.
func TestRedactError(t *testing.T) {
	const v = "sk_test_secret"
	r := newRedactor([]string{v})
	ce := &host.CallError{Module: "m/x", Command: "c", Kind: host.KindCrash, Msg: "bad key " + v,
		Violation: &sandbox.Violation{Module: "m/x", Capability: sandbox.Network, Target: "api.example/" + v, Reason: "denied"}}
	err := r.err(fmt.Errorf("step a: %w", ce))
	if strings.Contains(err.Error(), v) {
		t.Errorf("error %q holds the value", err)
	}
	var got *host.CallError
	if !errors.As(err, &got) || got.Kind != host.KindCrash || strings.Contains(got.Msg, v) || strings.Contains(got.Violation.Target, v) || got == ce {
		t.Errorf("errors.As: %+v", got)
	}
	if ce.Msg != "bad key "+v {
		t.Error("the original error was changed")
	}
	plain := errors.New("nothing secret")
	if r.err(plain) != plain {
		t.Error("an error without the value is not returned as it is")
	}
}

// TestRedactBounded: the largest values, as many as a workflow may have,
// over a large document that repeats one of them, are redacted in about
// linear time (a long periodic value repeated is the worst case).
func TestRedactBounded(t *testing.T) {
	var values []string
	for i := range MaxInputs {
		values = append(values, strings.Repeat(string(rune('a'+i%26)), MaxSecretInput-i))
	}
	r := newRedactor(values)
	doc := strings.Repeat(values[0], 64) + "!" + strings.Repeat("xyz", 1<<18)
	start := time.Now()
	got := r.text(doc)
	if got != "[secret]!"+strings.Repeat("xyz", 1<<18) {
		t.Errorf("redacted %d bytes to %.40q...", len(doc), got)
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("redacting %d bytes with %d values took %s", len(doc), len(values), took)
	}
}

// TestSecretInputValues: a secret input's value is bounded, and its
// errors never quote it.
func TestSecretInputValues(t *testing.T) {
	wf, err := Parse("w.yaml", []byte("inputs:\n  key: {secret: true, required: true}\nsteps:\n  - {id: a, uses: a/b c, with: {k: \"${{ inputs.key }}\"}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		v    any
		want string
	}{
		{"abc", "its value is 3 bytes: a secret has at least 4"},
		{strings.Repeat("k", MaxSecretInput+1), fmt.Sprintf("its value is %d bytes: at most %d", MaxSecretInput+1, MaxSecretInput)},
		{12345678, "must be a string, not a number"},
	} {
		_, err := wf.ResolveInputs(map[string]any{"key": c.v})
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), fmt.Sprint(c.v)) {
			t.Errorf("key=%.20v: %v, want %q without the value", c.v, err, c.want)
		}
	}
	if _, err := wf.ResolveInputs(map[string]any{"key": strings.Repeat("k", MaxSecretInput)}); err != nil {
		t.Errorf("the largest value: %v", err)
	}
}

// TestParseSecrets: where secret inputs and secrets.NAME may be used.
func TestParseSecrets(t *testing.T) {
	head := "inputs:\n  key: {secret: true}\n  name: {}\nsteps:\n"
	for _, c := range []struct{ name, src, want string }{
		{"secret number", "inputs:\n  k: {secret: true, type: integer}\nsteps: [{id: a, uses: a/b c}]\n", "inputs.k.secret: a secret input is a string (this one is declared integer)"},
		{"secret default", "inputs:\n  k: {secret: true, default: sk_1234}\nsteps: [{id: a, uses: a/b c}]\n", "a secret input has no default"},
		{"secrets in llm", head + "  - {id: a, uses: llm, with: {prompt: \"${{ secrets.KEY }}\"}}\n", "an llm step cannot use secrets.KEY"},
		{"secret input in llm", head + "  - {id: a, uses: llm, with: {prompt: \"k ${{ inputs.key }}\"}}\n", "inputs.key is a secret input: an llm step would send its value"},
		{"secrets in output", head + "  - {id: a, uses: a/b c}\noutput: {k: \"${{ secrets.KEY }}\"}\n", "the output cannot hold secrets.KEY"},
		{"secret input in output", head + "  - {id: a, uses: a/b c}\noutput: \"${{ inputs.key }}\"\n", "the output cannot hold secret input key"},
		{"secrets in if", head + "  - {id: a, uses: a/b c, if: 'secrets.KEY != \"\"'}\n", "a condition cannot use secrets.KEY"},
		{"bad name", head + "  - {id: a, uses: a/b c, with: {k: \"${{ secrets.key }}\"}}\n", "secrets.key: a secret's name is an upper-case letter"},
		{"dynamic secrets", head + "  - {id: a, uses: a/b c, with: {k: \"${{ secrets }}\"}}\n", "secrets must be followed by a secret's name"},
		{"transformed", head + "  - {id: a, uses: a/b c, with: {k: \"${{ upper(inputs.key) }}\"}}\n", "secret input key can only be passed as it is"},
		{"let", head + "  - {id: a, uses: a/b c, with: {k: \"${{ let k = inputs.key; k }}\"}}\n", "secret input key can only be passed as it is"},
		{"dynamic inputs", head + "  - {id: a, uses: a/b c, with: {k: \"${{ upper(inputs[inputs.name]) }}\"}}\n", "inputs is read only as inputs.<name>"},
		{"whole inputs", head + "  - {id: a, uses: a/b c, with: \"${{ inputs }}\"}\n", "inputs is read only as inputs.<name>"},
	} {
		_, err := Parse("w.yaml", []byte(c.src))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	wf, err := Parse("w.yaml", []byte(head+`  - id: a
    uses: a/b c
    if: inputs.key != "" && upper(inputs.key) != "X"
    with: {auth: "Bearer ${{ inputs.key }}", k: "${{ inputs.key }}", s: "${{ secrets.KEY }}", t: "x ${{ secrets.TOKEN }}", u: "${{ secrets.KEY }}"}
`))
	if err != nil {
		t.Fatal(err)
	}
	refs := wf.Steps[0].Secrets()
	if len(refs) != 2 || refs[0].Name != "KEY" || refs[1].Name != "TOKEN" || refs[0].Line != 8 || refs[1].Line != 8 {
		t.Errorf("step secrets %+v", refs)
	}
	got, err := wf.Steps[0].With.Render(&Env{Inputs: map[string]any{"key": "sk_1"}, Secrets: wf.secrets})
	want := map[string]any{"auth": "Bearer sk_1", "k": "sk_1", "s": abi.SecretPlaceholder("KEY"), "t": "x " + abi.SecretPlaceholder("TOKEN"), "u": abi.SecretPlaceholder("KEY")}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("rendered %v (%v), want %v", got, err, want)
	}
}

// TestCheckSecrets: a step may pass only a secret its module declares, and
// one that has a value; a declared secret without a value that no step
// passes is a warning.
func TestCheckSecrets(t *testing.T) {
	wf, err := Parse("/w/w.yaml", []byte(`steps:
  - id: invoice
    uses: dave/stripe-invoicing create-invoice
    with: {key: "${{ secrets.STRIPE_KEY }}", other: "${{ secrets.OTHER }}"}
  - id: greet
    uses: station/hello greet
    with: {name: "${{ secrets.STRIPE_KEY }}"}
  - id: plain
    uses: dave/stripe-invoicing create-invoice
`))
	if err != nil {
		t.Fatal(err)
	}
	mods := installed{
		"dave/stripe-invoicing": {ID: "dave/stripe-invoicing", Commands: []string{"create-invoice"},
			Secrets: []SecretInfo{{Name: "STRIPE_KEY", Hosts: []string{"api.stripe.com"}, Set: false}, {Name: "GROQ_KEY", Hosts: []string{"api.groq.com"}}}},
		"station/hello": {ID: "station/hello", Commands: []string{"greet"}},
	}
	r, err := Check(context.Background(), wf, mods, "", nil)
	if !errors.Is(err, ErrCheck) {
		t.Fatalf("Check = %v", err)
	}
	want := []string{
		"/w/w.yaml:4:17: step invoice: secret STRIPE_KEY of module dave/stripe-invoicing has no value (set it with: station secret set STRIPE_KEY --module dave/stripe-invoicing)",
		"/w/w.yaml:4:53: step invoice: module dave/stripe-invoicing does not declare secret OTHER (it declares GROQ_KEY, STRIPE_KEY); a step can pass only the secrets its module declares in requires.secrets",
		"/w/w.yaml:7:18: step greet: module station/hello does not declare secret STRIPE_KEY (it declares no secrets); a step can pass only the secrets its module declares in requires.secrets",
	}
	if !reflect.DeepEqual(r.Problems, want) {
		t.Errorf("problems:\n got %q\nwant %q", r.Problems, want)
	}
	if len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "declares secret GROQ_KEY, which has no value") {
		t.Errorf("warnings %q", r.Warnings)
	}
	if s := r.Modules[0].Secrets; len(s) != 2 || s[0].Name != "STRIPE_KEY" || fmt.Sprint(s[0].Steps) != "[invoice]" || len(s[1].Steps) != 0 {
		t.Errorf("module secrets %+v", s)
	}
	mods["dave/stripe-invoicing"].Secrets[0].Set = true
	mods["dave/stripe-invoicing"].Secrets = append(mods["dave/stripe-invoicing"].Secrets, SecretInfo{Name: "OTHER", Set: true})
	mods["station/hello"].Secrets = []SecretInfo{{Name: "STRIPE_KEY", Set: true}}
	if r, err := Check(context.Background(), wf, mods, "", nil); err != nil || len(r.Warnings) != 1 {
		t.Errorf("every secret declared and set: %v, warnings %q", err, r.Warnings)
	}
	b, _ := json.Marshal(r)
	if strings.Contains(string(b), `"value"`) {
		t.Errorf("the report has a value field: %s", b)
	}
}
