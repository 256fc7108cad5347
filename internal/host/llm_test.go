package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/station-dev/station/internal/host"
	"github.com/station-dev/station/internal/llm"
	"github.com/station-dev/station/internal/probe"
	"github.com/station-dev/station/internal/sandbox"
	"github.com/station-dev/station/manifest"
	"github.com/station-dev/station/sdk/abi"
)

// llmManifest is the probe's manifest with requires.llm set to grant (""
// for no llm key at all).
func llmManifest(id, grant string) string {
	m := fmt.Sprintf("id: %s\nversion: \"1.0.0\"\nwasm: module.wasm\ncommands: [{name: run}]\nrequires:\n  network: {allow: []}\n", id)
	if grant != "" {
		m += "  llm: " + grant + "\n"
	}
	return m
}

// fakeLLM records what the host hands to Options.LLM.
type fakeLLM struct {
	mu     sync.Mutex
	grants []host.LLMGrant
	reqs   []llm.Request
	calls  []sandbox.Call
	answer func(host.LLMGrant, llm.Request) (*llm.Response, error)
}

func (f *fakeLLM) complete(ctx context.Context, g host.LLMGrant, req llm.Request) (*llm.Response, error) {
	f.mu.Lock()
	f.grants = append(f.grants, g)
	f.reqs = append(f.reqs, req)
	if c := sandbox.CallFrom(ctx); c != nil {
		f.calls = append(f.calls, *c)
	}
	answer := f.answer
	f.mu.Unlock()
	if answer != nil {
		return answer(g, req)
	}
	return &llm.Response{Model: "m", Content: "answer to " + req.Messages[len(req.Messages)-1].Content, FinishReason: "stop", Usage: llm.Usage{PromptTokens: 3, CompletionTokens: 4, TotalTokens: 7}}, nil
}

func (f *fakeLLM) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.reqs)
}

func runProbe(t *testing.T, h *host.Host, ctx context.Context, id string, actions ...probe.Action) []probe.Result {
	t.Helper()
	out, err := h.Call(ctx, id, probe.Command, probe.Run(actions...))
	if err != nil {
		t.Fatalf("call %s: %v", id, err)
	}
	res, err := probe.Decode(out)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// llm_complete is linked only into modules whose manifest grants llm; a
// module that imports it without the grant does not load, and no request
// reaches the station's LLM.
func TestLLMImportOnlyWhenGranted(t *testing.T) {
	fake := &fakeLLM{}
	h := newHost(t, host.Options{LLM: fake.complete})
	wasm := probe.Wasm(t, probe.LLMTag)
	for _, grant := range []string{"", "false", "~"} {
		_, err := h.Load(context.Background(), parse(t, llmManifest("test/nollm", grant)), wasm)
		want := "module imports station.llm_complete, which this station does not offer to it (llm is not granted)"
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("llm: %q: Load error %v, want %q", grant, err, want)
		}
	}
	// The same module, granted, loads and gets completions.
	if _, err := h.Load(context.Background(), parse(t, llmManifest("test/llm", "true")), wasm); err != nil {
		t.Fatal(err)
	}
	res := runProbe(t, h, context.Background(), "test/llm", probe.Ask("hi"))
	if !res[0].OK || res[0].LLM == nil || res[0].LLM.Content != "answer to hi" {
		t.Fatalf("granted module: %+v %+v", res[0], res[0].Error)
	}
	// A module without the grant that does not import it loads; it has no
	// way to ask (its probe variant cannot even name the import).
	if _, err := h.Load(context.Background(), parse(t, llmManifest("test/plain", "")), probe.Wasm(t, probe.NoNetworkTag)); err != nil {
		t.Fatal(err)
	}
	res = runProbe(t, h, context.Background(), "test/plain", probe.Ask("hi"), probe.Raw(abi.ImportLLMComplete, 16, 16))
	for i, r := range res {
		if r.OK {
			t.Errorf("ungranted module, route %d: %+v", i, r)
		}
	}
	if got := fake.count(); got != 1 {
		t.Errorf("the station's LLM saw %d requests, want 1 (the granted module's)", got)
	}
}

