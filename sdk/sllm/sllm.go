// Package sllm asks the station's LLM for chat completions, through the
// llm_complete import (docs/abi.md). The station makes each request with its
// own provider, model and key — the module never sees the key and needs no
// network allowlist for it — within the token limits the manifest declares:
//
//	requires:
//	  llm:
//	    max_tokens_per_call: 512
//	    budget_tokens_per_day: 200000
//
// and a module calls it like this:
//
//	resp, err := sllm.Complete(ctx, sllm.Request{
//		Messages: []sllm.Message{sllm.System("Summarize in one sentence."), sllm.User(text)},
//	})
//
// A request the station refuses (no llm grant, more tokens than
// max_tokens_per_call, the day's budget used up) fails with a *sdk.HostError
// whose Denied method reports true. A module whose manifest does not grant
// llm cannot be installed at all if it calls this package: the station does
// not offer it the import.
//
// Outside the station (any GOOS but wasip1) Complete fails unless a test
// installed a fake with SetNativeCompleter.
package sllm

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/station-dev/station/sdk"
	"github.com/station-dev/station/sdk/abi"
	"github.com/station-dev/station/sdk/internal/hostcall"
)

// Message is one chat message.
type Message struct {
	Role    string `json:"role"` // "system", "user" or "assistant"
	Content string `json:"content"`
}

// System returns a system message.
func System(text string) Message { return Message{Role: "system", Content: text} }

// User returns a user message.
func User(text string) Message { return Message{Role: "user", Content: text} }

// Assistant returns an assistant message (an earlier answer, for context).
func Assistant(text string) Message { return Message{Role: "assistant", Content: text} }

// Request is one chat completion. The model is the station's.
type Request struct {
	Messages []Message
	// MaxTokens bounds the completion; 0 means the manifest's
	// max_tokens_per_call, if any, else the provider's default. Asking for
	// more than max_tokens_per_call is refused.
	MaxTokens int
	// Temperature, 0 to 2, if set.
	Temperature *float64
	// JSON asks for a JSON object as the content. Providers require the
	// messages to mention JSON when it is set.
	JSON bool
}

// Usage is what a completion cost, as the provider reported it; it counts
// against the module's budget_tokens_per_day.
type Usage struct {
	PromptTokens     int
	CompletionTokens int
	TotalTokens      int
}

// Response is a completed chat completion.
type Response struct {
	Model   string
	Content string
	// FinishReason is "stop", or "length" when MaxTokens (or the
	// station's limit) cut the completion short.
	FinishReason string
	Usage        Usage
}

// Complete asks the station's LLM for one completion. It blocks until the
// station has the answer (the module's instance does nothing else
// meanwhile) or the call's deadline passes.
func Complete(ctx context.Context, req Request) (*Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return complete(ctx, req)
}

// Ask is Complete with one user message, returning the content.
func Ask(ctx context.Context, prompt string) (string, error) {
	resp, err := Complete(ctx, Request{Messages: []Message{User(prompt)}})
	if err != nil {
		return "", err
	}
	return resp.Content, nil
}

// encode builds the abi.LLMRequest document for req.
func encode(req Request) ([]byte, error) {
	doc := abi.LLMRequest{MaxTokens: req.MaxTokens, Temperature: req.Temperature, JSON: req.JSON, Messages: make([]abi.LLMMessage, len(req.Messages))}
	for i, m := range req.Messages {
		doc.Messages[i] = abi.LLMMessage{Role: m.Role, Content: m.Content}
	}
	return json.Marshal(doc)
}

// decode turns the station's answer into a Response or a *sdk.HostError.
func decode(s abi.Status, answer []byte) (*Response, error) {
	if s != abi.StatusOK {
		e := hostcall.ParseError(s, answer)
		return nil, &sdk.HostError{Status: s, Code: e.Code, Capability: e.Capability, Target: e.Target, Reason: e.Reason, Message: e.Message}
	}
	var r abi.LLMResponse
	if err := json.Unmarshal(answer, &r); err != nil {
		return nil, fmt.Errorf("sllm: decode the station's answer: %w", err)
	}
	return &Response{Model: r.Model, Content: r.Content, FinishReason: r.FinishReason,
		Usage: Usage{PromptTokens: r.Usage.PromptTokens, CompletionTokens: r.Usage.CompletionTokens, TotalTokens: r.Usage.TotalTokens}}, nil
}
