package module

import (
	"context"
	"encoding/json"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/station-dev/station/internal/cli/clitest"
	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/learn"
	"github.com/station-dev/station/internal/probe"
	"github.com/station-dev/station/internal/wasmbuild"
	"github.com/station-dev/station/manifest"
)

func TestLearnFlags(t *testing.T) {
	clitest.CheckFlags(t, func(runF func(*LearnOptions) error) *cobra.Command { return NewCmdLearn(clitest.Factory(), runF) }, []clitest.FlagCase[LearnOptions]{
		{Args: []string{"dir"}, Want: LearnOptions{Dir: "dir", Calls: []string{}}},
		{Args: []string{"dir", "--live", "--yes-host", "a.test", "--allow-program", "git", "--no-build", "--json", "--", "greet", "--input", "{}"},
			Want: LearnOptions{Dir: "dir", Live: true, YesHosts: []string{"a.test"}, AllowProgram: []string{"git"}, NoBuild: true, JSON: true,
				Calls: []string{"greet", "--input", "{}"}}},
		{Args: []string{"dir", "--calls", "c.yaml", "--write", "out.yaml"}, Want: LearnOptions{Dir: "dir", CallsFile: "c.yaml", Write: "out.yaml", Calls: []string{}}},
		{Args: []string{}, Code: cmdutil.ExitUsage},
		{Args: []string{"a", "b"}, Code: cmdutil.ExitUsage},
		{Args: []string{"--", "greet"}, Code: cmdutil.ExitUsage},
	}, "Cache", "Confirm", "Network", "Resolver")
}

func TestParseCalls(t *testing.T) {
	calls, err := parseCalls(strings.NewReader(`{"from":"stdin"}`), []string{"greet", "--input", `{"name":"Ada"}`, "--", "greet", "-i", "-", "--", "list"})
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != 3 || string(calls[0].Input) != `{"name":"Ada"}` || string(calls[1].Input) != `{"from":"stdin"}` || calls[2].Command != "list" || calls[2].Input != nil {
		t.Fatalf("calls %+v", calls)
	}
	for _, args := range [][]string{{"greet", "--inptu", "{}"}, {"greet", "--input"}, {"--input", "{}"}, {"a", "-i", "-", "--", "b", "-i", "-"}, {"a", "-i", "{}", "-i", "{}"}} {
		if _, err := parseCalls(strings.NewReader("{}"), args); cmdutil.ExitCode(err) != cmdutil.ExitUsage {
			t.Errorf("%q: err %v, want a usage error", args, err)
		}
	}
}

func runLearn(t *testing.T, setup func(*LearnOptions), terminal bool, stdin string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	tm := newTerm(stdin, terminal)
	tm.f.IO.Cache = wasmbuild.CacheForTest()
	tmp := t.TempDir()
	c := NewCmdLearn(tm.f, func(o *LearnOptions) error {
		o.TempDir = tmp
		if setup != nil {
			setup(o)
		}
		return learnRun(context.Background(), o)
	})
	c.SetArgs(args)
	c.SetOut(&strings.Builder{})
	c.SetErr(&strings.Builder{})
	c.SilenceErrors, c.SilenceUsage = true, true
	c.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return cmdutil.UsageError{Err: err} })
	err = c.Execute()
	if left, _ := os.ReadDir(tmp); len(left) > 0 {
		t.Errorf("the throwaway station is still there after the run: %v", left)
	}
	return tm.out.String(), tm.err.String(), err
}

func TestLearnStripe(t *testing.T) {
	dir := testModuleDir(t, "examples/stripe-invoicing", map[string]string{})
	before, _ := os.ReadFile(filepath.Join(dir, "module.yaml"))
	out, _, err := runLearn(t, nil, false, "", dir, "--no-build", "--",
		"create-invoice", "--input", `{"customer":"cus_42"}`, "--",
		"summarize", "-i", `{"text":"hello"}`, "--",
		"fetch", "-i", `{"url":"https://evil.example/steal"}`)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{
		"denied  network api.stripe.com:443",
		"    allow: [api.stripe.com, api.groq.com, evil.example]",
		"used but not declared:   network evil.example",
		"note: every network request was refused (--offline)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "declared but never used") {
		t.Errorf("unused entries reported:\n%s", out)
	}
	if after, _ := os.ReadFile(filepath.Join(dir, "module.yaml")); string(after) != string(before) {
		t.Error("module.yaml changed")
	}
}

