package manifest

import (
	"go.yaml.in/yaml/v3"
)

// LLM is a module's request to ask the station's LLM for completions
// (requires.llm). The station makes each request with its own provider and
// key; the module never sees the key. The zero value (no llm key, or
// "llm: false") asks for nothing: the module has no llm_complete import.
type LLM struct {
	// Enabled is true for "llm: true" and for a mapping.
	Enabled bool
	// MaxTokensPerCall bounds the completion tokens one request may ask
	// for ("max_tokens_per_call"); the station sends it as the request's
	// max_tokens when the module asks for none. 0: no bound but the
	// provider's.
	MaxTokensPerCall int
	// BudgetTokensPerDay bounds the prompt and completion tokens the
	// module may use in any 24 hours ("budget_tokens_per_day"), counted
	// from what the provider reports. 0: no budget.
	BudgetTokensPerDay int64
}

// Bounds on requires.llm.
const (
	MaxLLMTokensPerCall   = 1_000_000
	MaxLLMBudgetTokensDay = 1_000_000_000_000
)

func (d *decoder) llm(n *yaml.Node) LLM {
	const path = "requires.llm"
	var l LLM
	switch {
	case isNull(n):
	case n.Kind == yaml.ScalarNode && n.ShortTag() == "!!bool":
		if err := n.Decode(&l.Enabled); err != nil {
			d.typeError(n, path, "true, false or a mapping with max_tokens_per_call and budget_tokens_per_day")
		}
	case n.Kind == yaml.MappingNode:
		l.Enabled = true
		var perCall, budget *yaml.Node
		seen := d.mapping(n, path, []field{
			{"max_tokens_per_call", func(v *yaml.Node) {
				perCall = v
				l.MaxTokensPerCall = int(d.tokens(v, path+".max_tokens_per_call", MaxLLMTokensPerCall))
			}},
			{"budget_tokens_per_day", func(v *yaml.Node) {
				budget = v
				l.BudgetTokensPerDay = d.tokens(v, path+".budget_tokens_per_day", MaxLLMBudgetTokensDay)
			}},
		})
		if seen != nil && perCall != nil && budget != nil && l.MaxTokensPerCall > 0 && l.BudgetTokensPerDay > 0 &&
			int64(l.MaxTokensPerCall) > l.BudgetTokensPerDay {
			d.addf(budget, path+".budget_tokens_per_day", "", "%d is less than max_tokens_per_call (%d): one call could never use what it may ask for", l.BudgetTokensPerDay, l.MaxTokensPerCall)
		}
	default:
		d.typeError(n, path, "true, false or a mapping with max_tokens_per_call and budget_tokens_per_day")
	}
	return l
}

// tokens decodes a positive token count up to limit.
func (d *decoder) tokens(n *yaml.Node, path string, limit int64) int64 {
	var v int64
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" || n.Decode(&v) != nil {
		d.typeError(n, path, "a whole number of tokens")
		return 0
	}
	if v < 1 || v > limit {
		d.addf(n, path, "", "%d is out of range (1 to %d)", v, limit)
		return 0
	}
	return v
}
