package module

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/station-dev/station/internal/cli/clitest"
	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/probe"
	"github.com/station-dev/station/internal/wasmbuild"
)

func TestTestFlags(t *testing.T) {
	clitest.CheckFlags(t, func(runF func(*TestOptions) error) *cobra.Command { return NewCmdTest(clitest.Factory(), runF) }, []clitest.FlagCase[TestOptions]{
		{Args: []string{"dir"}, Want: TestOptions{Dir: "dir"}},
		{Args: []string{"dir", "--fixture", "a.test=x,y.json", "--fixture", "b.test=z", "--no-build", "--json"},
			Want: TestOptions{Dir: "dir", Fixtures: []string{"a.test=x,y.json", "b.test=z"}, NoBuild: true, JSON: true}},
		{Args: []string{"dir", "--command", "greet", "-i", `{"name":"Ada"}`}, Want: TestOptions{Dir: "dir", Command: "greet", Input: `{"name":"Ada"}`}},
		{Args: []string{}, Code: cmdutil.ExitUsage},
		{Args: []string{"a", "b"}, Code: cmdutil.ExitUsage},
		{Args: []string{"dir", "--fixtures", "x"}, Code: cmdutil.ExitUsage},
	}, "Cache")
}

// testModuleDir copies example (a directory under examples/, or the probe
// for "probe") with its prebuilt wasm into a temporary directory, with
// files added.
func testModuleDir(t *testing.T, example string, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	var man string
	var wasm []byte
	if example == "probe" {
		man = fmt.Sprintf("id: test/probe\nversion: \"1.0.0\"\nwasm: module.wasm\ncommands:\n  - name: %s\nrequires:\n  network:\n    allow: [api.example.test]\nlimits:\n  timeout: 2s\n", probe.Command)
		wasm = probe.Wasm(t)
	} else {
		root, err := wasmbuild.RepoRoot()
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(root, example, "module.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		man, wasm = string(b), wasmbuild.ForTest(t, example)
	}
	files["module.yaml"], files["module.wasm"] = man, string(wasm)
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// runModuleTest runs `station module test` with args through its cobra
// command, with the throwaway station's home under a directory of the
// test's, which must be empty again afterwards; setup may change the
// options first.
func runModuleTest(t *testing.T, ctx context.Context, setup func(*TestOptions), args ...string) (stdout, stderr string, err error) {
	t.Helper()
	tm := newTerm("", false)
	tm.f.IO.Cache = wasmbuild.CacheForTest()
	tmp := t.TempDir()
	c := NewCmdTest(tm.f, func(o *TestOptions) error {
		o.TempDir = tmp
		if setup != nil {
			setup(o)
		}
		return testRun(ctx, o)
	})
	c.SetArgs(args)
	c.SetOut(&strings.Builder{})
	c.SetErr(&strings.Builder{})
	c.SilenceErrors, c.SilenceUsage = true, true
	c.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return cmdutil.UsageError{Err: err} })
	err = c.ExecuteContext(ctx)
	if left, _ := os.ReadDir(tmp); len(left) > 0 {
		t.Errorf("the throwaway station is still there after the run: %v", left)
	}
	return tm.out.String(), tm.err.String(), err
}

const stripeTests = `fixtures:
  api.stripe.com: testdata/invoice.json
  evil.example: testdata/invoice.json
tests:
  - name: creates an invoice
    command: create-invoice
    input: {customer: cus_1}
    want: {id: in_1, status: draft, amount_due: 1200, currency: usd}
  - command: fetch
    input: {url: "https://evil.example/"}
    want_error: not in its allowlist
  - command: fetch
    input: {url: "https://api.groq.com/v1/models"}
  - name: wants in_2
    command: create-invoice
    input: {customer: cus_1}
    want: {id: in_2, status: draft, amount_due: 1200, currency: usd}
`

const stripeRoutes = `{"routes": [{"method": "POST", "path": "/v1/invoices", "body": {"id": "in_1", "status": "draft", "amount_due": 1200, "currency": "usd"}}]}`

