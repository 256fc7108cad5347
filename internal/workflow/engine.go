package workflow

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/station-dev/station/internal/host"
	"github.com/station-dev/station/internal/llm"
	"github.com/station-dev/station/internal/sandbox"
	"github.com/station-dev/station/internal/store"
)

// RunFunc runs a module command. In a station it is (*station.Station).Run,
// the one dispatch entry point: a workflow step reaches a module exactly as
// `station run` does, under the same policy.
type RunFunc func(ctx context.Context, module, command string, input []byte) ([]byte, error)

// Store persists runs. *store.Store implements it; every method is one
// transaction, and every write names the owner of the run.
type Store interface {
	CreateWorkflowRun(ctx context.Context, r store.NewWorkflowRun) (int64, error)
	StartStepAttempt(ctx context.Context, a store.AttemptStart) error
	FinishStepAttempt(ctx context.Context, a store.AttemptEnd) error
	SkipStep(ctx context.Context, runID int64, owner, step string, at time.Time) error
	FinishWorkflowRun(ctx context.Context, id int64, owner string, status store.RunStatus, output []byte, errMsg string, at time.Time) error
	ClaimWorkflowRun(ctx context.Context, id int64, owner, digest string, at time.Time) (store.WorkflowRun, error)
	InterruptOrphanedRuns(ctx context.Context, alive func(store.WorkflowRun) bool, at time.Time) ([]int64, error)
	WorkflowRun(ctx context.Context, id int64) (store.WorkflowRun, error)
}

// Engine runs workflows. Run and Store are required; the rest have
// defaults. An Engine is safe for concurrent use by several runs.
type Engine struct {
	// Run dispatches module steps.
	Run RunFunc
	// LLM answers llm steps; nil makes them fail with a message that says
	// no provider is configured.
	LLM llm.Completer
	// Store persists the runs.
	Store Store
	// Events, if set, receives progress events, in order per step. It is
	// called from the steps' goroutines and must be safe for that.
	Events func(Event)
	// Sleep waits between retries; nil waits on a timer. It must return
	// early with ctx's error when ctx ends.
	Sleep func(ctx context.Context, d time.Duration) error
	// Now is the clock for timings; nil is time.Now.
	Now func() time.Time
	// Owner names this process in the runs it starts; "" is the process's
	// own name (ProcessOwner), which Alive recognizes.
	Owner string
	// Alive reports whether the process that owns a running run is still
	// running it; nil is Alive.
	Alive func(store.WorkflowRun) bool
}

// EventKind names a progress event.
type EventKind string

// The progress events.
const (
	EventRunStarted    EventKind = "run_started"
	EventRunResumed    EventKind = "run_resumed"
	EventStepReused    EventKind = "step_reused" // finished before the resume: its output is reused
	EventStepStarted   EventKind = "step_started"
	EventStepRetrying  EventKind = "step_retrying"
	EventStepSucceeded EventKind = "step_succeeded"
	EventStepFailed    EventKind = "step_failed"
	EventStepSkipped   EventKind = "step_skipped"
	EventRunFinished   EventKind = "run_finished"
)

// Event is one progress event.
type Event struct {
	Kind     EventKind `json:"event"`
	Time     time.Time `json:"time"`
	RunID    int64     `json:"run"`
	Workflow string    `json:"workflow,omitempty"`
	Step     string    `json:"step,omitempty"`
	Uses     string    `json:"uses,omitempty"`
	Attempt  int       `json:"attempt,omitempty"`
	// Duration is how long the attempt (step events) or the run
	// (run_finished) took; Delay how long a retry waits.
	Duration time.Duration `json:"-"`
	Delay    time.Duration `json:"-"`
	// DurationMS and DelayMS are Duration and Delay in milliseconds, for
	// JSON readers.
	DurationMS int64 `json:"duration_ms,omitempty"`
	DelayMS    int64 `json:"delay_ms,omitempty"`
	// Continued marks a step failure the run goes on after.
	Continued bool            `json:"continued,omitempty"`
	Error     string          `json:"error,omitempty"`
	Status    store.RunStatus `json:"status,omitempty"`
	Output    json.RawMessage `json:"output,omitempty"`
}

