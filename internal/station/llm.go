package station

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/station-dev/station/internal/config"
	"github.com/station-dev/station/internal/host"
	"github.com/station-dev/station/internal/llm"
	"github.com/station-dev/station/internal/sandbox"
	"github.com/station-dev/station/internal/stationhttp"
	"github.com/station-dev/station/internal/store"
)

// BudgetWindow is the period budget_tokens_per_day counts over: the last 24
// hours, rolling.
const BudgetWindow = 24 * time.Hour

// NewLLMClient builds the station's LLM client from the configuration and
// the environment (getenv, usually os.Getenv): config.yaml's llm section
// with the STATION_LLM_* overrides, sent through a station-level HTTP client
// of its own. No module's policy applies to it. An unusable value in the
// environment is an error; a missing provider or key is not — the client
// then fails every request with what to set (see (*llm.Client).Check).
func NewLLMClient(cfg *config.Config, getenv func(string) string) (*llm.Client, error) {
	s, err := cfg.LLMSettings(getenv)
	if err != nil {
		return nil, fmt.Errorf("llm: %w", err)
	}
	hc := stationhttp.NewClient(stationhttp.Options{Timeout: s.Timeout, UserAgent: "station-llm"})
	return llm.New(llm.Config{
		BaseURL:    s.BaseURL,
		Model:      s.Model,
		APIKey:     s.APIKey,
		KeyEnv:     s.KeyEnv,
		Timeout:    s.Timeout,
		MaxRetries: s.MaxRetries,
	}, hc), nil
}

// newLLM returns the station's LLM (opts.LLM, or the client the
// configuration describes) and the function that answers modules'
// llm_complete calls with it.
func newLLM(cfg *config.Config, opts Options, st *store.Store, rec sandbox.Recorder) (llm.Completer, host.LLMFunc, error) {
	c := opts.LLM
	if c == nil {
		getenv := opts.Getenv
		if getenv == nil {
			getenv = os.Getenv
		}
		client, err := NewLLMClient(cfg, getenv)
		if err != nil {
			return nil, nil, err
		}
		c = client
	}
	b := &llmBroker{c: c, store: st, rec: rec, log: opts.Logger, now: time.Now, reserved: map[string]int64{}}
	if m, ok := c.(interface{ Model() string }); ok {
		b.model = m.Model()
	}
	return c, b.complete, nil
}

// CheckLLM reports why the station's LLM cannot be used (no provider or no
// key configured), or nil. It does not contact the provider.
func (s *Station) CheckLLM() error {
	if c, ok := s.LLM.(interface{ Check() error }); ok {
		return c.Check()
	}
	return nil
}

// llmBroker answers modules' llm_complete calls with the station's LLM. It
// enforces the grant the host bound into the module at link time (never one
// looked up now), counts what each module spends in the store, and records
// every call in the audit log: allowed ones with their token counts,
// refusals with the reason.
type llmBroker struct {
	c     llm.Completer
	model string // the station's model, the target of decisions
	store *store.Store
	rec   sandbox.Recorder
	log   *slog.Logger
	now   func() time.Time

	mu sync.Mutex
	// reserved holds, per module, the completion tokens calls in flight
	// may still use, so concurrent calls cannot together exceed a budget.
	reserved map[string]int64
}

