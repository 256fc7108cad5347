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
	b := &llmBroker{c: c, store: st, rec: rec, log: opts.Logger, now: time.Now}
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

	// appendUsage records a call's usage; nil means store.AppendLLMUsage.
	appendUsage func(context.Context, store.LLMRecord) error

	mu       sync.Mutex // guards accounts and each account's calls
	accounts map[string]*llmAccount
}

// llmAccount is what the broker knows of one budgeted module's spending
// beyond the store: the tokens its calls in flight may still use, so that
// concurrent calls cannot together exceed the budget, and the tokens of
// calls whose usage the store failed to record. A call's tokens are always
// in at least one of the store and the account.
type llmAccount struct {
	calls int // calls using the account, guarded by llmBroker.mu

	// mu is held while a call reads the module's usage and reserves: the
	// read and the reservation are one step, so no call can settle in
	// between unseen. It is never held across a provider call.
	mu         sync.Mutex
	reserved   int64
	unrecorded []store.LLMRecord
}

// account returns module's account, for one call; leave gives it back.
func (b *llmBroker) account(module string) *llmAccount {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.accounts == nil {
		b.accounts = map[string]*llmAccount{}
	}
	a := b.accounts[module]
	if a == nil {
		a = &llmAccount{}
		b.accounts[module] = a
	}
	a.calls++
	return a
}

// leave ends a call's use of module's account and forgets the account
// when no call uses it and it holds nothing the store lacks. A call that
// holds the account keeps it in the map, so concurrent calls of a module
// always share one account.
func (b *llmBroker) leave(module string, a *llmAccount) {
	b.mu.Lock()
	defer b.mu.Unlock()
	a.calls--
	if a.calls > 0 {
		return
	}
	a.mu.Lock()
	empty := a.reserved == 0 && len(a.unrecorded) == 0
	a.mu.Unlock()
	if empty {
		delete(b.accounts, module)
	}
}

// reserve reads what the module has used in the window and reserves the
// request's estimated prompt and its max_tokens, which it lowers to what is
// left, in one critical section. It returns the usage, the reservation, and
// why the request is refused ("" if it is not).
func (b *llmBroker) reserve(ctx context.Context, a *llmAccount, g host.LLMGrant, req *llm.Request) (used, reserved int64, denial string, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	since := b.now().Add(-BudgetWindow)
	used, err = b.store.LLMTokensSince(ctx, g.Module, since)
	if err != nil {
		// Without the usage the budget cannot be enforced: fail closed.
		return 0, 0, "", fmt.Errorf("llm: check the module's budget: %w", err)
	}
	kept := a.unrecorded[:0]
	for _, r := range a.unrecorded {
		if !r.Time.Before(since) {
			kept = append(kept, r)
			used += r.Tokens()
		}
	}
	a.unrecorded = kept
	left := g.BudgetTokensPerDay - used - a.reserved
	if left <= 0 {
		if a.reserved > 0 {
			return used, 0, fmt.Sprintf("has used its budget: %d of %d tokens in the last 24 hours, and calls in flight may use %d more (requires.llm.budget_tokens_per_day)", used, g.BudgetTokensPerDay, a.reserved), nil
		}
		return used, 0, fmt.Sprintf("has used its budget: %d of %d tokens in the last 24 hours (requires.llm.budget_tokens_per_day); it frees up as that usage ages", used, g.BudgetTokensPerDay), nil
	}
	// The prompt counts too: estimated before the call, it must fit in
	// what is left, and it is reserved with the completion.
	prompt := int64(estimateUsage(*req, "").PromptTokens)
	if prompt >= left {
		return used, 0, fmt.Sprintf("sends a prompt of about %d tokens; %d of its %d tokens in the last 24 hours are left (requires.llm.budget_tokens_per_day)", prompt, left, g.BudgetTokensPerDay), nil
	}
	// The completion may use at most what the prompt leaves of the
	// budget. A request with no bound gets BudgetedMaxTokens: sending the
	// whole remaining budget would exceed what models accept as
	// max_tokens.
	if req.MaxTokens == 0 {
		req.MaxTokens = BudgetedMaxTokens
	}
	if int64(req.MaxTokens) > left-prompt {
		req.MaxTokens = int(left - prompt)
	}
	reserved = prompt + int64(req.MaxTokens)
	a.reserved += reserved
	return used, reserved, "", nil
}

// settle releases a call's reservation once its usage is in the store, and
// keeps the usage the store did not record (unrecorded, if not nil).
func (a *llmAccount) settle(reserved int64, unrecorded *store.LLMRecord) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.reserved -= reserved
	if unrecorded != nil {
		a.unrecorded = append(a.unrecorded, *unrecorded)
	}
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
	var used int64
	var unrecorded *store.LLMRecord
	if g.BudgetTokensPerDay > 0 {
		acct := b.account(g.Module)
		defer b.leave(g.Module, acct)
		var reserved int64
		var denial string
		var err error
		used, reserved, denial, err = b.reserve(ctx, acct, g, &req)
		if err != nil {
			return nil, err
		}
		if denial != "" {
			return nil, deny(denial)
		}
		// Released when the call returns: after its usage is in the store.
		defer func() { acct.settle(reserved, unrecorded) }()
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
	// The usage is in the store before the reservation is released, so a
	// call admitted in between counts these tokens once or twice, never
	// not at all. If the store refuses it, the module's account keeps the
	// tokens until they leave the window.
	appendUsage := b.appendUsage
	if appendUsage == nil {
		appendUsage = b.store.AppendLLMUsage
	}
	if err := appendUsage(context.WithoutCancel(ctx), rec); err != nil {
		unrecorded = &rec
		if b.log != nil {
			b.log.Error(fmt.Sprintf("module %s: llm usage not recorded: %v", g.Module, err))
		}
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
