package module

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/tetratelabs/wazero"

	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/moduletest"
	"github.com/station-dev/station/internal/station"
	"github.com/station-dev/station/internal/units"
	"github.com/station-dev/station/internal/wasmbuild"
)

// TestOptions are what `station module test` was asked to do.
type TestOptions struct {
	IO *cmdutil.IOStreams
	// Build builds the module in dir to the wasm file out
	// (wasmbuild.BuildWith, as station module build builds).
	Build         func(ctx context.Context, dir, out string) error
	StartProgress func(label string) *cmdutil.Progress
	// Logger is where the throwaway station's own log goes (warnings on
	// stderr, everything with -v); what a call logs is shown under its
	// test.
	Logger func() *slog.Logger
	// Cache, if set, is the compilation cache of the throwaway station
	// (IOStreams.Cache); nil: one in memory, for the run.
	Cache wazero.CompilationCache
	// TempDir is where the throwaway station's home is made ("":
	// os.TempDir()).
	TempDir string

	Dir      string
	Fixtures []string // --fixture HOST=FILE
	Command  string   // --command
	Input    string   // --input: inline JSON, @FILE or -
	NoBuild  bool     // --no-build
	JSON     bool
}

// NewCmdTest returns `station module test`.
func NewCmdTest(f *cmdutil.Factory, runF func(*TestOptions) error) *cobra.Command {
	opts := &TestOptions{IO: &f.IO, Build: func(ctx context.Context, dir, out string) error {
		return wasmbuild.BuildWith(ctx, dir, out, buildOptions(f))
	}, StartProgress: f.StartProgress, Cache: f.IO.Cache,
		Logger: func() *slog.Logger { return f.Logger("") }}
	c := &cobra.Command{
		Use:   "test DIR",
		Short: "Build a module and run its tests in a throwaway station, showing every sandbox decision",
		Long: `Test builds the module in DIR (as station module build does; --no-build
uses the wasm file that is there), installs it with the permissions its
module.yaml asks for into a throwaway station in a new temporary directory,
runs the calls of DIR/tests.yaml in it, and removes the station again —
also when a test fails or you press Ctrl-C. Your own station is never
touched. Each test prints PASS or FAIL, the result or the error, and every
decision the sandbox made during the call ("denied  network
evil.example:443 — is not in its allowlist (api.example.com)"), the
requests the fixtures answered and what the module logged, so you see what
your users will see before they do. The exit status is 1 if any test
failed.

tests.yaml (strict like module.yaml: an unknown field is an error that says
what you meant):

  fixtures:                          # host: file, relative to DIR
    api.example.com: testdata/hello.json
  tests:
    - name: greets Ada               # optional; default "COMMAND INPUT"
      command: greet
      input: {name: Ada}             # any YAML/JSON value; absent: no input
      want: {greeting: "Hello, Ada!"}  # optional: the result, as a JSON value
    - command: fetch
      input: {url: "https://evil.example/"}
      want_error: not in its allowlist  # the call must fail with this text

A test without want or want_error passes when the call succeeds.
--command NAME [--input JSON] runs one call instead of the tests (the
fixtures of tests.yaml still apply).

No request leaves the machine. Each fixture host is served on 127.0.0.1
over HTTPS, with a certificate from a CA made for this run that only the
throwaway station trusts, and over plain HTTP where the allowlist grants
http://HOST. A fixture file is served as the body of every request (its
Content-Type from the extension), unless it is JSON with a "routes" key:

  {"routes": [
    {"method": "GET", "path": "/v1/greeting", "status": 200,
     "headers": {"X-Request-Id": ["req_1"]}, "body": {"greeting": "hi"}},
    {"path": "/v1/items/*", "body": "plain text, sent as it is"}
  ]}

The first route that matches answers (method optional, a path ending in *
matches a prefix); none answers 404 with the list of routes. A host the
allowlist names without a fixture answers 502 "no fixture for HOST: pass
--fixture HOST=FILE"; a host the allowlist does not name is denied by the
module's network gate, as for a user. Fixture paths in tests.yaml stay
inside DIR; --fixture may name any file you can read and replaces the
tests.yaml fixture of the same host.

Grants beyond the network are real: a module allowed to write ~/notes/**
writes there during its tests, and programs it may start do start.`,
		Example: `  station module test examples/hello
  station module test --no-build examples/stripe-invoicing --fixture api.stripe.com=testdata/invoice.json
  station module test examples/hello --command greet --input '{"name":"Ada"}'
  station module test examples/hello --json | jq '.tests[] | select(.ok | not)'`,
		Args: cmdutil.ExactArgs(1, "DIR"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Dir = args[0]
			if runF != nil {
				return runF(opts)
			}
			return testRun(cmd.Context(), opts)
		},
	}
	c.Flags().StringArrayVar(&opts.Fixtures, "fixture", nil, "serve FILE for HOST: HOST=FILE (repeatable; replaces the tests.yaml fixture of HOST)")
	c.Flags().StringVar(&opts.Command, "command", "", "run one call of this command instead of the tests in tests.yaml")
	c.Flags().StringVarP(&opts.Input, "input", "i", "", "input of --command: inline JSON, @FILE, or - for standard input (default: none)")
	c.Flags().BoolVar(&opts.NoBuild, "no-build", false, "test the wasm file in DIR as it is, without building it")
	cmdutil.AddJSONFlag(c, &opts.JSON)
	return c
}

