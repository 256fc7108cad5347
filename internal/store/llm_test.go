package store

import (
	"context"
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
