package workflow

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/station-dev/station/internal/cli/clitest"
	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/host"
	"github.com/station-dev/station/internal/sandbox"
	"github.com/station-dev/station/internal/store"
	"github.com/station-dev/station/internal/workflow"
)

func TestFlags(t *testing.T) {
	type tc struct {
		args []string
		want any
		code int
	}
	check := func(t *testing.T, name string, args []string, code int, err error, got, want any) {
		t.Helper()
		if c := cmdutil.ExitCode(err); c != code {
			t.Errorf("%s %q: exit %d (%v), want %d", name, args, c, err, code)
			return
		}
		if code == 0 && !reflect.DeepEqual(got, want) {
			t.Errorf("%s %q: options %+v, want %+v", name, args, got, want)
		}
	}
	for _, c := range []tc{
		{args: []string{"wf.yaml"}, want: RunOptions{File: "wf.yaml"}},
		{args: []string{"wf.yaml", "-i", "a=1", "--input", "b=x", "--inputs", "@in.json", "--json", "--compact"},
			want: RunOptions{File: "wf.yaml", Inputs: []string{"a=1", "b=x"}, InputsJSON: "@in.json", JSON: true, Compact: true}},
		{args: []string{}, code: cmdutil.ExitUsage},
		{args: []string{"a.yaml", "b.yaml"}, code: cmdutil.ExitUsage},
		{args: []string{"a.yaml", "--frob"}, code: cmdutil.ExitUsage},
	} {
		var got RunOptions
		err := clitest.Parse(NewCmdRun(clitest.Factory(), func(o *RunOptions) error { got = *o; return nil }), c.args...)
		got.IO, got.Runner = nil, nil
		check(t, "run", c.args, c.code, err, got, c.want)
	}
	for _, c := range []tc{
		{args: []string{"wf.yaml"}, want: CheckOptions{File: "wf.yaml"}},
		{args: []string{"wf.yaml", "--json"}, want: CheckOptions{File: "wf.yaml", JSON: true}},
		{args: []string{}, code: cmdutil.ExitUsage},
	} {
		var got CheckOptions
		err := clitest.Parse(NewCmdCheck(clitest.Factory(), func(o *CheckOptions) error { got = *o; return nil }), c.args...)
		got.IO, got.Service = nil, nil
		check(t, "check", c.args, c.code, err, got, c.want)
	}
	for _, c := range []tc{
		{args: []string{"12"}, want: ResumeOptions{RunID: 12}},
		{args: []string{"12", "-f", "x.yaml", "--json", "--compact"}, want: ResumeOptions{RunID: 12, File: "x.yaml", JSON: true, Compact: true}},
		{args: []string{"12", "-i", "key=sk_1", "--inputs", "@k.json"}, want: ResumeOptions{RunID: 12, Inputs: []string{"key=sk_1"}, InputsJSON: "@k.json"}},
		{args: []string{"abc"}, code: cmdutil.ExitUsage},
		{args: []string{"0"}, code: cmdutil.ExitUsage},
		{args: []string{}, code: cmdutil.ExitUsage},
	} {
		var got ResumeOptions
		err := clitest.Parse(NewCmdResume(clitest.Factory(), func(o *ResumeOptions) error { got = *o; return nil }), c.args...)
		got.IO, got.Runner = nil, nil
		check(t, "resume", c.args, c.code, err, got, c.want)
	}
	for _, c := range []tc{
		{args: []string{}, want: RunsOptions{Limit: 50}},
		{args: []string{"--limit", "5", "--json"}, want: RunsOptions{Limit: 5, JSON: true}},
		{args: []string{"--limit", "0"}, code: cmdutil.ExitUsage},
		{args: []string{"extra"}, code: cmdutil.ExitUsage},
	} {
		var got RunsOptions
		err := clitest.Parse(NewCmdRuns(clitest.Factory(), func(o *RunsOptions) error { got = *o; return nil }), c.args...)
		got.IO, got.Service = nil, nil
		check(t, "runs", c.args, c.code, err, got, c.want)
	}
	for _, c := range []tc{
		{args: []string{"7"}, want: ShowOptions{RunID: 7}},
		{args: []string{"7", "--json"}, want: ShowOptions{RunID: 7, JSON: true}},
		{args: []string{"-3"}, code: cmdutil.ExitUsage},
	} {
		var got ShowOptions
		err := clitest.Parse(NewCmdShow(clitest.Factory(), func(o *ShowOptions) error { got = *o; return nil }), c.args...)
		got.IO, got.Service = nil, nil
		check(t, "show", c.args, c.code, err, got, c.want)
	}

	// A bad run id says where the ids are.
	err := clitest.Parse(NewCmdShow(clitest.Factory(), nil), "abc")
	if err == nil || !strings.Contains(err.Error(), `"abc" is not a run id (station workflow runs lists them)`) {
		t.Errorf("show abc: %v", err)
	}
	// The group refuses what is none of its commands.
	err = clitest.Parse(NewCmdWorkflow(clitest.Factory()), "chek")
	if cmdutil.ExitCode(err) != cmdutil.ExitUsage || !strings.Contains(err.Error(), `did you mean "check"?`) {
		t.Errorf("workflow chek: %v", err)
	}
}