func (b *llmBroker) complete(ctx context.Context, g host.LLMGrant, req llm.Request) (*llm.Response, error) {
	call := sandbox.CallFrom(ctx)
	target := b.model
	if target == "" {
		target = "(the station's model)"
	}
	deny := func(reason string) error {
		v := sandbox.Deny(g.Module, sandbox.LLM, target, reason)
		b.rec.Record(v.Decision(call))
		return v
	}
	if !g.Enabled {
		// The host links llm_complete only into granted modules; this is
		// the second lock on the same door.
		return nil, deny("is not granted to the module (requires.llm)")
	}
	req.Model = "" // the station's model: the operator chose it and pays for it
	if g.MaxTokensPerCall > 0 {
		switch {
		case req.MaxTokens > g.MaxTokensPerCall:
			return nil, deny(fmt.Sprintf("asks for %d completion tokens; the module may ask for at most %d per call (requires.llm.max_tokens_per_call)", req.MaxTokens, g.MaxTokensPerCall))
		case req.MaxTokens == 0:
			req.MaxTokens = g.MaxTokensPerCall
		}
	}
	var used, reserved int64
	if g.BudgetTokensPerDay > 0 {
		var err error
		used, err = b.store.LLMTokensSince(ctx, g.Module, b.now().Add(-BudgetWindow))
		if err != nil {
			// Without the usage the budget cannot be enforced: fail closed.
			return nil, fmt.Errorf("llm: check the module's budget: %w", err)
		}
		b.mu.Lock()
		left := g.BudgetTokensPerDay - used - b.reserved[g.Module]
		if left <= 0 {
			inFlight := b.reserved[g.Module]
			b.mu.Unlock()
			reason := fmt.Sprintf("has used its budget: %d of %d tokens in the last 24 hours (requires.llm.budget_tokens_per_day); it frees up as that usage ages", used, g.BudgetTokensPerDay)
			if inFlight > 0 {
				reason = fmt.Sprintf("has used its budget: %d of %d tokens in the last 24 hours, and calls in flight may use %d more (requires.llm.budget_tokens_per_day)", used, g.BudgetTokensPerDay, inFlight)
			}
			return nil, deny(reason)
		}
		// The prompt counts too: estimated before the call, it must fit in
		// what is left, and it is reserved with the completion.
		prompt := int64(estimateUsage(req, "").PromptTokens)
		if prompt >= left {
			b.mu.Unlock()
			return nil, deny(fmt.Sprintf("sends a prompt of about %d tokens; %d of its %d tokens in the last 24 hours are left (requires.llm.budget_tokens_per_day)", prompt, left, g.BudgetTokensPerDay))
		}
		// The completion may use at most what the prompt leaves of the
		// budget. A request with no bound gets BudgetedMaxTokens: sending
		// the whole remaining budget would exceed what models accept as
		// max_tokens.
		if req.MaxTokens == 0 {
			req.MaxTokens = BudgetedMaxTokens
		}
		if int64(req.MaxTokens) > left-prompt {
			req.MaxTokens = int(left - prompt)
		}
		reserved = prompt + int64(req.MaxTokens)
		b.reserved[g.Module] += reserved
		b.mu.Unlock()
		defer func() {
			b.mu.Lock()
			if b.reserved[g.Module] -= reserved; b.reserved[g.Module] <= 0 {
				delete(b.reserved, g.Module)
			}
			b.mu.Unlock()
		}()
	}

	resp, err := b.c.Complete(ctx, req)
	if err != nil {
		// Allowed, and failed at the provider (or ran out of time): not a
		// sandbox violation, but the operator sees the call in the audit
		// log, and the module gets the client's message, which never holds
		// the key.
		b.rec.Record(sandbox.Decision{Time: time.Now(), Module: g.Module, Command: call.CommandName(), Trace: call.TraceName(),
			Capability: sandbox.LLM, Target: target, Allowed: true, Reason: sandbox.SanitizeLimit("the request failed: "+err.Error(), 512)})
		return nil, err
	}
	u, estimated := resp.Usage, false
	if u.PromptTokens == 0 && u.CompletionTokens == 0 {
		// A provider that reports no usage (some local servers) is charged
		// an estimate, so a budget still holds.
		u = estimateUsage(req, resp.Content)
		estimated = true
	}
	rec := store.LLMRecord{Time: b.now().UTC(), Module: g.Module, Trace: call.TraceName(), Model: resp.Model, PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens}
	if err := b.store.AppendLLMUsage(context.WithoutCancel(ctx), rec); err != nil && b.log != nil {
		b.log.Error(fmt.Sprintf("module %s: llm usage not recorded: %v", g.Module, err))
	}
	reason := fmt.Sprintf("%d prompt + %d completion tokens", u.PromptTokens, u.CompletionTokens)
	if estimated {
		reason += " (estimated: the provider reported no usage)"
	}
	if g.BudgetTokensPerDay > 0 {
		reason += fmt.Sprintf("; %d of %d in the last 24 hours", used+rec.Tokens(), g.BudgetTokensPerDay)
	}
	b.rec.Record(sandbox.Decision{Time: time.Now(), Module: g.Module, Command: call.CommandName(), Trace: call.TraceName(),
		Capability: sandbox.LLM, Target: sandbox.Sanitize(cmp.Or(resp.Model, target)), Allowed: true, Reason: reason})
	if estimated {
		resp.Usage = llm.Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.PromptTokens + u.CompletionTokens}
	}
	return resp, nil
}

// BudgetedMaxTokens is the max_tokens the station sends for a module with a
// budget but no max_tokens_per_call whose request sets none: every current
// chat model accepts it, and it bounds what the call can spend.
const BudgetedMaxTokens = 4096

// estimateUsage charges about four bytes per token, rounded up.
func estimateUsage(req llm.Request, content string) llm.Usage {
	var prompt int
	for _, m := range req.Messages {
		prompt += len(m.Content)
	}
	return llm.Usage{PromptTokens: (prompt + 3) / 4, CompletionTokens: (len(content) + 3) / 4}
}

// describe renders an approved requires.llm for the operator.
func (l *LLMPermission) describe() []string {
	const how = "  the station makes each request with your provider and key; the module never sees the key, and every call and its tokens are in the audit log"
	var limits []string
	if l.MaxTokensPerCall > 0 {
		limits = append(limits, fmt.Sprintf("up to %d completion tokens per call", l.MaxTokensPerCall))
	}
	if l.BudgetTokensPerDay > 0 {
		limits = append(limits, fmt.Sprintf("up to %d tokens (prompt and completion) in any 24 hours", l.BudgetTokensPerDay))
	}
	if l.BudgetTokensPerDay == 0 {
		first := "MAY ASK THE STATION'S LLM FOR COMPLETIONS WITH NO DAILY TOKEN BUDGET"
		if len(limits) > 0 {
			first += " (" + limits[0] + ")"
		}
		return []string{first, how}
	}
	return []string{"may ask the station's LLM for completions, " + strings.Join(limits, " and "), how}
}
