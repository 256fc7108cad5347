package station_test

// The station-level LLM (issue 6): modules granted requires.llm get
// completions through llm_complete, with the station's key and within their
// token limits; the module's network allowlist plays no part either way; the
// key never reaches a module; the station's own client is nobody's.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/station-dev/station/internal/fixture"
	"github.com/station-dev/station/internal/llm"
	"github.com/station-dev/station/internal/llm/llmtest"
	"github.com/station-dev/station/internal/probe"
	"github.com/station-dev/station/internal/sandbox"
	"github.com/station-dev/station/internal/station"
	"github.com/station-dev/station/internal/store"
	"github.com/station-dev/station/internal/wasmbuild"
	"github.com/station-dev/station/manifest"
)

const llmMod = "test/summarizer"

// newLLMEnv is newEnv with the station's LLM pointed at a fake provider the
// way an operator would: config.yaml's llm section names the provider and
// the variable that holds the key; the key itself is only in the
// environment (a fake one, so the test stays hermetic). key "" means the
// provider's own key.
func newLLMEnv(t *testing.T, key string) (*env, *llmtest.Server) {
	t.Helper()
	e := newEnv(t, envOpts{})
	srv := llmtest.New(t)
	if key == "" {
		key = srv.Key
	}
	f, err := os.OpenFile(filepath.Join(e.home, "config.yaml"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, "llm:\n  base_url: %s\n  model: %s\n  api_key_env: TEST_LLM_KEY\n  max_retries: 0\n", srv.URL, llmtest.DefaultModel)
	f.Close()
	reopenLLM(e, key)
	return e, srv
}

// reopenLLM reopens e's station with key in its environment.
func reopenLLM(e *env, key string) {
	e.t.Helper()
	e.st.Close(context.Background())
	getenv := func(k string) string {
		if k == "TEST_LLM_KEY" {
			return key
		}
		return ""
	}
	st, err := station.Open(context.Background(), e.home, station.Options{Cache: testCache(e.t), Logger: slog.New(slog.NewTextHandler(e.logBuf, nil)), Getenv: getenv})
	if err != nil {
		e.t.Fatalf("open station: %v", err)
	}
	e.st = st
	e.t.Cleanup(func() { st.Close(context.Background()) })
}

func llmSpec(id, grant string, allow ...string) moduleSpec {
	return moduleSpec{id: id, allow: allow, extra: "  llm: " + grant + "\n"}
}

// llmDecisions returns the audit records of capability llm.
func llmDecisions(e *env, f store.AuditFilter) []store.AuditRecord {
	var out []store.AuditRecord
	for _, r := range e.audit(f) {
		if r.Capability == sandbox.LLM {
			out = append(out, r)
		}
	}
	return out
}

// (a) A module with requires.llm and an empty network allowlist gets
// completions; the station sends its own key; the call is in the audit log
// with its tokens and in llm_usage, attributed to the module, command and
// trace.
func TestLLMModuleWithEmptyAllowlist(t *testing.T) {
	t.Parallel()
	e, srv := newLLMEnv(t, "")
	e.install(llmSpec(llmMod, "true"), probe.Wasm(t, probe.LLMTag))
	ctx := sandbox.WithTrace(context.Background(), "run/7/step/summarize")
	out, err := e.st.Run(ctx, llmMod, probe.Command, probe.Run(probe.LLM("system", "be brief", "user", "one two three")))
	if err != nil {
		t.Fatal(err)
	}
	res, err := probe.Decode(out)
	if err != nil {
		t.Fatal(err)
	}
	want := probe.LLMResult{Model: llmtest.DefaultModel, Content: "echo: one two three", FinishReason: "stop", PromptTokens: 5, CompletionTokens: 4, TotalTokens: 9}
	if r := res[0]; !r.OK || r.LLM == nil || *r.LLM != want {
		t.Fatalf("completion: %+v (error %+v), want %+v", r.LLM, r.Error, want)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("the provider saw %d requests, want 1", len(reqs))
	}
	if got, want := reqs[0].Authorization, "Bearer "+srv.Key; got != want {
		t.Errorf("Authorization = %q, want the station's key", got)
	}
	if got := reqs[0].Chat; got.Model != llmtest.DefaultModel || len(got.Messages) != 2 || got.Messages[1].Content != "one two three" || got.MaxTokens != 0 {
		t.Errorf("request = %+v", got)
	}
	if bytes.Contains(out, []byte(srv.Key)) {
		t.Error("the module's output holds the key")
	}
	decs := llmDecisions(e, store.AuditFilter{Module: llmMod})
	if len(decs) != 1 {
		t.Fatalf("llm decisions %+v, want 1", decs)
	}
	d := decs[0]
	if !d.Allowed || d.Command != probe.Command || d.Trace != "run/7/step/summarize" || d.Target != llmtest.DefaultModel || d.Reason != "5 prompt + 4 completion tokens" {
		t.Errorf("decision %+v", d)
	}
	recs, err := e.st.Store.LLMRecords(context.Background(), llmMod, 0)
	if err != nil || len(recs) != 1 {
		t.Fatalf("llm usage %+v, %v", recs, err)
	}
	if r := recs[0]; r.Trace != "run/7/step/summarize" || r.Model != llmtest.DefaultModel || r.PromptTokens != 5 || r.CompletionTokens != 4 {
		t.Errorf("usage record %+v", r)
	}
	if log := e.gateLog(llmMod); !strings.Contains(log, "llm gate active") || !strings.Contains(log, "network gate active — allow: (none)") {
		t.Errorf("gate log:\n%s", log)
	}
}

// (b) The module's allowlist does not open the LLM host to it: the same
// module reaching the provider's URL with http_request is refused before a
// connection is made. A module whose allowlist does name the host reaches
// it like any host — without the station's key.
func TestLLMHostNotOpenedToModules(t *testing.T) {
	t.Parallel()
	e, srv := newLLMEnv(t, "")
	e.install(llmSpec(llmMod, "true"), probe.Wasm(t, probe.LLMTag))
	body := `{"model":"test-model","messages":[{"role":"user","content":"x"}]}`
	res := e.mustProbe(llmMod,
		probe.HTTP("POST", srv.URL+"/chat/completions").WithBody(body),
		probe.Ask("x"),
		probe.HTTP("POST", strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)+"/chat/completions").WithBody(body),
	)
	wantDenied(t, "the provider's URL", res[0], llmMod, "127.0.0.1")
	wantDenied(t, "the provider by name", res[2], llmMod, "localhost")
	if !res[1].OK {
		t.Errorf("llm_complete in the same call: %+v", res[1].Error)
	}
	if got := srv.Count(); got != 1 {
		t.Errorf("the provider saw %d requests, want 1 (llm_complete's)", got)
	}
	accepted := srv.Accepted()

	const direct = "test/direct"
	e.install(moduleSpec{id: direct, allow: []string{"http://" + srv.Addr()}}, probe.Wasm(t))
	r := e.mustProbe(direct, probe.HTTP("POST", srv.URL+"/chat/completions").WithBody(body).WithHeader("Content-Type", "application/json"))[0]
	if !r.OK || r.Status != 401 {
		t.Fatalf("module with the provider in its allowlist: ok=%v status=%d error=%+v, want the provider's 401", r.OK, r.Status, r.Error)
	}
	last := srv.Requests()[srv.Count()-1]
	if last.Authorization != "" || strings.Contains(r.Body, srv.Key) {
		t.Errorf("a module's own request carried a key: Authorization %q, body %q", last.Authorization, r.Body)
	}
	if srv.Accepted() <= accepted {
		t.Error("the module's own request did not reach the provider")
	}
}