// fakeRunner is a Runner and a Service that plays back canned events and
// records what it was asked.
type fakeRunner struct {
	events []workflow.Event
	res    *workflow.Result
	err    error

	started  *workflow.Workflow
	inputs   map[string]any
	resumed  int64
	file     string
	report   *workflow.Report
	runs     []store.WorkflowRun
	shown    *workflow.ShownRun
	calls    int
	runLimit int
}

func (f *fakeRunner) play(events func(workflow.Event)) (*workflow.Result, error) {
	for _, ev := range f.events {
		events(ev)
	}
	return f.res, f.err
}

func (f *fakeRunner) Start(_ context.Context, wf *workflow.Workflow, inputs map[string]any, events func(workflow.Event)) (*workflow.Result, error) {
	f.calls++
	f.started, f.inputs = wf, inputs
	return f.play(events)
}

func (f *fakeRunner) Resume(_ context.Context, id int64, file string, inputs map[string]any, events func(workflow.Event)) (*workflow.Result, error) {
	f.calls++
	f.resumed, f.file, f.inputs = id, file, inputs
	return f.play(events)
}

func (f *fakeRunner) Check(_ context.Context, wf *workflow.Workflow) (*workflow.Report, error) {
	f.calls++
	return f.report, f.err
}

func (f *fakeRunner) Runs(_ context.Context, limit int) ([]store.WorkflowRun, error) {
	f.calls++
	f.runLimit = limit
	return f.runs, f.err
}

func (f *fakeRunner) Show(_ context.Context, id int64) (*workflow.ShownRun, error) {
	f.calls++
	return f.shown, f.err
}

type streams struct {
	cmdutil.IOStreams
	out, err bytes.Buffer
}

func newStreams(stdin string) *streams {
	s := &streams{}
	s.IOStreams = cmdutil.IOStreams{In: strings.NewReader(stdin), Out: &s.out, Err: &s.err}
	return s
}

