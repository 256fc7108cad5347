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
	"sync"
	"testing"

	"github.com/station-dev/station/internal/cli"
	"github.com/station-dev/station/internal/fixture"
	"github.com/station-dev/station/internal/llm/llmtest"
)

// stationEnv runs the CLI with extra environment variables.
func stationEnv(t *testing.T, env map[string]string, args ...string) result {
	t.Helper()
	return stationEnvIn(t, env, "", args...)
}

// stationEnvIn is stationEnv with stdin as standard input.
func stationEnvIn(t *testing.T, env map[string]string, stdin string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	code := cli.Run(context.Background(), args, cli.IO{Cache: testCache,
		In: strings.NewReader(stdin), Out: &out, Err: &errb,
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
	// auth are the Authorization headers the fake Stripe received, and
	// customers the customers it was asked to invoice.
	mu              sync.Mutex
	auth, customers []string
}

// wfStripeKey is the value of STRIPE_KEY set for dave/stripe-invoicing in
// a wfHome.
const wfStripeKey = "sk_test_cli_stored_4b3c2a"

func newWFHome(t *testing.T) *wfHome {
	t.Helper()
	home := t.TempDir()
	ca := fixture.NewCA(t)
	h := &wfHome{llm: llmtest.New(t), files: t.TempDir()}
	stripe := ca.TLSServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		h.mu.Lock()
		h.auth = append(h.auth, r.Header.Get("Authorization"))
		h.customers = append(h.customers, r.PostForm.Get("customer"))
		h.mu.Unlock()
		fmt.Fprint(w, `{"id":"in_1","status":"draft","amount_due":1200,"currency":"eur"}`)
	}), "api.stripe.com")
	h.evil = ca.TLSServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}), "evil.example")
	cfg := fmt.Sprintf("network:\n  resolve: [\"api.stripe.com:443=%s\", \"evil.example:443=%s\"]\n  extra_ca: %s\n  allow_private: [127.0.0.0/8]\n",
		stripe.Addr, h.evil.Addr, ca.WriteFile(t, home))
	os.WriteFile(filepath.Join(home, "config.yaml"), []byte(cfg), 0o600)
	h.env = map[string]string{"STATION_HOME": home, "STATION_NO_DAEMON": "1", "STATION_LLM_BASE_URL": h.llm.URL, "STATION_LLM_API_KEY": h.llm.Key, "STATION_LLM_MODEL": llmtest.DefaultModel}
	for _, m := range []string{"hello", "stripe-invoicing"} {
		stationEnv(t, h.env, "module", "install", "--yes", moduleDir(t, m)).want(t, 0)
	}
	stationEnvIn(t, h.env, wfStripeKey+"\n", "secret", "set", "STRIPE_KEY", "--module", "dave/stripe-invoicing").want(t, 0)
	return h
}

func (h *wfHome) seen() (auth, customers []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.auth...), append([]string(nil), h.customers...)
}