// The grant handed to Options.LLM is the one bound when the module was
// linked, per module, with the call's attribution in the context.
func TestLLMGrantBoundAtLink(t *testing.T) {
	fake := &fakeLLM{}
	h := newHost(t, host.Options{LLM: fake.complete})
	wasm := probe.Wasm(t, probe.LLMTag)
	grants := map[string]string{
		"test/small": "{max_tokens_per_call: 10, budget_tokens_per_day: 100}",
		"test/big":   "{max_tokens_per_call: 1000}",
		"test/any":   "true",
	}
	for id, g := range grants {
		if _, err := h.Load(context.Background(), parse(t, llmManifest(id, g)), wasm); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]host.LLMGrant{
		"test/small": {Module: "test/small", LLM: manifest.LLM{Enabled: true, MaxTokensPerCall: 10, BudgetTokensPerDay: 100}},
		"test/big":   {Module: "test/big", LLM: manifest.LLM{Enabled: true, MaxTokensPerCall: 1000}},
		"test/any":   {Module: "test/any", LLM: manifest.LLM{Enabled: true}},
	}
	var wg sync.WaitGroup
	for id := range grants {
		for i := 0; i < 10; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx := sandbox.WithTrace(context.Background(), "trace-"+id)
				out, err := h.Call(ctx, id, probe.Command, probe.Run(probe.LLM("system", "be brief", "user", id).WithMaxTokens(5)))
				if err != nil {
					t.Error(err)
					return
				}
				res, _ := probe.Decode(out)
				if len(res) != 1 || !res[0].OK || res[0].LLM.Content != "answer to "+id {
					t.Errorf("%s: %+v", id, res)
				}
			}()
		}
	}
	wg.Wait()
	fake.mu.Lock()
	defer fake.mu.Unlock()
	if len(fake.grants) != 30 {
		t.Fatalf("%d requests, want 30", len(fake.grants))
	}
	for i, g := range fake.grants {
		module := fake.reqs[i].Messages[1].Content
		if g != want[module] {
			t.Errorf("request of %s carried grant %+v, want %+v", module, g, want[module])
		}
		if c := fake.calls[i]; c.Module != module || c.Command != probe.Command || c.Trace != "trace-"+module {
			t.Errorf("request of %s: call %+v", module, c)
		}
		wantReq := llm.Request{Messages: []llm.Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: module}}, MaxTokens: 5}
		if got := fake.reqs[i]; fmt.Sprint(got) != fmt.Sprint(wantReq) {
			t.Errorf("request = %+v, want %+v", got, wantReq)
		}
	}
}