func TestModuleTestCommand(t *testing.T) {
	t.Parallel()
	dir := testModuleDir(t, "examples/stripe-invoicing", map[string]string{"tests.yaml": stripeTests, "testdata/invoice.json": stripeRoutes})
	out, _, err := runModuleTest(t, context.Background(), nil, dir, "--no-build")
	var failed *TestsFailedError
	if !errors.As(err, &failed) || failed.Failed != 1 || failed.Total != 4 || cmdutil.ExitCode(err) != cmdutil.ExitError {
		t.Fatalf("error %v (exit %d), want 1 of 4 failed\n%s", err, cmdutil.ExitCode(err), out)
	}
	for _, want := range []string{
		"testing dave/stripe-invoicing 1.4.0 in a throwaway station\n",
		"grants: network api.stripe.com, api.groq.com; subprocess: none; writes: none\n",
		"fixture api.stripe.com: testdata/invoice.json (1 route, from tests.yaml)\n",
		"note: api.groq.com is in the allowlist but has no fixture: requests to it are answered 502 (pass --fixture api.groq.com=FILE)\n",
		"warning: fixture evil.example is not in the module's allowlist (api.stripe.com, api.groq.com): the module can never reach it\n",
		"PASS creates an invoice (",
		`  result  {"id":"in_1","status":"draft","amount_due":1200,"currency":"usd"}` + "\n",
		"  allowed network api.stripe.com:443\n",
		"  served  POST api.stripe.com/v1/invoices → 200 (testdata/invoice.json, route 0, POST /v1/invoices)\n",
		"  log     info invoice created id=in_1 status=draft\n",
		`PASS fetch {"url":"https://evil.example/"} (`,
		"  denied  network evil.example:443 — is not in its allowlist (api.stripe.com, api.groq.com)\n",
		"  served  GET api.groq.com/v1/models → 502 (no fixture for api.groq.com)\n",
		"FAIL wants in_2 (",
		`  why     the result is not the one wanted: at .id: got "in_1", want "in_2"` + "\n",
		"\n3 passed, 1 failed\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// The denial is the evil.example test's alone.
	evil := out[strings.Index(out, `PASS fetch {"url":"https://evil.example/"}`):strings.Index(out, `PASS fetch {"url":"https://api.groq.com`)]
	if strings.Count(evil, "\n  allowed") != 0 || strings.Count(evil, "\n  denied") != 1 {
		t.Errorf("the evil.example test shows decisions of other calls:\n%s", evil)
	}

	// --json: one document, every decision with its reason.
	out, _, err = runModuleTest(t, context.Background(), nil, dir, "--no-build", "--json")
	if !errors.As(err, &failed) {
		t.Fatalf("--json: %v", err)
	}
	var rep struct {
		Module, Version string
		Grants          struct{ Network []string }
		Tests           []struct {
			Name, Command, Error, Failure string
			Input, Result                 json.RawMessage
			OK                            bool
			Decisions                     []struct {
				Capability, Target, Reason string
				Allowed                    bool
			}
		}
		Passed, Failed int
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("--json printed %s: %v", out, err)
	}
	if rep.Module != "dave/stripe-invoicing" || rep.Passed != 3 || rep.Failed != 1 || len(rep.Tests) != 4 || len(rep.Grants.Network) != 2 {
		t.Errorf("--json: %+v", rep)
	}
	e := rep.Tests[1]
	if !e.OK || e.Command != "fetch" || !strings.Contains(e.Error, "not in its allowlist") || compactJSON(e.Input) != `{"url":"https://evil.example/"}` ||
		len(e.Decisions) != 1 || e.Decisions[0].Allowed || e.Decisions[0].Capability != "network" || e.Decisions[0].Target != "evil.example:443" {
		t.Errorf("--json evil.example test: %+v", e)
	}
	if rep.Tests[0].Result == nil || rep.Tests[0].Decisions[0].Reason != "allowlist entry api.stripe.com" || rep.Tests[3].Failure == "" {
		t.Errorf("--json tests: %+v", rep.Tests)
	}
}

// TestModuleTestBuilds runs the build path, with a Build that puts the
// prebuilt wasm where the manifest says.
func TestModuleTestBuilds(t *testing.T) {
	t.Parallel()
	dir := testModuleDir(t, "examples/hello", map[string]string{"tests.yaml": "tests:\n  - command: greet\n    input: {name: Ada}\n    want: {greeting: \"Hello, Ada!\"}\n"})
	wasm, _ := os.ReadFile(filepath.Join(dir, "module.wasm"))
	os.Remove(filepath.Join(dir, "module.wasm"))
	var built []string
	out, _, err := runModuleTest(t, context.Background(), func(o *TestOptions) {
		o.Build = func(_ context.Context, d, out string) error {
			built = []string{d, out}
			return os.WriteFile(out, wasm, 0o644)
		}
	}, dir)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	want := filepath.Join(dir, "module.wasm")
	if len(built) != 2 || built[0] != dir || built[1] != want {
		t.Errorf("built %q", built)
	}
	if !strings.HasPrefix(out, "built "+want+" (") || !strings.Contains(out, "grants: network: none; subprocess: none; writes: none\n") ||
		!strings.Contains(out, "PASS greet {\"name\":\"Ada\"} (") || !strings.HasSuffix(out, "\n1 passed, 0 failed\n") {
		t.Errorf("printed:\n%s", out)
	}
	// A build that fails stops before the station.
	_, _, err = runModuleTest(t, context.Background(), func(o *TestOptions) {
		o.Build = func(context.Context, string, string) error { return errors.New("compiler says no") }
	}, dir)
	if err == nil || !strings.Contains(err.Error(), "build station/hello: compiler says no") {
		t.Errorf("a failed build: %v", err)
	}
}

func TestModuleTestAdHoc(t *testing.T) {
	t.Parallel()
	dir := testModuleDir(t, "examples/hello", map[string]string{})
	out, _, err := runModuleTest(t, context.Background(), nil, dir, "--no-build", "--command", "greet", "--input", `{"name":"Ada"}`)
	if err != nil || !strings.Contains(out, `PASS greet {"name":"Ada"} (`) || !strings.Contains(out, `  result  {"greeting":"Hello, Ada!"}`) {
		t.Errorf("--command: %v\n%s", err, out)
	}
	// The module's error is a FAIL with the error.
	out, _, err = runModuleTest(t, context.Background(), nil, dir, "--no-build", "--command", "greet", "--input", `{"name":""}`)
	if err == nil || !strings.Contains(out, "FAIL greet") || !strings.Contains(out, "  error   module station/hello: greet: name is required\n") || !strings.Contains(out, "  why     the call failed\n") {
		t.Errorf("a failing call: %v\n%s", err, out)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--no-build"}, cmdutil.ExitUsage, "no tests to run: write " + filepath.Join(dir, "tests.yaml") + ", for example\n  tests:\n    - command: greet\n      input: {}\nor pass --command NAME [--input JSON]"},
		{[]string{"--no-build", "--input", "{}"}, cmdutil.ExitUsage, "--input is the input of --command"},
		{[]string{"--no-build", "--command", "greet", "--input", "{nope"}, cmdutil.ExitUsage, "--input is not valid JSON"},
		{[]string{"--no-build", "--command", "gret"}, cmdutil.ExitError, `unknown command "gret"; did you mean "greet"?`},
		{[]string{"--no-build", "--command", "greet", "--fixture", "nohost"}, cmdutil.ExitError, "--fixture nohost: want HOST=FILE"},
	} {
		_, _, err := runModuleTest(t, context.Background(), nil, append([]string{dir}, tc.args...)...)
		if cmdutil.ExitCode(err) != tc.code || err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: exit %d, %v; want exit %d and %q", tc.args, cmdutil.ExitCode(err), err, tc.code, tc.want)
		}
	}
}

