package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/station-dev/station/internal/cli/clitest"
	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/demo"
	"github.com/station-dev/station/internal/sandbox"
	"github.com/station-dev/station/internal/station"
	"github.com/station-dev/station/internal/store"
	"github.com/station-dev/station/manifest"
)

func TestFlags(t *testing.T) {
	clitest.CheckFlags(t, func(runF func(*DemoOptions) error) *cobra.Command { return NewCmdDemo(clitest.Factory(), runF) }, []clitest.FlagCase[DemoOptions]{
		{Args: nil, Want: DemoOptions{}},
		{Args: []string{"--keep"}, Want: DemoOptions{Keep: true}},
		{Args: []string{"--json"}, Want: DemoOptions{JSON: true}},
		{Args: []string{"--home", "/tmp/d", "--keep"}, Want: DemoOptions{Home: "/tmp/d", Keep: true}},
		{Args: []string{"now"}, Code: cmdutil.ExitUsage},
		{Args: []string{"--frob"}, Code: cmdutil.ExitUsage},
		// It has no daemon to skip.
		{Args: []string{"--no-daemon"}, Code: cmdutil.ExitUsage},
	})
}

// fakeTour stands in for demo.Run: it reports the steps the real one
// reports and returns a result, with text a hostile module could have put
// in it when hostile is set.
type fakeTour struct {
	hostile bool
	err     error // returned with the result
	noRes   bool  // return no result, only err
	opts    demo.Options
	homeWas bool // whether opts.Home existed during the run
}

func (f *fakeTour) run(_ context.Context, opts demo.Options) (*demo.Result, error) {
	f.opts = opts
	_, err := os.Stat(opts.Home)
	f.homeWas = err == nil
	if f.noRes {
		return nil, f.err
	}
	desc, out, target := "Greets whoever you name", `{"greeting":"Hello, Ada!"}`, "evil.example:443"
	if f.hostile {
		desc, target = clitest.Hostile, clitest.Hostile
		b, _ := json.Marshal(map[string]string{"greeting": clitest.Hostile})
		out = string(b)
	}
	plan := &station.Plan{Manifest: &manifest.Manifest{ID: "station/hello", Version: "1.0.0", Description: desc, Commands: []manifest.Command{{Name: "greet"}}}, Digest: "sha256:abc", Size: 1234}
	steps := []demo.Step{
		{Kind: demo.StepBuild, Module: "station/hello", Dir: "examples/hello", Took: 2100 * time.Millisecond},
		{Kind: demo.StepAPIs, Addr: "127.0.0.1:4000", LLMAddr: "127.0.0.1:4001", Config: "# Written by station demo.\nnetwork:\n  extra_ca: demo-ca.pem\n", Took: 3 * time.Millisecond},
		{Kind: demo.StepInstall, Module: "station/hello", Dir: "examples/hello", Plan: plan, Took: 1500 * time.Millisecond},
	}
	for _, s := range steps {
		opts.Progress.Begin(s)
		opts.Progress.End(s, nil)
	}
	violation := sandbox.Deny("dave/stripe-invoicing", sandbox.Network, target, "is not in its allowlist (api.stripe.com, api.groq.com)")
	return &demo.Result{
		Home:  opts.Home,
		Steps: steps,
		Calls: []demo.Call{
			{Module: "station/hello", Command: "greet", Input: `{"name":"Ada"}`, Output: []byte(out)},
			{Module: "dave/stripe-invoicing", Command: "create-invoice", Input: `{"customer":"cus_demo"}`, Output: []byte(`{"id":"in_demo_0001","status":"draft"}`)},
			{Module: "dave/stripe-invoicing", Command: "fetch", Input: `{"url":"https://evil.example/steal"}`, Deny: true, Err: violation},
		},
		Audit: []store.AuditRecord{
			{ID: 1, Decision: sandbox.Decision{Time: time.Now(), Module: "dave/stripe-invoicing", Command: "create-invoice", Capability: sandbox.Network, Target: "api.stripe.com:443", Allowed: true}},
			{ID: 2, Decision: sandbox.Decision{Time: time.Now(), Module: "dave/stripe-invoicing", Command: "fetch", Capability: sandbox.Network, Target: target, Reason: "not in its allowlist"}},
		},
		APIRequests: 1,
		Took:        4 * time.Second,
	}, f.err
}

