// Package llmtest is an OpenAI-compatible chat-completions server for tests:
// it listens on 127.0.0.1 with a kernel-chosen port, requires a bearer key,
// answers with scripted replies (or an echo of the last user message),
// reports token usage and records every request it receives.
//
//	srv := llmtest.New(t)
//	c := llm.New(srv.Config(), nil)
//	srv.Enqueue(llmtest.Reply{Content: `{"ok":true}`})
//	resp, err := c.Complete(ctx, llm.Request{Messages: []llm.Message{{Role: "user", Content: "hi"}}})
//	// srv.Requests()[0].Authorization == "Bearer " + srv.Key
//
// Token usage is counted in words, so a test can predict it: the prompt's
// tokens are the whitespace-separated words of every message, the
// completion's those of the reply (cut to max_tokens words, with
// finish_reason "length").
package llmtest

import (
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/station-dev/station/internal/fixture"
	"github.com/station-dev/station/internal/llm"
)

// Path is where the server answers chat completions: Config().BaseURL +
// "/chat/completions".
const Path = "/v1/chat/completions"

// DefaultModel is the model of Config and the model the server reports
// when a request names none.
const DefaultModel = "test-model"

// Server is a fake provider. It is closed by t.Cleanup.
type Server struct {
	// URL is the base URL, "http://127.0.0.1:PORT/v1".
	URL string
	// Key is the key the server requires ("Authorization: Bearer <Key>").
	Key string

	srv *fixture.Server

	mu       sync.Mutex
	queue    []Reply
	handler  func(ChatRequest) Reply
	models   []string
	requests []Request
	held     int
}

// Request is one request the server received, as it arrived.
type Request struct {
	Method        string
	Path          string
	Authorization string // the Authorization header
	Header        http.Header
	Body          []byte
	// Chat is Body decoded; zero if it was not a chat request.
	Chat ChatRequest
}

// ChatRequest is the decoded body of a chat-completions request.
type ChatRequest struct {
	Model          string        `json:"model"`
	Messages       []llm.Message `json:"messages"`
	MaxTokens      int           `json:"max_tokens,omitempty"`
	Temperature    *float64      `json:"temperature,omitempty"`
	ResponseFormat *struct {
		Type string `json:"type"`
	} `json:"response_format,omitempty"`
}

// Reply is one scripted answer. The zero Reply is an echo of the request.
type Reply struct {
	// Status is the HTTP status (0: 200).
	Status int
	// Content is the completion; "" with Status 200 echoes the last user
	// message as "echo: <text>".
	Content string
	// FinishReason defaults to "stop" ("length" when cut to max_tokens).
	FinishReason string
	// Model defaults to the request's model.
	Model string
	// Usage, if set, is reported instead of the counted words; NoUsage
	// leaves usage out of the answer entirely.
	Usage   *llm.Usage
	NoUsage bool
	// ErrorCode, ErrorType and ErrorMessage make the body of a Status >=
	// 400 answer an OpenAI error document.
	ErrorCode, ErrorType, ErrorMessage string
	// Header is added to the answer (e.g. Retry-After).
	Header map[string]string
	// Body, if set, is sent verbatim instead of a JSON document.
	Body string
	// Hold, if set, delays the answer until it is closed (or the request
	// ends); Held counts the requests waiting.
	Hold <-chan struct{}
}

// New starts a server that requires a fresh random key.
func New(t testing.TB) *Server {
	t.Helper()
	b := make([]byte, 12)
	rand.Read(b)
	s := &Server{Key: "sk-test-" + hex.EncodeToString(b)}
	s.srv = fixture.HTTPServer(t, http.HandlerFunc(s.serve))
	s.URL = s.srv.URL + "/v1"
	return s
}

// Config returns a client configuration for the server: its URL, its key,
// DefaultModel, no retries.
func (s *Server) Config() llm.Config {
	return llm.Config{BaseURL: s.URL, Model: DefaultModel, APIKey: s.Key, KeyEnv: "STATION_LLM_API_KEY"}
}

// Enqueue appends replies; each request takes the first one queued. When
// the queue is empty the handler set by Handle answers, or the echo.
func (s *Server) Enqueue(r ...Reply) {
	s.mu.Lock()
	s.queue = append(s.queue, r...)
	s.mu.Unlock()
}

// Handle sets the answer for requests when no reply is queued (nil: echo).
func (s *Server) Handle(h func(ChatRequest) Reply) {
	s.mu.Lock()
	s.handler = h
	s.mu.Unlock()
}