// TestModuleTestRefusesBadFiles: a malformed tests.yaml, a fixture path
// out of the directory, a malformed fixture: errors with their file and
// line before anything runs.
func TestModuleTestRefusesBadFiles(t *testing.T) {
	t.Parallel()
	built := false
	noBuild := func(o *TestOptions) {
		o.Build = func(context.Context, string, string) error { built = true; return nil }
	}
	for _, tc := range []struct{ name, spec, want string }{
		{"unknown field", "tests:\n  - command: greet\n    inptu: {}\n", `tests.yaml:3:5: tests[0]: unknown field "inptu"; did you mean "input"?`},
		{"passwd", "fixtures:\n  api.example.test: ../../etc/passwd\ntests:\n  - command: greet\n", `tests.yaml:2:21: fixtures.api.example.test: entry "../../etc/passwd": must be a path relative to the module directory`},
		{"absolute", "fixtures:\n  api.example.test: /etc/passwd\ntests:\n  - command: greet\n", "no absolute path"},
		{"bad routes", "fixtures:\n  api.example.test: r.json\ntests:\n  - command: greet\n", `r.json:1:14: routes[0]: unknown field "pth"; did you mean "path"?`},
		{"missing fixture", "fixtures:\n  api.example.test: nope.json\ntests:\n  - command: greet\n", "tests.yaml:2: fixture for api.example.test: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := testModuleDir(t, "examples/hello", map[string]string{"tests.yaml": tc.spec, "r.json": `{"routes": [{"pth": "/"}]}`})
			_, _, err := runModuleTest(t, context.Background(), noBuild, dir)
			if err == nil || !strings.Contains(err.Error(), tc.want) || cmdutil.ExitCode(err) != cmdutil.ExitError {
				t.Errorf("error %v, want %q", err, tc.want)
			}
			if built {
				t.Error("built the module before the files were checked")
			}
		})
	}
	// --fixture may name a file outside the directory.
	dir := testModuleDir(t, "examples/hello", map[string]string{"tests.yaml": "tests:\n  - command: greet\n    input: {name: x}\n"})
	outside := filepath.Join(t.TempDir(), "reply.txt")
	os.WriteFile(outside, []byte("hi"), 0o644)
	out, _, err := runModuleTest(t, context.Background(), nil, dir, "--no-build", "--fixture", "api.example.test="+outside)
	if err != nil || !strings.Contains(out, "fixture api.example.test: "+outside+" (served for every request, from --fixture)") ||
		!strings.Contains(out, "warning: fixture api.example.test is not in the module's allowlist ((none)): the module can never reach it") {
		t.Errorf("--fixture outside the directory: %v\n%s", err, out)
	}
}

