package station

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/station-dev/station/internal/fixture"
	"github.com/station-dev/station/internal/host"
	"github.com/station-dev/station/internal/llm"
	"github.com/station-dev/station/internal/sandbox"
	"github.com/station-dev/station/internal/store"
	"github.com/station-dev/station/manifest"
)

// completerFunc adapts a function to llm.Completer.
type completerFunc func(context.Context, llm.Request) (*llm.Response, error)

func (f completerFunc) Complete(ctx context.Context, r llm.Request) (*llm.Response, error) {
	return f(ctx, r)
}

func newBroker(t *testing.T, c llm.Completer) (*llmBroker, *fixture.Recorder, *store.Store) {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "station.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	rec := &fixture.Recorder{}
	return &llmBroker{c: c, model: "station-model", store: st, rec: rec, now: time.Now}, rec, st
}

// A grant that is not enabled is refused and audited even if a host ever
// asked: the broker does not rely on the import being absent.
func TestBrokerRefusesUngranted(t *testing.T) {
	called := false
	b, rec, _ := newBroker(t, completerFunc(func(context.Context, llm.Request) (*llm.Response, error) {
		called = true
		return &llm.Response{}, nil
	}))
	ctx := sandbox.WithCall(context.Background(), &sandbox.Call{Module: "a/b", Command: "run", Trace: "t1"})
	_, err := b.complete(ctx, host.LLMGrant{Module: "a/b"}, llm.Request{Messages: []llm.Message{{Role: "user", Content: "x"}}})
	var v *sandbox.Violation
	if !errors.As(err, &v) || v.Capability != sandbox.LLM || v.Module != "a/b" || v.Target != "station-model" || !strings.Contains(v.Reason, "not granted") {
		t.Fatalf("error %v, want an llm violation", err)
	}
	if called {
		t.Error("the provider was asked")
	}
	ds := rec.All()
	if len(ds) != 1 || ds[0].Allowed || ds[0].Command != "run" || ds[0].Trace != "t1" || ds[0].Capability != sandbox.LLM {
		t.Errorf("decisions %+v", ds)
	}
}

// A provider that reports no usage is charged an estimate, so a budget
// still holds; the module's model cannot be chosen by the request.
func TestBrokerEstimatesMissingUsage(t *testing.T) {
	var got llm.Request
	b, rec, st := newBroker(t, completerFunc(func(_ context.Context, r llm.Request) (*llm.Response, error) {
		got = r
		return &llm.Response{Model: "station-model", Content: strings.Repeat("x", 41)}, nil
	}))
	g := host.LLMGrant{Module: "a/b", LLM: manifest.LLM{Enabled: true, BudgetTokensPerDay: 1000}}
	resp, err := b.complete(context.Background(), g, llm.Request{Model: "expensive-model", Messages: []llm.Message{{Role: "user", Content: strings.Repeat("y", 16)}}})
	if err != nil {
		t.Fatal(err)
	}
	if got.Model != "" {
		t.Errorf("the request's model %q reached the provider; the station's model applies", got.Model)
	}
	if got.MaxTokens != 996 {
		t.Errorf("max_tokens %d, want what the prompt leaves of the budget (996)", got.MaxTokens)
	}
	if want := (llm.Usage{PromptTokens: 4, CompletionTokens: 11, TotalTokens: 15}); resp.Usage != want {
		t.Errorf("usage %+v, want the estimate %+v", resp.Usage, want)
	}
	if n, _ := st.LLMTokensSince(context.Background(), "a/b", time.Now().Add(-time.Hour)); n != 15 {
		t.Errorf("recorded %d tokens, want 15", n)
	}
	ds := rec.All()
	if len(ds) != 1 || !strings.Contains(ds[0].Reason, "estimated") {
		t.Errorf("decisions %+v", ds)
	}
}

