package store

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"
)

func TestLLMUsage(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	t0 := time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)
	recs := []LLMRecord{
		{Time: t0, Module: "dave/summarize", Trace: "run/1/step/a", Model: "m", PromptTokens: 10, CompletionTokens: 5},
		{Time: t0.Add(time.Hour), Module: "dave/summarize", Model: "m", PromptTokens: 100, CompletionTokens: 50},
		{Time: t0.Add(2 * time.Hour), Module: "ada/other", Model: "m2", PromptTokens: 7, CompletionTokens: 0},
		{Time: t0.Add(3 * time.Hour), Module: "", Trace: "run/2/step/b", Model: "m", PromptTokens: 1, CompletionTokens: 2},
	}
	for _, r := range recs {
		if err := s.AppendLLMUsage(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		module string
		since  time.Time
		want   int64
	}{
		{"dave/summarize", t0, 165},
		{"dave/summarize", t0.Add(time.Minute), 150},
		{"dave/summarize", t0.Add(2 * time.Hour), 0},
		{"ada/other", time.Time{}.Add(1), 7},
		{"", t0, 3},
		{"nobody/none", t0, 0},
	} {
		got, err := s.LLMTokensSince(ctx, tt.module, tt.since)
		if err != nil || got != tt.want {
			t.Errorf("LLMTokensSince(%q, %v) = %d, %v; want %d", tt.module, tt.since, got, err, tt.want)
		}
	}
	totals, err := s.LLMTotals(ctx, t0)
	if err != nil {
		t.Fatal(err)
	}
	wantTotals := []LLMTotal{
		{Module: "", Calls: 1, PromptTokens: 1, CompletionTokens: 2},
		{Module: "ada/other", Calls: 1, PromptTokens: 7},
		{Module: "dave/summarize", Calls: 2, PromptTokens: 110, CompletionTokens: 55},
	}
	if !reflect.DeepEqual(totals, wantTotals) {
		t.Errorf("LLMTotals = %+v, want %+v", totals, wantTotals)
	}
	got, err := s.LLMRecords(ctx, "dave/summarize", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].ID == 0 || got[0].ID > got[1].ID {
		t.Fatalf("LLMRecords = %+v", got)
	}
	for i := range got {
		got[i].ID = 0
	}
	if !reflect.DeepEqual(got, recs[:2]) {
		t.Errorf("LLMRecords = %+v, want %+v", got, recs[:2])
	}
	if got, _ := s.LLMRecords(ctx, "dave/summarize", 1); len(got) != 1 || got[0].PromptTokens != 100 {
		t.Errorf("LLMRecords(limit 1) = %+v, want the newest", got)
	}
}

func TestLLMUsageRejects(t *testing.T) {
	s := open(t)
	for name, r := range map[string]LLMRecord{
		"negative tokens":   {Time: time.Now(), Module: "a/b", PromptTokens: -1},
		"time out of range": {Time: time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC), Module: "a/b"},
	} {
		if err := s.AppendLLMUsage(context.Background(), r); err == nil {
			t.Errorf("%s: AppendLLMUsage accepted %+v", name, r)
		}
	}
}