func TestLearnJSONAndWrite(t *testing.T) {
	dir := testModuleDir(t, "examples/hello", map[string]string{
		"tests.yaml": "tests:\n  - command: greet\n    input: {name: Ada}\n    want: {greeting: nope}\n",
	})
	proposal := filepath.Join(t.TempDir(), "requires.yaml")
	out, _, err := runLearn(t, nil, false, "", dir, "--no-build", "--json", "--write", proposal)
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Module   string
		Calls    []struct{ Result json.RawMessage }
		Proposal learn.Requires
		Complete bool
		Written  string
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if rep.Module != "station/hello" || len(rep.Calls) != 1 || compactJSON(rep.Calls[0].Result) != `{"greeting":"Hello, Ada!"}` || !rep.Complete || rep.Written != proposal {
		t.Errorf("report %+v", rep)
	}
	b, err := os.ReadFile(proposal)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := manifest.Parse("m.yaml", append([]byte("id: a/b\nversion: \"1.0.0\"\nwasm: m.wasm\ncommands: [{name: x}]\n"), b...)); err != nil {
		t.Errorf("the written proposal does not parse: %v\n%s", err, b)
	}
	// --write never replaces the manifest.
	_, _, err = runLearn(t, nil, false, "", dir, "--no-build", "--write", filepath.Join(dir, "module.yaml"))
	if cmdutil.ExitCode(err) != cmdutil.ExitUsage || !strings.Contains(err.Error(), "never changes it") {
		t.Errorf("--write module.yaml: %v", err)
	}
}

func TestLearnCallsFileErrors(t *testing.T) {
	dir := testModuleDir(t, "examples/hello", map[string]string{})
	calls := filepath.Join(t.TempDir(), "calls.yaml")
	os.WriteFile(calls, []byte("tests:\n  - command: greet\n    inptu: {name: Ada}\n"), 0o644)
	_, _, err := runLearn(t, nil, false, "", dir, "--no-build", "--calls", calls)
	if err == nil || !strings.Contains(err.Error(), calls+":3:") || !strings.Contains(err.Error(), `did you mean "input"`) {
		t.Errorf("err %v, want one at %s:3 with a suggestion", err, calls)
	}
	os.WriteFile(calls, []byte("tests:\n  - command: greet\n  - command: gret\n"), 0o644)
	_, _, err = runLearn(t, nil, false, "", dir, "--no-build", "--calls", calls)
	if err == nil || !strings.Contains(err.Error(), calls+":3:") || !strings.Contains(err.Error(), "gret") {
		t.Errorf("err %v, want one at %s:3 naming the command", err, calls)
	}
	_, _, err = runLearn(t, nil, false, "", dir, "--no-build")
	if cmdutil.ExitCode(err) != cmdutil.ExitUsage || !strings.Contains(err.Error(), "tests.yaml") {
		t.Errorf("no calls: %v", err)
	}
}

// What the module names reaches the terminal escaped, and a live run
// without a terminal refuses every host it was not told to approve.
func TestLearnHostileText(t *testing.T) {
	dir := testModuleDir(t, "probe", map[string]string{})
	in := string(probe.Run(probe.Write("/tmp/x\x1b]0;pwned\x07/y", "x"), probe.HTTP("GET", "https://a.example/"), probe.HTTP("GET", "https://b.example/")))
	// No name resolves: the approved host's request fails without leaving
	// the machine.
	noDNS := func(o *LearnOptions) { o.Resolver = refuseAll{} }
	out, _, err := runLearn(t, noDNS, false, "", dir, "--no-build", "--live", "--yes-host", "A.example", "--", probe.Command, "--input", in)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if strings.ContainsAny(out, "\x1b\x07") {
		t.Errorf("control characters reached the terminal:\n%q", out)
	}
	for _, want := range []string{`/tmp/x\x1b]0;pwned\x07/y`, "approved a.example", "refused  b.example", "not a terminal: refused b.example"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

type refuseAll struct{}

func (refuseAll) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return nil, errors.New("no DNS in tests")
}