// The max_tokens sent for a module, by grant and request.
func TestBrokerMaxTokens(t *testing.T) {
	var got int
	b, _, _ := newBroker(t, completerFunc(func(_ context.Context, r llm.Request) (*llm.Response, error) {
		got = r.MaxTokens
		return &llm.Response{Model: "m", Content: "ok", Usage: llm.Usage{PromptTokens: 1, CompletionTokens: 1}}, nil
	}))
	tests := []struct {
		perCall   int
		budget    int64
		requested int
		want      int
	}{
		{0, 0, 0, 0},                         // no limits: the provider's default
		{0, 0, 99999, 99999},                 // no limits: as asked
		{500, 0, 0, 500},                     // the cap
		{500, 0, 200, 200},                   // below the cap: as asked
		{0, 1_000_000, 0, BudgetedMaxTokens}, // a budget and no cap: bounded
		{0, 1_000_000, 10000, 10000},         // a budget, asked explicitly
		{0, 100, 0, 99},                      // what the prompt leaves
		{8000, 1_000_000, 0, 8000},           // the cap, above BudgetedMaxTokens
	}
	for i, tt := range tests {
		g := host.LLMGrant{Module: fmt.Sprintf("m/%d", i), LLM: manifest.LLM{Enabled: true, MaxTokensPerCall: tt.perCall, BudgetTokensPerDay: tt.budget}}
		if _, err := b.complete(context.Background(), g, llm.Request{MaxTokens: tt.requested, Messages: []llm.Message{{Role: "user", Content: "x"}}}); err != nil {
			t.Fatalf("%+v: %v", tt, err)
		}
		if got != tt.want {
			t.Errorf("per call %d, budget %d, asked %d: sent max_tokens %d, want %d", tt.perCall, tt.budget, tt.requested, got, tt.want)
		}
	}
}

// Usage older than the window no longer counts.
func TestBrokerBudgetWindow(t *testing.T) {
	b, _, st := newBroker(t, completerFunc(func(context.Context, llm.Request) (*llm.Response, error) {
		return &llm.Response{Model: "m", Content: "ok", Usage: llm.Usage{PromptTokens: 1, CompletionTokens: 1}}, nil
	}))
	now := time.Date(2026, 11, 2, 12, 0, 0, 0, time.UTC)
	b.now = func() time.Time { return now }
	g := host.LLMGrant{Module: "a/b", LLM: manifest.LLM{Enabled: true, BudgetTokensPerDay: 100}}
	if err := st.AppendLLMUsage(context.Background(), store.LLMRecord{Time: now.Add(-BudgetWindow - time.Second), Module: "a/b", Model: "m", PromptTokens: 100}); err != nil {
		t.Fatal(err)
	}
	req := llm.Request{Messages: []llm.Message{{Role: "user", Content: "x"}}}
	if _, err := b.complete(context.Background(), g, req); err != nil {
		t.Fatalf("usage older than 24 hours still counted: %v", err)
	}
	if err := st.AppendLLMUsage(context.Background(), store.LLMRecord{Time: now.Add(-BudgetWindow + time.Minute), Module: "a/b", Model: "m", PromptTokens: 98}); err != nil {
		t.Fatal(err)
	}
	_, err := b.complete(context.Background(), g, req)
	var v *sandbox.Violation
	if !errors.As(err, &v) || !strings.Contains(v.Reason, "100 of 100 tokens") {
		t.Errorf("within the window: %v", err)
	}
}

// A failure at the provider is recorded (allowed, with the reason), not
// counted, and passed to the module.
func TestBrokerProviderFailure(t *testing.T) {
	fail := &llm.Error{Kind: llm.ErrRateLimited, Msg: "llm: the provider at x is rate limiting requests (HTTP 429)"}
	b, rec, st := newBroker(t, completerFunc(func(context.Context, llm.Request) (*llm.Response, error) { return nil, fail }))
	g := host.LLMGrant{Module: "a/b", LLM: manifest.LLM{Enabled: true, BudgetTokensPerDay: 100}}
	_, err := b.complete(context.Background(), g, llm.Request{Messages: []llm.Message{{Role: "user", Content: "x"}}})
	if !errors.Is(err, llm.ErrRateLimited) {
		t.Fatalf("error %v", err)
	}
	ds := rec.All()
	if len(ds) != 1 || !ds[0].Allowed || !strings.Contains(ds[0].Reason, "rate limiting") {
		t.Errorf("decisions %+v", ds)
	}
	if n, _ := st.LLMTokensSince(context.Background(), "a/b", time.Time{}); n != 0 {
		t.Errorf("a failed call was charged %d tokens", n)
	}
	if len(b.accounts) != 0 {
		t.Errorf("reservations left behind: %v", b.accounts)
	}
}

