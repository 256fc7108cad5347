package host

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/tetratelabs/wazero/api"

	"github.com/station-dev/station/internal/llm"
	"github.com/station-dev/station/manifest"
	"github.com/station-dev/station/sdk/abi"
)

// LLMGrant is what a module's manifest grants it of the station's LLM. The
// host binds it into the module's llm_complete import when the module is
// linked and hands it, unchanged, to Options.LLM with every request: the
// station never looks a module's limits up at call time.
type LLMGrant struct {
	// Module is the module's id.
	Module string
	manifest.LLM
}

// LLMFunc answers one llm_complete call. ctx is the module call's context
// (its deadline, and sandbox.CallFrom for attribution); g is the grant bound
// at link time. A refusal is a *sandbox.Violation, which the guest gets as
// StatusDenied. The function, not the host, holds the provider and its key.
type LLMFunc func(ctx context.Context, g LLMGrant, req llm.Request) (*llm.Response, error)

// MaxLLMMessages bounds the messages of one llm_complete request.
const MaxLLMMessages = 1024

// errNoLLM is the answer of a granted module's llm_complete on a host
// without Options.LLM.
var errNoLLM = errors.New("this station offers no LLM (the operator has not configured one)")

// llm_complete(ptr i32, len i32) -> i64, linked only when llm is granted.
func (m *Module) llmComplete(ctx context.Context, mod api.Module, stack []uint64) {
	docCall(m, ctx, mod, stack, abi.ImportLLMComplete, llmShape, func(ctx context.Context, req *abi.LLMRequest) (any, error) {
		r, err := llmRequest(req)
		if err != nil {
			return nil, err
		}
		if m.h.opts.LLM == nil {
			return nil, errNoLLM
		}
		resp, err := m.h.opts.LLM(ctx, *m.llm, r)
		if err != nil {
			return nil, err
		}
		return &abi.LLMResponse{
			Model:        resp.Model,
			Content:      resp.Content,
			FinishReason: resp.FinishReason,
			Usage:        abi.LLMUsage{PromptTokens: resp.Usage.PromptTokens, CompletionTokens: resp.Usage.CompletionTokens, TotalTokens: resp.Usage.TotalTokens},
		}, nil
	})
}

// llmRequest validates a guest's request document and converts it. Errors
// wrap llm.ErrInvalid (StatusInvalid for the guest).
func llmRequest(req *abi.LLMRequest) (llm.Request, error) {
	invalid := func(format string, args ...any) (llm.Request, error) {
		return llm.Request{}, fmt.Errorf("%w: %s", llm.ErrInvalid, fmt.Sprintf(format, args...))
	}
	switch n := len(req.Messages); {
	case n == 0:
		return invalid("messages is empty")
	case n > MaxLLMMessages:
		return invalid("%d messages; at most %d", n, MaxLLMMessages)
	}
	if req.MaxTokens < 0 {
		return invalid("max_tokens is negative")
	}
	if t := req.Temperature; t != nil && (math.IsNaN(*t) || *t < 0 || *t > 2) {
		return invalid("temperature must be between 0 and 2")
	}
	out := llm.Request{Messages: make([]llm.Message, len(req.Messages)), MaxTokens: req.MaxTokens, Temperature: req.Temperature, JSON: req.JSON}
	for i, msg := range req.Messages {
		switch msg.Role {
		case "system", "user", "assistant":
		default:
			return invalid("messages[%d].role must be system, user or assistant", i)
		}
		out.Messages[i] = llm.Message{Role: msg.Role, Content: msg.Content}
	}
	return out, nil
}

// describeLLM renders a grant for the station log.
func describeLLM(g *LLMGrant) string {
	s := "completions from the station's LLM"
	if g.MaxTokensPerCall > 0 {
		s += fmt.Sprintf(", at most %d completion tokens per call", g.MaxTokensPerCall)
	}
	if g.BudgetTokensPerDay > 0 {
		s += fmt.Sprintf(", at most %d tokens in any 24 hours", g.BudgetTokensPerDay)
	}
	return s
}