// Result is the end of a run (the daemon's answer to a run, in JSON).
type Result struct {
	RunID  int64           `json:"run"`
	Status store.RunStatus `json:"status"`
	// Output is the run's output when it succeeded.
	Output json.RawMessage `json:"output,omitempty"`
}

// Trace returns the trace of attempt n of step in run id: the audit
// records of the attempt's module call carry it.
func Trace(runID int64, step string, attempt int) string {
	return fmt.Sprintf("run/%d/step/%s/attempt/%d", runID, step, attempt)
}

func (e *Engine) now() time.Time {
	if e.Now != nil {
		return e.Now()
	}
	return time.Now()
}

func (e *Engine) owner() string {
	if e.Owner != "" {
		return e.Owner
	}
	return ProcessOwner()
}

func (e *Engine) sleep(ctx context.Context, d time.Duration) error {
	if e.Sleep != nil {
		return e.Sleep(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (e *Engine) emit(ev Event) {
	if e.Events == nil {
		return
	}
	if ev.Time.IsZero() {
		ev.Time = e.now()
	}
	ev.DurationMS = ev.Duration.Milliseconds()
	ev.DelayMS = ev.Delay.Milliseconds()
	e.Events(ev)
}

// Recover marks every running run whose process is gone as interrupted
// (resumable) and returns their ids. Commands that read or resume runs call
// it first.
func (e *Engine) Recover(ctx context.Context) ([]int64, error) {
	alive := e.Alive
	if alive == nil {
		alive = Alive
	}
	return e.Store.InterruptOrphanedRuns(ctx, alive, e.now())
}

// Start starts a run of wf with the given inputs (checked against its
// declarations, defaults filled in) and runs it to the end. The error is
// nil only when the run succeeded; a failed step's error is wrapped, so
// errors.As finds a *sandbox.Violation or a *host.CallError in it. The
// Result is non-nil once the run is recorded.
func (e *Engine) Start(ctx context.Context, wf *Workflow, inputs map[string]any) (*Result, error) {
	resolved, err := wf.ResolveInputs(inputs)
	if err != nil {
		return nil, err
	}
	raw, err := toJSON(resolved)
	if err != nil {
		return nil, fmt.Errorf("workflow %s: inputs: %w", wf.Name, err)
	}
	x := e.execution(wf)
	// What is stored is what a resume will see, exactly: the inputs
	// with each secret one's value replaced by Redacted.
	var values []string
	shown := make(map[string]any, len(resolved))
	for name, v := range resolved {
		shown[name] = v
		if in := wf.Input(name); in.Secret {
			if sv, _ := v.(string); sv != "" {
				values = append(values, sv)
				shown[name] = Redacted
			}
		}
	}
	x.red = newRedactor(values)
	stored := raw
	if x.red != nil {
		if stored, err = toJSON(shown); err != nil {
			return nil, fmt.Errorf("workflow %s: inputs: %w", wf.Name, err)
		}
		stored = x.red.json(stored)
	}
	steps := make([]store.NewWorkflowStep, len(wf.Steps))
	for i, s := range wf.Steps {
		steps[i] = store.NewWorkflowStep{Step: s.ID, Uses: s.Uses}
	}
	id, err := e.Store.CreateWorkflowRun(ctx, store.NewWorkflowRun{
		Workflow: wf.Name, File: wf.File, Digest: wf.Digest, Inputs: stored, Owner: x.owner, Steps: steps, At: e.now(),
	})
	if err != nil {
		return nil, fmt.Errorf("workflow %s: %w", wf.Name, x.red.err(err))
	}
	x.runID = id
	x.inputs, _ = fromJSON(raw) // as a resume will see them, secret inputs given again
	x.shown, _ = fromJSON(stored)
	e.emit(Event{Kind: EventRunStarted, RunID: id, Workflow: wf.Name})
	return x.run(ctx)
}

// resumeInputs returns the inputs of a resumed run: the stored ones, with
// the secret ones (stored as Redacted) given again in given, which may hold
// nothing else.
func resumeInputs(wf *Workflow, id int64, stored any, given map[string]any) (any, *redactor, error) {
	m, ok := stored.(map[string]any)
	if !ok {
		if len(given) > 0 {
			return nil, nil, fmt.Errorf("resume run %d: the run has no inputs to give again", id)
		}
		return stored, nil, nil
	}
	var errs []error
	for _, name := range sortedKeys(given) {
		in := wf.Input(name)
		switch {
		case in == nil || !in.Secret:
			errs = append(errs, fmt.Errorf("resume run %d: the run keeps the inputs it started with; only secret inputs, which are not stored, are given again (%s is not one)", id, quote(name)))
		case m[name] != Redacted:
			errs = append(errs, fmt.Errorf("resume run %d: secret input %s was not given when the run started, so it is not given again", id, name))
		}
	}
	real := make(map[string]any, len(m))
	var values []string
	for name, v := range m {
		real[name] = v
		in := wf.Input(name)
		if in == nil || !in.Secret || v != Redacted {
			continue
		}
		g, ok := given[name]
		if !ok {
			errs = append(errs, fmt.Errorf("resume run %d: secret input %s is not stored: give it again (station workflow resume %d --input %s=VALUE, or --inputs)", id, name, id, name))
			continue
		}
		g = numbers(g)
		if err := checkSecretInput(in, g); err != nil {
			errs = append(errs, fmt.Errorf("resume run %d: %w", id, err))
			continue
		}
		if g == nil || g == "" {
			errs = append(errs, fmt.Errorf("resume run %d: secret input %s was given when the run started: give it again, not empty", id, name))
			continue
		}
		real[name] = g
		values = append(values, g.(string))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, nil, err
	}
	return real, newRedactor(values), nil
}

// ErrChanged is wrapped by Resume's error when the workflow file is not
// the one the run started with.
var ErrChanged = store.ErrDigestChanged

// Resume resumes run id of wf: steps that finished (succeeded, skipped, or
// failed with continue_on_error) keep their outputs and are not run again;
// the others run as in a new run. The run must be interrupted or failed, and
// wf must be the file the run started with (same digest).
//
// A run's secret inputs are not stored: given holds them again (and
// nothing else). A run whose secret inputs are missing from given is not
// claimed.
func (e *Engine) Resume(ctx context.Context, wf *Workflow, id int64, given map[string]any) (*Result, error) {
	x := e.execution(wf)
	if len(given) > 0 || wf.hasSecretInputs() {
		// Check what is given before the run is claimed (a claim counts a
		// resume): the stored inputs are read again from the claim.
		run, err := e.Store.WorkflowRun(ctx, id)
		if err != nil {
			return nil, err
		}
		if run.Digest == wf.Digest {
			stored, err := fromJSON(run.Inputs)
			if err != nil {
				return nil, fmt.Errorf("resume run %d: stored inputs: %w", id, err)
			}
			if _, _, err := resumeInputs(wf, id, stored, given); err != nil {
				return nil, err
			}
		}
	}
	run, err := e.Store.ClaimWorkflowRun(ctx, id, x.owner, wf.Digest, e.now())
	if errors.Is(err, store.ErrDigestChanged) {
		return nil, fmt.Errorf("resume run %d: %s changed since the run started, and a resumed run must run the same steps (start a new run with: station workflow run %s): %w", id, wf.File, wf.File, err)
	}
	if err != nil {
		return nil, err
	}
	x.runID = id
	if x.shown, err = fromJSON(run.Inputs); err != nil {
		return nil, fmt.Errorf("resume run %d: stored inputs: %w", id, err)
	}
	if x.inputs, x.red, err = resumeInputs(wf, id, x.shown, given); err != nil {
		// Checked before the claim; the run stays as it was claimed,
		// failed, for another resume.
		wctx := context.WithoutCancel(ctx)
		if ferr := e.Store.FinishWorkflowRun(wctx, id, x.owner, store.RunFailed, nil, err.Error(), e.now()); ferr != nil {
			return nil, errors.Join(err, ferr)
		}
		return &Result{RunID: id, Status: store.RunFailed}, err
	}
	e.emit(Event{Kind: EventRunResumed, RunID: id, Workflow: wf.Name})
	for _, st := range run.Steps {
		if wf.Step(st.Step) == nil {
			return nil, fmt.Errorf("resume run %d: the run has a step %q the workflow does not", id, st.Step)
		}
		x.attempts[st.Step] = st.Attempts
		if !st.Status.Finished(st.Continued) {
			continue
		}
		v := StepValue{Status: string(st.Status), Error: st.Error}
		if st.Status == store.StepSucceeded {
			if v.Output, err = fromJSON(st.Output); err != nil {
				return nil, fmt.Errorf("resume run %d: stored output of step %s: %w", id, st.Step, err)
			}
			x.outputs[st.Step] = st.Output
		}
		x.done[st.Step] = v
		e.emit(Event{Kind: EventStepReused, RunID: id, Step: st.Step, Uses: st.Uses})
	}
	return x.run(ctx)
}

// execution is one run in progress in this process.
type execution struct {
	e      *Engine
	wf     *Workflow
	runID  int64
	owner  string
	inputs any
	// shown are the inputs as recorded: secret ones Redacted; red takes
	// the secret inputs' values out of what the run records and shows
	// (nil when it has none).
	shown any
	red   *redactor

	mu       sync.Mutex
	done     map[string]StepValue       // finished steps
	outputs  map[string]json.RawMessage // raw outputs of succeeded steps
	attempts map[string]int             // stored attempts per step
}

func (e *Engine) execution(wf *Workflow) *execution {
	return &execution{e: e, wf: wf, owner: e.owner(), done: map[string]StepValue{}, outputs: map[string]json.RawMessage{}, attempts: map[string]int{}}
}

// env snapshots what expressions see.
func (x *execution) env() *Env {
	x.mu.Lock()
	defer x.mu.Unlock()
	steps := make(map[string]StepValue, len(x.done))
	for id, v := range x.done {
		steps[id] = v
	}
	in, _ := x.inputs.(map[string]any)
	return &Env{Inputs: in, Steps: steps, Secrets: x.wf.secrets}
}

// shownEnv is env with the inputs as recorded (secret ones Redacted): what
// llm steps and the output are rendered from, and a module step's input is
// recorded from. It is env when the run has no secret input.
func (x *execution) shownEnv(env *Env) *Env {
	if x.red == nil {
		return env
	}
	in, _ := x.shown.(map[string]any)
	return &Env{Inputs: in, Steps: env.Steps, Secrets: env.Secrets}
}

// hide returns err, an error of an expression evaluated with the secret
// inputs' values, as it can be recorded: the error the same evaluation
// gives on the recorded inputs (again returns it), which cannot quote a
// value even transformed, or else one that says only what failed.
func (x *execution) hide(err error, again func() error) error {
	if x.red == nil || err == nil {
		return err
	}
	if e := again(); e != nil {
		return x.red.err(e)
	}
	return errors.New("an expression failed on the value of a secret input (its error is not recorded: it could quote the value)")
}

// stepEnd is what a step's goroutine reports.
type stepEnd struct {
	step  *Step
	value StepValue
	err   error // the step failed (and the run fails unless continued)
	// fatal is an error of the station itself (the store): the run stops.
	fatal       error
	interrupted bool
}

// run schedules the steps: every step whose dependencies have finished
// starts, in file order, up to MaxParallel at once; a failure (without
// continue_on_error) stops new steps from starting and lets the running
// ones finish.
func (x *execution) run(ctx context.Context) (*Result, error) {
	start := x.e.now()
	if x.owner == ProcessOwner() {
		active.add(x.runID)
		defer active.remove(x.runID)
	}
	results := make(chan stepEnd)
	started := map[string]bool{}
	running := 0
	var failure, fatal error
	interrupted := false
	for {
		if failure == nil && fatal == nil && !interrupted && ctx.Err() == nil {
			for _, s := range x.wf.Steps {
				if running >= x.wf.MaxParallel {
					break
				}
				if started[s.ID] || x.finished(s.ID) || !x.ready(s) {
					continue
				}
				started[s.ID] = true
				running++
				go func() { results <- x.step(ctx, s) }()
			}
		}
		if running == 0 {
			break
		}
		r := <-results
		running--
		x.mu.Lock()
		if r.fatal == nil && !r.interrupted && (r.err == nil || r.step.ContinueOnError) {
			x.done[r.step.ID] = r.value
		}
		x.mu.Unlock()
		switch {
		case r.fatal != nil:
			fatal = cmp(fatal, r.fatal)
		case r.interrupted:
			interrupted = true
		case r.err != nil && !r.step.ContinueOnError:
			failure = cmp(failure, fmt.Errorf("workflow %s: step %s: %w", x.wf.Name, r.step.ID, r.err))
		}
	}
	// Writes from here on must land even when ctx ended: they record how
	// the run ended.
	wctx := context.WithoutCancel(ctx)
	res := &Result{RunID: x.runID}
	finish := func(status store.RunStatus, output []byte, err error) (*Result, error) {
		res.Status = status
		output, err = x.red.json(output), x.red.err(err)
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		if status == store.RunSucceeded {
			res.Output = output
		}
		if ferr := x.e.Store.FinishWorkflowRun(wctx, x.runID, x.owner, status, output, msg, x.e.now()); ferr != nil {
			return res, errors.Join(err, ferr)
		}
		x.e.emit(Event{Kind: EventRunFinished, RunID: x.runID, Workflow: x.wf.Name, Status: status, Duration: x.e.now().Sub(start), Error: msg, Output: res.Output})
		return res, err
	}
	switch {
	case fatal != nil:
		// The store failed: recording more would likely fail too. The run
		// stays running until Recover finds its process gone.
		res.Status = store.RunRunning
		return res, x.red.err(fmt.Errorf("workflow %s: run %d: %w", x.wf.Name, x.runID, fatal))
	case interrupted || (ctx.Err() != nil && failure == nil && !x.allDone()):
		return finish(store.RunInterrupted, nil, fmt.Errorf("workflow %s: run %d interrupted (resume it with: station workflow resume %d): %w", x.wf.Name, x.runID, x.runID, context.Cause(ctx)))
	case failure != nil:
		return finish(store.RunFailed, nil, failure)
	}
	out, err := x.output()
	if err != nil {
		return finish(store.RunFailed, nil, fmt.Errorf("workflow %s: output: %w", x.wf.Name, err))
	}
	return finish(store.RunSucceeded, out, nil)
}

// cmp keeps the first error.
func cmp(first, next error) error {
	if first != nil {
		return first
	}
	return next
}

func (x *execution) finished(id string) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	_, ok := x.done[id]
	return ok
}

func (x *execution) ready(s *Step) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, d := range s.Deps {
		if _, ok := x.done[d]; !ok {
			return false
		}
	}
	return true
}

func (x *execution) allDone() bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return len(x.done) == len(x.wf.Steps)
}

