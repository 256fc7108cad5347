// Command summarize is an example Station module that asks the station's
// LLM for completions (requires.llm). It has no network access at all: the
// station makes each request with the operator's provider and key, which the
// module never sees, within the token limits its manifest declares. Build it
// with
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o module.wasm .
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/station-dev/station/sdk"
	"github.com/station-dev/station/sdk/sllm"
)

func init() {
	sdk.Handle("summarize", summarize)
	sdk.Handle("keywords", keywords)
}

func main() {}

// maxText bounds the text a command accepts: the prompt is paid for from
// the module's daily budget.
const maxText = 32 << 10

// SummarizeInput is the input of summarize.
type SummarizeInput struct {
	Text string `json:"text"`
	// Sentences is how long the summary should be (default 1, at most 5).
	Sentences int `json:"sentences,omitempty"`
}

// Summary is the result of summarize.
type Summary struct {
	Summary string `json:"summary"`
	Model   string `json:"model"`
	Tokens  int    `json:"tokens"`
	// Truncated is set when the station's token limit cut the summary.
	Truncated bool `json:"truncated,omitempty"`
}

func summarize(ctx context.Context, in SummarizeInput) (Summary, error) {
	text, err := checkText(in.Text)
	if err != nil {
		return Summary{}, err
	}
	n := in.Sentences
	switch {
	case n == 0:
		n = 1
	case n < 0 || n > 5:
		return Summary{}, errors.New("sentences must be between 1 and 5")
	}
	resp, err := sllm.Complete(ctx, sllm.Request{Messages: []sllm.Message{
		sllm.System(fmt.Sprintf("Summarize the user's text in %d plain sentence(s). Answer with the summary only.", n)),
		sllm.User(text),
	}})
	if err != nil {
		return Summary{}, explain(err)
	}
	return Summary{Summary: strings.TrimSpace(resp.Content), Model: resp.Model, Tokens: resp.Usage.TotalTokens, Truncated: resp.FinishReason == "length"}, nil
}

// KeywordsInput is the input of keywords.
type KeywordsInput struct {
	Text string `json:"text"`
}

// Keywords is the result of keywords.
type Keywords struct {
	Keywords []string `json:"keywords"`
	Model    string   `json:"model"`
	Tokens   int      `json:"tokens"`
}

// keywords asks for a JSON object (the provider's JSON mode) and checks
// what came back: a model's output is input like any other.
func keywords(ctx context.Context, in KeywordsInput) (Keywords, error) {
	text, err := checkText(in.Text)
	if err != nil {
		return Keywords{}, err
	}
	resp, err := sllm.Complete(ctx, sllm.Request{
		JSON: true,
		Messages: []sllm.Message{
			sllm.System(`List the five most important keywords of the user's text. Answer with a JSON object {"keywords": ["..."]}.`),
			sllm.User(text),
		},
	})
	if err != nil {
		return Keywords{}, explain(err)
	}
	var doc struct {
		Keywords []string `json:"keywords"`
	}
	if err := json.Unmarshal([]byte(resp.Content), &doc); err != nil {
		return Keywords{}, fmt.Errorf("the model did not answer with the JSON asked for: %w", err)
	}
	if len(doc.Keywords) > 5 {
		doc.Keywords = doc.Keywords[:5]
	}
	return Keywords{Keywords: doc.Keywords, Model: resp.Model, Tokens: resp.Usage.TotalTokens}, nil
}

func checkText(s string) (string, error) {
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		return "", errors.New("text is required")
	case len(s) > maxText:
		return "", fmt.Errorf("text is %d bytes; at most %d", len(s), maxText)
	}
	return s, nil
}

// explain adds what the operator can do to a refusal by the station.
func explain(err error) error {
	var he *sdk.HostError
	if errors.As(err, &he) && he.Denied() {
		return fmt.Errorf("the station refused the completion (%s): %w", he.Reason, err)
	}
	return err
}