type streams struct{ out, err bytes.Buffer }

func runDemo(t *testing.T, tour *fakeTour, opts DemoOptions, terminal bool) (*streams, error) {
	t.Helper()
	s := &streams{}
	f := cmdutil.New(cmdutil.IOStreams{Out: &s.out, Err: &s.err, ErrIsTerminal: terminal})
	opts.IO = &f.IO
	opts.Run = tour.run
	opts.StartProgress = f.StartProgress
	opts.Logger = f.FileLogger
	err := demoRun(context.Background(), &opts)
	f.Close(context.Background())
	return s, err
}

func TestRunText(t *testing.T) {
	tour := &fakeTour{}
	s, err := runDemo(t, tour, DemoOptions{}, false)
	if err != nil {
		t.Fatal(err)
	}
	out := s.out.String()
	for _, want := range []string{
		"station demo — throwaway STATION_HOME=" + tour.opts.Home,
		"==> building station/hello from examples/hello (GOOS=wasip1 GOARCH=wasm)\n    built in 2.1s\n",
		"==> starting stand-ins", "started in 3ms: Stripe and Groq on 127.0.0.1:4000, the LLM provider on 127.0.0.1:4001",
		"      extra_ca: demo-ca.pem\n",
		"==> station module install examples/hello\nstation/hello 1.0.0 — Greets whoever you name",
		"(approved by the demo; normally you are asked)\n    checked, compiled and installed in 1.5s\n",
		"==> station run station/hello greet --input '{\"name\":\"Ada\"}'\n    {\"greeting\":\"Hello, Ada!\"}\n",
		"    denied (station run exits with code 3): sandbox violation: module dave/stripe-invoicing: network:",
		"==> station audit\n", "DENY ", "evil.example:443",
		"demo finished in 4s: 2 calls allowed, 1 denied; the stand-in APIs saw 1 request, all from allowed calls.",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "look around") {
		t.Errorf("a deleted home is offered to look around in:\n%s", out)
	}
	// Not a terminal: no spinner, nothing on stderr.
	if s.err.Len() != 0 {
		t.Errorf("stderr: %q", s.err.String())
	}
	// The throwaway home existed during the run and is gone after it.
	if !tour.homeWas || !strings.Contains(filepath.Base(tour.opts.Home), "station-demo-") {
		t.Errorf("home %q existed during the run: %v", tour.opts.Home, tour.homeWas)
	}
	if _, err := os.Stat(tour.opts.Home); !os.IsNotExist(err) {
		t.Errorf("the throwaway home outlived the demo: %v", err)
	}
	if tour.opts.Logger == nil || tour.opts.Progress == nil {
		t.Errorf("options %+v", tour.opts)
	}
}

func TestRunKeepsHome(t *testing.T) {
	tour := &fakeTour{}
	s, err := runDemo(t, tour, DemoOptions{Keep: true}, false)
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tour.opts.Home)
	if _, err := os.Stat(tour.opts.Home); err != nil {
		t.Errorf("--keep: %v", err)
	}
	if want := "look around with: go run ./cmd/station audit --home " + tour.opts.Home; !strings.Contains(s.out.String(), want) {
		t.Errorf("output lacks %q:\n%s", want, s.out.String())
	}

	// --home is used as it is and left in place.
	home := t.TempDir()
	tour = &fakeTour{}
	s, err = runDemo(t, tour, DemoOptions{Home: home}, false)
	if err != nil || tour.opts.Home != home {
		t.Fatalf("--home: ran in %q (%v)", tour.opts.Home, err)
	}
	if _, err := os.Stat(home); err != nil || !strings.Contains(s.out.String(), "station demo — STATION_HOME="+home+"\n") {
		t.Errorf("--home: %v\n%s", err, s.out.String())
	}
}

