package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero"

	"github.com/station-dev/station/internal/fixture"
	"github.com/station-dev/station/internal/sandbox"
	"github.com/station-dev/station/internal/station"
	"github.com/station-dev/station/internal/store"
	"github.com/station-dev/station/internal/wasmbuild"
)

// id is the id every build is installed under (each in its own station),
// so that messages naming the module compare equal.
const id = "conformance/hello"

// A call is one command of the conformance set.
type call struct {
	command, input string
	// prefixOnly: the SDKs word this error in their own way (a JSON
	// parser's message); only its start must agree (after the station's
	// "module ID: COMMAND: ").
	prefixOnly string
}

var calls = []call{
	{command: "greet", input: `{"name": "Ada"}`},
	{command: "greet", input: `{"name": "  Ada \t\n"}`},
	{command: "greet", input: `{"name": "Ad\u00e9 \ud83d\ude00 \"q\" \\ <b>"}`},
	{command: "greet", input: `{"name": "Ada", "other": [1, {"x": null}]}`, prefixOnly: `invalid input: unknown field "other"`},
	{command: "greet", input: `{}`},
	{command: "greet", input: `{"name": ""}`},
	{command: "greet", input: `{"name": 5}`},
	{command: "greet", input: `[1]`, prefixOnly: "invalid input:"},
	{command: "greet", input: `"Ada"`, prefixOnly: "invalid input:"},
	{command: "greet", input: `{"name": "Ada"`, prefixOnly: "invalid input:"},
	{command: "fetch", input: `{"url": "https://api.example.test/hello"}`},
	{command: "fetch", input: `{"url": "https://api.example.test/missing"}`},
	{command: "fetch", input: `{"url": "https://evil.example/steal"}`},
	{command: "fetch", input: `{"url": "http://api.example.test/plain"}`},
	{command: "fetch", input: `{}`},
	{command: "wave", input: `{}`},
}

// outcome is what one call gave: its result (compacted JSON) or its
// error, and the decisions the gates made during it.
type outcome struct {
	Result    string
	Error     string
	Decisions []string
}

func TestSameResultsAndDecisions(t *testing.T) {
	root, err := wasmbuild.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	cache := wazero.NewCompilationCache()
	t.Cleanup(func() { cache.Close(context.Background()) })
	var want []outcome
	for _, b := range langs {
		if _, err := wasmbuild.Toolchain(b.name); err != nil {
			if os.Getenv("STATION_REQUIRE_WASM_TOOLCHAINS") == "1" {
				t.Fatalf("%s: no toolchain (STATION_REQUIRE_WASM_TOOLCHAINS=1): %v", b.name, err)
			}
			t.Logf("%s: skipped: %v", b.name, err)
			continue
		}
		got := run(t, cache, filepath.Join(root, filepath.FromSlash(b.dir)))
		if b.name == wasmbuild.LangGo {
			want = got
			checkGo(t, got)
			continue
		}
		for i, c := range calls {
			g, w := got[i], want[i]
			if c.prefixOnly != "" {
				prefix := "module " + id + ": " + c.command + ": " + c.prefixOnly
				if !strings.HasPrefix(g.Error, prefix) || !strings.HasPrefix(w.Error, prefix) {
					t.Errorf("%s: %s %s: error %q, want one starting %q (go: %q)", b.name, c.command, c.input, g.Error, prefix, w.Error)
				}
				g.Error, w.Error = "", ""
			}
			if fmt.Sprint(g) != fmt.Sprint(w) {
				t.Errorf("%s: %s %s:\n got %+v\nwant %+v (go)", b.name, c.command, c.input, g, w)
			}
		}
	}
}

