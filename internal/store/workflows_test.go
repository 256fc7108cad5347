package store

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func newRun(t *testing.T, s *Store, owner string) int64 {
	t.Helper()
	id, err := s.CreateWorkflowRun(context.Background(), NewWorkflowRun{
		Workflow: "invoice", File: "/w/invoice.yaml", Digest: "sha256:aa", Inputs: []byte(`{"customer":"cus_1"}`),
		Owner: owner, At: time.Unix(100, 0),
		Steps: []NewWorkflowStep{{"create", "dave/stripe-invoicing create-invoice"}, {"summary", "llm"}, {"maybe", "llm"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func mustRun(t *testing.T, s *Store, id int64) WorkflowRun {
	t.Helper()
	r, err := s.WorkflowRun(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func stepStatuses(r WorkflowRun) string {
	var out []string
	for _, st := range r.Steps {
		out = append(out, st.Step+"="+string(st.Status))
	}
	return strings.Join(out, " ")
}

// TestWorkflowRunLifecycle walks a run through every transition and reads
// it back after each.
func TestWorkflowRunLifecycle(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	id := newRun(t, s, "p1")
	r := mustRun(t, s, id)
	if r.Status != RunRunning || r.Workflow != "invoice" || string(r.Inputs) != `{"customer":"cus_1"}` || !r.FinishedAt.IsZero() {
		t.Fatalf("new run = %+v", r)
	}
	if got, want := stepStatuses(r), "create=pending summary=pending maybe=pending"; got != want {
		t.Fatalf("steps = %s, want %s", got, want)
	}

	start := func(step string, attempt int) error {
		return s.StartStepAttempt(ctx, AttemptStart{RunID: id, Owner: "p1", Step: step, Attempt: attempt, Trace: "t/" + step, Input: []byte(`{}`), At: time.Unix(101, 0)})
	}
	if err := start("create", 1); err != nil {
		t.Fatal(err)
	}
	if err := start("create", 1); err == nil {
		t.Fatal("starting attempt 1 twice succeeded")
	}
	// A failed attempt that will be retried leaves the step running.
	if err := s.FinishStepAttempt(ctx, AttemptEnd{RunID: id, Owner: "p1", Step: "create", Attempt: 1, Err: "boom", ErrKind: "command", At: time.Unix(102, 0)}); err != nil {
		t.Fatal(err)
	}
	if err := start("create", 2); err != nil {
		t.Fatal(err)
	}
	if err := s.FinishStepAttempt(ctx, AttemptEnd{RunID: id, Owner: "p1", Step: "create", Attempt: 2, Output: []byte(`{"id":"in_1"}`), Final: true, At: time.Unix(103, 0)}); err != nil {
		t.Fatal(err)
	}
	if err := s.FinishStepAttempt(ctx, AttemptEnd{RunID: id, Owner: "p1", Step: "create", Attempt: 2, Output: []byte(`{}`), Final: true, At: time.Unix(103, 0)}); err == nil {
		t.Fatal("finishing a finished attempt succeeded")
	}
	if err := start("summary", 1); err != nil {
		t.Fatal(err)
	}
	if err := s.FinishStepAttempt(ctx, AttemptEnd{RunID: id, Owner: "p1", Step: "summary", Attempt: 1, Err: "no provider", Final: true, Continued: true,
		Usage: &LLMUsage{Model: "m", PromptTokens: 3, CompletionTokens: 4}, At: time.Unix(104, 0)}); err != nil {
		t.Fatal(err)
	}
	if err := s.SkipStep(ctx, id, "p1", "maybe", time.Unix(105, 0)); err != nil {
		t.Fatal(err)
	}
	if err := s.SkipStep(ctx, id, "p1", "maybe", time.Unix(105, 0)); err == nil {
		t.Fatal("skipping a skipped step succeeded")
	}
	r = mustRun(t, s, id)
	if got, want := stepStatuses(r), "create=succeeded summary=failed maybe=skipped"; got != want {
		t.Fatalf("steps = %s, want %s", got, want)
	}
	c := r.Steps[0]
	if c.Attempts != 2 || string(c.Output) != `{"id":"in_1"}` || c.Error != "" || len(c.AttemptLog) != 2 ||
		c.AttemptLog[0].Status != StepFailed || c.AttemptLog[0].Error != "boom" || c.AttemptLog[1].Status != StepSucceeded ||
		!c.StartedAt.Equal(time.Unix(101, 0)) || !c.FinishedAt.Equal(time.Unix(103, 0)) {
		t.Errorf("create step = %+v", c)
	}
	if sm := r.Steps[1]; !sm.Continued || sm.Error != "no provider" || !sm.Status.Finished(sm.Continued) {
		t.Errorf("summary step = %+v", sm)
	}
	var model, trace string
	var tokens int
	if err := s.db.QueryRow(`SELECT model, trace, prompt_tokens + completion_tokens FROM llm_usage WHERE module = ''`).Scan(&model, &trace, &tokens); err != nil {
		t.Fatal(err)
	}
	if model != "m" || trace != "t/summary" || tokens != 7 {
		t.Errorf("llm_usage = %s %s %d", model, trace, tokens)
	}

	if err := s.FinishWorkflowRun(ctx, id, "p1", RunSucceeded, []byte(`{"ok":true}`), "", time.Unix(106, 0)); err != nil {
		t.Fatal(err)
	}
	r = mustRun(t, s, id)
	if r.Status != RunSucceeded || string(r.Output) != `{"ok":true}` || !r.FinishedAt.Equal(time.Unix(106, 0)) {
		t.Errorf("finished run = %+v", r)
	}
	// A finished run accepts no more writes.
	if err := start("maybe", 1); !errors.Is(err, ErrNotOwner) {
		t.Errorf("write to a finished run: %v, want ErrNotOwner", err)
	}
	if _, err := s.ClaimWorkflowRun(ctx, id, "p2", "sha256:aa", time.Unix(107, 0)); err == nil || !strings.Contains(err.Error(), "succeeded") {
		t.Errorf("resume of a succeeded run: %v", err)
	}
}

// TestWorkflowRunCrashAndResume leaves a run as a killed process would,
// recovers it, and resumes it.
func TestWorkflowRunCrashAndResume(t *testing.T) {
	path := filepath.Join(t.TempDir(), "station.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	id := newRun(t, s, "dead")
	other := newRun(t, s, "alive")
	for _, step := range []string{"create", "summary"} {
		if err := s.StartStepAttempt(ctx, AttemptStart{RunID: id, Owner: "dead", Step: step, Attempt: 1, Trace: "t", Input: []byte(`{}`), At: time.Unix(101, 0)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.FinishStepAttempt(ctx, AttemptEnd{RunID: id, Owner: "dead", Step: "create", Attempt: 1, Output: []byte(`1`), Final: true, At: time.Unix(102, 0)}); err != nil {
		t.Fatal(err)
	}
	s.Close() // the process dies with "summary" running

	s, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.ClaimWorkflowRun(ctx, id, "p2", "sha256:aa", time.Unix(103, 0)); err == nil || !strings.Contains(err.Error(), "still running") {
		t.Fatalf("resume of a running run: %v", err)
	}
	ids, err := s.InterruptOrphanedRuns(ctx, func(r WorkflowRun) bool { return r.Owner == "alive" }, time.Unix(103, 0))
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 1 || ids[0] != id {
		t.Fatalf("interrupted %v, want [%d]", ids, id)
	}
	if r := mustRun(t, s, other); r.Status != RunRunning {
		t.Errorf("live run became %s", r.Status)
	}
	r := mustRun(t, s, id)
	if r.Status != RunInterrupted || !strings.Contains(r.Error, "station workflow resume") {
		t.Fatalf("orphaned run = %s %q", r.Status, r.Error)
	}
	// The dead owner can no longer write.
	if err := s.FinishStepAttempt(ctx, AttemptEnd{RunID: id, Owner: "dead", Step: "summary", Attempt: 1, Output: []byte(`1`), Final: true, At: time.Unix(104, 0)}); !errors.Is(err, ErrNotOwner) {
		t.Errorf("write by the dead owner: %v, want ErrNotOwner", err)
	}
	if _, err := s.ClaimWorkflowRun(ctx, id, "p2", "sha256:bb", time.Unix(104, 0)); !errors.Is(err, ErrDigestChanged) {
		t.Errorf("resume with another digest: %v, want ErrDigestChanged", err)
	}
	r, err = s.ClaimWorkflowRun(ctx, id, "p2", "sha256:aa", time.Unix(105, 0))
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != RunRunning || r.Owner != "p2" || r.Resumes != 1 {
		t.Errorf("claimed run = %+v", r)
	}
	if got, want := stepStatuses(r), "create=succeeded summary=pending maybe=pending"; got != want {
		t.Errorf("steps after claim = %s, want %s", got, want)
	}
	if a := r.Steps[1].AttemptLog; len(a) != 1 || a[0].Status != StepFailed || a[0].ErrorKind != "interrupted" {
		t.Errorf("interrupted attempt = %+v", a)
	}
	// Attempts go on counting: 1 is taken.
	if err := s.StartStepAttempt(ctx, AttemptStart{RunID: id, Owner: "p2", Step: "summary", Attempt: 1, Trace: "t", Input: []byte(`{}`), At: time.Unix(106, 0)}); err == nil {
		t.Error("attempt 1 was started again after the resume")
	}
	if err := s.StartStepAttempt(ctx, AttemptStart{RunID: id, Owner: "p2", Step: "summary", Attempt: 2, Trace: "t", Input: []byte(`{}`), At: time.Unix(106, 0)}); err != nil {
		t.Error(err)
	}
	if _, err := s.ClaimWorkflowRun(ctx, id, "p3", "sha256:aa", time.Unix(107, 0)); err == nil {
		t.Error("a running run was claimed twice")
	}
}

func TestWorkflowRunsList(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	var ids []int64
	for range 3 {
		ids = append(ids, newRun(t, s, "p"))
	}
	runs, err := s.WorkflowRuns(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2 || runs[0].ID != ids[2] || runs[1].ID != ids[1] || runs[0].Steps != nil {
		t.Errorf("WorkflowRuns(2) = %+v", runs)
	}
	if _, err := s.WorkflowRun(ctx, 999); !errors.Is(err, ErrNotFound) {
		t.Errorf("WorkflowRun(missing) = %v, want ErrNotFound", err)
	}
	if err := s.FinishWorkflowRun(ctx, ids[0], "p", RunStatus("bogus"), nil, "", time.Unix(1, 0)); err == nil {
		t.Error("a bogus final status was accepted")
	}
}