func TestRunProgressOnTerminal(t *testing.T) {
	s, err := runDemo(t, &fakeTour{}, DemoOptions{}, true)
	if err != nil {
		t.Fatal(err)
	}
	// The spinner draws its first frame at once and clears its line when
	// the step ends; the step lines are printed as without a terminal.
	for _, want := range []string{"building station/hello", "checking and compiling examples/hello", "\r\x1b[K"} {
		if !strings.Contains(s.err.String(), want) {
			t.Errorf("stderr lacks %q: %q", want, s.err.String())
		}
	}
	if !strings.Contains(s.out.String(), "built in 2.1s") {
		t.Errorf("stdout:\n%s", s.out.String())
	}
}

func TestRunJSON(t *testing.T) {
	s, err := runDemo(t, &fakeTour{}, DemoOptions{JSON: true}, false)
	if err != nil {
		t.Fatal(err)
	}
	// Only the JSON on stdout: the steps are in it.
	var r struct {
		Home  string `json:"home"`
		Kept  bool   `json:"kept"`
		Steps []struct {
			Step, Module, Dir string
			DurationMS        int64 `json:"duration_ms"`
		} `json:"steps"`
		Calls []struct {
			Module, Command, Error string
			Input, Output          json.RawMessage
			Denied                 bool
			ExitCode               int `json:"exit_code"`
		} `json:"calls"`
		Allowed, Denied int
		Audit           []map[string]any
		APIRequests     int   `json:"api_requests"`
		DurationMS      int64 `json:"duration_ms"`
	}
	dec := json.NewDecoder(&s.out)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		t.Fatalf("%v:\n%s", err, s.out.String())
	}
	if dec.More() {
		t.Errorf("more than one JSON value on stdout")
	}
	if r.Kept || r.Home == "" || len(r.Steps) != 3 || r.Steps[0].Step != "build" || r.Steps[0].DurationMS != 2100 || r.Steps[2].Module != "station/hello" {
		t.Errorf("summary %+v", r)
	}
	compact := func(b []byte) string {
		var c bytes.Buffer
		json.Compact(&c, b)
		return c.String()
	}
	if len(r.Calls) != 3 || compact(r.Calls[0].Output) != `{"greeting":"Hello, Ada!"}` || compact(r.Calls[0].Input) != `{"name":"Ada"}` || r.Calls[0].ExitCode != 0 || r.Calls[0].Denied {
		t.Errorf("first call %+v", r.Calls)
	}
	if c := r.Calls[2]; !c.Denied || c.ExitCode != cmdutil.ExitViolation || !strings.Contains(c.Error, "sandbox violation") || c.Output != nil {
		t.Errorf("denied call %+v", c)
	}
	if r.Allowed != 2 || r.Denied != 1 || r.APIRequests != 1 || r.DurationMS != 4000 || len(r.Audit) != 2 || r.Audit[1]["allowed"] != false || r.Audit[1]["target"] != "evil.example:443" {
		t.Errorf("summary %+v", r)
	}
}

func TestRunErrors(t *testing.T) {
	// Setup failed: the error, and no summary.
	boom := errors.New("demo: build station/hello: compiler says no")
	s, err := runDemo(t, &fakeTour{noRes: true, err: boom}, DemoOptions{}, false)
	if !errors.Is(err, boom) || strings.Contains(s.out.String(), "demo finished") {
		t.Errorf("error %v, output:\n%s", err, s.out.String())
	}

	// The tour failed after some calls: what ran is printed, then the error.
	s, err = runDemo(t, &fakeTour{err: boom}, DemoOptions{}, false)
	if !errors.Is(err, boom) || !strings.Contains(s.out.String(), "==> station run station/hello greet") {
		t.Errorf("error %v, output:\n%s", err, s.out.String())
	}
	// With --json, nothing a script would take for a result.
	s, err = runDemo(t, &fakeTour{err: boom}, DemoOptions{JSON: true}, false)
	if !errors.Is(err, boom) || s.out.Len() != 0 {
		t.Errorf("--json: error %v, output:\n%s", err, s.out.String())
	}

	// A call that failed when it should have succeeded ends the text there.
	r := &DemoResult{Calls: []Call{{Module: "station/hello", Command: "greet", Input: []byte(`{}`), Error: "module crashed", ExitCode: cmdutil.ExitCrash}}}
	var b bytes.Buffer
	r.Text(&b)
	if !strings.Contains(b.String(), "failed (station run exits with code 4): module crashed") || strings.Contains(b.String(), "demo finished") {
		t.Errorf("a failed call:\n%s", b.String())
	}
}