// checkGo pins what the Go build does, so that the comparison is with the
// ABI's behaviour and not with whatever the Go module happens to do.
func checkGo(t *testing.T, got []outcome) {
	t.Helper()
	checks := map[int]outcome{
		0:  {Result: `{"greeting":"Hello, Ada!"}`},
		1:  {Result: `{"greeting":"Hello, Ada!"}`},
		4:  {Error: "name is required"},
		6:  {Error: "name is required"},
		10: {Result: `{"body":"hello from the fixture","status":200}`, Decisions: []string{"allowed network api.example.test:443", "allowed network api.example.test:443 (127.0.0.1)"}},
		12: {Decisions: []string{`denied network evil.example:443: is not in its allowlist (api.example.test)`}},
		14: {Error: "url is required"},
		// The station refuses a command the manifest does not list before
		// the module runs.
		15: {Error: "wave: no such command (commands: greet, fetch)"},
	}
	for i, w := range checks {
		g := got[i]
		if w.Result != "" && g.Result != w.Result || w.Error != "" && !strings.Contains(g.Error, w.Error) ||
			w.Decisions != nil && fmt.Sprint(g.Decisions) != fmt.Sprint(w.Decisions) {
			t.Errorf("go: %s %s:\n got %+v\nwant %+v", calls[i].command, calls[i].input, g, w)
		}
	}
	if e := got[12].Error; !strings.Contains(e, "sandbox violation: module "+id+": network") {
		t.Errorf("go: the denial's error does not name the module and capability: %q", e)
	}
}

// run installs the module in dir (install) and makes every call.
func run(t *testing.T, cache wazero.CompilationCache, dir string) []outcome {
	t.Helper()
	return makeCalls(t, install(t, cache, dir))
}

// install builds the module in dir and installs it under id in a new
// station whose api.example.test is a loopback fixture.
func install(t testing.TB, cache wazero.CompilationCache, dir string) *station.Station {
	t.Helper()
	mod := t.TempDir()
	if err := os.WriteFile(filepath.Join(mod, "module.wasm"), wasmbuild.ForTestLang(t, dir), 0o600); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "module.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	raw = regexp.MustCompile(`(?m)^id: .*$`).ReplaceAll(raw, []byte("id: "+id))
	raw = regexp.MustCompile(`(?m)^description: .*$`).ReplaceAll(raw, []byte("description: the conformance module"))
	if err := os.WriteFile(filepath.Join(mod, "module.yaml"), raw, 0o600); err != nil {
		t.Fatal(err)
	}

	home := t.TempDir()
	ca := fixture.NewCA(t)
	mux := http.NewServeMux()
	mux.HandleFunc("/hello", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "hello from the fixture") })
	api := ca.TLSServer(t, mux, "api.example.test")
	evil := ca.TLSServer(t, mux, "evil.example")
	plain := fixture.HTTPServer(t, mux)
	// The Go module compiles in this process (an in-memory cache has no
	// compile child), which under the race detector on a loaded machine
	// can outlast the default bound of two minutes: CI saw it.
	cfg := fmt.Sprintf("install:\n  compile_timeout: 10m\nnetwork:\n  resolve:\n    - api.example.test:443=%s\n    - evil.example:443=%s\n    - api.example.test:80=%s\n  extra_ca: %s\n  allow_private: [127.0.0.0/8]\n",
		api.Addr, evil.Addr, plain.Addr, ca.WriteFile(t, home))
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	st, err := station.Open(ctx, home, station.Options{Cache: cache})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close(ctx) })
	if _, err := st.Install(ctx, mod, func(station.Plan) (bool, error) { return true, nil }); err != nil {
		t.Fatal(err)
	}
	return st
}

// makeCalls makes every call of the conformance set on st.
func makeCalls(t testing.TB, st *station.Station) []outcome {
	ctx := context.Background()
	var out []outcome
	for i, c := range calls {
		trace := fmt.Sprintf("call-%d", i)
		res, err := st.Run(sandbox.WithTrace(ctx, trace), id, c.command, []byte(c.input))
		var o outcome
		if err != nil {
			o.Error = err.Error()
		} else {
			var v any
			if jerr := json.Unmarshal(res, &v); jerr != nil {
				t.Fatalf("%s %s: the result is not JSON: %s", c.command, c.input, res)
			}
			b, _ := json.Marshal(v) // sorted keys, one form of each string
			o.Result = string(b)
		}
		if err := st.Audit.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		recs, err := st.Store.Audit(ctx, store.AuditFilter{Trace: trace})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if r.Module != id || r.Command != c.command {
				t.Errorf("%s %s: a decision attributed to %s %s", c.command, c.input, r.Module, r.Command)
			}
			verdict := "denied"
			if r.Allowed {
				verdict = "allowed"
			}
			d := fmt.Sprintf("%s %s %s", verdict, r.Capability, r.Target)
			if r.Reason != "" && !r.Allowed {
				d += ": " + r.Reason
			}
			o.Decisions = append(o.Decisions, d)
		}
		out = append(out, o)
	}
	return out
}
