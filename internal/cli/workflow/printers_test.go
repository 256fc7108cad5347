package workflow

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/station-dev/station/internal/cli/clitest"
	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/sandbox"
	"github.com/station-dev/station/internal/store"
	"github.com/station-dev/station/internal/workflow"
)

// TestEveryPrinterEscapes feeds the hostile text through every field the
// workflow commands print: a check report, a run, every progress event (as
// lines and as JSON lines), the runs table.
func TestEveryPrinterEscapes(t *testing.T) {
	h := clitest.Hostile
	var buf bytes.Buffer
	Report{&workflow.Report{Workflow: h, File: h, Steps: []workflow.StepReport{{ID: h, Uses: h, Needs: []string{h}}},
		Modules:  []workflow.ModuleReport{{ID: h, Version: h, Commands: []string{h}, Steps: []string{h}, Permissions: []string{h, "  " + h}, Installed: true}, {ID: h, Steps: []string{h}}},
		LLM:      &workflow.LLMReport{Steps: []string{h}, Provider: h},
		Problems: []string{h}}}.Text(&buf)
	clitest.CheckPrinted(t, "check report", buf.String())

	doc, _ := json.Marshal(map[string]string{"k": h})
	rawDoc := json.RawMessage("{\"k\":\"\u009b\u202e\xff\"}")
	now := time.Now()
	run := store.WorkflowRun{ID: 1, Workflow: h, File: h, Digest: h, Inputs: rawDoc, Status: store.RunStatus(h), Output: doc, Error: h, StartedAt: now, FinishedAt: now,
		Steps: []store.WorkflowStep{{Step: h, Uses: h, Status: store.StepStatus(h), Input: rawDoc, Output: rawDoc, Error: h,
			AttemptLog: []store.StepAttempt{{Attempt: 1, Trace: "t", Status: store.StepStatus(h), Error: h, StartedAt: now, FinishedAt: now}}}}}
	buf.Reset()
	Shown{&workflow.ShownRun{WorkflowRun: run,
		Audit: map[string][]store.AuditRecord{"t": {{Decision: sandbox.Decision{Module: h, Command: h, Capability: sandbox.Capability(h), Target: h, Reason: h}}}},
	}}.Text(&buf)
	clitest.CheckPrinted(t, "show", buf.String())

	buf.Reset()
	Runs{run}.Text(&buf)
	clitest.CheckPrinted(t, "runs", buf.String())

	s := newStreams("")
	for _, asJSON := range []bool{false, true} {
		p := newProgress(&s.IOStreams, asJSON, 1)
		for _, k := range []workflow.EventKind{workflow.EventRunStarted, workflow.EventRunResumed, workflow.EventStepReused, workflow.EventStepStarted,
			workflow.EventStepSucceeded, workflow.EventStepRetrying, workflow.EventStepFailed, workflow.EventStepSkipped, workflow.EventRunFinished} {
			p.event(workflow.Event{Kind: k, Workflow: h, Step: h, Uses: h, Attempt: 2, Error: h, Status: store.RunStatus(h), Output: rawDoc})
		}
		if err := p.finish(nil, nil, false); err != nil {
			t.Fatal(err)
		}
	}
	clitest.CheckPrinted(t, "progress lines", s.err.String())
	clitest.CheckPrinted(t, "progress --json", s.out.String())
	for _, line := range strings.Split(strings.TrimSpace(s.out.String()), "\n") {
		if !json.Valid([]byte(line)) {
			t.Errorf("progress --json: not JSON: %s", line)
		}
	}
}

// TestJSONNames: every result the workflow commands print with --json has
// snake_case keys.
func TestJSONNames(t *testing.T) {
	for _, v := range []any{Report{}, Shown{}, Runs{}, workflow.Event{}, workflow.Result{}} {
		if err := cmdutil.CheckJSONNames(v); err != nil {
			t.Error(err)
		}
	}
}