func (h *wfHome) file(t *testing.T, name, src string) string {
	t.Helper()
	p := filepath.Join(h.files, name)
	if err := os.WriteFile(p, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// invoiceWorkflow's key is a secret input no step uses: the run records it
// as [secret] all the same.
const invoiceWorkflow = `name: invoice
inputs:
  customer: {required: true}
  key: {secret: true}
steps:
  - id: invoice
    uses: dave/stripe-invoicing create-invoice
    with: {customer: "${{ inputs.customer }}"}
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
		"secret STRIPE_KEY, sent only to api.stripe.com: set\n", "secret GROQ_KEY, sent only to api.groq.com: NOT SET\n",
		"warning: module dave/stripe-invoicing declares secret GROQ_KEY, which has no value",
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
		`inputs   {"customer":"cus_42","key":"[secret]"}`, `input    {"customer":"cus_42"}`, "attempt 1: succeeded", "allow dave/stripe-invoicing network api.stripe.com:443", "step note (llm): succeeded"} {
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
	r = stationEnv(t, h.env, "workflow", "run", file, "--inputs", `{"customer":"cus_7"}`, "--json").want(t, 0)
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

// TestWorkflowSecretsNeverShown: a secret input given on standard input
// reaches the modules (Stripe is asked for it), and the stored STRIPE_KEY
// reaches Stripe, but neither is in anything the CLI prints (run, its
// --json events, runs, show, with and without --json) nor in any file in
// STATION_HOME. A step that passes a secret its module does not declare
// is refused by check and by run, with the file and line.
func TestWorkflowSecretsNeverShown(t *testing.T) {
	h := newWFHome(t)
	const token = "tok_cli_Secret-77a1"
	file := h.file(t, "secret.yaml", `name: secret
inputs:
  token: {secret: true, required: true, description: an access token}
steps:
  - id: greeting
    uses: station/hello greet
    with: {name: "Bearer ${{ inputs.token }}"}
  - id: invoice
    uses: dave/stripe-invoicing create-invoice
    with: {customer: "${{ inputs.token }}"}
`)
	var printed []string
	r := stationEnvIn(t, h.env, `{"token":"`+token+`"}`, "workflow", "run", file, "--inputs", "-").want(t, 0)
	printed = append(printed, r.out, r.err)
	if !strings.Contains(r.out, `"greeting": "Hello, Bearer [secret]!"`) {
		t.Errorf("output %s: want the greeting with the value redacted", r.out)
	}
	r = stationEnvIn(t, h.env, `{"token":"`+token+`"}`, "workflow", "run", file, "--inputs", "-", "--json").want(t, 0)
	printed = append(printed, r.out, r.err)
	for _, args := range [][]string{{"runs"}, {"runs", "--json"}, {"show", "1"}, {"show", "1", "--json"}, {"show", "2", "--json"}, {"check", file}, {"check", file, "--json"}} {
		r := stationEnv(t, h.env, append([]string{"workflow"}, args...)...).want(t, 0)
		printed = append(printed, r.out, r.err)
	}
	var runs []struct {
		Inputs map[string]string `json:"inputs"`
	}
	if err := json.Unmarshal([]byte(printed[6]), &runs); err != nil || len(runs) != 2 || runs[0].Inputs["token"] != "[secret]" {
		t.Errorf("runs --json: want the input redacted (%v):\n%s", err, printed[6])
	}
	auth, customers := h.seen()
	if len(customers) != 2 || customers[0] != token || len(auth) != 2 || auth[0] != "Bearer "+wfStripeKey {
		t.Errorf("Stripe saw customers %q and Authorization %q, want the input's and the stored key's values", customers, auth)
	}
	for i, p := range printed {
		for _, v := range []string{token, wfStripeKey} {
			if strings.Contains(p, v) {
				t.Errorf("output %d holds a secret value:\n%s", i, p)
			}
		}
	}
	// No file in the home holds either value: the database, the log, the
	// sealed secrets.
	home := h.env["STATION_HOME"]
	n := 0
	filepath.WalkDir(home, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, _ := os.ReadFile(path)
		n++
		for _, v := range []string{token, wfStripeKey} {
			if bytes.Contains(b, []byte(v)) {
				t.Errorf("%s holds a secret value", path)
			}
		}
		return nil
	})
	if _, err := os.Stat(filepath.Join(home, "station.db")); err != nil || n < 3 {
		t.Fatalf("the home has %d files (%v)", n, err)
	}

	// A secret its module does not declare.
	bad := h.file(t, "bad.yaml", `steps:
  - id: greeting
    uses: station/hello greet
    with: {name: "${{ secrets.STRIPE_KEY }}"}
`)
	want := bad + `:4:18: step greeting: module station/hello does not declare secret STRIPE_KEY (it declares no secrets)`
	for _, cmd := range []string{"check", "run"} {
		r := stationEnv(t, h.env, "workflow", cmd, bad).want(t, 1)
		if !strings.Contains(r.err, want) {
			t.Errorf("workflow %s of a secret the module does not declare:\n%q\n%q\nwant %s", cmd, r.err, r.out, want)
		}
	}
	r = stationEnv(t, h.env, "workflow", "runs", "--json").want(t, 0)
	if err := json.Unmarshal([]byte(r.out), &runs); err != nil || len(runs) != 2 {
		t.Errorf("a refused workflow was recorded:\n%s", r.out)
	}
}