// TestHostileText: what the examples' manifests, the modules and the
// audit log supply reaches the terminal escaped, in the step lines and in
// the summary, and stays exact JSON with --json.
func TestHostileText(t *testing.T) {
	s, err := runDemo(t, &fakeTour{hostile: true}, DemoOptions{}, false)
	if err != nil {
		t.Fatal(err)
	}
	clitest.CheckPrinted(t, "station demo", s.out.String())

	s, err = runDemo(t, &fakeTour{hostile: true}, DemoOptions{JSON: true}, false)
	if err != nil {
		t.Fatal(err)
	}
	if c := clitest.RawControl(s.out.String()); c != "" {
		t.Errorf("--json: %s reaches the terminal", c)
	}
	var r struct {
		Calls []struct{ Output map[string]string }
	}
	var want string
	b, _ := json.Marshal(clitest.Hostile)
	json.Unmarshal(b, &want) // the hostile text as JSON carries it (invalid UTF-8 as U+FFFD)
	if err := json.Unmarshal(s.out.Bytes(), &r); err != nil || r.Calls[0].Output["greeting"] != want {
		t.Errorf("--json changed the module's output: %v %+v", err, r)
	}
}

func TestPrintTry(t *testing.T) {
	var b bytes.Buffer
	PrintTry(&b, &demo.Demo{Home: "/home/ada/.station-demo", Root: "/src/station", Binary: "/home/ada/.station-demo/bin/station"})
	out := b.String()
	for _, want := range []string{
		"In another terminal, try:\n  export STATION_HOME=/home/ada/.station-demo PATH=/home/ada/.station-demo/bin:$PATH   # bin/station is a copy of this station binary\n",
		"  station run station/hello greet --input '{\"name\":\"Ada\"}'\n",
		`  station run dave/stripe-invoicing fetch --input '{"url":"https://evil.example/"}'; echo "exit code $?"   # denied by the network gate: exit code 3`,
		"  station audit --denied\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// A home with control characters in its name is shown escaped (and
	// quoted for the shell).
	b.Reset()
	PrintTry(&b, &demo.Demo{Home: "/tmp/x\x1b]0;pwned\x07", Root: "/src", Binary: "/tmp/x/bin/station"})
	if c := clitest.RawControl(b.String()); c != "" {
		t.Errorf("%s reaches the terminal:\n%q", c, b.String())
	}
}

func TestStartServeRefusesForeignHome(t *testing.T) {
	home := t.TempDir()
	os.WriteFile(filepath.Join(home, "config.yaml"), []byte("llm:\n  provider: groq\n"), 0o600)
	var out bytes.Buffer
	f := cmdutil.New(cmdutil.IOStreams{Out: &out, Err: &bytes.Buffer{}})
	f.Home = home
	defer f.Close(context.Background())
	if _, err := StartServe(context.Background(), f); !errors.Is(err, demo.ErrNotDemoHome) {
		t.Errorf("StartServe in a station that is not the demo's: %v", err)
	}
	if !strings.Contains(out.String(), "station serve --demo — STATION_HOME="+home) {
		t.Errorf("output:\n%s", out.String())
	}
}

func TestHints(t *testing.T) {
	for err, want := range map[error]string{
		demo.ErrNoCheckout: "cd into a clone of the station repository",
		fmt.Errorf("demo: in /x: %w", demo.ErrNotDemoHome): "a directory of its own with --home",
	} {
		if h := cmdutil.Hint(err); !strings.Contains(h, want) {
			t.Errorf("Hint(%v) = %q, want %q", err, h, want)
		}
	}
}