// SetModels makes the server refuse every other model with a 404
// model_not_found, as Groq and OpenAI do; none means any model.
func (s *Server) SetModels(models ...string) {
	s.mu.Lock()
	s.models = slices.Clone(models)
	s.mu.Unlock()
}

// Requests returns the requests received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// Count returns the number of requests received.
func (s *Server) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.requests)
}

// Held returns the number of requests waiting on a Reply.Hold.
func (s *Server) Held() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.held
}

// Accepted returns the number of TCP connections the server accepted.
func (s *Server) Accepted() int64 { return s.srv.Accepted() }

// Addr returns the server's "127.0.0.1:PORT".
func (s *Server) Addr() string { return s.srv.Addr.String() }

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 16<<20))
	rec := Request{Method: r.Method, Path: r.URL.Path, Authorization: r.Header.Get("Authorization"), Header: r.Header.Clone(), Body: body}
	chatErr := json.Unmarshal(body, &rec.Chat)
	s.mu.Lock()
	s.requests = append(s.requests, rec)
	var reply Reply
	queued := len(s.queue) > 0
	if queued {
		reply, s.queue = s.queue[0], s.queue[1:]
	}
	handler, models := s.handler, s.models
	s.mu.Unlock()

	switch {
	case r.Method != http.MethodPost || r.URL.Path != Path:
		writeError(w, http.StatusNotFound, "", "invalid_request_error", "Unknown request URL: "+r.Method+" "+r.URL.Path)
		return
	case rec.Authorization != "Bearer "+s.Key:
		// As the worst provider would: quote the key it refused.
		writeError(w, http.StatusUnauthorized, "invalid_api_key", "invalid_request_error", "Incorrect API key provided: "+strings.TrimPrefix(rec.Authorization, "Bearer ")+".")
		return
	case chatErr != nil || len(rec.Chat.Messages) == 0:
		writeError(w, http.StatusBadRequest, "", "invalid_request_error", "'messages' must be a non-empty array")
		return
	case len(models) > 0 && !slices.Contains(models, rec.Chat.Model):
		writeError(w, http.StatusNotFound, "model_not_found", "invalid_request_error", fmt.Sprintf("The model `%s` does not exist or you do not have access to it.", rec.Chat.Model))
		return
	}
	if !queued && handler != nil {
		reply = handler(rec.Chat)
	}
	if reply.Hold != nil {
		s.mu.Lock()
		s.held++
		s.mu.Unlock()
		select {
		case <-reply.Hold:
		case <-r.Context().Done():
		}
		s.mu.Lock()
		s.held--
		s.mu.Unlock()
	}
	for k, v := range reply.Header {
		w.Header().Set(k, v)
	}
	status := cmp.Or(reply.Status, http.StatusOK)
	switch {
	case reply.Body != "":
		w.WriteHeader(status)
		io.WriteString(w, reply.Body)
	case status >= 400:
		writeError(w, status, reply.ErrorCode, reply.ErrorType, cmp.Or(reply.ErrorMessage, http.StatusText(status)))
	default:
		writeCompletion(w, status, rec.Chat, reply)
	}
}

func writeCompletion(w http.ResponseWriter, status int, req ChatRequest, r Reply) {
	content, finish := r.Content, cmp.Or(r.FinishReason, "stop")
	if content == "" {
		content = "echo: " + lastUser(req.Messages)
	}
	if words := strings.Fields(content); req.MaxTokens > 0 && len(words) > req.MaxTokens {
		content, finish = strings.Join(words[:req.MaxTokens], " "), "length"
	}
	prompt := 0
	for _, m := range req.Messages {
		prompt += len(strings.Fields(m.Content))
	}
	completion := len(strings.Fields(content))
	doc := map[string]any{
		"id":      "chatcmpl-test",
		"object":  "chat.completion",
		"created": 1700000000,
		"model":   cmp.Or(r.Model, req.Model, DefaultModel),
		"choices": []any{map[string]any{
			"index":         0,
			"message":       map[string]any{"role": "assistant", "content": content},
			"finish_reason": finish,
		}},
	}
	if !r.NoUsage {
		u := llm.Usage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion}
		if r.Usage != nil {
			u = *r.Usage
		}
		doc["usage"] = u
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(doc)
}

func lastUser(msgs []llm.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "user" {
			return msgs[i].Content
		}
	}
	return ""
}

func writeError(w http.ResponseWriter, status int, code, typ, msg string) {
	e := map[string]any{"message": msg, "type": typ}
	if code != "" {
		e["code"] = code
	} else {
		e["code"] = nil
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"error": e})
}
