package workflow_test

// End-to-end tests: real modules in a real station, every module call
// through Station.Run, the llm step through the station's real LLM client
// to an OpenAI-compatible fixture. Every server is on 127.0.0.1; names such
// as api.stripe.com reach fixtures through the station's operator
// configuration.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/station-dev/station/internal/fixture"
	"github.com/station-dev/station/internal/llm"
	"github.com/station-dev/station/internal/llm/llmtest"
	"github.com/station-dev/station/internal/probe"
	"github.com/station-dev/station/internal/sandbox"
	"github.com/station-dev/station/internal/station"
	"github.com/station-dev/station/internal/stationhttp"
	"github.com/station-dev/station/internal/store"
	"github.com/station-dev/station/internal/wasmbuild"
	"github.com/station-dev/station/internal/workflow"
)

type world struct {
	t            *testing.T
	st           *station.Station
	stripe, evil *fixture.Server
	stripeMux    *http.ServeMux
	llm          *llmtest.Server
}

// sharedCache is the compilation cache of every test station, shared with
// the other packages' tests and kept on disk (wasmbuild.CacheForTest):
// each test module is compiled once, in process (the compile child a
// station without a cache uses is tested in internal/host and
// internal/station, and under -race it is far slower than the deadline).
var sharedCache = wasmbuild.CacheForTest

func newWorld(t *testing.T) *world {
	t.Helper()
	home := t.TempDir()
	ca := fixture.NewCA(t)
	w := &world{t: t, stripeMux: http.NewServeMux(), llm: llmtest.New(t)}
	w.stripeMux.HandleFunc("/", func(rw http.ResponseWriter, r *http.Request) { fmt.Fprint(rw, "hello from stripe") })
	w.stripe = ca.TLSServer(t, w.stripeMux, "api.stripe.com")
	w.evil = ca.TLSServer(t, http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) { fmt.Fprint(rw, "evil") }), "evil.example")
	cfg := fmt.Sprintf("network:\n  resolve:\n    - api.stripe.com:443=%s\n    - evil.example:443=%s\n  extra_ca: %s\n  allow_private: [127.0.0.0/8]\n",
		w.stripe.Addr, w.evil.Addr, ca.WriteFile(t, home))
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := station.Open(context.Background(), home, station.Options{Cache: sharedCache()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close(context.Background()) })
	w.st = st
	return w
}

// install installs wasm as module id with the given manifest body (the
// lines after wasm:).
func (w *world) install(id, body string, wasm []byte) {
	w.t.Helper()
	dir := w.t.TempDir()
	m := fmt.Sprintf("id: %s\nversion: \"1.0.0\"\nwasm: module.wasm\n%s", id, body)
	os.WriteFile(filepath.Join(dir, "module.yaml"), []byte(m), 0o600)
	os.WriteFile(filepath.Join(dir, "module.wasm"), wasm, 0o600)
	if _, err := w.st.Install(context.Background(), dir, func(station.Plan) (bool, error) { return true, nil }); err != nil {
		w.t.Fatalf("install %s: %v", id, err)
	}
}

func (w *world) engine() *workflow.Engine {
	return &workflow.Engine{
		Run:   w.st.Run,
		LLM:   llm.New(w.llm.Config(), stationhttp.NewClient(stationhttp.Options{UserAgent: "station-llm"})),
		Store: w.st.Store,
	}
}

func (w *world) audit(f store.AuditFilter) []store.AuditRecord {
	w.t.Helper()
	if err := w.st.Audit.Flush(context.Background()); err != nil {
		w.t.Fatal(err)
	}
	f.Limit = 100000
	recs, err := w.st.Store.Audit(context.Background(), f)
	if err != nil {
		w.t.Fatal(err)
	}
	return recs
}

