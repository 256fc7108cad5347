package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/station-dev/station/internal/llm"
	"github.com/station-dev/station/internal/llm/llmtest"
)

func user(s string) []llm.Message { return []llm.Message{{Role: "user", Content: s}} }

// recordSleeps makes c's waits instant and returns the waits it asked for.
func recordSleeps(c *llm.Client) func() []time.Duration {
	var mu sync.Mutex
	var waits []time.Duration
	llm.SetSleep(c, func(ctx context.Context, d time.Duration) error {
		mu.Lock()
		waits = append(waits, d)
		mu.Unlock()
		return ctx.Err()
	})
	return func() []time.Duration {
		mu.Lock()
		defer mu.Unlock()
		return append([]time.Duration(nil), waits...)
	}
}

func TestCompleteRequestAndResponse(t *testing.T) {
	srv := llmtest.New(t)
	c := llm.New(srv.Config(), nil)
	temp := 0.25
	srv.Enqueue(llmtest.Reply{Content: `{"answer": 42}`, Model: "test-model-2024", Usage: &llm.Usage{PromptTokens: 11, CompletionTokens: 5}})
	got, err := c.Complete(context.Background(), llm.Request{
		Messages:    []llm.Message{{Role: "system", Content: "answer in JSON"}, {Role: "user", Content: "the answer?"}},
		MaxTokens:   64,
		Temperature: &temp,
		JSON:        true,
	})
	if err != nil {
		t.Fatal(err)
	}
	want := llm.Response{Model: "test-model-2024", Content: `{"answer": 42}`, FinishReason: "stop", Usage: llm.Usage{PromptTokens: 11, CompletionTokens: 5, TotalTokens: 16}}
	if *got != want {
		t.Errorf("Complete = %+v, want %+v", *got, want)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("server saw %d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if r.Method != http.MethodPost || r.Path != llmtest.Path {
		t.Errorf("request %s %s, want POST %s", r.Method, r.Path, llmtest.Path)
	}
	if got, want := r.Authorization, "Bearer "+srv.Key; got != want {
		t.Errorf("Authorization = %q, want %q", got, want)
	}
	if got := r.Header.Get("Content-Type"); got != "application/json" {
		t.Errorf("Content-Type = %q", got)
	}
	var body map[string]any
	if err := json.Unmarshal(r.Body, &body); err != nil {
		t.Fatal(err)
	}
	wantBody := map[string]any{
		"model":           "test-model",
		"messages":        []any{map[string]any{"role": "system", "content": "answer in JSON"}, map[string]any{"role": "user", "content": "the answer?"}},
		"max_tokens":      64.0,
		"temperature":     0.25,
		"response_format": map[string]any{"type": "json_object"},
	}
	if g, w := mustJSON(t, body), mustJSON(t, wantBody); g != w {
		t.Errorf("request body\n got %s\nwant %s", g, w)
	}
}

func TestCompleteOmitsUnsetFields(t *testing.T) {
	srv := llmtest.New(t)
	c := llm.New(srv.Config(), nil)
	got, err := c.Complete(context.Background(), llm.Request{Model: "other-model", Messages: user("say hi")})
	if err != nil {
		t.Fatal(err)
	}
	if got.Content != "echo: say hi" || got.Model != "other-model" || got.Usage != (llm.Usage{PromptTokens: 2, CompletionTokens: 3, TotalTokens: 5}) {
		t.Errorf("Complete = %+v", *got)
	}
	var body map[string]any
	json.Unmarshal(srv.Requests()[0].Body, &body)
	for _, k := range []string{"max_tokens", "temperature", "response_format"} {
		if _, ok := body[k]; ok {
			t.Errorf("request body has %q although the request did not set it: %s", k, srv.Requests()[0].Body)
		}
	}
	if body["model"] != "other-model" {
		t.Errorf("model = %v, want the request's", body["model"])
	}
}

func TestCompleteWithoutUsage(t *testing.T) {
	srv := llmtest.New(t)
	c := llm.New(srv.Config(), nil)
	srv.Enqueue(llmtest.Reply{Content: "hi", NoUsage: true})
	got, err := c.Complete(context.Background(), llm.Request{Messages: user("x")})
	if err != nil {
		t.Fatal(err)
	}
	if got.Usage != (llm.Usage{}) {
		t.Errorf("usage = %+v, want zero when the provider reports none", got.Usage)
	}
}

// TestErrors drives every failure a provider can produce and checks the
// kind, the message (what to do) and that the key is never in it.
func TestErrors(t *testing.T) {
	tests := []struct {
		name     string
		replies  []llmtest.Reply
		models   []string
		retries  int
		key      string // "" keeps the server's key
		kind     error
		contains []string
		attempts int
		waits    []time.Duration // waits the client asked for (nil: see nwaits)
		nwaits   int             // how many computed (jittered) waits, when waits is nil
	}{
		{name: "wrong key", key: "sk-wrong-0123456789", kind: llm.ErrKeyRefused, attempts: 1,
			contains: []string{"refused the key (HTTP 401)", "STATION_LLM_API_KEY"}},
		{name: "forbidden", replies: []llmtest.Reply{{Status: 403, ErrorMessage: "project cannot use this model"}}, kind: llm.ErrKeyRefused, attempts: 1,
			contains: []string{"HTTP 403", "project cannot use this model", `model "test-model"`}},
		{name: "model not found", models: []string{"llama-3.1-8b-instant"}, kind: llm.ErrModelNotFound, attempts: 1,
			contains: []string{`no model "test-model"`, "llm.model", "STATION_LLM_MODEL"}},
		{name: "model decommissioned", replies: []llmtest.Reply{{Status: 400, ErrorCode: "model_decommissioned", ErrorMessage: "The model has been decommissioned"}}, kind: llm.ErrModelNotFound, attempts: 1,
			contains: []string{`no model "test-model"`, "decommissioned"}},
		{name: "bad request", replies: []llmtest.Reply{{Status: 400, ErrorMessage: "'messages.0.role' must be one of system, user, assistant"}}, kind: llm.ErrBadRequest, attempts: 1,
			contains: []string{"refused the request", "HTTP 400", "messages.0.role"}},
		{name: "out of quota is not retried", retries: 2, replies: []llmtest.Reply{{Status: 429, ErrorCode: "insufficient_quota", ErrorMessage: "You exceeded your current quota"}}, kind: llm.ErrRateLimited, attempts: 1,
			contains: []string{"out of quota", "exceeded your current quota"}},
		{name: "rate limited, then ok", retries: 2, replies: []llmtest.Reply{{Status: 429, Header: map[string]string{"Retry-After": "7"}}, {}}, attempts: 0,
			waits: []time.Duration{7 * time.Second}},
		{name: "retry-after-ms", retries: 1, replies: []llmtest.Reply{{Status: 503, Header: map[string]string{"Retry-After-Ms": "1500"}}, {}}, attempts: 0,
			waits: []time.Duration{1500 * time.Millisecond}},
		{name: "5xx until the retries run out", retries: 2, replies: []llmtest.Reply{{Status: 500}, {Status: 502}, {Status: 503, ErrorMessage: "overloaded"}}, kind: llm.ErrUnavailable, attempts: 3, nwaits: 2,
			contains: []string{"failed (HTTP 503): overloaded", "gave up after 3 attempts"}},
		{name: "no retries configured", retries: 0, replies: []llmtest.Reply{{Status: 500}}, kind: llm.ErrUnavailable, attempts: 1,
			contains: []string{"HTTP 500"}},
		{name: "x-should-retry false", retries: 2, replies: []llmtest.Reply{{Status: 500, Header: map[string]string{"X-Should-Retry": "false"}}}, kind: llm.ErrUnavailable, attempts: 1},
		{name: "retry-after longer than the station waits", retries: 2, replies: []llmtest.Reply{{Status: 429, Header: map[string]string{"Retry-After": "3600"}}}, kind: llm.ErrRateLimited, attempts: 1,
			contains: []string{"rate limiting", "asks to wait 1h0m0s"}},
		{name: "redirect is not followed", replies: []llmtest.Reply{{Status: 307, Header: map[string]string{"Location": "https://evil.example/v1/chat/completions?key=x"}, Body: " "}}, kind: llm.ErrNotConfigured, attempts: 1,
			contains: []string{"redirect (HTTP 307) to https://evil.example/v1/chat/completions", "llm.base_url"}},
		{name: "not json", replies: []llmtest.Reply{{Body: "<html>hello</html>"}}, kind: llm.ErrBadResponse, attempts: 1,
			contains: []string{"not a chat completion"}},
		{name: "no choices", replies: []llmtest.Reply{{Body: `{"choices":[]}`}}, kind: llm.ErrBadResponse, attempts: 1,
			contains: []string{"no choices"}},
		{name: "negative usage", replies: []llmtest.Reply{{Usage: &llm.Usage{PromptTokens: -5}}}, kind: llm.ErrBadResponse, attempts: 1,
			contains: []string{"negative"}},
		{name: "too large", replies: []llmtest.Reply{{Content: strings.Repeat("x ", 3<<20)}}, kind: llm.ErrBadResponse, attempts: 1,
			contains: []string{"larger than 4194304 bytes"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.New(t)
			srv.SetModels(tt.models...)
			srv.Enqueue(tt.replies...)
			cfg := srv.Config()
			cfg.MaxRetries = tt.retries
			if tt.key != "" {
				cfg.APIKey = tt.key
			}
			c := llm.New(cfg, nil)
			waits := recordSleeps(c)
			resp, err := c.Complete(context.Background(), llm.Request{Messages: user("hello")})
			if got := waits(); (tt.waits != nil && !equalDurations(got, tt.waits)) || (tt.waits == nil && len(got) != tt.nwaits) {
				t.Errorf("waits = %v, want %v (or %d computed ones)", got, tt.waits, tt.nwaits)
			}
			if tt.kind == nil {
				if err != nil {
					t.Fatalf("Complete: %v", err)
				}
				if resp.Content != "echo: hello" {
					t.Errorf("content %q", resp.Content)
				}
				return
			}
			if err == nil {
				t.Fatalf("Complete = %+v, want an error", resp)
			}
			if !errors.Is(err, tt.kind) {
				t.Errorf("error %v is not %v", err, tt.kind)
			}
			var e *llm.Error
			if !errors.As(err, &e) || e.Attempts != tt.attempts {
				t.Errorf("attempts = %+v, want %d", e, tt.attempts)
			}
			if got := srv.Count(); got != tt.attempts {
				t.Errorf("server saw %d requests, want %d", got, tt.attempts)
			}
			for _, s := range tt.contains {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not contain %q", err, s)
				}
			}
			for _, key := range []string{srv.Key, cfg.APIKey} {
				if strings.Contains(err.Error(), key) || strings.Contains(err.Error(), key[len(key)-8:]) {
					t.Errorf("error %q contains (part of) the key", err)
				}
			}
			if strings.Contains(err.Error(), "key=x") {
				t.Errorf("error %q quotes a URL's query", err)
			}
		})
	}
}

