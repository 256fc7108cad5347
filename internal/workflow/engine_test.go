package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/station-dev/station/internal/fixture"
	"github.com/station-dev/station/internal/host"
	"github.com/station-dev/station/internal/llm"
	"github.com/station-dev/station/internal/sandbox"
	"github.com/station-dev/station/internal/store"
)

// modules is a fake dispatch: each "module command" has a function; calls
// are counted per step trace prefix.
type modules struct {
	mu    sync.Mutex
	fns   map[string]func(ctx context.Context, input []byte) ([]byte, error)
	calls map[string]int // by "module command"
	trace []string
}

func (m *modules) run(ctx context.Context, module, command string, input []byte) ([]byte, error) {
	key := module + " " + command
	m.mu.Lock()
	fn := m.fns[key]
	m.calls[key]++
	m.trace = append(m.trace, sandbox.TraceFrom(ctx))
	m.mu.Unlock()
	if fn == nil {
		return nil, fmt.Errorf("module %s is not installed", module)
	}
	return fn(ctx, input)
}

func (m *modules) count(key string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls[key]
}

// fakeLLM answers every completion with content, recording requests.
type fakeLLM struct {
	mu      sync.Mutex
	reqs    []llm.Request
	content string
}

func (f *fakeLLM) Complete(ctx context.Context, req llm.Request) (*llm.Response, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reqs = append(f.reqs, req)
	return &llm.Response{Model: "fake-1", Content: f.content, FinishReason: "stop", Usage: llm.Usage{PromptTokens: 10, CompletionTokens: 5, TotalTokens: 15}}, nil
}

type harness struct {
	t      *testing.T
	path   string
	st     *store.Store
	mods   *modules
	llm    *fakeLLM
	sleeps []time.Duration
	events []Event
	mu     sync.Mutex
}

func newHarness(t *testing.T) *harness {
	h := &harness{t: t, path: filepath.Join(t.TempDir(), "station.db"), mods: &modules{fns: map[string]func(context.Context, []byte) ([]byte, error){}, calls: map[string]int{}}, llm: &fakeLLM{content: "a summary"}}
	h.reopen()
	return h
}

func (h *harness) reopen() {
	if h.st != nil {
		h.st.Close()
	}
	st, err := store.Open(h.path)
	if err != nil {
		h.t.Fatal(err)
	}
	h.st = st
	h.t.Cleanup(func() { st.Close() })
}

func (h *harness) engine() *Engine {
	return &Engine{
		Run: h.mods.run, LLM: h.llm, Store: h.st,
		Sleep: func(ctx context.Context, d time.Duration) error {
			h.mu.Lock()
			h.sleeps = append(h.sleeps, d)
			h.mu.Unlock()
			return ctx.Err()
		},
		Events: func(ev Event) {
			h.mu.Lock()
			h.events = append(h.events, ev)
			h.mu.Unlock()
		},
	}
}

func (h *harness) handle(key string, fn func(ctx context.Context, input []byte) ([]byte, error)) {
	h.mods.mu.Lock()
	h.mods.fns[key] = fn
	h.mods.mu.Unlock()
}

func (h *harness) parse(src string) *Workflow {
	h.t.Helper()
	wf, err := Parse("/w/test.yaml", []byte(src))
	if err != nil {
		h.t.Fatal(err)
	}
	return wf
}

func (h *harness) run(id int64) store.WorkflowRun {
	h.t.Helper()
	r, err := h.st.WorkflowRun(context.Background(), id)
	if err != nil {
		h.t.Fatal(err)
	}
	return r
}

func statuses(r store.WorkflowRun) string {
	var out []string
	for _, s := range r.Steps {
		out = append(out, fmt.Sprintf("%s=%s/%d", s.Step, s.Status, s.Attempts))
	}
	return strings.Join(out, " ")
}

func echo(ctx context.Context, in []byte) ([]byte, error) { return in, nil }