// TestReport is what a module test did: --json prints it.
type TestReport struct {
	Module  string `json:"module"`
	Version string `json:"version"`
	// Build is set when the command built the module.
	Build *TestedBuild `json:"build,omitempty"`
	// Grants are the permissions the module was installed with.
	Grants   *Permissions    `json:"grants"`
	Fixtures []TestedFixture `json:"fixtures"`
	// Notes and Warnings are for the module's author: hosts without a
	// fixture, fixtures the module can never reach.
	Notes    []string   `json:"notes"`
	Warnings []string   `json:"warnings"`
	Tests    []TestCase `json:"tests"`
	Passed   int        `json:"passed"`
	Failed   int        `json:"failed"`

	grants string // the grants in one line
}

// TestedBuild is the build before the tests.
type TestedBuild struct {
	Wasm       string        `json:"wasm"`
	Size       int64         `json:"size_bytes"`
	Took       time.Duration `json:"-"`
	DurationMS int64         `json:"duration_ms"`
}

// TestedFixture is a fixture the run served.
type TestedFixture struct {
	Host string `json:"host"`
	File string `json:"file"`
	// From is "tests.yaml" or "--fixture".
	From string `json:"from"`
	// Routes is how many routes the file has; 0 when it is one body.
	Routes int `json:"routes"`
}

// TestCase is one test and what its call did.
type TestCase struct {
	Name    string                 `json:"name"`
	Command string                 `json:"command"`
	Input   cmdutil.ModuleDocument `json:"input,omitempty"`
	OK      bool                   `json:"ok"`
	// Result or Error is what the call returned; Failure why the test
	// failed.
	Result  cmdutil.ModuleDocument `json:"result,omitempty"`
	Error   string                 `json:"error,omitempty"`
	Failure string                 `json:"failure,omitempty"`
	// Want and WantError are what the test expected, if anything.
	Want      cmdutil.ModuleDocument `json:"want,omitempty"`
	WantError string                 `json:"want_error,omitempty"`
	// Decisions are every sandbox decision of the call, in order;
	// MoreDecisions says the call made more than are listed.
	Decisions     []TestDecision       `json:"decisions"`
	MoreDecisions bool                 `json:"more_decisions,omitempty"`
	Served        []moduletest.Served  `json:"served"`
	Logs          []moduletest.LogLine `json:"logs"`
	Took          time.Duration        `json:"-"`
	DurationMS    int64                `json:"duration_ms"`
}

// TestDecision is one sandbox decision of a call.
type TestDecision struct {
	Capability string `json:"capability"`
	Target     string `json:"target"`
	Allowed    bool   `json:"allowed"`
	Reason     string `json:"reason,omitempty"`
	// Folded is set for a summary of the audit log's rate limit: how many
	// decisions it stands for.
	Folded int `json:"folded,omitempty"`
}

// TestsFailedError is the outcome of a run with failed tests: exit
// status 1, after the report.
type TestsFailedError struct{ Failed, Total int }

func (e *TestsFailedError) Error() string {
	return fmt.Sprintf("%d of %d tests failed (listed above)", e.Failed, e.Total)
}

// Text implements cmdutil.Texter: the whole report, as the command
// prints it test by test.
func (r TestReport) Text(w io.Writer) error {
	r.writeHeader(w)
	for _, tc := range r.Tests {
		tc.write(w)
	}
	return r.writeSummary(w)
}

func (r TestReport) writeHeader(w io.Writer) {
	var b strings.Builder
	if r.Build != nil {
		fmt.Fprintf(&b, "built %s (%s) in %s\n", cmdutil.TermText(r.Build.Wasm), units.Bytes(r.Build.Size), r.Build.Took)
	}
	fmt.Fprintf(&b, "testing %s %s in a throwaway station\n", cmdutil.TermText(r.Module), cmdutil.TermText(r.Version))
	fmt.Fprintf(&b, "grants: %s\n", cmdutil.TermText(r.grants))
	for _, fx := range r.Fixtures {
		what := "served for every request"
		if fx.Routes > 0 {
			what = plural(fx.Routes, "route")
		}
		fmt.Fprintf(&b, "fixture %s: %s (%s, from %s)\n", cmdutil.TermText(fx.Host), cmdutil.TermText(fx.File), what, fx.From)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "note: %s\n", cmdutil.TermText(n))
	}
	for _, n := range r.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", cmdutil.TermText(n))
	}
	b.WriteString("\n")
	io.WriteString(w, b.String())
}