// TestBrokerBudgetCountsThePrompt: the budget counts prompt tokens too, so a
// module cannot spend far past it by sending huge prompts — one at a time
// when a little is left, or many at once while each reserves only its
// completion. A prompt larger than what is left is refused before the
// provider is asked, and calls in flight reserve their prompts.
func TestBrokerBudgetCountsThePrompt(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 8)
	var mu sync.Mutex
	var sent int
	var block atomic.Bool
	b, _, _ := newBroker(t, completerFunc(func(_ context.Context, r llm.Request) (*llm.Response, error) {
		mu.Lock()
		sent += len(r.Messages[0].Content)
		mu.Unlock()
		if block.Load() {
			started <- struct{}{}
			<-release
		}
		return &llm.Response{Model: "m", Content: "ok", Usage: llm.Usage{PromptTokens: (len(r.Messages[0].Content) + 3) / 4, CompletionTokens: 1}}, nil
	}))
	g := host.LLMGrant{Module: "a/b", LLM: manifest.LLM{Enabled: true, MaxTokensPerCall: 10, BudgetTokensPerDay: 1000}}
	ask := func(promptBytes int) error {
		_, err := b.complete(context.Background(), g, llm.Request{Messages: []llm.Message{{Role: "user", Content: strings.Repeat("y", promptBytes)}}})
		return err
	}

	// One prompt of about 100000 tokens against a budget of 1000.
	var v *sandbox.Violation
	if err := ask(400_000); !errors.As(err, &v) || !strings.Contains(v.Reason, "prompt") {
		t.Errorf("a 100000-token prompt with 1000 tokens left: %v, want refused", err)
	}
	if sent != 0 {
		t.Errorf("the provider was sent a prompt of %d bytes", sent)
	}

	// Two prompts of about 600 tokens at once (from a module with its
	// budget untouched): the second does not fit beside the first.
	g.Module = "c/d"
	mu.Lock()
	sent = 0
	mu.Unlock()
	block.Store(true)
	first := make(chan error, 1)
	go func() { first <- ask(2400) }()
	select {
	case <-started:
	case err := <-first:
		t.Fatalf("the first 600-token prompt: %v", err)
	}
	second := make(chan error, 1)
	go func() { second <- ask(2400) }()
	select {
	case err := <-second:
		if !errors.As(err, &v) {
			t.Errorf("a second 600-token prompt while the first is in flight: %v, want refused", err)
		}
	case <-started:
		t.Errorf("a second 600-token prompt was sent while the first was in flight")
	}
	close(release)
	if err := <-first; err != nil {
		t.Errorf("the first call: %v", err)
	}
	if sent > 2400 {
		t.Errorf("the provider was sent %d prompt bytes at once (about %d tokens) against a budget of 1000", sent, sent/4)
	}
}