// (c) A module without the grant that imports llm_complete is refused at
// install, and the provider sees nothing.
func TestLLMWithoutGrantRefused(t *testing.T) {
	t.Parallel()
	e, srv := newLLMEnv(t, "")
	for _, grant := range []string{"", "  llm: false\n"} {
		err := e.tryInstall(e.moduleDir(moduleSpec{id: "test/nollm", extra: grant}, probe.Wasm(t, probe.LLMTag)))
		if err == nil || !strings.Contains(err.Error(), "imports station.llm_complete, which this station does not offer to it (llm is not granted)") {
			t.Errorf("install with %q: %v, want a refusal naming the import", grant, err)
		}
	}
	if _, err := e.st.Store.Module(context.Background(), "test/nollm"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the refused module was installed: %v", err)
	}
	if srv.Count() != 0 || srv.Accepted() != 0 {
		t.Errorf("the provider saw %d requests, %d connections; want none", srv.Count(), srv.Accepted())
	}
}

// (d) The key never reaches a module: not in a completion, not in the
// error when the provider refuses the key and quotes it back, not when the
// provider quotes it in another error, not in the module's environment,
// the audit log or the station log.
func TestLLMKeyNeverReachesModule(t *testing.T) {
	t.Parallel()
	check := func(t *testing.T, e *env, key string, out []byte) {
		t.Helper()
		tail := key[len(key)-10:]
		if bytes.Contains(out, []byte(tail)) {
			t.Errorf("the module's output holds the key: %s", out)
		}
		for _, r := range e.audit(store.AuditFilter{}) {
			if strings.Contains(r.Reason, tail) || strings.Contains(r.Target, tail) {
				t.Errorf("audit record %+v holds the key", r)
			}
		}
		if strings.Contains(e.logBuf.String(), tail) {
			t.Error("the station log holds the key")
		}
	}
	t.Run("refused key", func(t *testing.T) {
		wrong := "sk-wrong-" + strings.Repeat("0123456789", 3)
		e, srv := newLLMEnv(t, wrong)
		e.install(llmSpec(llmMod, "true"), probe.Wasm(t, probe.LLMTag))
		out, err := e.st.Run(context.Background(), llmMod, probe.Command, probe.Run(probe.Ask("x"), probe.Env()))
		if err != nil {
			t.Fatal(err)
		}
		res, _ := probe.Decode(out)
		if r := res[0]; r.OK || r.Error == nil || r.Error.Code != "failed" || !strings.Contains(r.Error.Message, "refused the key") || !strings.Contains(r.Error.Message, "TEST_LLM_KEY") {
			t.Errorf("completion with a refused key: %+v", r.Error)
		}
		if got := srv.Requests()[0].Authorization; got != "Bearer "+wrong {
			t.Errorf("the station sent %q", got)
		}
		if len(res[1].Env) != 0 {
			t.Errorf("the module has an environment: %v", res[1].Env)
		}
		check(t, e, wrong, out)
	})
	t.Run("provider quotes the key", func(t *testing.T) {
		e, srv := newLLMEnv(t, "")
		e.install(llmSpec(llmMod, "true"), probe.Wasm(t, probe.LLMTag))
		srv.Enqueue(llmtest.Reply{Status: 400, ErrorMessage: "request with key " + srv.Key + " is malformed"})
		out, err := e.st.Run(context.Background(), llmMod, probe.Command, probe.Run(probe.Ask("x")))
		if err != nil {
			t.Fatal(err)
		}
		res, _ := probe.Decode(out)
		if r := res[0]; r.OK || !strings.Contains(r.Error.Message, "request with key [redacted] is malformed") {
			t.Errorf("provider error: %+v", r.Error)
		}
		check(t, e, srv.Key, out)
	})
}

