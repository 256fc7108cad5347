// Package llm is the station's own client for OpenAI-compatible
// chat-completions APIs (OpenAI, Groq, a local server). It is station-level
// I/O: it uses the station's HTTP client and no module's policy applies to it.
// Modules reach it only through the llm host call, which the station answers
// with its own key.
package llm

import "context"

// Message is one chat message.
type Message struct {
	Role    string `json:"role"` // "system", "user" or "assistant"
	Content string `json:"content"`
}

// Request is one chat completion.
type Request struct {
	// Model, if empty, is the station's configured default model.
	Model    string    `json:"model,omitempty"`
	Messages []Message `json:"messages"`
	// MaxTokens bounds the completion; 0 leaves it to the provider.
	MaxTokens int `json:"max_tokens,omitempty"`
	// Temperature, if set, is passed through.
	Temperature *float64 `json:"temperature,omitempty"`
	// JSON asks for a JSON object response (response_format json_object).
	JSON bool `json:"json,omitempty"`
}

// Usage is what a completion cost, as the provider reported it.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// Response is a completed chat completion.
type Response struct {
	Model        string `json:"model"`
	Content      string `json:"content"`
	FinishReason string `json:"finish_reason,omitempty"`
	Usage        Usage  `json:"usage"`
}

// Completer makes chat completions. *Client implements it; the workflow
// engine and the host take this interface so tests can substitute a fake.
type Completer interface {
	Complete(ctx context.Context, req Request) (*Response, error)
}