// A provider error text that quotes the key, as some do, is redacted.
func TestKeyRedactedFromProviderText(t *testing.T) {
	srv := llmtest.New(t)
	srv.Enqueue(llmtest.Reply{Status: 400, ErrorMessage: "bad request for key " + srv.Key + " today"})
	_, err := llm.New(srv.Config(), nil).Complete(context.Background(), llm.Request{Messages: user("x")})
	if err == nil || strings.Contains(err.Error(), srv.Key) || !strings.Contains(err.Error(), "bad request for key [redacted] today") {
		t.Fatalf("error %v: want the key redacted", err)
	}
}

func TestNotConfigured(t *testing.T) {
	tests := []struct {
		name     string
		cfg      llm.Config
		contains []string
	}{
		{"nothing", llm.Config{}, []string{"no provider is configured", "llm.provider", "STATION_LLM_BASE_URL"}},
		{"no key", llm.Config{BaseURL: "https://api.groq.com/openai/v1", Model: "m", KeyEnv: "GROQ_API_KEY (llm.api_key_env) or STATION_LLM_API_KEY"}, []string{"no API key", "GROQ_API_KEY (llm.api_key_env) or STATION_LLM_API_KEY"}},
		{"no key, no env named", llm.Config{BaseURL: "https://api.openai.com/v1", Model: "m"}, []string{"no API key", "STATION_LLM_API_KEY"}},
		{"plain http to a remote host", llm.Config{BaseURL: "http://api.openai.com/v1", Model: "m", APIKey: "sk-1234567890"}, []string{"plain http", "use https"}},
		{"credentials in the URL", llm.Config{BaseURL: "https://user:sk-secret-in-url@api.openai.com/v1", Model: "m", APIKey: "k"}, []string{"without credentials"}},
		{"key with a line break", llm.Config{BaseURL: "https://api.openai.com/v1", Model: "m", APIKey: "sk-1234\n", KeyEnv: "OPENAI_API_KEY"}, []string{"OPENAI_API_KEY", "line break"}},
		{"not a URL", llm.Config{BaseURL: "api.openai.com", Model: "m", APIKey: "k"}, []string{"not an http(s) URL"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := llm.New(tt.cfg, nil)
			_, err := c.Complete(context.Background(), llm.Request{Messages: user("x")})
			if err == nil || !errors.Is(err, llm.ErrNotConfigured) {
				t.Fatalf("Complete error %v, want ErrNotConfigured", err)
			}
			if c.Check() == nil || c.Check().Error() != err.Error() {
				t.Errorf("Check() = %v, want the same error as Complete", c.Check())
			}
			for _, s := range tt.contains {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not contain %q", err, s)
				}
			}
			if strings.Contains(err.Error(), "sk-secret-in-url") || (tt.cfg.APIKey != "" && len(tt.cfg.APIKey) > 3 && strings.Contains(err.Error(), strings.TrimSpace(tt.cfg.APIKey))) {
				t.Errorf("error %q contains a secret", err)
			}
		})
	}
}