func (r TestReport) writeSummary(w io.Writer) error {
	_, err := fmt.Fprintf(w, "\n%d passed, %d failed\n", r.Passed, r.Failed)
	return err
}

// maxLines bounds each kind of line a test prints (decisions, requests
// served, log lines); --json has them all.
const maxLines = 50

// maxShown bounds a result or an error on the terminal.
const maxShown = 200

// indent starts the continuation lines of a test's text.
const indent = "          "

func (tc TestCase) write(w io.Writer) {
	var b strings.Builder
	verdict := "PASS"
	if !tc.OK {
		verdict = "FAIL"
	}
	fmt.Fprintf(&b, "%s %s (%s)\n", verdict, cmdutil.TermText(tc.Name), tc.Took)
	if tc.Error != "" {
		fmt.Fprintf(&b, "  error   %s\n", cmdutil.TermBlock(moduletest.Cut(tc.Error, 4*maxShown), indent))
	} else {
		fmt.Fprintf(&b, "  result  %s\n", cmdutil.TermText(moduletest.Cut(compactJSON(tc.Result), maxShown)))
	}
	if tc.Failure != "" {
		fmt.Fprintf(&b, "  why     %s\n", cmdutil.TermText(tc.Failure))
		if tc.Want != nil {
			fmt.Fprintf(&b, "  want    %s\n", cmdutil.TermText(moduletest.Cut(compactJSON(tc.Want), maxShown)))
		}
	}
	lines(&b, len(tc.Decisions), "decisions", func(i int) string {
		d := tc.Decisions[i]
		verb := "allowed"
		if !d.Allowed {
			verb = "denied "
		}
		s := verb + " " + d.Capability + " " + d.Target
		if !d.Allowed && d.Reason != "" {
			s += " — " + d.Reason
		}
		if d.Folded > 0 {
			s += fmt.Sprintf(" (%d decisions folded into one by the audit log's rate limit)", d.Folded)
		}
		return s
	})
	if tc.MoreDecisions {
		b.WriteString("  ... the call made more decisions than are listed (station audit lists a station's)\n")
	}
	lines(&b, len(tc.Served), "requests served", func(i int) string {
		s := tc.Served[i]
		from := s.Note
		switch {
		case s.Fixture != "" && s.Note != "":
			from = s.Fixture + ", " + s.Note
		case s.Fixture != "":
			from = s.Fixture
		}
		return fmt.Sprintf("served  %s %s%s → %d (%s)", s.Method, s.Host, s.Path, s.Status, from)
	})
	lines(&b, len(tc.Logs), "log lines", func(i int) string {
		l := tc.Logs[i]
		what := l.Level
		switch l.Source {
		case "stdout/stderr":
			what = "output"
		case "station":
			what = "station " + l.Level
		}
		return "log     " + what + " " + l.Text
	})
	io.WriteString(w, b.String())
}