// TestGatedStepAndStationLLMConcurrently is the old system's failure class,
// end to end: a step runs a module gated to api.stripe.com while, at the
// same time, the station's llm step calls a provider on a host that is in no
// module's allowlist. Each call is held open until the other has started,
// so both are in flight together; both succeed, the module's call is
// decided by its own allowlist only, and the station's call is not a
// module's (nothing about it is in the audit log).
func TestGatedStepAndStationLLMConcurrently(t *testing.T) {
	w := newWorld(t)
	const gated = "test/stripe-only"
	w.install(gated, "commands:\n  - name: run\nrequires:\n  network:\n    allow: [api.stripe.com]\n", probe.Wasm(t))

	stripeEntered, llmArrived := make(chan struct{}), make(chan struct{})
	var once1, once2 sync.Once
	w.stripeMux.HandleFunc("/slow", func(rw http.ResponseWriter, r *http.Request) {
		once1.Do(func() { close(stripeEntered) })
		select {
		case <-llmArrived:
			fmt.Fprint(rw, "charged while the llm call was in flight")
		case <-time.After(30 * time.Second):
			http.Error(rw, "the llm call never arrived while this request was open", http.StatusGatewayTimeout)
		}
	})
	w.llm.Handle(func(llmtest.ChatRequest) llmtest.Reply {
		once2.Do(func() { close(llmArrived) })
		return llmtest.Reply{Content: "noted", Hold: stripeEntered}
	})

	wf, err := workflow.Parse("concurrent.yaml", []byte(fmt.Sprintf(`
steps:
  - id: charge
    uses: %s run
    with: {actions: [{op: http, method: GET, url: "https://api.stripe.com/slow"}]}
  - id: note
    uses: llm
    with: {prompt: "write a note", max_tokens: 10}
output:
  charge: ${{ steps.charge.output.results[0] }}
  note: ${{ steps.note.output.content }}
`, gated)))
	if err != nil {
		t.Fatal(err)
	}
	res, err := w.engine().Start(context.Background(), wf, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := string(res.Output)
	for _, want := range []string{`"note":"noted"`, `"ok":true`, `"status":200`, `charged while the llm call was in flight`} {
		if !strings.Contains(out, want) {
			t.Errorf("output %s does not contain %s", out, want)
		}
	}
	if got := w.llm.Count(); got != 1 {
		t.Errorf("the llm fixture got %d requests, want 1", got)
	}
	// The only decisions are the module's own, allowing its request, tagged
	// with its step: the station's LLM call is not a module's.
	recs := w.audit(store.AuditFilter{})
	if len(recs) == 0 {
		t.Fatal("no audit records for the module's request")
	}
	for _, r := range recs {
		if r.Module != gated || !r.Allowed || !strings.HasPrefix(r.Target, "api.stripe.com") || r.Trace != workflow.Trace(res.RunID, "charge", 1) {
			t.Errorf("audit record %+v: want an allowed api.stripe.com decision of %s with the step's trace", r, gated)
		}
	}
}

// TestStepRefusedOffListHostsAsUnderRun checks that a workflow step's
// module is refused a host outside its allowlist exactly as under
// station run: the same violation, no connection to the host, and the
// denial in the audit log with the step's trace.
func TestStepRefusedOffListHostsAsUnderRun(t *testing.T) {
	w := newWorld(t)
	const id = "dave/stripe-invoicing"
	manifest, err := os.ReadFile(filepath.Join(repoRoot(t), "examples", "stripe-invoicing", "module.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	body := string(manifest)[strings.Index(string(manifest), "commands:"):]
	w.install(id, body, wasmbuild.ForTest(t, "examples/stripe-invoicing"))

	input := []byte(`{"url":"https://evil.example/steal"}`)
	_, direct := w.st.Run(context.Background(), id, "fetch", input)
	var want *sandbox.Violation
	if !errors.As(direct, &want) {
		t.Fatalf("station run: %v, want a sandbox violation", direct)
	}

	wf, err := workflow.Parse("fetch.yaml", []byte(`
steps:
  - id: allowed
    uses: dave/stripe-invoicing fetch
    with: {url: "https://api.stripe.com/v1/ok"}
  - id: steal
    uses: dave/stripe-invoicing fetch
    needs: allowed
    with: {url: "https://evil.example/steal"}
    retry: {attempts: 3}
`))
	if err != nil {
		t.Fatal(err)
	}
	res, err := w.engine().Start(context.Background(), wf, nil)
	var got *sandbox.Violation
	if !errors.As(err, &got) {
		t.Fatalf("workflow: %v, want a sandbox violation", err)
	}
	if *got != *want {
		t.Errorf("violation in the workflow %+v, under station run %+v", got, want)
	}
	if wantMsg := "workflow fetch: step steal: " + direct.Error(); err.Error() != wantMsg {
		t.Errorf("error:\n got %s\nwant %s", err, wantMsg)
	}
	if n := w.evil.Accepted(); n != 0 {
		t.Errorf("evil.example accepted %d connections, want 0", n)
	}
	run, err := w.st.Store.WorkflowRun(context.Background(), res.RunID)
	if err != nil {
		t.Fatal(err)
	}
	steal := run.Steps[1]
	if steal.Status != store.StepFailed || steal.Attempts != 1 || steal.AttemptLog[0].ErrorKind != "violation" {
		t.Errorf("step = %+v (a violation is not retried)", steal)
	}
	if run.Steps[0].Status != store.StepSucceeded {
		t.Errorf("allowed step = %+v", run.Steps[0])
	}
	denied := w.audit(store.AuditFilter{DeniedOnly: true, Trace: workflow.Trace(res.RunID, "steal", 1)})
	if len(denied) != 1 || denied[0].Module != id || denied[0].Target != want.Target || denied[0].Reason != want.Reason || denied[0].Command != "fetch" {
		t.Errorf("denials of the step = %+v, want the same denial as under station run (%+v)", denied, want)
	}
	allowed := w.audit(store.AuditFilter{Trace: workflow.Trace(res.RunID, "allowed", 1)})
	if len(allowed) == 0 {
		t.Error("the allowed step has no audit records")
	}
	for _, r := range allowed {
		if !r.Allowed || !strings.HasPrefix(r.Target, "api.stripe.com") {
			t.Errorf("decision of the allowed step %+v", r)
		}
	}
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := wasmbuild.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}