// Concurrent appends are all counted.
func TestLLMUsageConcurrent(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.AppendLLMUsage(ctx, LLMRecord{Time: time.Now(), Module: "a/b", Model: "m", PromptTokens: 2, CompletionTokens: 3}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if got, err := s.LLMTokensSince(ctx, "a/b", time.Now().Add(-time.Hour)); err != nil || got != 100 {
		t.Errorf("LLMTokensSince = %d, %v; want 100", got, err)
	}
}

func TestLLMDailyAndByWorkflow(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	day := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)
	newRun := func(workflow string) int64 {
		t.Helper()
		id, err := s.CreateWorkflowRun(ctx, NewWorkflowRun{Workflow: workflow, File: "/w/" + workflow + ".yaml", Digest: "d", Inputs: []byte(`{}`), Owner: "o", At: day})
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	invoice, invoice2, digest := newRun("invoice"), newRun("invoice"), newRun("digest")
	trace := func(run int64, step string) string { return fmt.Sprintf("run/%d/step/%s/attempt/1", run, step) }
	recs := []LLMRecord{
		{Time: day.Add(-time.Nanosecond), Module: "dave/summarize", PromptTokens: 1000}, // the day before
		{Time: day, Module: "dave/summarize", Trace: trace(invoice, "a"), PromptTokens: 10, CompletionTokens: 5},
		{Time: day.Add(23 * time.Hour), Module: "dave/summarize", PromptTokens: 100, CompletionTokens: 50},
		{Time: day.Add(24 * time.Hour), Module: "dave/summarize", Trace: trace(invoice2, "a"), PromptTokens: 1},
		{Time: day.Add(49 * time.Hour), Module: "", Trace: trace(digest, "note"), PromptTokens: 2, CompletionTokens: 3},
		{Time: day.Add(49 * time.Hour), Module: "", Trace: trace(invoice, "note"), CompletionTokens: 7},
		// Traces that name no recorded run, or not as a run's.
		{Time: day.Add(50 * time.Hour), Module: "", Trace: trace(999, "x"), PromptTokens: 1},
		{Time: day.Add(50 * time.Hour), Module: "", Trace: fmt.Sprintf("run/%dx/step/a/attempt/1", invoice), PromptTokens: 1},
		{Time: day.Add(50 * time.Hour), Module: "", Trace: fmt.Sprintf("RUN/%d/step/a/attempt/1", invoice), PromptTokens: 1},
		{Time: day.Add(50 * time.Hour), Module: "", Trace: fmt.Sprintf("xrun/%d/step/a", invoice), PromptTokens: 1},
		{Time: day.Add(50 * time.Hour), Module: "", Trace: fmt.Sprintf("run/%d", invoice), PromptTokens: 1},
		{Time: day.Add(50 * time.Hour), Module: "", Trace: "run//step/a", PromptTokens: 1},
	}
	for _, r := range recs {
		if err := s.AppendLLMUsage(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.LLMDaily(ctx, day)
	if err != nil {
		t.Fatal(err)
	}
	want := []LLMDay{
		{Module: "", Day: day.AddDate(0, 0, 2), Calls: 8, PromptTokens: 8, CompletionTokens: 10},
		{Module: "dave/summarize", Day: day, Calls: 2, PromptTokens: 110, CompletionTokens: 55},
		{Module: "dave/summarize", Day: day.AddDate(0, 0, 1), Calls: 1, PromptTokens: 1},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("LLMDaily(%v) =\n%+v, want\n%+v", day, got, want)
	}
	if got[1].Tokens() != 165 {
		t.Errorf("Tokens = %d", got[1].Tokens())
	}
	// Ever: the day before is its own day.
	if all, err := s.LLMDaily(ctx, time.Time{}); err != nil || len(all) != 4 || !all[1].Day.Equal(day.AddDate(0, 0, -1)) || all[1].PromptTokens != 1000 {
		t.Errorf("LLMDaily(ever) = %+v, %v", all, err)
	}
	// Before 1970, a day is still the UTC day the time is in.
	if err := s.AppendLLMUsage(ctx, LLMRecord{Time: time.Unix(0, -1), Module: "old/one", PromptTokens: 1}); err != nil {
		t.Fatal(err)
	}
	if all, err := s.LLMDaily(ctx, time.Time{}); err != nil || len(all) != 5 || all[4].Module != "old/one" || !all[4].Day.Equal(time.Unix(-86400, 0).UTC()) {
		t.Errorf("LLMDaily(ever) = %+v, %v; want old/one on 1969-12-31", all, err)
	}

	wf, err := s.LLMWorkflowTotals(ctx, day)
	if err != nil {
		t.Fatal(err)
	}
	wantWF := []LLMWorkflowTotal{
		{Workflow: "digest", Runs: 1, Calls: 1, PromptTokens: 2, CompletionTokens: 3},
		{Workflow: "invoice", Runs: 2, Calls: 3, PromptTokens: 11, CompletionTokens: 12},
	}
	if !reflect.DeepEqual(wf, wantWF) {
		t.Errorf("LLMWorkflowTotals =\n%+v, want\n%+v", wf, wantWF)
	}
	if wf[1].Tokens() != 23 {
		t.Errorf("Tokens = %d", wf[1].Tokens())
	}
	if wf, err := s.LLMWorkflowTotals(ctx, day.Add(48*time.Hour)); err != nil || len(wf) != 2 || wf[1].Calls != 1 || wf[1].Runs != 1 {
		t.Errorf("LLMWorkflowTotals(since day 3) = %+v, %v", wf, err)
	}
}