// Every outcome of the station's LLM reaches the guest with the right status
// and document; malformed requests are refused before the station's LLM is
// asked; hostile pointers and lengths fault without a request.
func TestLLMStatuses(t *testing.T) {
	fake := &fakeLLM{}
	h := newHost(t, host.Options{LLM: fake.complete})
	if _, err := h.Load(context.Background(), parse(t, llmManifest("test/llm", "true")), probe.Wasm(t, probe.LLMTag)); err != nil {
		t.Fatal(err)
	}
	fake.answer = func(g host.LLMGrant, req llm.Request) (*llm.Response, error) {
		switch req.Messages[0].Content {
		case "deny":
			return nil, sandbox.Deny(g.Module, sandbox.LLM, "test-model", "has used 100 of its 100 tokens in the last 24 hours")
		case "invalid":
			return nil, fmt.Errorf("%w: asks for too much", llm.ErrInvalid)
		case "timeout":
			return nil, fmt.Errorf("llm: %w", context.DeadlineExceeded)
		case "fail":
			return nil, errors.New("llm: the provider failed (HTTP 503)")
		}
		return &llm.Response{Model: "test-model", Content: "ok", FinishReason: "length", Usage: llm.Usage{PromptTokens: 1, CompletionTokens: 2, TotalTokens: 3}}, nil
	}
	raw := func(doc string) probe.Action {
		return probe.RawData(abi.ImportLLMComplete, doc, probe.DataPtr, probe.DataLen).ReadBuffer()
	}
	tests := []struct {
		name   string
		act    probe.Action
		status abi.Status
		doc    string // the buffer, for raw actions; "" to skip
		asked  bool   // whether the station's LLM was asked
	}{
		{"ok", raw(`{"messages":[{"role":"user","content":"x"}],"max_tokens":2,"temperature":0.5,"json":true}`), abi.StatusOK,
			`{"model":"test-model","content":"ok","finish_reason":"length","usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}`, true},
		{"denied", raw(`{"messages":[{"role":"user","content":"deny"}]}`), abi.StatusDenied,
			`{"code":"denied","capability":"llm","target":"test-model","reason":"has used 100 of its 100 tokens in the last 24 hours","message":"sandbox violation: module test/llm: llm: \"test-model\" has used 100 of its 100 tokens in the last 24 hours"}`, true},
		{"invalid from the station", raw(`{"messages":[{"role":"user","content":"invalid"}]}`), abi.StatusInvalid, "", true},
		{"timeout", raw(`{"messages":[{"role":"user","content":"timeout"}]}`), abi.StatusTimeout, "", true},
		{"failed", raw(`{"messages":[{"role":"user","content":"fail"}]}`), abi.StatusFailed, `{"code":"failed","message":"llm: the provider failed (HTTP 503)"}`, true},
		{"no messages", raw(`{"messages":[]}`), abi.StatusInvalid, `{"code":"invalid","message":"invalid llm request: messages is empty"}`, false},
		{"bad role", raw(`{"messages":[{"role":"tool","content":"x"}]}`), abi.StatusInvalid, "", false},
		{"negative max_tokens", raw(`{"messages":[{"role":"user","content":"x"}],"max_tokens":-1}`), abi.StatusInvalid, "", false},
		{"temperature out of range", raw(`{"messages":[{"role":"user","content":"x"}],"temperature":2.5}`), abi.StatusInvalid, "", false},
		{"not JSON", raw(`{"messages":`), abi.StatusInvalid, "", false},
		{"wrong types", raw(`{"messages":"hello"}`), abi.StatusInvalid, "", false},
		{"too many messages", raw(`{"messages":[` + strings.Repeat(`{"role":"user","content":""},`, host.MaxLLMMessages) + `{"role":"user","content":""}]}`), abi.StatusInvalid, "", false},
		{"length over the limit", probe.Raw(abi.ImportLLMComplete, 16, 1<<30).ReadBuffer(), abi.StatusTooLarge, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := fake.count()
			r := runProbe(t, h, context.Background(), "test/llm", tt.act)[0]
			if !r.OK || r.ABIStatus == nil {
				t.Fatalf("raw call failed: %+v", r.Error)
			}
			if got := abi.Status(*r.ABIStatus); got != tt.status {
				t.Errorf("status %s, want %s (buffer %v)", got, tt.status, deref(r.Buffer))
			}
			if tt.doc != "" && deref(r.Buffer) != tt.doc {
				t.Errorf("buffer\n got %s\nwant %s", deref(r.Buffer), tt.doc)
			}
			if tt.status != abi.StatusOK {
				var e abi.Error
				if err := json.Unmarshal([]byte(deref(r.Buffer)), &e); err != nil || e.Code != tt.status.String() || e.Message == "" {
					t.Errorf("error document %q: %v", deref(r.Buffer), err)
				}
			}
			if asked := fake.count() > before; asked != tt.asked {
				t.Errorf("the station's LLM was asked: %v, want %v", asked, tt.asked)
			}
		})
	}
	// A pointer outside memory faults: the call fails naming the module,
	// and nothing is asked.
	before := fake.count()
	_, err := h.Call(context.Background(), "test/llm", probe.Command, probe.Run(probe.Raw(abi.ImportLLMComplete, 0xfffffff0, 64)))
	var ce *host.CallError
	if !errors.As(err, &ce) || ce.Kind != host.KindFault || !strings.Contains(err.Error(), "llm_complete") {
		t.Errorf("out-of-bounds request: %v, want a fault naming llm_complete", err)
	}
	if fake.count() != before {
		t.Error("a faulting request reached the station's LLM")
	}
	// The module still works.
	if r := runProbe(t, h, context.Background(), "test/llm", probe.Ask("x"))[0]; !r.OK {
		t.Errorf("after the fault: %+v", r.Error)
	}
}

