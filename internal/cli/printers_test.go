package cli

import (
	"bytes"
	"context"
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

// TestEveryPrinterEscapes feeds (for the workflow printers; cmdutil tests its own) the hostile text through every field of
// what the CLI's printers show: an install plan (a manifest built around
// the validator, as a stored one could be), a hub plan, a workflow check
// report, a run, every progress event, the log lines, results and JSON.
func TestEveryPrinterEscapes(t *testing.T) {
	h := clitest.Hostile
	checkPrinted := clitest.CheckPrinted
	var buf bytes.Buffer
	printReport(&buf, &workflow.Report{Workflow: h, File: h, Steps: []workflow.StepReport{{ID: h, Uses: h, Needs: []string{h}}},
		Modules:  []workflow.ModuleReport{{ID: h, Version: h, Commands: []string{h}, Steps: []string{h}, Permissions: []string{h, "  " + h}, Installed: true}, {ID: h, Steps: []string{h}}},
		LLM:      &workflow.LLMReport{Steps: []string{h}, Provider: h},
		Problems: []string{h}})
	checkPrinted(t, "printReport", buf.String())

	doc, _ := json.Marshal(map[string]string{"k": h})
	rawDoc := json.RawMessage("{\"k\":\"\u009b\u202e\xff\"}")
	now := time.Now()
	buf.Reset()
	printRun(&buf, shownRun{
		WorkflowRun: store.WorkflowRun{ID: 1, Workflow: h, File: h, Digest: h, Inputs: rawDoc, Status: store.RunStatus(h), Output: doc, Error: h, StartedAt: now, FinishedAt: now,
			Steps: []store.WorkflowStep{{Step: h, Uses: h, Status: store.StepStatus(h), Input: rawDoc, Output: rawDoc, Error: h,
				AttemptLog: []store.StepAttempt{{Attempt: 1, Trace: "t", Status: store.StepStatus(h), Error: h, StartedAt: now, FinishedAt: now}}}}},
		Audit: map[string][]store.AuditRecord{"t": {{Decision: sandbox.Decision{Module: h, Command: h, Capability: sandbox.Capability(h), Target: h, Reason: h}}}},
	})
	checkPrinted(t, "printRun", buf.String())

	var errb, outb bytes.Buffer
	a := &app{cmdutil.New(IO{Out: &outb, Err: &errb})}
	for _, asJSON := range []bool{false, true} {
		p := a.progress(asJSON, 1)
		for _, k := range []workflow.EventKind{workflow.EventRunStarted, workflow.EventRunResumed, workflow.EventStepReused, workflow.EventStepStarted,
			workflow.EventStepSucceeded, workflow.EventStepRetrying, workflow.EventStepFailed, workflow.EventStepSkipped, workflow.EventRunFinished} {
			p.event(workflow.Event{Kind: k, Workflow: h, Step: h, Uses: h, Attempt: 2, Error: h, Status: store.RunStatus(h), Output: rawDoc})
		}
	}
	checkPrinted(t, "progress lines", errb.String())
	checkPrinted(t, "progress --json", outb.String())
	for _, line := range strings.Split(strings.TrimSpace(outb.String()), "\n") {
		if !json.Valid([]byte(line)) {
			t.Errorf("progress --json: not JSON: %s", line)
		}
	}

	// The error of a command, as Run prints it: here the path is the
	// hostile text; a hub's message with a newline may not start a line
	// of its own either.
	errb.Reset()
	code := Run(context.Background(), []string{"run", "a/b", "c", "--input", "@" + t.TempDir() + "/" + h}, IO{In: strings.NewReader(""), Out: &outb, Err: &errb})
	if code != ExitError {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	checkPrinted(t, "an error", errb.String())
}
