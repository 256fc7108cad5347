package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/station-dev/station/internal/cli"
	"github.com/station-dev/station/internal/fixture"
	"github.com/station-dev/station/internal/llm/llmtest"
)

// stationEnv runs the CLI with extra environment variables.
func stationEnv(t *testing.T, env map[string]string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	code := cli.Run(context.Background(), args, cli.IO{Cache: testCache,
		In: strings.NewReader(""), Out: &out, Err: &errb,
		Getenv: func(k string) string { return env[k] },
	})
	return result{code, out.String(), errb.String()}
}

// wfHome is a station home with hello and stripe-invoicing installed, a
// fake Stripe on loopback and an LLM fixture.
type wfHome struct {
	env   map[string]string
	evil  *fixture.Server
	llm   *llmtest.Server
	files string
}

func newWFHome(t *testing.T) *wfHome {
	t.Helper()
	home := t.TempDir()
	ca := fixture.NewCA(t)
	stripe := ca.TLSServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"id":"in_1","status":"draft","amount_due":1200,"currency":"eur"}`)
	}), "api.stripe.com")
	h := &wfHome{llm: llmtest.New(t), files: t.TempDir()}
	h.evil = ca.TLSServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}), "evil.example")
	cfg := fmt.Sprintf("network:\n  resolve: [\"api.stripe.com:443=%s\", \"evil.example:443=%s\"]\n  extra_ca: %s\n  allow_private: [127.0.0.0/8]\n",
		stripe.Addr, h.evil.Addr, ca.WriteFile(t, home))
	os.WriteFile(filepath.Join(home, "config.yaml"), []byte(cfg), 0o600)
	h.env = map[string]string{"STATION_HOME": home, "STATION_NO_DAEMON": "1", "STATION_LLM_BASE_URL": h.llm.URL, "STATION_LLM_API_KEY": h.llm.Key, "STATION_LLM_MODEL": llmtest.DefaultModel}
	for _, m := range []string{"hello", "stripe-invoicing"} {
		stationEnv(t, h.env, "module", "install", "--yes", moduleDir(t, m)).want(t, 0)
	}
	return h
}

func (h *wfHome) file(t *testing.T, name, src string) string {
	t.Helper()
	p := filepath.Join(h.files, name)
	if err := os.WriteFile(p, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

const invoiceWorkflow = `name: invoice
inputs:
  customer: {required: true}
  key: {required: true}
steps:
  - id: invoice
    uses: dave/stripe-invoicing create-invoice
    with: {api_key: "${{ inputs.key }}", customer: "${{ inputs.customer }}"}
  - id: greeting
    uses: station/hello greet
    with: {name: "${{ inputs.customer }}"}
  - id: note
    uses: llm
    with:
      prompt: "Invoice ${{ steps.invoice.output.id }} is ${{ steps.invoice.output.status }}"
output:
  invoice: ${{ steps.invoice.output.id }}
  greeting: ${{ steps.greeting.output.greeting }}
  note: ${{ steps.note.output.content }}
