//go:build probe_llm

package main

import (
	"context"
	"errors"

	"github.com/station-dev/station/internal/probe"
	"github.com/station-dev/station/sdk/sllm"
)

func doLLM(ctx context.Context, a probe.Action, r *probe.Result) error {
	if a.LLM == nil {
		return errors.New("llm: no request")
	}
	req := sllm.Request{MaxTokens: a.LLM.MaxTokens, JSON: a.LLM.JSON}
	for _, m := range a.LLM.Messages {
		req.Messages = append(req.Messages, sllm.Message{Role: m.Role, Content: m.Content})
	}
	resp, err := sllm.Complete(ctx, req)
	if err != nil {
		return err
	}
	r.LLM = &probe.LLMResult{Model: resp.Model, Content: resp.Content, FinishReason: resp.FinishReason,
		PromptTokens: resp.Usage.PromptTokens, CompletionTokens: resp.Usage.CompletionTokens, TotalTokens: resp.Usage.TotalTokens}
	return nil
}