// (e) max_tokens_per_call and budget_tokens_per_day: a request over the
// per-call cap is refused; a request with no max_tokens is sent with the
// cap; the last call before the budget runs out is cut to what its prompt
// leaves; then requests are refused with a clear reason, audited, and still
// after a restart; another module's budget is its own.
func TestLLMBudget(t *testing.T) {
	t.Parallel()
	e, srv := newLLMEnv(t, "")
	e.install(llmSpec(llmMod, "{max_tokens_per_call: 5, budget_tokens_per_day: 20}"), probe.Wasm(t, probe.LLMTag))
	ask := probe.Ask("one two three") // 3 prompt tokens (estimated 4); the echo is 4 completion tokens
	res := e.mustProbe(llmMod, ask.WithMaxTokens(6), ask, ask, ask, ask)
	if r := res[0]; r.OK || r.Error.Code != "denied" || r.Error.Capability != "llm" ||
		r.Error.Reason != "asks for 6 completion tokens; the module may ask for at most 5 per call (requires.llm.max_tokens_per_call)" {
		t.Errorf("over the per-call cap: %+v", r.Error)
	}
	for i, want := range []probe.LLMResult{
		{Model: llmtest.DefaultModel, Content: "echo: one two three", FinishReason: "stop", PromptTokens: 3, CompletionTokens: 4, TotalTokens: 7},
		{Model: llmtest.DefaultModel, Content: "echo: one two three", FinishReason: "stop", PromptTokens: 3, CompletionTokens: 4, TotalTokens: 7},
		{Model: llmtest.DefaultModel, Content: "echo: one", FinishReason: "length", PromptTokens: 3, CompletionTokens: 2, TotalTokens: 5},
	} {
		if r := res[i+1]; !r.OK || *r.LLM != want {
			t.Errorf("call %d: %+v (error %+v), want %+v", i+1, r.LLM, r.Error, want)
		}
	}
	wantReason := "sends a prompt of about 4 tokens; 1 of its 20 tokens in the last 24 hours are left (requires.llm.budget_tokens_per_day)"
	if r := res[4]; r.OK || r.Error.Code != "denied" || r.Error.Capability != "llm" || r.Error.Reason != wantReason {
		t.Errorf("over the budget: %+v, want reason %q", r.Error, wantReason)
	}
	var maxTokens []int
	for _, r := range srv.Requests() {
		maxTokens = append(maxTokens, r.Chat.MaxTokens)
	}
	if fmt.Sprint(maxTokens) != "[5 5 2]" {
		t.Errorf("max_tokens sent = %v, want [5 5 2] (the cap, then what the prompt leaves of the budget)", maxTokens)
	}
	decs := llmDecisions(e, store.AuditFilter{Module: llmMod})
	var allowed, denied []string
	for _, d := range decs {
		if d.Allowed {
			allowed = append(allowed, d.Reason)
		} else {
			denied = append(denied, d.Reason)
		}
	}
	if want := []string{"3 prompt + 4 completion tokens; 7 of 20 in the last 24 hours", "3 prompt + 4 completion tokens; 14 of 20 in the last 24 hours", "3 prompt + 2 completion tokens; 19 of 20 in the last 24 hours"}; fmt.Sprint(allowed) != fmt.Sprint(want) {
		t.Errorf("allowed decisions %q, want %q", allowed, want)
	}
	if len(denied) != 2 || denied[1] != wantReason {
		t.Errorf("denied decisions %q", denied)
	}

	// The budget is persisted: a restarted station still refuses.
	reopenLLM(e, srv.Key)
	if r := e.mustProbe(llmMod, ask)[0]; r.OK || r.Error.Reason != wantReason {
		t.Errorf("after a restart: %+v", r.Error)
	}
	if srv.Count() != 3 {
		t.Errorf("the provider saw %d requests, want 3", srv.Count())
	}
	// Another module's budget is its own.
	e.install(llmSpec("test/other", "{budget_tokens_per_day: 100}"), probe.Wasm(t, probe.LLMTag))
	if r := e.mustProbe("test/other", ask)[0]; !r.OK {
		t.Errorf("another module: %+v", r.Error)
	}
}

