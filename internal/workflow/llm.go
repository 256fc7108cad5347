package workflow

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/station-dev/station/internal/llm"
	"github.com/station-dev/station/internal/store"
)

// llmInput is the rendered with of an llm step.
type llmInput struct {
	Model       string        `json:"model"`
	System      string        `json:"system"`
	Prompt      string        `json:"prompt"`
	Messages    []llm.Message `json:"messages"`
	MaxTokens   int           `json:"max_tokens"`
	Temperature *float64      `json:"temperature"`
	JSON        bool          `json:"json"`
}

// LLMOutput is the output of an llm step.
type LLMOutput struct {
	Content      string    `json:"content"`
	Model        string    `json:"model"`
	FinishReason string    `json:"finish_reason,omitempty"`
	Usage        llm.Usage `json:"usage"`
	// JSON is the content parsed, when the step asked for json: true.
	JSON any `json:"json,omitempty"`
}

// llmError is a failed llm step; input marks errors retrying cannot fix.
type llmError struct {
	input bool
	err   error
}

func (e *llmError) Error() string { return "llm: " + e.err.Error() }
func (e *llmError) Unwrap() error { return e.err }

// ErrNoLLM is the error of an llm step in a station without an LLM
// provider.
var ErrNoLLM = errors.New("the station has no LLM provider configured (set llm.provider or llm.base_url in config.yaml, or STATION_LLM_BASE_URL; see docs/config.md)")

// llm runs an llm step: the station's own call to its provider, under no
// module's policy.
func (x *execution) llm(ctx context.Context, input []byte) ([]byte, *store.LLMUsage, error) {
	dec := json.NewDecoder(bytes.NewReader(input))
	dec.DisallowUnknownFields()
	var in llmInput
	if err := dec.Decode(&in); err != nil {
		return nil, nil, &llmError{input: true, err: fmt.Errorf("with: %w", err)}
	}
	req := llm.Request{Model: in.Model, MaxTokens: in.MaxTokens, Temperature: in.Temperature, JSON: in.JSON}
	if in.System != "" {
		req.Messages = append(req.Messages, llm.Message{Role: "system", Content: in.System})
	}
	req.Messages = append(req.Messages, in.Messages...)
	if in.Prompt != "" {
		req.Messages = append(req.Messages, llm.Message{Role: "user", Content: in.Prompt})
	}
	if len(req.Messages) == 0 {
		return nil, nil, &llmError{input: true, err: errors.New("with: the prompt is empty and there are no messages")}
	}
	if x.e.LLM == nil {
		return nil, nil, &llmError{input: true, err: ErrNoLLM}
	}
	resp, err := x.e.LLM.Complete(ctx, req)
	if err != nil {
		// Retrying cannot fix a missing configuration, a refused key, an
		// unknown model or a request the provider refuses.
		final := errors.Is(err, llm.ErrNotConfigured) || errors.Is(err, llm.ErrKeyRefused) || errors.Is(err, llm.ErrModelNotFound) ||
			errors.Is(err, llm.ErrBadRequest) || errors.Is(err, llm.ErrInvalid)
		return nil, nil, &llmError{input: final, err: err}
	}
	usage := &store.LLMUsage{Model: resp.Model, PromptTokens: resp.Usage.PromptTokens, CompletionTokens: resp.Usage.CompletionTokens}
	out := LLMOutput{Content: resp.Content, Model: resp.Model, FinishReason: resp.FinishReason, Usage: resp.Usage}
	if in.JSON {
		v, err := fromJSON([]byte(resp.Content))
		if err != nil || !json.Valid([]byte(resp.Content)) {
			return nil, usage, &llmError{err: fmt.Errorf("asked for JSON, the model answered something else: %.200q", resp.Content)}
		}
		out.JSON = v
	}
	b, err := toJSON(out)
	return b, usage, err
}
