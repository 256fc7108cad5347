package llmtest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/station-dev/station/internal/fixture"
	"github.com/station-dev/station/internal/llm"
	"github.com/station-dev/station/internal/llm/llmtest"
)

// The fake's contract, which other packages' tests rely on.
func TestServer(t *testing.T) {
	srv := llmtest.New(t)
	c := llm.New(srv.Config(), nil)
	ctx := context.Background()
	msgs := []llm.Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: "one two three four"}}

	tests := []struct {
		name   string
		reply  *llmtest.Reply
		max    int
		want   llm.Response
		models []string
		fails  bool
	}{
		{name: "echo with word usage", want: llm.Response{Model: llmtest.DefaultModel, Content: "echo: one two three four", FinishReason: "stop", Usage: llm.Usage{PromptTokens: 6, CompletionTokens: 5, TotalTokens: 11}}},
		{name: "cut to max_tokens words", max: 2, want: llm.Response{Model: llmtest.DefaultModel, Content: "echo: one", FinishReason: "length", Usage: llm.Usage{PromptTokens: 6, CompletionTokens: 2, TotalTokens: 8}}},
		{name: "scripted", reply: &llmtest.Reply{Content: "fine", Model: "m2"}, want: llm.Response{Model: "m2", Content: "fine", FinishReason: "stop", Usage: llm.Usage{PromptTokens: 6, CompletionTokens: 1, TotalTokens: 7}}},
		{name: "other model refused", models: []string{"only-this"}, fails: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv.SetModels(tt.models...)
			if tt.reply != nil {
				srv.Enqueue(*tt.reply)
			}
			got, err := c.Complete(ctx, llm.Request{Messages: msgs, MaxTokens: tt.max})
			if tt.fails {
				if err == nil {
					t.Fatalf("Complete = %+v, want an error", got)
				}
				return
			}
			if err != nil || *got != tt.want {
				t.Fatalf("Complete = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
	srv.SetModels()

	// Handle answers when nothing is queued.
	srv.Handle(func(r llmtest.ChatRequest) llmtest.Reply { return llmtest.Reply{Content: "handled " + r.Model} })
	if got, err := c.Complete(ctx, llm.Request{Messages: msgs}); err != nil || got.Content != "handled "+llmtest.DefaultModel {
		t.Errorf("with a handler: %+v, %v", got, err)
	}
	srv.Handle(nil)

	// A request without the key, and one to another path, are refused.
	for path, auth := range map[string]string{llmtest.Path: "", "/v1/models": "Bearer " + srv.Key} {
		req, _ := http.NewRequest("POST", srv.URL[:len(srv.URL)-3]+path, bytes.NewReader([]byte(`{"model":"m","messages":[{"role":"user","content":"x"}]}`)))
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct{ Error struct{ Message string } }
		json.NewDecoder(resp.Body).Decode(&doc)
		resp.Body.Close()
		if resp.StatusCode < 400 || doc.Error.Message == "" {
			t.Errorf("POST %s with %q: status %d, error %q; want an OpenAI error", path, auth, resp.StatusCode, doc.Error.Message)
		}
	}

	// Hold keeps a request waiting; Held counts it.
	hold := make(chan struct{})
	srv.Enqueue(llmtest.Reply{Hold: hold})
	done := make(chan error, 1)
	go func() { _, err := c.Complete(ctx, llm.Request{Messages: msgs}); done <- err }()
	fixture.Eventually(t, 10*time.Second, func() bool { return srv.Held() == 1 })
	close(hold)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if srv.Held() != 0 || srv.Accepted() == 0 {
		t.Errorf("Held %d, Accepted %d", srv.Held(), srv.Accepted())
	}
}
