package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/host"
	"github.com/station-dev/station/internal/hubsync"
	"github.com/station-dev/station/internal/sandbox"
	"github.com/station-dev/station/internal/station"
	"github.com/station-dev/station/internal/store"
	"github.com/station-dev/station/internal/workflow"
	"github.com/station-dev/station/manifest"
)

// hostile is what a hostile hub or module puts in every string it
// supplies: erase the line, return to its start, set the window title
// (OSC 0 ... BEL), backspace, a right-to-left override, CSI as a C1
// control, DEL, a byte that is not UTF-8, and a newline and a tab before a
// line that pretends to be the station's.
const hostile = "\x1b[2K\r\x1b]0;pwned\x07\b\u202e\u009b2J\x7f\xff\n\tstation: logged in as root"

// rawControl returns the first character of s a terminal would act on, or
// "": a control character other than the newline, DEL, a C1 control, a line
// separator, a bidi control, or a byte that is not UTF-8.
func rawControl(s string) string {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			return fmt.Sprintf("byte %#x at %d", s[i], i)
		case r < 0x20 && r != '\n', r == 0x7f, r >= 0x80 && r < 0xa0,
			r == 0x2028, r == 0x2029, r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
			return fmt.Sprintf("%U at %d", r, i)
		}
		i += size
	}
	return ""
}

// forged reports whether a line of out starts with the hostile text's
// pretend station line: a newline the text carried started a line of its
// own at the left margin.
func forged(out string) bool {
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "station: logged in") {
			return true
		}
	}
	return false
}

func checkPrinted(t *testing.T, what, out string) {
	t.Helper()
	if c := rawControl(out); c != "" {
		t.Errorf("%s: %s reaches the terminal:\n%q", what, c, out)
	}
	if forged(out) {
		t.Errorf("%s: a line of the hostile text stands on its own:\n%s", what, out)
	}
	if !strings.Contains(out, "pwned") {
		t.Errorf("%s: the hostile text is not shown at all (want it escaped):\n%q", what, out)
	}
}

func TestTermTextAndTermBlock(t *testing.T) {
	if got := termText(hostile); rawControl(got) != "" || strings.Contains(got, "\n") {
		t.Errorf("termText(hostile) = %q", got)
	}
	got := termBlock("first "+hostile+"\nthird", "  ")
	if rawControl(got) != "" || forged(got) || strings.Count(got, "\n") != 2 || !strings.Contains(got, "\n  third") {
		t.Errorf("termBlock keeps the newlines, indented, and nothing else: %q", got)
	}
	long := termBlock(strings.Repeat(strings.Repeat("x", 100)+"\n", 1000), "")
	if len(long) > 2*maxTermText+8 || !strings.HasSuffix(long, "...") {
		t.Errorf("termBlock of a long text: %d bytes, ends %q", len(long), long[len(long)-8:])
	}
}

// TestJSONTextKeepsTheValue: jsonText escapes exactly what termText
// escapes, and the JSON still decodes to the same value — for every rune.
func TestJSONTextKeepsTheValue(t *testing.T) {
	for r := rune(0); r <= utf8.MaxRune; r++ {
		if r >= 0xd800 && r <= 0xdfff {
			continue
		}
		s := string(r)
		b, _ := json.Marshal(map[string]string{"k": "a" + s + "b"})
		out := jsonText(b)
		var back map[string]string
		if err := json.Unmarshal(out, &back); err != nil || back["k"] != "a"+s+"b" {
			t.Fatalf("%U: jsonText(%s) = %s, decodes to %q, %v", r, b, out, back["k"], err)
		}
		if raw := bytes.Contains(out, []byte(s)); raw && termText(s) != s && r >= 0x20 {
			t.Fatalf("%U: termText escapes it, jsonText leaves it raw: %s", r, out)
		}
	}
	// A module's output may hold what encoding/json never writes: a byte
	// that is not UTF-8, raw C1 and bidi controls in a RawMessage.
	raw := json.RawMessage("{\"a\":\"\xff\u009b\u202e\",\"b\":[1,2]}")
	b, err := json.Marshal(map[string]any{"output": raw})
	if err != nil {
		t.Fatal(err)
	}
	out := jsonText(b)
	var back struct {
		Output struct{ A string }
	}
	if err := json.Unmarshal(out, &back); err != nil || back.Output.A != "\ufffd\u009b\u202e" || rawControl(string(out)) != "" {
		t.Errorf("jsonText(%q) = %q (%q, %v)", b, out, back.Output.A, err)
	}
	if plain := []byte(`{"a":"héllo ✓"}`); !bytes.Equal(jsonText(plain), plain) {
		t.Errorf("jsonText changed JSON with nothing to escape: %s", jsonText(plain))
	}
}

// TestEveryPrinterEscapes feeds the hostile text through every field of
// what the CLI's printers show: an install plan (a manifest built around
// the validator, as a stored one could be), a hub plan, a workflow check
// report, a run, every progress event, the log lines, results and JSON.
func TestEveryPrinterEscapes(t *testing.T) {
	h := hostile
	man := &manifest.Manifest{ID: h, Version: h, Description: h, Commands: []manifest.Command{{Name: h, Description: h}}}
	perms := station.Permissions{Network: []string{h}, FilesystemWrites: []string{h}, FilesystemReads: []string{h}, Env: []string{h}, Subprocess: map[string][]string{"allow": {h}}}
	plan := station.Plan{Manifest: man, Digest: "sha256:x", Permissions: perms, Replaces: &store.Module{ID: h, Version: h, Digest: h}, Children: h}
	var buf bytes.Buffer
	printPlan(&buf, plan)
	checkPrinted(t, "printPlan", buf.String())

	for _, approved := range []*station.Permissions{nil, &station.Permissions{}} {
		buf.Reset()
		printHubPlan(&buf, hubsync.Plan{Plan: plan, Hub: h, Team: h, Approved: approved, Escalations: []string{h}, KeyChange: true,
			Version: hub.Version{Module: h + "/" + h, Version: h, Yanked: true, YankReason: h, KeyID: h}})
		checkPrinted(t, "printHubPlan", buf.String())
	}

	buf.Reset()
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
	a := &app{io: IO{Out: &outb, Err: &errb}}
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

	for _, compact := range []bool{false, true} {
		buf.Reset()
		printResult(&buf, append(append([]byte(nil), doc...), rawDoc...), compact) // not JSON: two documents
		checkPrinted(t, "printResult of text", buf.String())
		buf.Reset()
		printResult(&buf, []byte("{\"k\":\r\"\u009b\u202e\xff\",\"h\":"+string(doc)+"}"), compact)
		if out := buf.String(); rawControl(out) != "" || !json.Valid([]byte(out)) {
			t.Errorf("printResult(compact=%v) = %q: want JSON with nothing raw", compact, out)
		}
	}

	buf.Reset()
	if err := writeJSON(&buf, map[string]any{"s": h, "raw": rawDoc, "list": []string{h}}); err != nil {
		t.Fatal(err)
	}
	if out := buf.String(); rawControl(out) != "" || !json.Valid([]byte(out)) {
		t.Errorf("writeJSON = %q", out)
	}

	buf.Reset()
	log := slog.New(newLineHandler(&buf, slog.LevelDebug))
	log.Info(host.GuestLogMessage, "module", h, "command", h, "text", h)
	log.With("module", h).Warn("hub relay: "+h, "err", h)
	checkPrinted(t, "log lines", buf.String())

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