// Concurrent calls of one module cannot together spend more completion
// tokens than its budget; prompts are reserved by their estimate, so they
// overshoot by at most its error.
func TestLLMBudgetConcurrent(t *testing.T) {
	t.Parallel()
	e, _ := newLLMEnv(t, "")
	spec := llmSpec(llmMod, "{max_tokens_per_call: 3, budget_tokens_per_day: 30}")
	spec.limits = "concurrency: 8"
	e.install(spec, probe.Wasm(t, probe.LLMTag))
	const calls = 40
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok, denied := 0, 0
	for i := 0; i < calls; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := e.probe(llmMod, probe.Ask("x")) // 1 prompt + 2 completion tokens
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				t.Error(err)
			case res[0].OK:
				ok++
			case res[0].Error.Code == "denied":
				denied++
			default:
				t.Errorf("unexpected failure: %+v", res[0].Error)
			}
		}()
	}
	wg.Wait()
	recs, err := e.st.Store.LLMRecords(context.Background(), llmMod, 0)
	if err != nil {
		t.Fatal(err)
	}
	var prompt, completion int
	for _, r := range recs {
		prompt += r.PromptTokens
		completion += r.CompletionTokens
	}
	if ok+denied != calls || ok != len(recs) || ok == 0 || denied == 0 {
		t.Errorf("%d ok, %d denied, %d usage records", ok, denied, len(recs))
	}
	if completion > 30 || prompt+completion > 30+8 {
		t.Errorf("spent %d completion and %d prompt tokens against a budget of 30", completion, prompt)
	}
}

