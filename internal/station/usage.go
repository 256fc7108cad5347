package station

import (
	"context"
	"encoding/json"
	"time"
)

// LLMUsage is what the station's LLM spent for one module, or for the
// station's own use (workflow llm steps: Module ""), over a period.
type LLMUsage struct {
	Module           string `json:"module"` // "" for the station's own use
	Calls            int64  `json:"calls"`
	PromptTokens     int64  `json:"prompt_tokens"`
	CompletionTokens int64  `json:"completion_tokens"`
	// BudgetTokensPerDay is the module's approved daily budget; 0 for
	// none (and for the station's own use).
	BudgetTokensPerDay int64 `json:"budget_tokens_per_day,omitempty"`
	// UsedInWindow is what counts against the budget now: the module's
	// tokens in the last BudgetWindow (0 for the station's own use).
	UsedInWindow int64 `json:"used_last_24h"`
}

// LLMUsage sums the LLM usage since then, per module (ordered by module,
// the station's own use first), with each module's approved budget and what
// counts against it at now.
func (s *Station) LLMUsage(ctx context.Context, since, now time.Time) ([]LLMUsage, error) {
	totals, err := s.Store.LLMTotals(ctx, since)
	if err != nil {
		return nil, err
	}
	out := make([]LLMUsage, 0, len(totals))
	for _, t := range totals {
		u := LLMUsage{Module: t.Module, Calls: t.Calls, PromptTokens: t.PromptTokens, CompletionTokens: t.CompletionTokens}
		if t.Module != "" {
			// A module removed since keeps its usage, with no budget.
			if rec, err := s.Store.Module(ctx, t.Module); err == nil {
				var p Permissions
				if json.Unmarshal(rec.Approved, &p) == nil && p.LLM != nil {
					u.BudgetTokensPerDay = p.LLM.BudgetTokensPerDay
				}
			}
			if u.UsedInWindow, err = s.Store.LLMTokensSince(ctx, t.Module, now.Add(-BudgetWindow)); err != nil {
				return nil, err
			}
		}
		out = append(out, u)
	}
	return out, nil
}