// TestModuleTestEscapes: a test's name and what the module returns and
// logs reach the terminal escaped.
func TestModuleTestEscapes(t *testing.T) {
	t.Parallel()
	h := clitest.Hostile
	input := asciiYAML(string(probe.Run(probe.Log(h), probe.Print("stderr", h), probe.HTTP("GET", "https://"+h))))
	name := strconv.QuoteToASCII(h)
	dir := testModuleDir(t, "probe", map[string]string{"tests.yaml": fmt.Sprintf("tests:\n  - name: %s\n    command: run\n    input: %s\n    want_error: %s\n", name, input, name)})
	out, _, err := runModuleTest(t, context.Background(), nil, dir, "--no-build")
	var failed *TestsFailedError
	if !errors.As(err, &failed) {
		t.Fatalf("want a failure (the call succeeds, want_error wants an error): %v\n%s", err, out)
	}
	clitest.CheckPrinted(t, "module test", out)
	if !strings.Contains(out, "  log     info ") || !strings.Contains(out, "  log     output ") {
		t.Errorf("the module's lines are not shown:\n%s", out)
	}
	out, _, _ = runModuleTest(t, context.Background(), nil, dir, "--no-build", "--json")
	if c := clitest.RawControl(out); c != "" || !json.Valid([]byte(out)) {
		t.Errorf("--json: %s in %q", c, out)
	}
}

// asciiYAML writes JSON text with every character beyond ASCII (and DEL)
// escaped, which YAML reads as the same value.
func asciiYAML(doc string) string {
	var b strings.Builder
	for _, r := range doc {
		switch {
		case r == 0x7f || r >= 0x80 && r <= 0xffff:
			fmt.Fprintf(&b, `\u%04x`, r)
		case r > 0xffff:
			fmt.Fprintf(&b, `\U%08x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// TestModuleTestLimits: an input over the module's limit fails the test
// with the refusal among its decisions, and a module that hangs is stopped
// at its timeout.
func TestModuleTestLimits(t *testing.T) {
	t.Parallel()
	dir := testModuleDir(t, "probe", map[string]string{})
	huge := filepath.Join(t.TempDir(), "huge.json")
	os.WriteFile(huge, []byte(`{"actions": [], "pad": "`+strings.Repeat("x", 17<<20)+`"}`), 0o644)
	out, _, err := runModuleTest(t, context.Background(), nil, dir, "--no-build", "--command", "run", "--input", "@"+huge)
	if err == nil || !strings.Contains(out, "FAIL run {\"actions\":[],\"pad\":\"xxx") || !strings.Contains(out, "  denied  host input — input of ") {
		t.Errorf("a huge input: %v\n%s", err, out)
	}
	if len(out) > 8<<10 {
		t.Errorf("a huge input printed %d bytes", len(out))
	}
	loop, _ := json.Marshal(json.RawMessage(probe.Run(probe.Loop())))
	out, _, err = runModuleTest(t, context.Background(), nil, dir, "--no-build", "--command", "run", "--input", string(loop))
	if err == nil || !strings.Contains(out, "FAIL run") || !strings.Contains(out, "did not finish within its deadline (2s)") {
		t.Errorf("a hanging module: %v\n%s", err, out)
	}
}

// TestModuleTestInterrupted: Ctrl-C during a call stops the run and
// removes the throwaway station (runModuleTest checks).
func TestModuleTestInterrupted(t *testing.T) {
	t.Parallel()
	dir := testModuleDir(t, "probe", map[string]string{"tests.yaml": fmt.Sprintf("tests:\n  - command: run\n    input: %s\n  - command: run\n", probe.Run(probe.Sleep(1<<40)))})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out, _, err := runModuleTest(t, ctx, func(o *TestOptions) {
		start := o.StartProgress
		o.StartProgress = func(label string) *cmdutil.Progress {
			if strings.HasPrefix(label, "running ") {
				time.AfterFunc(300*time.Millisecond, cancel) // in the call, which sleeps for ever
			}
			return start(label)
		}
	}, dir, "--no-build")
	if err == nil || !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "interrupted during run") || strings.Count(out, "FAIL") != 1 {
		t.Errorf("interrupted: %v\n%s", err, out)
	}
}

func TestModuleTestHelp(t *testing.T) {
	c := NewCmdTest(clitest.Factory(), nil)
	for _, want := range []string{"tests.yaml", "want_error:", `"routes"`, "--fixture HOST=FILE", "no fixture for HOST"} {
		if !strings.Contains(c.Long, want) {
			t.Errorf("--help does not mention %q", want)
		}
	}
	if strings.Count(c.Example, "station module test") < 3 {
		t.Errorf("examples: %q", c.Example)
	}
}