func TestDataFlowAndOutput(t *testing.T) {
	h := newHarness(t)
	h.handle("dave/stripe create-invoice", func(ctx context.Context, in []byte) ([]byte, error) {
		var req struct {
			Customer string `json:"customer"`
			Amount   int    `json:"amount"`
		}
		if err := json.Unmarshal(in, &req); err != nil {
			return nil, err
		}
		return fmt.Appendf(nil, `{"id":"in_%s","amount_due":%d,"status":"draft"}`, req.Customer, req.Amount), nil
	})
	wf := h.parse(`
inputs:
  customer: {required: true}
  amount: {type: integer, default: 1200}
steps:
  - id: invoice
    uses: dave/stripe create-invoice
    with: {customer: "${{ inputs.customer }}", amount: "${{ inputs.amount * 2 }}"}
  - id: summary
    uses: llm
    with:
      system: Be brief.
      prompt: "Invoice ${{ steps.invoice.output.id }} is ${{ steps.invoice.output.status }}"
      max_tokens: 50
output:
  id: ${{ steps.invoice.output.id }}
  due: ${{ steps.invoice.output.amount_due }}
  summary: ${{ steps.summary.output.content }}
  tokens: ${{ steps.summary.output.usage.total_tokens }}
`)
	res, err := h.engine().Start(context.Background(), wf, map[string]any{"customer": "42"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(res.Output), `{"due":2400,"id":"in_42","summary":"a summary","tokens":15}`; got != want {
		t.Errorf("output = %s, want %s", got, want)
	}
	want := []llm.Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Invoice in_42 is draft"}}
	if len(h.llm.reqs) != 1 || !reflect.DeepEqual(h.llm.reqs[0].Messages, want) || h.llm.reqs[0].MaxTokens != 50 {
		t.Errorf("llm requests = %+v", h.llm.reqs)
	}
	r := h.run(res.RunID)
	if r.Status != store.RunSucceeded || statuses(r) != "invoice=succeeded/1 summary=succeeded/1" || string(r.Inputs) != `{"amount":1200,"customer":"42"}` {
		t.Errorf("run = %s %s %s", r.Status, statuses(r), r.Inputs)
	}
	if got := string(r.Steps[0].Input); got != `{"amount":2400,"customer":"42"}` {
		t.Errorf("stored input = %s", got)
	}
	// The module call carried the step's trace.
	if got, want := h.mods.trace, []string{Trace(res.RunID, "invoice", 1)}; !reflect.DeepEqual(got, want) {
		t.Errorf("traces = %v, want %v", got, want)
	}
	if got := r.Steps[0].AttemptLog[0].Trace; got != Trace(res.RunID, "invoice", 1) {
		t.Errorf("stored trace = %s", got)
	}
}

// TestParallelStepsOverlap proves that independent steps run at the same
// time: each waits, inside its module call, for the other to have entered
// its own. Run one after the other, neither could finish.
func TestParallelStepsOverlap(t *testing.T) {
	h := newHarness(t)
	var barrier sync.WaitGroup
	barrier.Add(2)
	meet := func(ctx context.Context, in []byte) ([]byte, error) {
		barrier.Done()
		done := make(chan struct{})
		go func() { barrier.Wait(); close(done) }()
		select {
		case <-done:
			return []byte(`"met"`), nil
		case <-ctx.Done():
			return nil, errors.New("the other step never started while this one ran")
		}
	}
	h.handle("a/a run", meet)
	h.handle("b/b run", meet)
	h.handle("c/c run", echo)
	wf := h.parse(`
steps:
  - {id: a, uses: a/a run, timeout: 20s}
  - {id: b, uses: b/b run, timeout: 20s}
  - {id: c, uses: c/c run, with: ["${{ steps.a.output }}", "${{ steps.b.output }}"]}
output: ${{ steps.c.output }}
`)
	res, err := h.engine().Start(context.Background(), wf, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(res.Output); got != `["met","met"]` {
		t.Errorf("output = %s", got)
	}
}

// TestMaxParallel checks that no more than max_parallel steps run at once
// and that the bound is reached.
func TestMaxParallel(t *testing.T) {
	h := newHarness(t)
	var inflight, peak atomic.Int32
	release := make(chan struct{})
	h.handle("a/a run", func(ctx context.Context, in []byte) ([]byte, error) {
		n := inflight.Add(1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		defer inflight.Add(-1)
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return []byte("1"), nil
	})
	var steps strings.Builder
	for i := range 6 {
		fmt.Fprintf(&steps, "  - {id: s%d, uses: a/a run}\n", i)
	}
	wf := h.parse("max_parallel: 2\nsteps:\n" + steps.String())
	done := make(chan error, 1)
	go func() {
		_, err := h.engine().Start(context.Background(), wf, nil)
		done <- err
	}()
	for range 6 {
		fixture.Eventuallyf(t, 20*time.Second, func() bool { return inflight.Load() == 2 || (inflight.Load() > 0 && h.mods.count("a/a run") == 6) },
			"two steps running at once, or the last one")
		release <- struct{}{}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := peak.Load(); got != 2 {
		t.Errorf("peak concurrency %d, want 2", got)
	}
}

func TestRetriesWithBackoff(t *testing.T) {
	h := newHarness(t)
	var calls atomic.Int32
	h.handle("a/a run", func(ctx context.Context, in []byte) ([]byte, error) {
		if calls.Add(1) < 4 {
			return nil, &host.CallError{Module: "a/a", Command: "run", Kind: host.KindCommand, Msg: "flaky"}
		}
		return []byte(`{"ok":true}`), nil
	})
	wf := h.parse(`
steps:
  - id: s
    uses: a/a run
    retry: {attempts: 5, backoff: 1s, max_backoff: 3s}
`)
	res, err := h.engine().Start(context.Background(), wf, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := []time.Duration{time.Second, 2 * time.Second, 3 * time.Second}; !reflect.DeepEqual(h.sleeps, want) {
		t.Errorf("backoff = %v, want %v", h.sleeps, want)
	}
	r := h.run(res.RunID)
	if statuses(r) != "s=succeeded/4" {
		t.Errorf("steps = %s", statuses(r))
	}
	log := r.Steps[0].AttemptLog
	if len(log) != 4 || log[0].Status != store.StepFailed || log[0].ErrorKind != "command" || !strings.Contains(log[0].Error, "flaky") || log[3].Status != store.StepSucceeded {
		t.Errorf("attempt log = %+v", log)
	}
	var kinds []EventKind
	for _, ev := range h.events {
		kinds = append(kinds, ev.Kind)
	}
	want := []EventKind{EventRunStarted, EventStepStarted, EventStepRetrying, EventStepStarted, EventStepRetrying, EventStepStarted, EventStepRetrying, EventStepStarted, EventStepSucceeded, EventRunFinished}
	if !reflect.DeepEqual(kinds, want) {
		t.Errorf("events = %v, want %v", kinds, want)
	}
}

func TestRetriesExhaustedAndNotRetryable(t *testing.T) {
	tests := []struct {
		name      string
		err       error
		wantCalls int
		wantKind  string
	}{
		{"command error, all attempts", &host.CallError{Kind: host.KindCommand, Msg: "down"}, 3, "command"},
		{"sandbox violation", &host.CallError{Kind: host.KindCommand, Violation: sandbox.Deny("a/a", sandbox.Network, "evil.example:443", "is not in its allowlist")}, 1, "violation"},
		{"input refused", &host.CallError{Kind: host.KindInput, Msg: "bad"}, 1, "input"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.handle("a/a run", func(ctx context.Context, in []byte) ([]byte, error) { return nil, tt.err })
			h.handle("b/b run", echo)
			wf := h.parse("steps:\n  - {id: s, uses: a/a run, retry: {attempts: 3}}\n  - {id: after, uses: b/b run, needs: s}\n")
			res, err := h.engine().Start(context.Background(), wf, nil)
			if err == nil || !errors.Is(err, tt.err) {
				t.Fatalf("err = %v, want it to wrap %v", err, tt.err)
			}
			if !strings.HasPrefix(err.Error(), "workflow test: step s: ") {
				t.Errorf("error %q does not name the workflow and step", err)
			}
			if got := h.mods.count("a/a run"); got != tt.wantCalls {
				t.Errorf("calls = %d, want %d", got, tt.wantCalls)
			}
			r := h.run(res.RunID)
			if r.Status != store.RunFailed || statuses(r) != fmt.Sprintf("s=failed/%d after=pending/0", tt.wantCalls) {
				t.Errorf("run = %s %s", r.Status, statuses(r))
			}
			if got := r.Steps[0].AttemptLog[0].ErrorKind; got != tt.wantKind {
				t.Errorf("error kind = %s, want %s", got, tt.wantKind)
			}
			if h.mods.count("b/b run") != 0 {
				t.Error("a step after a failed one ran")
			}
		})
	}
}

func TestTimeout(t *testing.T) {
	h := newHarness(t)
	h.handle("a/a run", func(ctx context.Context, in []byte) ([]byte, error) {
		<-ctx.Done()
		return nil, &host.CallError{Module: "a/a", Command: "run", Kind: host.KindTimeout, Msg: "deadline passed"}
	})
	wf := h.parse("steps:\n  - {id: slow, uses: a/a run, timeout: 10ms, retry: {attempts: 2}}\n")
	res, err := h.engine().Start(context.Background(), wf, nil)
	var ce *host.CallError
	if err == nil || !errors.As(err, &ce) || !strings.Contains(err.Error(), "step slow timed out after 10ms") {
		t.Fatalf("err = %v, want a timeout that keeps the *host.CallError", err)
	}
	r := h.run(res.RunID)
	if statuses(r) != "slow=failed/2" || r.Steps[0].AttemptLog[0].ErrorKind != "timeout" {
		t.Errorf("run = %s %+v", statuses(r), r.Steps[0].AttemptLog)
	}
}

func TestContinueOnErrorAndConditions(t *testing.T) {
	h := newHarness(t)
	h.handle("a/a run", func(ctx context.Context, in []byte) ([]byte, error) { return nil, errors.New("card declined") })
	h.handle("b/b run", echo)
	wf := h.parse(`
steps:
  - {id: charge, uses: a/a run, continue_on_error: true}
  - id: notify
    uses: b/b run
    if: steps.charge.status == "failed"
    with: {why: "${{ steps.charge.error }}"}
  - id: receipt
    uses: b/b run
    if: ${{ steps.charge.status == "succeeded" }}
  - id: last
    uses: b/b run
    with: {receipt: "${{ steps.receipt.status }}"}
output:
  notified: ${{ steps.notify.output.why }}
  last: ${{ steps.last.output }}
`)
	res, err := h.engine().Start(context.Background(), wf, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(res.Output), `{"last":{"receipt":"skipped"},"notified":"card declined"}`; got != want {
		t.Errorf("output = %s, want %s", got, want)
	}
	r := h.run(res.RunID)
	if got, want := statuses(r), "charge=failed/1 notify=succeeded/1 receipt=skipped/0 last=succeeded/1"; got != want {
		t.Errorf("steps = %s, want %s", got, want)
	}
	if !r.Steps[0].Continued {
		t.Error("the failed step is not marked continued")
	}
}

func TestTemplateFailureFailsTheStep(t *testing.T) {
	h := newHarness(t)
	h.handle("a/a run", func(ctx context.Context, in []byte) ([]byte, error) { return []byte(`{"n":1}`), nil })
	h.handle("b/b run", echo)
	wf := h.parse("steps:\n  - {id: a, uses: a/a run}\n  - {id: b, uses: b/b run, with: '${{ steps.a.output.n.deep }}', retry: {attempts: 3}}\n")
	res, err := h.engine().Start(context.Background(), wf, nil)
	if err == nil || !strings.Contains(err.Error(), "step b: with: ${{ steps.a.output.n.deep }}") {
		t.Fatalf("err = %v", err)
	}
	r := h.run(res.RunID)
	if statuses(r) != "a=succeeded/1 b=failed/1" || r.Steps[1].AttemptLog[0].ErrorKind != "template" || h.mods.count("b/b run") != 0 {
		t.Errorf("run = %s %+v", statuses(r), r.Steps[1].AttemptLog)
	}
}

func TestLLMStep(t *testing.T) {
	h := newHarness(t)
	h.llm.content = `{"risk": "low", "score": 3}`
	wf := h.parse(`
steps:
  - id: classify
    uses: llm
    with: {prompt: classify this, json: true, model: small, temperature: 0.5}
output: ${{ steps.classify.output.json.score + 1 }}
`)
	res, err := h.engine().Start(context.Background(), wf, nil)
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Output) != "4" {
		t.Errorf("output = %s", res.Output)
	}
	req := h.llm.reqs[0]
	if !req.JSON || req.Model != "small" || req.Temperature == nil || *req.Temperature != 0.5 {
		t.Errorf("request = %+v", req)
	}
	r := h.run(res.RunID)
	var out LLMOutput
	if err := json.Unmarshal(r.Steps[0].Output, &out); err != nil || out.Content != h.llm.content || out.Usage.TotalTokens != 15 || out.Model != "fake-1" {
		t.Errorf("stored output = %s (%v)", r.Steps[0].Output, err)
	}

	// Without a provider the step fails at once, saying what to do.
	e := h.engine()
	e.LLM = nil
	_, err = e.Start(context.Background(), wf, nil)
	if !errors.Is(err, ErrNoLLM) {
		t.Errorf("without a provider: %v", err)
	}
	// An answer that is not JSON fails a json step.
	h.llm.content = "sure! here it is"
	if _, err = h.engine().Start(context.Background(), wf, nil); err == nil || !strings.Contains(err.Error(), "asked for JSON") {
		t.Errorf("non-JSON answer: %v", err)
	}
}

// TestInterruptAndResume stops a run in the middle of its second step
// (cancelling, as Ctrl-C does), then resumes it: the first step is not run
// again, its output is reused, and the run finishes.
func TestInterruptAndResume(t *testing.T) {
	h := newHarness(t)
	ctx, cancel := context.WithCancel(context.Background())
	h.handle("a/a run", func(ctx context.Context, in []byte) ([]byte, error) { return []byte(`{"id":"in_1"}`), nil })
	var block atomic.Bool
	block.Store(true)
	h.handle("b/b run", func(c context.Context, in []byte) ([]byte, error) {
		if block.Load() {
			cancel()
			<-c.Done()
			return nil, &host.CallError{Kind: host.KindBusy, Msg: "canceled"}
		}
		return in, nil
	})
	wf := h.parse(`
steps:
  - {id: a, uses: a/a run}
  - {id: b, uses: b/b run, with: {from: "${{ steps.a.output.id }}"}}
output: ${{ steps.b.output }}
`)
	res, err := h.engine().Start(ctx, wf, nil)
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), fmt.Sprintf("station workflow resume %d", res.RunID)) {
		t.Fatalf("err = %v, want an interruption that says how to resume", err)
	}
	r := h.run(res.RunID)
	if r.Status != store.RunInterrupted || statuses(r) != "a=succeeded/1 b=running/1" {
		t.Fatalf("interrupted run = %s %s", r.Status, statuses(r))
	}

	h.reopen()
	block.Store(false)
	res2, err := h.engine().Resume(context.Background(), wf, res.RunID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if string(res2.Output) != `{"from":"in_1"}` {
		t.Errorf("output = %s", res2.Output)
	}
	if got := h.mods.count("a/a run"); got != 1 {
		t.Errorf("the finished step ran %d times, want once", got)
	}
	r = h.run(res.RunID)
	if r.Status != store.RunSucceeded || statuses(r) != "a=succeeded/1 b=succeeded/2" || r.Resumes != 1 {
		t.Errorf("resumed run = %s %s resumes=%d", r.Status, statuses(r), r.Resumes)
	}
	if log := r.Steps[1].AttemptLog; len(log) != 2 || log[0].ErrorKind != "interrupted" || log[1].Trace != Trace(res.RunID, "b", 2) {
		t.Errorf("attempt log = %+v", log)
	}
	// A finished run cannot be resumed; a changed file is refused.
	if _, err := h.engine().Resume(context.Background(), wf, res.RunID, nil); err == nil || !strings.Contains(err.Error(), "succeeded") {
		t.Errorf("resume of a finished run: %v", err)
	}
}

// killable is a store that dies: after kill, every write fails, as if the
// process had been killed at that instant (nothing more reaches the file).
type killable struct {
	*store.Store
	dead atomic.Bool
}

var errKilled = errors.New("killed")

func (k *killable) StartStepAttempt(ctx context.Context, a store.AttemptStart) error {
	if k.dead.Load() {
		return errKilled
	}
	return k.Store.StartStepAttempt(ctx, a)
}

func (k *killable) FinishStepAttempt(ctx context.Context, a store.AttemptEnd) error {
	if k.dead.Load() {
		return errKilled
	}
	return k.Store.FinishStepAttempt(ctx, a)
}

func (k *killable) SkipStep(ctx context.Context, id int64, owner, step string, at time.Time) error {
	if k.dead.Load() {
		return errKilled
	}
	return k.Store.SkipStep(ctx, id, owner, step, at)
}

func (k *killable) FinishWorkflowRun(ctx context.Context, id int64, owner string, s store.RunStatus, out []byte, msg string, at time.Time) error {
	if k.dead.Load() {
		return errKilled
	}
	return k.Store.FinishWorkflowRun(ctx, id, owner, s, out, msg, at)
}

// TestKilledMidRun kills the station (its store) while two parallel steps
// run, one of them already finished: the record is consistent, recovery
// marks the run interrupted, and the resume runs only what did not finish.
func TestKilledMidRun(t *testing.T) {
	h := newHarness(t)
	k := &killable{Store: h.st}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	aDone := make(chan struct{})
	h.handle("a/a run", func(ctx context.Context, in []byte) ([]byte, error) { return []byte(`"A"`), nil })
	var killed atomic.Bool
	h.handle("b/b run", func(c context.Context, in []byte) ([]byte, error) {
		if !killed.Load() {
			<-aDone // a has finished and been recorded
			killed.Store(true)
			k.dead.Store(true) // the process dies here
			cancel()
			return nil, errors.New("killed mid-call")
		}
		return []byte(`"B"`), nil
	})
	h.handle("c/c run", echo)
	wf := h.parse(`
steps:
  - {id: a, uses: a/a run}
  - {id: b, uses: b/b run}
  - {id: c, uses: c/c run, with: ["${{ steps.a.output }}", "${{ steps.b.output }}"]}
output: ${{ steps.c.output }}
`)
	e := h.engine()
	e.Store = k
	e.Owner = "1:2:dead-process"
	e.Events = func(ev Event) {
		if ev.Kind == EventStepSucceeded && ev.Step == "a" {
			close(aDone)
		}
	}
	res, err := e.Start(ctx, wf, nil)
	if !errors.Is(err, errKilled) {
		t.Fatalf("err = %v, want the store's failure", err)
	}
	// What the file says after the "crash".
	h.reopen()
	r := h.run(res.RunID)
	if r.Status != store.RunRunning || statuses(r) != "a=succeeded/1 b=running/1 c=pending/0" {
		t.Fatalf("record after the kill = %s %s", r.Status, statuses(r))
	}
	// Resuming a run that looks alive is refused; recovery finds its
	// process gone.
	if _, err := h.engine().Resume(context.Background(), wf, res.RunID, nil); err == nil || !strings.Contains(err.Error(), "still running") {
		t.Fatalf("resume of a running run: %v", err)
	}
	rec := h.engine()
	rec.Alive = func(r store.WorkflowRun) bool { return r.Owner != "1:2:dead-process" }
	ids, err := rec.Recover(context.Background())
	if err != nil || len(ids) != 1 || ids[0] != res.RunID {
		t.Fatalf("recover = %v, %v", ids, err)
	}
	if r := h.run(res.RunID); r.Status != store.RunInterrupted {
		t.Fatalf("after recovery: %s", r.Status)
	}
	// A changed file is refused, with a message that says why.
	changed := h.parse(strings.Replace(`
steps:
  - {id: a, uses: a/a run}
  - {id: b, uses: b/b run}
  - {id: c, uses: c/c run, with: ["${{ steps.a.output }}", "${{ steps.b.output }}"]}
output: ${{ steps.c.output }}
`, "\noutput:", "\n# edited\noutput:", 1))
	if _, err := h.engine().Resume(context.Background(), changed, res.RunID, nil); !errors.Is(err, ErrChanged) || !strings.Contains(err.Error(), "changed since the run started") {
		t.Errorf("resume with a changed file: %v", err)
	}
	res2, err := h.engine().Resume(context.Background(), wf, res.RunID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if string(res2.Output) != `["A","B"]` {
		t.Errorf("output = %s", res2.Output)
	}
	if got := h.mods.count("a/a run"); got != 1 {
		t.Errorf("step a ran %d times, want once", got)
	}
	if got := statuses(h.run(res.RunID)); got != "a=succeeded/1 b=succeeded/2 c=succeeded/1" {
		t.Errorf("steps = %s", got)
	}
}

func TestAlive(t *testing.T) {
	me := ProcessOwner()
	if Alive(store.WorkflowRun{ID: 99, Owner: me}) {
		t.Error("a run this process is not executing is alive")
	}
	active.add(99)
	if !Alive(store.WorkflowRun{ID: 99, Owner: me}) {
		t.Error("a run this process executes is not alive")
	}
	active.remove(99)
	for _, owner := range []string{"", "garbage", "0:1:x", "999999999:1:x"} {
		if Alive(store.WorkflowRun{Owner: owner}) {
			t.Errorf("owner %q is alive", owner)
		}
	}
	// Another live process (pid 1) with the wrong start time is a reused pid.
	if start := processStart(1); start != "" {
		if !Alive(store.WorkflowRun{Owner: "1:" + start + ":x"}) {
			t.Error("pid 1 with its start time is not alive")
		}
		if Alive(store.WorkflowRun{Owner: "1:" + start + "0:x"}) {
			t.Error("pid 1 with another start time is alive")
		}
	}
}

// BenchmarkRun measures the engine's own cost per step (persisting every
// transition in SQLite, rendering templates) with a module call that
// returns at once.
func BenchmarkRun(b *testing.B) {
	st, err := store.Open(filepath.Join(b.TempDir(), "station.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	var steps strings.Builder
	for i := range 10 {
		fmt.Fprintf(&steps, "  - {id: s%d, uses: a/a run, with: {n: \"${{ inputs.n + %d }}\"}}\n", i, i)
	}
	wf, err := Parse("bench.yaml", []byte("inputs:\n  n: {type: integer, default: 1}\nsteps:\n"+steps.String()))
	if err != nil {
		b.Fatal(err)
	}
	e := &Engine{Run: func(ctx context.Context, m, c string, in []byte) ([]byte, error) { return in, nil }, Store: st}
	for b.Loop() {
		if _, err := e.Start(context.Background(), wf, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*10), "ns/step")
}