// A local model server on loopback needs no key.
func TestLoopbackWithoutKey(t *testing.T) {
	srv := llmtest.New(t)
	cfg := srv.Config()
	cfg.APIKey = ""
	c := llm.New(cfg, nil)
	if err := c.Check(); err != nil {
		t.Fatalf("Check: %v", err)
	}
	_, err := c.Complete(context.Background(), llm.Request{Messages: user("x")})
	if !errors.Is(err, llm.ErrKeyRefused) {
		t.Fatalf("Complete: %v, want the fixture's refusal (it requires a key)", err)
	}
	if got := srv.Requests()[0].Authorization; got != "" {
		t.Errorf("Authorization %q sent without a key", got)
	}
}

// Plain http, and no key, are accepted only for a server on this machine
// (stationhttp.IsLoopback), however localhost is spelled.
func TestPlainHTTPOnlyToLoopback(t *testing.T) {
	for base, ok := range map[string]bool{
		"http://127.0.0.1:11434/v1":   true,
		"http://LOCALHOST.:11434/v1":  true,
		"http://[::1]:11434/v1":       true,
		"http://0.0.0.0:11434/v1":     false,
		"http://localhost.example/v1": false,
	} {
		err := llm.New(llm.Config{BaseURL: base, Model: "m"}, nil).Check()
		if (err == nil) != ok {
			t.Errorf("Check() for %s without a key = %v, want accepted %v", base, err, ok)
		}
	}
}