// output renders the run's output.
func (x *execution) output() ([]byte, error) {
	if x.wf.Output != nil {
		env := x.env()
		return x.wf.Output.RenderJSON(x.shownEnv(env))
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	m := make(map[string]json.RawMessage, len(x.outputs))
	for id, o := range x.outputs {
		m[id] = o
	}
	return toJSON(m)
}

// step runs one step to its end: its condition, its input, and its
// attempts.
func (x *execution) step(ctx context.Context, s *Step) stepEnd {
	e := x.e
	wctx := context.WithoutCancel(ctx)
	env := x.env()
	shown := x.shownEnv(env)
	if s.If != nil {
		run, err := s.If.EvalBool(env)
		if err != nil {
			err = x.hide(err, func() error { _, err := s.If.EvalBool(shown); return err })
			return x.failEarly(wctx, s, fmt.Errorf("if: %w", err))
		}
		if !run {
			if err := e.Store.SkipStep(wctx, x.runID, x.owner, s.ID, e.now()); err != nil {
				return stepEnd{step: s, fatal: err}
			}
			e.emit(Event{Kind: EventStepSkipped, RunID: x.runID, Step: s.ID, Uses: s.Uses})
			return stepEnd{step: s, value: StepValue{Status: string(store.StepSkipped)}}
		}
	}
	// input is what the step is given; recorded what the run records
	// of it, rendered from the recorded inputs.
	input := []byte("{}")
	recorded := input
	if s.With != nil {
		var err error
		if s.Builtin == BuiltinLLM {
			input, err = s.With.RenderJSON(shown)
			recorded = input
		} else if input, err = s.With.RenderJSON(env); err == nil {
			recorded = input
			if x.red != nil {
				if recorded, err = s.With.RenderJSON(shown); err != nil {
					recorded, err = []byte(strconv.Quote(Redacted)), nil
				}
			}
		} else {
			err = x.hide(err, func() error { _, err := s.With.RenderJSON(shown); return err })
		}
		if err != nil {
			return x.failEarly(wctx, s, fmt.Errorf("with: %w", err))
		}
		recorded = x.red.json(recorded)
	}
	x.mu.Lock()
	first := x.attempts[s.ID] + 1
	x.mu.Unlock()
	for attempt := first; ; attempt++ {
		trace := Trace(x.runID, s.ID, attempt)
		at := e.now()
		if err := e.Store.StartStepAttempt(wctx, store.AttemptStart{RunID: x.runID, Owner: x.owner, Step: s.ID, Attempt: attempt, Trace: trace, Input: recorded, At: at}); err != nil {
			return stepEnd{step: s, fatal: err}
		}
		x.mu.Lock()
		x.attempts[s.ID] = attempt
		x.mu.Unlock()
		e.emit(Event{Kind: EventStepStarted, RunID: x.runID, Step: s.ID, Uses: s.Uses, Attempt: attempt, Time: at})
		out, usage, err := x.call(ctx, s, input, trace)
		took := e.now().Sub(at)
		// What a step returns is redacted before anything records or
		// uses it: the steps after it, and a resume, see the same output.
		out = x.red.json(out)
		kind, again := errorKind(err), err != nil && retryable(err)
		err = x.red.err(err)
		end := store.AttemptEnd{RunID: x.runID, Owner: x.owner, Step: s.ID, Attempt: attempt, Usage: usage, Output: out}
		if err != nil && ctx.Err() != nil {
			// The run was stopped, not the step: the attempt stays
			// unfinished and a resume runs the step again.
			end.Err, end.ErrKind, end.At = "interrupted: "+err.Error(), "interrupted", e.now()
			if ferr := e.Store.FinishStepAttempt(wctx, end); ferr != nil {
				return stepEnd{step: s, fatal: ferr}
			}
			return stepEnd{step: s, interrupted: true}
		}
		tries := attempt - first + 1
		retry := again && tries < s.Retry.Attempts
		end.Final = !retry
		end.At = e.now()
		if err != nil {
			end.Err, end.ErrKind = err.Error(), kind
			end.Continued = end.Final && s.ContinueOnError
		}
		if ferr := e.Store.FinishStepAttempt(wctx, end); ferr != nil {
			return stepEnd{step: s, fatal: ferr}
		}
		if err == nil {
			v, _ := fromJSON(out)
			x.mu.Lock()
			x.outputs[s.ID] = out
			x.mu.Unlock()
			e.emit(Event{Kind: EventStepSucceeded, RunID: x.runID, Step: s.ID, Uses: s.Uses, Attempt: attempt, Duration: took})
			return stepEnd{step: s, value: StepValue{Status: string(store.StepSucceeded), Output: v}}
		}
		if !retry {
			e.emit(Event{Kind: EventStepFailed, RunID: x.runID, Step: s.ID, Uses: s.Uses, Attempt: attempt, Duration: took, Error: err.Error(), Continued: s.ContinueOnError})
			return stepEnd{step: s, err: err, value: StepValue{Status: string(store.StepFailed), Error: err.Error()}}
		}
		delay := s.Retry.Delay(tries)
		e.emit(Event{Kind: EventStepRetrying, RunID: x.runID, Step: s.ID, Uses: s.Uses, Attempt: attempt, Duration: took, Delay: delay, Error: err.Error()})
		if serr := e.sleep(ctx, delay); serr != nil {
			return stepEnd{step: s, interrupted: true}
		}
	}
}

// failEarly records a step that failed before any call (its condition or
// input could not be evaluated) as one failed attempt with the kind
// "template".
func (x *execution) failEarly(wctx context.Context, s *Step, err error) stepEnd {
	e := x.e
	x.mu.Lock()
	attempt := x.attempts[s.ID] + 1
	x.attempts[s.ID] = attempt
	x.mu.Unlock()
	at := e.now()
	if ferr := e.Store.StartStepAttempt(wctx, store.AttemptStart{RunID: x.runID, Owner: x.owner, Step: s.ID, Attempt: attempt, Trace: Trace(x.runID, s.ID, attempt), Input: []byte("null"), At: at}); ferr != nil {
		return stepEnd{step: s, fatal: ferr}
	}
	if ferr := e.Store.FinishStepAttempt(wctx, store.AttemptEnd{RunID: x.runID, Owner: x.owner, Step: s.ID, Attempt: attempt, Err: err.Error(), ErrKind: "template",
		Final: true, Continued: s.ContinueOnError, At: e.now()}); ferr != nil {
		return stepEnd{step: s, fatal: ferr}
	}
	e.emit(Event{Kind: EventStepFailed, RunID: x.runID, Step: s.ID, Uses: s.Uses, Attempt: attempt, Error: err.Error(), Continued: s.ContinueOnError})
	return stepEnd{step: s, err: err, value: StepValue{Status: string(store.StepFailed), Error: err.Error()}}
}

// call makes one attempt's call under the step's timeout.
func (x *execution) call(ctx context.Context, s *Step, input []byte, trace string) ([]byte, *store.LLMUsage, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, s.Timeout, fmt.Errorf("step %s timed out after %s", s.ID, s.Timeout))
	defer cancel()
	var out []byte
	var usage *store.LLMUsage
	var err error
	switch {
	case s.Builtin == BuiltinLLM:
		out, usage, err = x.llm(ctx, input)
	default:
		cctx := sandbox.WithTrace(ctx, trace)
		if x.red != nil {
			// The module holds the secret inputs it was given; what it
			// does with them stays out of the audit log and the log.
			cctx = sandbox.WithRedact(cctx, x.red.text)
		}
		out, err = x.e.Run(cctx, s.Module, s.Command, input)
		if err == nil {
			out = bytes.TrimSpace(out)
			if len(out) == 0 {
				out = []byte("null")
			}
			if !json.Valid(out) {
				err = fmt.Errorf("module %s: %s returned output that is not JSON", s.Module, s.Command)
			}
		}
	}
	if err != nil && ctx.Err() != nil && context.Cause(ctx) != ctx.Err() {
		// Our deadline, not the caller's cancellation: say so, keeping the
		// call's own error for errors.As.
		if cause := context.Cause(ctx); !errors.Is(err, cause) {
			err = &timeoutError{cause: cause, err: err}
		}
	}
	return out, usage, err
}

// timeoutError is a step that ran out of time.
type timeoutError struct{ cause, err error }

func (t *timeoutError) Error() string { return t.cause.Error() + ": " + t.err.Error() }
func (t *timeoutError) Unwrap() error { return t.err }

// errorKind classifies a step error for the attempt log.
func errorKind(err error) string {
	var v *sandbox.Violation
	var ce *host.CallError
	var te *timeoutError
	switch {
	case errors.As(err, &v):
		return "violation"
	case errors.As(err, &te):
		return "timeout"
	case errors.As(err, &ce):
		return string(ce.Kind)
	case errors.As(err, new(*llmError)):
		return "llm"
	}
	return "error"
}

// retryable reports whether trying again could help: a sandbox denial, an
// input the module refused, an unknown command or a module that passes bad
// pointers will fail the same way again.
func retryable(err error) bool {
	var v *sandbox.Violation
	if errors.As(err, &v) {
		return false
	}
	var ce *host.CallError
	if errors.As(err, &ce) {
		switch ce.Kind {
		case host.KindInput, host.KindUnknown, host.KindFault:
			return false
		}
	}
	var le *llmError
	if errors.As(err, &le) && le.input {
		return false
	}
	return true
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