// A station without an LLM still loads granted modules; their requests
// fail with a clear message.
func TestLLMWithoutStationLLM(t *testing.T) {
	h := newHost(t, host.Options{})
	if _, err := h.Load(context.Background(), parse(t, llmManifest("test/llm", "true")), probe.Wasm(t, probe.LLMTag)); err != nil {
		t.Fatal(err)
	}
	r := runProbe(t, h, context.Background(), "test/llm", probe.Ask("x"))[0]
	if r.OK || r.Error == nil || r.Error.Code != "failed" || !strings.Contains(r.Error.Message, "offers no LLM") {
		t.Errorf("got %+v, want a failure saying the station offers no LLM", r.Error)
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// FuzzLLMComplete passes arbitrary request documents and arguments to
// llm_complete from inside a guest. Whatever they are, the station must not
// crash, the call must succeed or fail with a CallError naming the module,
// only well-formed requests may reach the station's LLM, and the module must
// keep working.
func FuzzLLMComplete(f *testing.F) {
	for _, s := range []struct {
		doc  string
		a, b uint32
	}{
		{`{"messages":[{"role":"user","content":"x"}],"max_tokens":2,"temperature":0.5,"json":true}`, 0, 0},
		{`{"messages":[]}`, 0, 0},
		{`{"messages":[{"role":"tool","content":"x"}]}`, 0, 0},
		{`{"messages":[{"role":"user","content":"\u0000\ud800"}],"temperature":1e309}`, 0, 0},
		{`{"messages":"x","max_tokens":-1}`, 0, 0},
		{`[`, 0, 0},
		{"", 0xfffffff0, 64},
		{"", 16, 1 << 31},
	} {
		f.Add(s.doc, s.a, s.b)
	}
	var mu sync.Mutex
	var bad []llm.Request
	fake := &fakeLLM{answer: func(g host.LLMGrant, req llm.Request) (*llm.Response, error) {
		valid := len(req.Messages) > 0 && req.MaxTokens >= 0
		for _, m := range req.Messages {
			valid = valid && (m.Role == "system" || m.Role == "user" || m.Role == "assistant")
		}
		if t := req.Temperature; t != nil && (*t < 0 || *t > 2) {
			valid = false
		}
		if !valid {
			mu.Lock()
			bad = append(bad, req)
			mu.Unlock()
		}
		return &llm.Response{Model: "m", Content: "ok"}, nil
	}}
	h := newHost(f, host.Options{LLM: fake.complete})
	if _, err := h.Load(context.Background(), parse(f, llmManifest("test/llm", "true")+"limits: {timeout: 5s}\n"), probe.Wasm(f, probe.LLMTag)); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, doc string, a, b uint32) {
		act := probe.Raw(abi.ImportLLMComplete, int64(a), int64(b)).ReadBuffer()
		if doc != "" {
			act = probe.RawData(abi.ImportLLMComplete, doc, probe.DataPtr, probe.DataLen).ReadBuffer()
		}
		_, err := h.Call(context.Background(), "test/llm", probe.Command, probe.Run(act))
		var ce *host.CallError
		if err != nil && (!errors.As(err, &ce) || ce.Module != "test/llm" || ce.Kind == host.KindInternal) {
			t.Fatalf("llm_complete(%q, %#x, %#x): %v", doc, a, b, err)
		}
		mu.Lock()
		if len(bad) > 0 {
			t.Fatalf("a malformed request reached the station's LLM: %+v", bad)
		}
		mu.Unlock()
		if _, err := h.Call(context.Background(), "test/llm", probe.Command, probe.Run()); err != nil {
			t.Fatalf("the module stopped working: %v", err)
		}
	})
}