// (f) The station's own LLM client works while a gated module is loaded and
// blocked in a call to the same provider, and while another module is
// confined by its allowlist; the station's call is attributed to no module.
func TestStationLLMWhileModuleIsCalling(t *testing.T) {
	t.Parallel()
	e, srv := newLLMEnv(t, "")
	e.install(llmSpec(llmMod, "{max_tokens_per_call: 50}"), probe.Wasm(t, probe.LLMTag))
	e.install(moduleSpec{id: stripeMod, allow: []string{"api.stripe.com"}}, probe.Wasm(t))
	wantOK(t, "gated module before", e.mustProbe(stripeMod, probe.HTTP("GET", "https://api.stripe.com/"))[0])

	hold := make(chan struct{})
	srv.Enqueue(llmtest.Reply{Hold: hold, Content: "for the module"})
	done := make(chan probe.Result, 1)
	go func() {
		res, err := e.probe(llmMod, probe.Ask("module prompt"))
		if err != nil {
			t.Errorf("module call: %v", err)
			done <- probe.Result{}
			return
		}
		done <- res[0]
	}()
	fixture.Eventually(t, 20*time.Second, func() bool { return srv.Held() == 1 })

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := e.st.LLM.Complete(ctx, llm.Request{Messages: []llm.Message{{Role: "user", Content: "station prompt"}}})
	if err != nil || resp.Content != "echo: station prompt" {
		t.Fatalf("the station's client while a module call is blocked: %+v, %v", resp, err)
	}
	wantDenied(t, "gated module meanwhile", e.mustProbe(stripeMod, probe.HTTP("GET", srv.URL+"/models"))[0], stripeMod, "127.0.0.1")
	close(hold)
	if r := <-done; !r.OK || r.LLM.Content != "for the module" {
		t.Errorf("the module's call: %+v", r)
	}

	// And while a gated module is blocked inside a slow network request.
	release := make(chan struct{})
	inSlow := make(chan struct{})
	var once sync.Once
	e.stripeMux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		once.Do(func() { close(inSlow) })
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	slow := make(chan probe.Result, 1)
	go func() {
		res, err := e.probe(stripeMod, probe.HTTP("GET", "https://api.stripe.com/slow"))
		if err != nil {
			t.Errorf("slow call: %v", err)
			slow <- probe.Result{}
			return
		}
		slow <- res[0]
	}()
	select {
	case <-inSlow:
	case <-time.After(20 * time.Second):
		t.Fatal("the module call never reached the slow handler")
	}
	if resp, err := e.st.LLM.Complete(ctx, llm.Request{Messages: []llm.Message{{Role: "user", Content: "again"}}}); err != nil || resp.Content != "echo: again" {
		t.Fatalf("the station's client while a module is blocked in a network call: %+v, %v", resp, err)
	}
	close(release)
	wantOK(t, "the slow call", <-slow)

	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("the provider saw %d requests, want 3", len(reqs))
	}
	for _, r := range reqs {
		if r.Authorization != "Bearer "+srv.Key {
			t.Errorf("request without the station's key: %q", r.Authorization)
		}
	}
	if got := reqs[1].Chat.MaxTokens; got != 0 {
		t.Errorf("the station's request carried max_tokens %d: a module's cap leaked into it", got)
	}
	for _, r := range e.audit(store.AuditFilter{}) {
		if r.Module == "" || (r.Capability == sandbox.LLM && r.Module != llmMod) {
			t.Errorf("audit record %+v: the station's call must not be attributed to a module", r)
		}
	}
	if recs, _ := e.st.Store.LLMRecords(context.Background(), "", 0); len(recs) != 0 {
		t.Errorf("the station's own call was recorded as usage by the client: %+v (the workflow engine records its steps)", recs)
	}
	if recs, _ := e.st.Store.LLMRecords(context.Background(), llmMod, 0); len(recs) != 1 {
		t.Errorf("module usage records %+v, want 1", recs)
	}
}

