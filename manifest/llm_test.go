package manifest

import (
	"strings"
	"testing"
)

func TestLLMForms(t *testing.T) {
	tests := []struct {
		yaml    string
		want    LLM
		wantErr string
	}{
		{yaml: "false", want: LLM{}},
		{yaml: "~", want: LLM{}},
		{yaml: "true", want: LLM{Enabled: true}},
		{yaml: "{}", want: LLM{Enabled: true}},
		{yaml: "{max_tokens_per_call: 512}", want: LLM{Enabled: true, MaxTokensPerCall: 512}},
		{yaml: "{budget_tokens_per_day: 100000}", want: LLM{Enabled: true, BudgetTokensPerDay: 100000}},
		{yaml: "{max_tokens_per_call: 1000, budget_tokens_per_day: 1000}", want: LLM{Enabled: true, MaxTokensPerCall: 1000, BudgetTokensPerDay: 1000}},
		{yaml: "{max_tokens_per_call: 1000000, budget_tokens_per_day: 1000000000000}", want: LLM{Enabled: true, MaxTokensPerCall: 1000000, BudgetTokensPerDay: 1000000000000}},
		{yaml: "yes", wantErr: "must be true, false or a mapping"},
		{yaml: "gpt-4o", wantErr: "must be true, false or a mapping"},
		{yaml: "[max_tokens_per_call]", wantErr: "must be true, false or a mapping"},
		{yaml: "{max_tokens_per_call: 0}", wantErr: "0 is out of range (1 to 1000000)"},
		{yaml: "{max_tokens_per_call: -5}", wantErr: "-5 is out of range"},
		{yaml: "{max_tokens_per_call: 1000001}", wantErr: "out of range"},
		{yaml: "{max_tokens_per_call: 1.5}", wantErr: "must be a whole number of tokens, not a number"},
		{yaml: `{max_tokens_per_call: "512"}`, wantErr: "must be a whole number of tokens, not a string"},
		{yaml: "{budget_tokens_per_day: 1000000000001}", wantErr: "out of range (1 to 1000000000000)"},
		{yaml: "{budget_tokens_per_day: 99999999999999999999999}", wantErr: "must be a whole number of tokens"},
		{yaml: "{max_tokens_per_call: 2000, budget_tokens_per_day: 1000}", wantErr: "requires.llm.budget_tokens_per_day: 1000 is less than max_tokens_per_call (2000)"},
		{yaml: "{model: gpt-4o}", wantErr: `requires.llm: unknown field "model"`},
		{yaml: "{max_token_per_call: 5}", wantErr: `did you mean "max_tokens_per_call"?`},
	}
	for _, tt := range tests {
		m, err := Parse(FileName, []byte(head+"requires:\n  llm: "+tt.yaml+"\n"))
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("llm: %s: error %v, want one containing %q", tt.yaml, err, tt.wantErr)
			}
			if err != nil && !strings.HasPrefix(err.Error(), FileName+":") {
				t.Errorf("llm: %s: error %q has no position", tt.yaml, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("llm: %s: %v", tt.yaml, err)
			continue
		}
		if got := m.Requires.LLM; got != tt.want {
			t.Errorf("llm: %s = %+v, want %+v", tt.yaml, got, tt.want)
		}
	}
}

// Without requires.llm a manifest asks for nothing.
func TestLLMAbsent(t *testing.T) {
	m, err := Parse(FileName, []byte(head))
	if err != nil {
		t.Fatal(err)
	}
	if m.Requires.LLM != (LLM{}) {
		t.Errorf("Requires.LLM = %+v, want the zero value", m.Requires.LLM)
	}
}