`

func TestWorkflowRunCheckRunsShow(t *testing.T) {
	h := newWFHome(t)
	file := h.file(t, "invoice.yaml", invoiceWorkflow)

	r := stationEnv(t, h.env, "workflow", "check", file).want(t, 0)
	for _, want := range []string{
		"workflow invoice", "llm                                   after: invoice",
		"dave/stripe-invoicing 1.4.0 — commands create-invoice (steps invoice)",
		"may connect to api.stripe.com (https, port 443)", "station/hello 1.0.0 — commands greet", "may not connect to the network",
		"llm (steps note): the station's own provider, " + h.llm.URL, "ok: the workflow can run",
	} {
		if !strings.Contains(r.out, want) {
			t.Errorf("check output does not contain %q:\n%s", want, r.out)
		}
	}

	r = stationEnv(t, h.env, "workflow", "run", file, "--input", "customer=cus_42", "--input", "key=sk_test_1").want(t, 0)
	var out map[string]string
	if err := json.Unmarshal([]byte(r.out), &out); err != nil {
		t.Fatalf("output %q: %v", r.out, err)
	}
	if want := map[string]string{"invoice": "in_1", "greeting": "Hello, cus_42!", "note": "echo: Invoice in_1 is draft"}; fmt.Sprint(out) != fmt.Sprint(want) {
		t.Errorf("output = %v, want %v", out, want)
	}
	for _, want := range []string{"run 1: workflow invoice (3 steps)", "started   invoice (dave/stripe-invoicing create-invoice)", "ok        invoice in", "ok        note in", "run 1 succeeded in"} {
		if !strings.Contains(r.err, want) {
			t.Errorf("progress does not contain %q:\n%s", want, r.err)
		}
	}

	r = stationEnv(t, h.env, "workflow", "runs").want(t, 0)
	if !strings.Contains(r.out, "RUN") || !strings.Contains(r.out, "invoice") || !strings.Contains(r.out, "succeeded") {
		t.Errorf("runs:\n%s", r.out)
	}
	r = stationEnv(t, h.env, "workflow", "show", "1").want(t, 0)
	for _, want := range []string{"run 1: workflow invoice — succeeded", "step invoice (dave/stripe-invoicing create-invoice): succeeded",
		`input    {"api_key":"sk_test_1","customer":"cus_42"}`, "attempt 1: succeeded", "allow dave/stripe-invoicing network api.stripe.com:443", "step note (llm): succeeded"} {
		if !strings.Contains(r.out, want) {
			t.Errorf("show does not contain %q:\n%s", want, r.out)
		}
	}
	r = stationEnv(t, h.env, "workflow", "show", "1", "--json").want(t, 0)
	var shown struct {
		Status string                       `json:"status"`
		Steps  []struct{ Step string }      `json:"steps"`
		Audit  map[string][]json.RawMessage `json:"audit"`
	}
	if err := json.Unmarshal([]byte(r.out), &shown); err != nil || shown.Status != "succeeded" || len(shown.Steps) != 3 || len(shown.Audit["run/1/step/invoice/attempt/1"]) == 0 {
		t.Errorf("show --json = %s (%v)", r.out, err)
	}

	// --json: one event per line on stdout, the last with the output.
	r = stationEnv(t, h.env, "workflow", "run", file, "--inputs", `{"customer":"cus_7","key":"sk_test_1"}`, "--json").want(t, 0)
	lines := strings.Split(strings.TrimSpace(r.out), "\n")
	var last struct {
		Event  string          `json:"event"`
		Status string          `json:"status"`
		Output json.RawMessage `json:"output"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil || last.Event != "run_finished" || last.Status != "succeeded" || !strings.Contains(string(last.Output), "Hello, cus_7!") {
		t.Errorf("last event %s (%v)", lines[len(lines)-1], err)
	}
	if len(lines) != 8 { // run_started, 3 × (started, succeeded), run_finished
		t.Errorf("got %d events, want 8:\n%s", len(lines), r.out)
	}

	// The llm steps were the station's own spending: (station), one call
	// per run.
	r = stationEnv(t, h.env, "llm", "usage", "--json").want(t, 0)
	var rows []struct {
		Module           string `json:"module"`
		Calls            int64  `json:"calls"`
		CompletionTokens int64  `json:"completion_tokens"`
	}
	if err := json.Unmarshal([]byte(r.out), &rows); err != nil || len(rows) != 1 || rows[0].Module != "(station)" || rows[0].Calls != 2 || rows[0].CompletionTokens == 0 {
		t.Errorf("llm usage --json = %s (%v)", r.out, err)
	}
	r = stationEnv(t, h.env, "llm", "usage").want(t, 0)
	if !strings.Contains(r.out, "MODULE") || !strings.Contains(r.out, "(station)") {
		t.Errorf("llm usage:\n%s", r.out)
	}
}