// BenchmarkBroker measures what the station adds to one completion: the
// budget query, the usage insert and the audit record (the provider is a
// no-op here; a real one takes hundreds of milliseconds).
func BenchmarkBroker(b *testing.B) {
	for _, bc := range []struct {
		name  string
		grant manifest.LLM
	}{
		{"no-budget", manifest.LLM{Enabled: true}},
		{"budget", manifest.LLM{Enabled: true, MaxTokensPerCall: 100, BudgetTokensPerDay: 1 << 40}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			st, err := store.Open(filepath.Join(b.TempDir(), "station.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			br := &llmBroker{c: completerFunc(func(context.Context, llm.Request) (*llm.Response, error) {
				return &llm.Response{Model: "m", Content: "ok", Usage: llm.Usage{PromptTokens: 10, CompletionTokens: 5}}, nil
			}), model: "m", store: st, rec: sandbox.Discard, now: time.Now}
			g := host.LLMGrant{Module: "a/b", LLM: bc.grant}
			req := llm.Request{Messages: []llm.Message{{Role: "user", Content: "x"}}}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := br.complete(context.Background(), g, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestBrokerBudgetExactUnderConcurrency (issue 11, defect 6): with a
// provider that charges exactly what the broker reserves (the estimated
// prompt and every completion token allowed), many concurrent callers of one
// module never spend more than its budget. The broker used to read the
// module's usage before taking its lock, so a call that recorded its usage
// and released its reservation in between was counted by neither, and 32
// callers overspent a budget of 2000 by 50–60 tokens.
func TestBrokerBudgetExactUnderConcurrency(t *testing.T) {
	exact := completerFunc(func(_ context.Context, r llm.Request) (*llm.Response, error) {
		u := estimateUsage(r, "")
		return &llm.Response{Model: "m", Content: "ok", Usage: llm.Usage{PromptTokens: u.PromptTokens, CompletionTokens: r.MaxTokens}}, nil
	})
	tests := []struct {
		callers, calls int
		perCall        int
		budget         int64
	}{
		{64, 8, 7, 2000},
		{64, 4, 0, 2000}, // no cap: every call reserves what is left
		{32, 16, 3, 997},
		{64, 8, 1, 300},
	}
	for _, tt := range tests {
		b, _, st := newBroker(t, exact)
		g := host.LLMGrant{Module: "a/b", LLM: manifest.LLM{Enabled: true, MaxTokensPerCall: tt.perCall, BudgetTokensPerDay: tt.budget}}
		req := llm.Request{Messages: []llm.Message{{Role: "user", Content: "four"}}} // 1 prompt token
		var wg sync.WaitGroup
		var ok atomic.Int64
		for range tt.callers {
			wg.Go(func() {
				for range tt.calls {
					_, err := b.complete(context.Background(), g, req)
					var v *sandbox.Violation
					switch {
					case err == nil:
						ok.Add(1)
					case !errors.As(err, &v):
						t.Errorf("not a denial: %v", err)
					}
				}
			})
		}
		wg.Wait()
		got, err := st.LLMTokensSince(context.Background(), "a/b", time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		if got > tt.budget {
			t.Errorf("%d callers × %d calls, cap %d: %d calls spent %d tokens, over the budget of %d", tt.callers, tt.calls, tt.perCall, ok.Load(), got, tt.budget)
		}
		if ok.Load() == 0 {
			t.Errorf("%+v: no call was allowed", tt)
		}
		if len(b.accounts) != 0 {
			t.Errorf("%+v: reservations left behind: %v", tt, b.accounts)
		}
	}
}

// Tokens the store failed to record still count against the budget until
// they leave the window: they are in the store or in the broker's account,
// never in neither.
func TestBrokerBudgetKeepsUnrecordedUsage(t *testing.T) {
	b, _, st := newBroker(t, completerFunc(func(_ context.Context, r llm.Request) (*llm.Response, error) {
		return &llm.Response{Model: "m", Content: "ok", Usage: llm.Usage{PromptTokens: 1, CompletionTokens: r.MaxTokens}}, nil
	}))
	now := time.Date(2026, 11, 2, 12, 0, 0, 0, time.UTC)
	b.now = func() time.Time { return now }
	var fail atomic.Bool
	b.appendUsage = func(ctx context.Context, r store.LLMRecord) error {
		if fail.Load() {
			return errors.New("disk full")
		}
		return st.AppendLLMUsage(ctx, r)
	}
	g := host.LLMGrant{Module: "a/b", LLM: manifest.LLM{Enabled: true, MaxTokensPerCall: 10, BudgetTokensPerDay: 30}}
	req := llm.Request{Messages: []llm.Message{{Role: "user", Content: "x"}}}
	ask := func() error { _, err := b.complete(context.Background(), g, req); return err }

	fail.Store(true)
	if err := ask(); err != nil { // 11 tokens, not recorded
		t.Fatal(err)
	}
	fail.Store(false)
	if err := ask(); err != nil { // 11 tokens, recorded
		t.Fatal(err)
	}
	if err := ask(); err != nil { // the 8 left
		t.Fatal(err)
	}
	var v *sandbox.Violation
	if err := ask(); !errors.As(err, &v) || !strings.Contains(v.Reason, "30 of 30 tokens") {
		t.Errorf("with 11 unrecorded and 19 recorded tokens of 30: %v, want refused", err)
	}
	now = now.Add(BudgetWindow + time.Second)
	if err := ask(); err != nil {
		t.Errorf("a day later: %v", err)
	}
	if len(b.accounts) != 0 {
		t.Errorf("accounts left behind after the unrecorded usage aged: %v", b.accounts)
	}
}

// The budget's critical section is the read and the reservation, not the
// provider's answer: calls of one module wait for the provider together.
func TestBrokerBudgetDoesNotSerializeCalls(t *testing.T) {
	const n = 8
	var inside sync.WaitGroup
	inside.Add(n)
	all := make(chan struct{})
	go func() { inside.Wait(); close(all) }()
	b, _, _ := newBroker(t, completerFunc(func(ctx context.Context, r llm.Request) (*llm.Response, error) {
		inside.Done()
		select {
		case <-all:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return &llm.Response{Model: "m", Content: "ok", Usage: llm.Usage{PromptTokens: 1, CompletionTokens: 1}}, nil
	}))
	g := host.LLMGrant{Module: "a/b", LLM: manifest.LLM{Enabled: true, MaxTokensPerCall: 10, BudgetTokensPerDay: 1000}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			if _, err := b.complete(ctx, g, llm.Request{Messages: []llm.Message{{Role: "user", Content: "x"}}}); err != nil {
				t.Errorf("call: %v (were the calls serialized?)", err)
			}
		})
	}
	wg.Wait()
}