func TestInvalidRequests(t *testing.T) {
	srv := llmtest.New(t)
	cfg := srv.Config()
	for name, tc := range map[string]struct {
		model string
		req   llm.Request
		kind  error
	}{
		"no messages":       {"m", llm.Request{}, llm.ErrInvalid},
		"negative maximum":  {"m", llm.Request{Messages: user("x"), MaxTokens: -1}, llm.ErrInvalid},
		"no model anywhere": {"", llm.Request{Messages: user("x")}, llm.ErrNotConfigured},
	} {
		cfg.Model = tc.model
		_, err := llm.New(cfg, nil).Complete(context.Background(), tc.req)
		if !errors.Is(err, tc.kind) {
			t.Errorf("%s: error %v, want %v", name, err, tc.kind)
		}
	}
	if n := srv.Count(); n != 0 {
		t.Errorf("invalid requests reached the provider %d times", n)
	}
}

// The caller's deadline ends a call that waits on the provider, and a
// retry that would not fit in it is not attempted.
func TestContextDeadline(t *testing.T) {
	t.Run("waiting on the provider", func(t *testing.T) {
		srv := llmtest.New(t)
		hold := make(chan struct{})
		defer close(hold)
		srv.Enqueue(llmtest.Reply{Hold: hold})
		cfg := srv.Config()
		cfg.MaxRetries = 3
		c := llm.New(cfg, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		_, err := c.Complete(ctx, llm.Request{Messages: user("x")})
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "deadline") {
			t.Fatalf("error %v, want a deadline error", err)
		}
		if n := srv.Count(); n != 1 {
			t.Errorf("server saw %d requests, want 1 (no retry after the deadline)", n)
		}
	})
	t.Run("backoff longer than the deadline", func(t *testing.T) {
		srv := llmtest.New(t)
		srv.Enqueue(llmtest.Reply{Status: 429, Header: map[string]string{"Retry-After": "30"}})
		cfg := srv.Config()
		cfg.MaxRetries = 3
		c := llm.New(cfg, nil)
		waits := recordSleeps(c)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := c.Complete(ctx, llm.Request{Messages: user("x")})
		if !errors.Is(err, llm.ErrRateLimited) || !strings.Contains(err.Error(), "no time left") {
			t.Fatalf("error %v, want a rate-limit error that says there was no time to retry", err)
		}
		if w := waits(); len(w) != 0 {
			t.Errorf("the client waited %v although the deadline was too close", w)
		}
	})
	t.Run("canceled while waiting to retry", func(t *testing.T) {
		srv := llmtest.New(t)
		srv.Enqueue(llmtest.Reply{Status: 503})
		cfg := srv.Config()
		cfg.MaxRetries = 3
		c := llm.New(cfg, nil)
		ctx, cancel := context.WithCancel(context.Background())
		llm.SetSleep(c, func(context.Context, time.Duration) error { cancel(); return context.Canceled })
		_, err := c.Complete(ctx, llm.Request{Messages: user("x")})
		if !errors.Is(err, context.Canceled) || srv.Count() != 1 {
			t.Fatalf("error %v after %d requests, want canceled after 1", err, srv.Count())
		}
	})
}