// The install plan says what the grant allows, in the operator's terms, and
// the approval is what the module runs with after a restart.
func TestLLMPermissionText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		grant string
		want  []string
	}{
		{"", nil},
		{"false", nil},
		{"true", []string{"MAY ASK THE STATION'S LLM FOR COMPLETIONS WITH NO DAILY TOKEN BUDGET"}},
		{"{max_tokens_per_call: 512}", []string{"MAY ASK THE STATION'S LLM FOR COMPLETIONS WITH NO DAILY TOKEN BUDGET (up to 512 completion tokens per call)"}},
		{"{budget_tokens_per_day: 200000}", []string{"may ask the station's LLM for completions, up to 200000 tokens (prompt and completion) in any 24 hours"}},
		{"{max_tokens_per_call: 512, budget_tokens_per_day: 200000}", []string{"may ask the station's LLM for completions, up to 512 completion tokens per call and up to 200000 tokens (prompt and completion) in any 24 hours"}},
	}
	for _, tt := range tests {
		src := "id: a/b\nversion: \"1.0.0\"\nwasm: m.wasm\ncommands: [{name: run}]\n"
		if tt.grant != "" {
			src += "requires:\n  llm: " + tt.grant + "\n"
		}
		m, err := manifest.Parse("module.yaml", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, l := range station.PermissionsOf(m).Describe("") {
			if strings.Contains(strings.ToLower(l), "llm") || strings.Contains(l, "your provider and key") {
				got = append(got, l)
			}
		}
		if tt.want != nil {
			tt.want = append(tt.want, "  the station makes each request with your provider and key; the module never sees the key, and every call and its tokens are in the audit log")
		}
		if fmt.Sprint(got) != fmt.Sprint(tt.want) {
			t.Errorf("llm: %q:\n got %q\nwant %q", tt.grant, got, tt.want)
		}
	}

	e, srv := newLLMEnv(t, "")
	dir := e.moduleDir(llmSpec(llmMod, "{max_tokens_per_call: 64, budget_tokens_per_day: 1000}"), probe.Wasm(t, probe.LLMTag))
	var shown []string
	if _, err := e.st.Install(context.Background(), dir, func(p station.Plan) (bool, error) {
		shown = p.Permissions.Describe(p.Children)
		return true, nil
	}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(shown, "\n"), "may ask the station's LLM for completions, up to 64 completion tokens per call and up to 1000 tokens") {
		t.Errorf("install plan:\n%s", strings.Join(shown, "\n"))
	}
	rec, err := e.st.Store.Module(context.Background(), llmMod)
	if err != nil || !strings.Contains(string(rec.Approved), `"llm":{"max_tokens_per_call":64,"budget_tokens_per_day":1000}`) {
		t.Errorf("approved %s, %v", rec.Approved, err)
	}
	reopenLLM(e, srv.Key)
	if r := e.mustProbe(llmMod, probe.Ask("x"))[0]; !r.OK || srv.Requests()[0].Chat.MaxTokens != 64 {
		t.Errorf("after a restart: %+v, max_tokens %d", r.Error, srv.Requests()[0].Chat.MaxTokens)
	}
}