// lines writes n lines of a test (at most maxLines), each through
// TermText.
func lines(b *strings.Builder, n int, what string, line func(i int) string) {
	for i := range min(n, maxLines) {
		fmt.Fprintf(b, "  %s\n", cmdutil.TermText(line(i)))
	}
	if n > maxLines {
		fmt.Fprintf(b, "  ... and %d more %s (--json lists them all)\n", n-maxLines, what)
	}
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// compactJSON is a module's document on one line: compact JSON, or the
// text as it is when it is not JSON.
func compactJSON(doc []byte) string {
	if doc == nil {
		return "(none)"
	}
	var b bytes.Buffer
	if err := json.Compact(&b, doc); err != nil {
		return string(doc)
	}
	return b.String()
}

// grantsLine says in one line what the module was granted:
// "network api.example.com; subprocess: none; writes: none".
func grantsLine(p station.Permissions) string {
	parts := []string{"network: none"}
	if len(p.Network) > 0 {
		parts[0] = "network " + strings.Join(p.Network, ", ")
	}
	switch s := p.Subprocess.(type) {
	case bool:
		if s {
			parts = append(parts, "subprocess: any program")
		} else {
			parts = append(parts, "subprocess: none")
		}
	default:
		var progs []string
		for _, prog := range p.Programs {
			progs = append(progs, prog.Name+" ("+prog.Path+")")
		}
		if len(progs) == 0 {
			progs = append(progs, fmt.Sprint(s))
		}
		parts = append(parts, "subprocess: "+strings.Join(progs, ", "))
	}
	if len(p.FilesystemWrites) == 0 {
		parts = append(parts, "writes: none")
	} else {
		parts = append(parts, "writes: "+strings.Join(p.FilesystemWrites, ", "))
	}
	if len(p.FilesystemReads) > 0 {
		parts = append(parts, "reads: "+strings.Join(p.FilesystemReads, ", "))
	}
	if p.LLM != nil {
		parts = append(parts, "llm")
	}
	return strings.Join(parts, "; ")
}

func testRun(ctx context.Context, opts *TestOptions) (err error) {
	if opts.Input != "" && opts.Command == "" {
		return cmdutil.Usagef("--input is the input of --command: pass --command NAME too (tests.yaml gives each test its own input)")
	}
	var input json.RawMessage
	if opts.Input != "" {
		if input, err = cmdutil.ReadInput(opts.IO.In, opts.Input); err != nil {
			return err
		}
	}
	suite, err := moduletest.Load(moduletest.Request{Dir: opts.Dir, Fixtures: opts.Fixtures, Command: opts.Command, Input: input})
	if errors.Is(err, moduletest.ErrNoTests) {
		return cmdutil.UsageError{Err: err}
	}
	if err != nil {
		return err
	}
	man := suite.Manifest
	rep := TestReport{Module: man.ID, Version: man.Version, Fixtures: []TestedFixture{}, Tests: []TestCase{}}
	if !opts.NoBuild {
		if rep.Build, err = buildFor(ctx, opts.Dir, man, opts.Build, opts.StartProgress); err != nil {
			return err
		}
	}
	p := opts.StartProgress("installing " + man.ID + "@" + man.Version + " in a throwaway station")
	sess, err := suite.Open(ctx, moduletest.OpenOptions{TempDir: opts.TempDir, Cache: opts.Cache, Logger: opts.Logger()})
	p.Stop()
	if err != nil {
		return err
	}
	defer func() {
		if cerr := sess.Close(); cerr != nil {
			err = errors.Join(err, cerr)
		}
	}()
	rep.Grants, rep.grants = newPermissions(sess.Plan.Permissions), grantsLine(sess.Plan.Permissions)
	rep.Notes, rep.Warnings = nonNil(sess.Notes), nonNil(sess.Warnings)
	for _, fx := range suite.Fixtures {
		rep.Fixtures = append(rep.Fixtures, TestedFixture{Host: fx.Host, File: fx.File, From: fx.From, Routes: len(fx.Routes)})
	}
	if !opts.JSON {
		rep.writeHeader(opts.IO.Out)
	}
	for _, t := range suite.Tests {
		p := opts.StartProgress("running " + t.Title())
		r := sess.Run(ctx, t)
		p.Stop()
		tc := newTestCase(r)
		rep.Tests = append(rep.Tests, tc)
		if tc.OK {
			rep.Passed++
		} else {
			rep.Failed++
		}
		if !opts.JSON {
			tc.write(opts.IO.Out)
		}
		if ctx.Err() != nil {
			return fmt.Errorf("interrupted during %s: %w", t.Title(), ctx.Err())
		}
	}
	if opts.JSON {
		err = cmdutil.WriteJSON(opts.IO.Out, rep)
	} else {
		err = rep.writeSummary(opts.IO.Out)
	}
	if err == nil && rep.Failed > 0 {
		err = &TestsFailedError{Failed: rep.Failed, Total: len(rep.Tests)}
	}
	return err
}

func newTestCase(r *moduletest.Result) TestCase {
	t := r.Test
	took := cmdutil.Round(r.Took)
	tc := TestCase{Name: r.Name, Command: t.Command, Input: cmdutil.ModuleDocument(t.Input), OK: r.OK, Failure: r.Failure,
		Want: cmdutil.ModuleDocument(t.Want), WantError: t.WantError, MoreDecisions: r.MoreDecisions,
		Decisions: []TestDecision{}, Served: r.Served, Logs: r.Logs, Took: took, DurationMS: took.Milliseconds()}
	if r.Err != nil {
		tc.Error = r.Err.Error()
	} else {
		tc.Result = cmdutil.ModuleDocument(r.Output)
	}
	for _, d := range r.Decisions {
		tc.Decisions = append(tc.Decisions, TestDecision{Capability: string(d.Capability), Target: d.Target, Allowed: d.Allowed, Reason: d.Reason, Folded: d.Folded})
	}
	if tc.Served == nil {
		tc.Served = []moduletest.Served{}
	}
	if tc.Logs == nil {
		tc.Logs = []moduletest.LogLine{}
	}
	return tc
}