func writeFile(t *testing.T, name, src string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

const invoiceSrc = `name: invoice
inputs:
  customer: {required: true}
  count: {type: integer, default: 1}
  extra: {type: object}
steps:
  - id: invoice
    uses: dave/stripe-invoicing create-invoice
    with: {customer: "${{ inputs.customer }}"}
  - id: note
    uses: llm
    with: {prompt: "hi"}
`

// aRun is the events and result of a run of invoiceSrc that succeeded.
func aRun() *fakeRunner {
	return &fakeRunner{
		events: []workflow.Event{
			{Kind: workflow.EventRunStarted, RunID: 3, Workflow: "invoice"},
			{Kind: workflow.EventStepStarted, RunID: 3, Step: "invoice", Uses: "dave/stripe-invoicing create-invoice", Attempt: 1},
			{Kind: workflow.EventStepRetrying, RunID: 3, Step: "invoice", Attempt: 1, Duration: 1500 * time.Microsecond, Delay: time.Second, DelayMS: 1000, Error: "timeout"},
			{Kind: workflow.EventStepStarted, RunID: 3, Step: "invoice", Uses: "dave/stripe-invoicing create-invoice", Attempt: 2},
			{Kind: workflow.EventStepSucceeded, RunID: 3, Step: "invoice", Attempt: 2, Duration: 12 * time.Millisecond, DurationMS: 12},
			{Kind: workflow.EventStepFailed, RunID: 3, Step: "note", Attempt: 1, Continued: true, Error: "no provider"},
			{Kind: workflow.EventRunFinished, RunID: 3, Status: store.RunSucceeded, Duration: 2 * time.Second, DurationMS: 2000, Output: json.RawMessage(`{"id":"in_1"}`)},
		},
		res: &workflow.Result{RunID: 3, Status: store.RunSucceeded, Output: json.RawMessage(`{"id":"in_1"}`)},
	}
}

func TestRunPrintsProgressAndOutput(t *testing.T) {
	file := writeFile(t, "invoice.yaml", invoiceSrc)
	f := aRun()
	s := newStreams(`{"customer":"cus_9","extra":{"n":1.5}}`)
	opts := &RunOptions{IO: &s.IOStreams, Runner: func(context.Context) (Runner, error) { return f, nil },
		File: file, Inputs: []string{"customer=cus_42", "count=3"}, InputsJSON: "-"}
	if err := runRun(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	// --input wins over --inputs, and reads VALUE as the input's type.
	if f.started == nil || !filepath.IsAbs(f.started.File) || f.inputs["customer"] != "cus_42" || f.inputs["count"] != 3 {
		t.Errorf("started %v with %#v", f.started, f.inputs)
	}
	if extra, _ := f.inputs["extra"].(map[string]any); extra == nil {
		t.Errorf("--inputs object input: %#v", f.inputs["extra"])
	}
	want := `run 3: workflow invoice (2 steps)
  started   invoice (dave/stripe-invoicing create-invoice)
  retrying  invoice: attempt 1 failed after 2ms: timeout; next attempt in 1s
  started   invoice (dave/stripe-invoicing create-invoice, attempt 2)
  ok        invoice in 12ms
  FAILED    note after 0s: no provider (continue_on_error: the run goes on)
run 3 succeeded in 2s
`
	if s.err.String() != want {
		t.Errorf("progress:\n%s\nwant:\n%s", s.err.String(), want)
	}
	if s.out.String() != "{\n  \"id\": \"in_1\"\n}\n" {
		t.Errorf("output %q", s.out.String())
	}

	// --compact.
	s = newStreams("")
	opts.IO, opts.InputsJSON, opts.Compact = &s.IOStreams, "", true
	if err := runRun(context.Background(), opts); err != nil || s.out.String() != "{\"id\":\"in_1\"}\n" {
		t.Errorf("--compact: %q %v", s.out.String(), err)
	}

	// --json: every event on a line of its own on stdout, nothing else;
	// the last carries the output.
	s = newStreams("")
	opts.IO, opts.JSON = &s.IOStreams, true
	if err := runRun(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(s.out.String()), "\n")
	if len(lines) != len(f.events) || s.err.Len() != 0 {
		t.Fatalf("--json printed %d lines (want %d), stderr %q:\n%s", len(lines), len(f.events), s.err.String(), s.out.String())
	}
	var last struct {
		Event      string          `json:"event"`
		Run        int64           `json:"run"`
		Status     string          `json:"status"`
		DurationMS int64           `json:"duration_ms"`
		Output     json.RawMessage `json:"output"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil || last.Event != "run_finished" || last.Run != 3 || last.Status != "succeeded" || last.DurationMS != 2000 || string(last.Output) != `{"id":"in_1"}` {
		t.Errorf("last event %s (%v)", lines[len(lines)-1], err)
	}
}

// TestRunInputErrors: what a new user gets wrong about inputs is refused
// before the station (or the daemon) is asked anything, with what to pass.
func TestRunInputErrors(t *testing.T) {
	file := writeFile(t, "invoice.yaml", invoiceSrc)
	for _, c := range []struct {
		name   string
		inputs []string
		all    string
		code   int
		want   string
	}{
		{"missing required", nil, "", cmdutil.ExitUsage, "input customer is required (--input customer=VALUE)"},
		{"no NAME=VALUE", []string{"customer"}, "", cmdutil.ExitUsage, `--input "customer": write NAME=VALUE`},
		{"undeclared", []string{"customer=c", "custmer=c"}, "", cmdutil.ExitUsage, `has no input "custmer"`},
		{"mistyped", []string{"customer=c", "count=many"}, "", cmdutil.ExitUsage, `input count: "many" is not an integer`},
		{"--inputs not an object", nil, "[1]", cmdutil.ExitUsage, "--inputs must be a JSON object"},
		{"--inputs not JSON", nil, "{x", cmdutil.ExitUsage, "--inputs: --input is not valid JSON"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := aRun()
			s := newStreams("")
			err := runRun(context.Background(), &RunOptions{IO: &s.IOStreams, Runner: func(context.Context) (Runner, error) { return f, nil }, File: file, Inputs: c.inputs, InputsJSON: c.all})
			if code := cmdutil.ExitCode(err); code != c.code || !strings.Contains(err.Error(), c.want) {
				t.Errorf("exit %d, %v; want %d, %q", code, err, c.code, c.want)
			}
			if f.calls != 0 {
				t.Error("the runner was called")
			}
		})
	}
	// A file that is not there, or not a workflow, is the loader's error.
	s := newStreams("")
	bad := writeFile(t, "bad.yaml", "steps:\n  - id: a\n    uses: station/hello greet\n    timout: 1s\n")
	for path, want := range map[string]string{filepath.Join(t.TempDir(), "nope.yaml"): "no such file", bad: bad + `:4:5: steps[0]: unknown field "timout"`} {
		err := runRun(context.Background(), &RunOptions{IO: &s.IOStreams, Runner: func(context.Context) (Runner, error) { return nil, errors.New("not reached") }, File: path})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("run %s: %v, want %q", path, err, want)
		}
	}
}

// TestRunReturnsTheRunsError: a step's failure is the command's error as
// the runner returned it (a violation exits 3, a crash 4), after the
// progress; no output is printed.
func TestRunReturnsTheRunsError(t *testing.T) {
	file := writeFile(t, "invoice.yaml", invoiceSrc)
	v := sandbox.Deny("dave/stripe-invoicing", sandbox.Network, "evil.example:443", "is not in its allowlist")
	for err, code := range map[error]int{
		fmtErr("workflow invoice: step invoice: %w", v):                                                                  cmdutil.ExitViolation,
		fmtErr("workflow invoice: step invoice: %w", &host.CallError{Module: "m/m", Command: "c", Kind: host.KindCrash}): cmdutil.ExitCrash,
	} {
		f := aRun()
		f.err = err
		s := newStreams("")
		got := runRun(context.Background(), &RunOptions{IO: &s.IOStreams, Runner: func(context.Context) (Runner, error) { return f, nil }, File: file, Inputs: []string{"customer=c"}})
		if !errors.Is(got, err) || cmdutil.ExitCode(got) != code || s.out.Len() != 0 || !strings.Contains(s.err.String(), "run 3 succeeded") {
			t.Errorf("error %v (exit %d), stdout %q, stderr %q; want %v, exit %d", got, cmdutil.ExitCode(got), s.out.String(), s.err.String(), err, code)
		}
	}
	// The runner's own failure (no station, no daemon).
	want := errors.New("open station: boom")
	s := newStreams("")
	if err := runRun(context.Background(), &RunOptions{IO: &s.IOStreams, Runner: func(context.Context) (Runner, error) { return nil, want }, File: file, Inputs: []string{"customer=c"}}); !errors.Is(err, want) {
		t.Errorf("runner error: %v", err)
	}
}

func fmtErr(format string, err error) error { return &wrapped{format, err} }

type wrapped struct {
	format string
	err    error
}

func (w *wrapped) Error() string { return strings.Replace(w.format, "%w", w.err.Error(), 1) }
func (w *wrapped) Unwrap() error { return w.err }

func TestResume(t *testing.T) {
	f := aRun()
	f.events = append([]workflow.Event{{Kind: workflow.EventRunResumed, RunID: 3, Workflow: "invoice"}, {Kind: workflow.EventStepReused, RunID: 3, Step: "greeting"}}, f.events[1:]...)
	s := newStreams("")
	if err := resumeRun(context.Background(), &ResumeOptions{IO: &s.IOStreams, Runner: func(context.Context) (Runner, error) { return f, nil }, RunID: 3, File: "x.yaml"}); err != nil {
		t.Fatal(err)
	}
	if f.resumed != 3 || f.file != "x.yaml" || f.inputs != nil {
		t.Errorf("resumed %d with %q, inputs %v", f.resumed, f.file, f.inputs)
	}
	if got := s.err.String(); !strings.HasPrefix(got, "run 3: resuming workflow invoice\n  reused    greeting (finished before the resume)\n") {
		t.Errorf("progress:\n%s", got)
	}
	if !strings.Contains(s.out.String(), `"id": "in_1"`) {
		t.Errorf("output %q", s.out.String())
	}
	f.err = workflow.ErrChanged
	if err := resumeRun(context.Background(), &ResumeOptions{IO: &s.IOStreams, Runner: func(context.Context) (Runner, error) { return f, nil }, RunID: 3}); !errors.Is(err, workflow.ErrChanged) {
		t.Errorf("resume error: %v", err)
	}
	// Secret inputs given again reach the runner as text, whatever they
	// look like.
	f.err = nil
	opts := &ResumeOptions{IO: &s.IOStreams, Runner: func(context.Context) (Runner, error) { return f, nil }, RunID: 3,
		Inputs: []string{"key=12345", "other=sk=x"}, InputsJSON: `{"token":"tok_1"}`}
	if err := resumeRun(context.Background(), opts); err != nil || fmt.Sprint(f.inputs) != "map[key:12345 other:sk=x token:tok_1]" {
		t.Errorf("resume with inputs: %v, inputs %v", err, f.inputs)
	}
	opts.Inputs, opts.InputsJSON = []string{"novalue"}, ""
	if err := resumeRun(context.Background(), opts); cmdutil.ExitCode(err) != cmdutil.ExitUsage {
		t.Errorf("resume with --input novalue: %v", err)
	}
	// An unknown run says where the runs are listed.
	f.err = fmtErr("workflow run 42: %w", workflow.ErrNoRun)
	err := resumeRun(context.Background(), &ResumeOptions{IO: &s.IOStreams, Runner: func(context.Context) (Runner, error) { return f, nil }, RunID: 42})
	if hint := cmdutil.Hint(err); hint != "station workflow runs lists the runs" {
		t.Errorf("unknown run %v: hint %q", err, hint)
	}
}

func aReport(problems ...string) *workflow.Report {
	return &workflow.Report{Workflow: "invoice", File: "/w/invoice.yaml", Digest: "sha256:ab",
		Steps: []workflow.StepReport{{ID: "invoice", Uses: "dave/stripe-invoicing create-invoice"}, {ID: "note", Uses: "llm", Needs: []string{"invoice"}}},
		Modules: []workflow.ModuleReport{
			{ID: "dave/stripe-invoicing", Version: "1.4.0", Commands: []string{"create-invoice"}, Steps: []string{"invoice"}, Permissions: []string{"may connect to api.stripe.com (https, port 443)"}, Installed: true},
			{ID: "nobody/none", Steps: []string{"x"}, Permissions: []string{}},
		},
		LLM:      &workflow.LLMReport{Steps: []string{"note"}},
		Problems: append([]string{}, problems...)}
}

func TestCheck(t *testing.T) {
	file := writeFile(t, "invoice.yaml", invoiceSrc)
	f := &fakeRunner{report: aReport()}
	s := newStreams("")
	opts := &CheckOptions{IO: &s.IOStreams, Service: func(context.Context) (Service, error) { return f, nil }, File: file}
	if err := checkRun(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"workflow invoice (/w/invoice.yaml)\nsteps:\n", "  note     llm                                   after: invoice\n",
		"  dave/stripe-invoicing 1.4.0 — commands create-invoice (steps invoice)\n    - may connect to api.stripe.com (https, port 443)\n",
		"  nobody/none — NOT INSTALLED (steps x)\n", "llm (steps note): the station's own provider, NONE CONFIGURED; no module's policy applies to it\n",
		"ok: the workflow can run\n"} {
		if !strings.Contains(s.out.String(), want) {
			t.Errorf("check does not print %q:\n%s", want, s.out.String())
		}
	}

	// Problems: the report, then the check's error (not "ok").
	cerr := errors.Join(workflow.ErrCheck, errors.New("  module nobody/none is not installed"))
	f = &fakeRunner{report: aReport("module nobody/none is not installed"), err: cerr}
	s = newStreams("")
	opts.IO, opts.Service = &s.IOStreams, func(context.Context) (Service, error) { return f, nil }
	if err := checkRun(context.Background(), opts); err != cerr || strings.Contains(s.out.String(), "ok:") || !strings.Contains(s.out.String(), "NOT INSTALLED") {
		t.Errorf("check with problems: %v\n%s", err, s.out.String())
	}
	// --json: the report (snake_case), and an error that counts the problems.
	s = newStreams("")
	opts.IO, opts.JSON = &s.IOStreams, true
	err := checkRun(context.Background(), opts)
	var rep struct {
		Problems []string `json:"problems"`
		Modules  []struct {
			Installed bool `json:"installed"`
		} `json:"modules"`
	}
	if jerr := json.Unmarshal(s.out.Bytes(), &rep); jerr != nil || len(rep.Problems) != 1 || len(rep.Modules) != 2 || !errors.Is(err, workflow.ErrCheck) || !strings.Contains(err.Error(), "1 problem(s)") {
		t.Errorf("check --json: %v (%v)\n%s", err, jerr, s.out.String())
	}
	// A check that could not make a report is the error.
	want := errors.New("store: boom")
	f = &fakeRunner{err: want}
	opts.Service = func(context.Context) (Service, error) { return f, nil }
	if err := checkRun(context.Background(), opts); err != want {
		t.Errorf("check error: %v", err)
	}
}

func TestRunsAndShow(t *testing.T) {
	started := time.Date(2026, 3, 1, 12, 0, 0, 0, time.Local)
	run := store.WorkflowRun{ID: 2, Workflow: "invoice", File: "/w/invoice.yaml", Digest: "sha256:ab", Status: store.RunFailed, Inputs: json.RawMessage(`{"customer":"cus_42"}`),
		Error: "step steal: denied", StartedAt: started, FinishedAt: started.Add(1500 * time.Millisecond), Resumes: 1,
		Steps: []store.WorkflowStep{
			{Step: "greeting", Uses: "station/hello greet", Status: store.StepSucceeded, Input: json.RawMessage(`{"name":"Ada"}`), Output: json.RawMessage(`{"greeting":"Hello"}`), StartedAt: started, FinishedAt: started.Add(time.Millisecond),
				AttemptLog: []store.StepAttempt{{Attempt: 1, Trace: "t1", Status: store.StepSucceeded, StartedAt: started, FinishedAt: started.Add(time.Millisecond)}}},
			{Step: "steal", Uses: "dave/stripe-invoicing fetch", Status: store.StepFailed, Continued: true,
				AttemptLog: []store.StepAttempt{{Attempt: 1, Trace: "t2", Status: store.StepFailed, Error: "sandbox violation", StartedAt: started, FinishedAt: started.Add(2 * time.Millisecond)}}},
		}}
	f := &fakeRunner{runs: []store.WorkflowRun{run, {ID: 1, Workflow: "hello", Status: store.RunRunning, StartedAt: started}}}
	s := newStreams("")
	opts := &RunsOptions{IO: &s.IOStreams, Service: func(context.Context) (Service, error) { return f, nil }, Limit: 5}
	if err := runsRun(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	want := "RUN  WORKFLOW  STATUS   STARTED              TOOK  FILE\n" +
		"2    invoice   failed   2026-03-01 12:00:00  1.5s  /w/invoice.yaml\n" +
		"1    hello     running  2026-03-01 12:00:00  -     \n"
	if f.runLimit != 5 || s.out.String() != want {
		t.Errorf("runs (limit %d):\n%q\nwant:\n%q", f.runLimit, s.out.String(), want)
	}
	s = newStreams("")
	opts.IO, opts.JSON = &s.IOStreams, true
	var runs []map[string]any
	if err := runsRun(context.Background(), opts); err != nil || json.Unmarshal(s.out.Bytes(), &runs) != nil || len(runs) != 2 || runs[0]["status"] != "failed" {
		t.Errorf("runs --json: %v\n%s", err, s.out.String())
	}
	// None: a line on stderr, and [] with --json.
	f = &fakeRunner{runs: []store.WorkflowRun{}}
	s = newStreams("")
	opts.IO, opts.JSON, opts.Service = &s.IOStreams, false, func(context.Context) (Service, error) { return f, nil }
	if err := runsRun(context.Background(), opts); err != nil || s.out.Len() != 0 || !strings.Contains(s.err.String(), "no workflow runs recorded") {
		t.Errorf("no runs: %v %q %q", err, s.out.String(), s.err.String())
	}
	s = newStreams("")
	opts.IO, opts.JSON = &s.IOStreams, true
	if err := runsRun(context.Background(), opts); err != nil || strings.TrimSpace(s.out.String()) != "[]" {
		t.Errorf("no runs --json: %v %q", err, s.out.String())
	}

	// show: the run, its steps and each attempt's decisions, in order.
	shown := &workflow.ShownRun{WorkflowRun: run, Audit: map[string][]store.AuditRecord{"t2": {
		{ID: 9, Decision: sandbox.Decision{Module: "dave/stripe-invoicing", Capability: sandbox.Network, Target: "(3 decisions)", Allowed: false, Folded: 3, Reason: "audit rate limit"}},
		{ID: 8, Decision: sandbox.Decision{Module: "dave/stripe-invoicing", Capability: sandbox.Network, Target: "evil.example:443", Allowed: false, Reason: "is not in its allowlist"}},
		{ID: 7, Decision: sandbox.Decision{Module: "dave/stripe-invoicing", Capability: sandbox.Network, Target: "api.stripe.com:443", Allowed: true}},
	}}}
	f = &fakeRunner{shown: shown}
	s = newStreams("")
	sopts := &ShowOptions{IO: &s.IOStreams, Service: func(context.Context) (Service, error) { return f, nil }, RunID: 2}
	if err := showRun(context.Background(), sopts); err != nil {
		t.Fatal(err)
	}
	want = `run 2: workflow invoice — failed
  file     /w/invoice.yaml (sha256:ab)
  started  2026-03-01 12:00:00.000, took 1.5s, resumed 1 time(s)
  inputs   {"customer":"cus_42"}
  error    step steal: denied
step greeting (station/hello greet): succeeded, 1ms
  input    {"name":"Ada"}
  output   {"greeting":"Hello"}
  attempt 1: succeeded after 1ms
step steal (dave/stripe-invoicing fetch): failed (continued)
  attempt 1: failed after 2ms: sandbox violation
    allow dave/stripe-invoicing network api.stripe.com:443 
    DENY  dave/stripe-invoicing network evil.example:443 is not in its allowlist
    DENY  (folded 3) dave/stripe-invoicing network (3 decisions) audit rate limit
`
	if s.out.String() != want {
		t.Errorf("show:\n%s\nwant:\n%s", s.out.String(), want)
	}
	s = newStreams("")
	sopts.IO, sopts.JSON = &s.IOStreams, true
	var got struct {
		ID    int64                       `json:"id"`
		Steps []struct{ Step string }     `json:"steps"`
		Audit map[string][]map[string]any `json:"audit"`
	}
	if err := showRun(context.Background(), sopts); err != nil || json.Unmarshal(s.out.Bytes(), &got) != nil || got.ID != 2 || len(got.Steps) != 2 || got.Audit["t2"][0]["folded"] != float64(3) {
		t.Errorf("show --json: %v\n%s", err, s.out.String())
	}
	want2 := errors.New("gone")
	f = &fakeRunner{err: want2}
	sopts.Service = func(context.Context) (Service, error) { return f, nil }
	if err := showRun(context.Background(), sopts); err != want2 {
		t.Errorf("show error: %v", err)
	}
}