// An attempt that takes longer than Config.Timeout is retried.
func TestAttemptTimeoutRetried(t *testing.T) {
	srv := llmtest.New(t)
	hold := make(chan struct{})
	defer close(hold)
	srv.Enqueue(llmtest.Reply{Hold: hold}, llmtest.Reply{Content: "second"})
	cfg := srv.Config()
	cfg.MaxRetries = 1
	cfg.Timeout = 100 * time.Millisecond
	c := llm.New(cfg, nil)
	recordSleeps(c)
	got, err := c.Complete(context.Background(), llm.Request{Messages: user("x")})
	if err != nil || got.Content != "second" {
		t.Fatalf("Complete = %+v, %v; want the second attempt's answer", got, err)
	}
}

// Connection errors are retried and reported without the URL.
func TestConnectionRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c := llm.New(llm.Config{BaseURL: "http://" + addr + "/v1", Model: "m", APIKey: "sk-local", MaxRetries: 2}, nil)
	waits := recordSleeps(c)
	_, err = c.Complete(context.Background(), llm.Request{Messages: user("x")})
	var e *llm.Error
	if !errors.As(err, &e) || !errors.Is(err, llm.ErrUnavailable) || e.Attempts != 3 {
		t.Fatalf("error %#v, want ErrUnavailable after 3 attempts", err)
	}
	if !strings.Contains(err.Error(), "cannot reach the provider at "+addr) || strings.Contains(err.Error(), "/chat/completions") {
		t.Errorf("error %q: want the host named, not the URL", err)
	}
	if got := len(waits()); got != 2 {
		t.Errorf("waited %d times, want 2", got)
	}
}

func TestBackoff(t *testing.T) {
	c := llm.New(llm.Config{MinBackoff: 100 * time.Millisecond, MaxBackoff: time.Second}, nil)
	for attempt, base := range map[int]time.Duration{1: 100 * time.Millisecond, 2: 200 * time.Millisecond, 3: 400 * time.Millisecond, 4: 800 * time.Millisecond, 5: time.Second, 30: time.Second} {
		for i := 0; i < 50; i++ {
			if got := llm.Backoff(c, attempt, 0); got < base/2 || got > base {
				t.Fatalf("Backoff(attempt %d) = %v, want in [%v, %v]", attempt, got, base/2, base)
			}
		}
	}
	if got := llm.Backoff(c, 1, 5*time.Second); got != 5*time.Second {
		t.Errorf("Backoff with Retry-After 5s = %v, want 5s", got)
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		header map[string]string
		want   time.Duration
	}{
		{nil, 0},
		{map[string]string{"Retry-After": "3"}, 3 * time.Second},
		{map[string]string{"Retry-After": "0.5"}, 500 * time.Millisecond},
		{map[string]string{"Retry-After": "0"}, 0},
		{map[string]string{"Retry-After": "-4"}, 0},
		{map[string]string{"Retry-After": "soon"}, 0},
		{map[string]string{"Retry-After": now.Add(90 * time.Second).Format(http.TimeFormat)}, 90 * time.Second},
		{map[string]string{"Retry-After": now.Add(-time.Minute).Format(http.TimeFormat)}, 0},
		{map[string]string{"Retry-After-Ms": "250", "Retry-After": "9"}, 250 * time.Millisecond},
		{map[string]string{"Retry-After-Ms": "x", "Retry-After": "9"}, 9 * time.Second},
	}
	for _, tt := range tests {
		h := http.Header{}
		for k, v := range tt.header {
			h.Set(k, v)
		}
		if got := llm.RetryAfter(h, now); got != tt.want {
			t.Errorf("retryAfter(%v) = %v, want %v", tt.header, got, tt.want)
		}
	}
}

func TestConcurrentUse(t *testing.T) {
	srv := llmtest.New(t)
	c := llm.New(srv.Config(), nil)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := c.Complete(context.Background(), llm.Request{Messages: user("x")}); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func equalDurations(a, b []time.Duration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
