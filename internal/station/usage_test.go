package station_test

import (
	"context"
	"testing"
	"time"

	"github.com/station-dev/station/internal/station"
	"github.com/station-dev/station/internal/store"
)

// TestLLMUsage: usage is summed per module over the period, the station's
// own use (workflow llm steps) first with no budget; a module shows its
// approved daily budget and what counts against it now (the last 24 hours,
// whatever the period); a removed module keeps its usage, without a budget.
func TestLLMUsage(t *testing.T) {
	ctx := context.Background()
	s, err := station.Open(ctx, t.TempDir(), station.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(ctx)
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	if err := s.Store.PutModule(ctx, store.Module{ID: "ada/summarize", Version: "1.0.0", Digest: "sha256:00", Approved: []byte(`{"llm":{"budget_tokens_per_day":5000}}`), InstalledAt: now}); err != nil {
		t.Fatal(err)
	}
	for _, r := range []store.LLMRecord{
		{Time: now.Add(-time.Hour), Module: "", Model: "m", PromptTokens: 10, CompletionTokens: 4},
		{Time: now.Add(-time.Hour), Module: "ada/summarize", Model: "m", PromptTokens: 100, CompletionTokens: 20},
		{Time: now.Add(-30 * time.Hour), Module: "ada/summarize", Model: "m", PromptTokens: 1000, CompletionTokens: 1},
		{Time: now.Add(-2 * time.Hour), Module: "gone/module", Model: "m", PromptTokens: 7},
		{Time: now.Add(-100 * time.Hour), Module: "old/module", Model: "m", PromptTokens: 7},
	} {
		if err := s.Store.AppendLLMUsage(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.LLMUsage(ctx, now.Add(-48*time.Hour), now)
	if err != nil {
		t.Fatal(err)
	}
	want := []station.LLMUsage{
		{Module: "", Calls: 1, PromptTokens: 10, CompletionTokens: 4},
		{Module: "ada/summarize", Calls: 2, PromptTokens: 1100, CompletionTokens: 21, BudgetTokensPerDay: 5000, UsedInWindow: 120},
		{Module: "gone/module", Calls: 1, PromptTokens: 7, UsedInWindow: 7},
	}
	if len(got) != len(want) {
		t.Fatalf("usage %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("row %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}