// The station's LLM settings come from config.yaml and the environment; a
// bad value in the environment stops the station from opening; a station
// without a provider still opens, and says what to set when used.
func TestStationLLMConfiguration(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	_, err := station.Open(context.Background(), home, station.Options{Cache: testCache(t), Getenv: func(k string) string {
		if k == "STATION_LLM_PROVIDER" {
			return "acme"
		}
		return ""
	}})
	if err == nil || !strings.Contains(err.Error(), `STATION_LLM_PROVIDER: unknown provider "acme"`) {
		t.Errorf("Open with a bad provider: %v", err)
	}
	st, err := station.Open(context.Background(), home, station.Options{Cache: testCache(t), Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close(context.Background())
	if err := st.CheckLLM(); !errors.Is(err, llm.ErrNotConfigured) {
		t.Errorf("CheckLLM without a provider: %v", err)
	}
	_, err = st.LLM.Complete(context.Background(), llm.Request{Messages: []llm.Message{{Role: "user", Content: "x"}}})
	if !errors.Is(err, llm.ErrNotConfigured) || !strings.Contains(err.Error(), "STATION_LLM_BASE_URL") {
		t.Errorf("Complete without a provider: %v", err)
	}

	// Groq by configuration alone: the preset and the provider's variable.
	st2, err := station.Open(context.Background(), t.TempDir(), station.Options{Cache: testCache(t), Getenv: func(k string) string {
		return map[string]string{"STATION_LLM_PROVIDER": "groq", "STATION_LLM_MODEL": "llama-3.1-8b-instant", "GROQ_API_KEY": "gsk_test"}[k]
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close(context.Background())
	if err := st2.CheckLLM(); err != nil {
		t.Errorf("CheckLLM with the groq preset: %v", err)
	}
}

// The example module, built from source and installed from its directory
// as an operator would, gets its completions through the station.
func TestSummarizeExample(t *testing.T) {
	t.Parallel()
	e, srv := newLLMEnv(t, "")
	root, err := wasmbuild.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	man, err := os.ReadFile(filepath.Join(root, "examples", "summarize", "module.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "module.yaml"), man, 0o600)
	os.WriteFile(filepath.Join(dir, "module.wasm"), wasmbuild.ForTest(t, "examples/summarize"), 0o600)
	if err := e.tryInstall(dir); err != nil {
		t.Fatal(err)
	}
	srv.Enqueue(llmtest.Reply{Content: "Station confines modules."}, llmtest.Reply{Content: `{"keywords":["station","modules"]}`})
	out, err := e.st.Run(context.Background(), "station/summarize", "summarize", []byte(`{"text":"Station runs third-party modules, each confined by its manifest."}`))
	if err != nil || !strings.Contains(string(out), `"summary":"Station confines modules."`) {
		t.Fatalf("summarize = %s, %v", out, err)
	}
	out, err = e.st.Run(context.Background(), "station/summarize", "keywords", []byte(`{"text":"Station runs modules."}`))
	if err != nil || !strings.HasPrefix(string(out), `{"keywords":["station","modules"]`) {
		t.Fatalf("keywords = %s, %v", out, err)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 || reqs[0].Chat.MaxTokens != 400 || reqs[1].Chat.ResponseFormat == nil || reqs[1].Chat.ResponseFormat.Type != "json_object" {
		t.Errorf("requests %+v", reqs)
	}
}
