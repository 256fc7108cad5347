// Package demo is `station demo`: the station end to end, on embedded
// defaults, in a throwaway home. The setup (building the examples, the
// stand-in APIs, the installs) is internal/demo's; this package prints it,
// and gives station serve --demo the same progress lines and the commands
// to try.
package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/demo"
	"github.com/station-dev/station/internal/store"
)

// DemoOptions are what `station demo` was asked to do.
type DemoOptions struct {
	IO   *cmdutil.IOStreams
	Home string // --home: the demo's station home; "" is a new temporary directory
	Keep bool   // --keep: keep a temporary home
	JSON bool   // --json: a summary of what ran, for scripts
	// Run is the tour (demo.Run).
	Run func(context.Context, demo.Options) (*demo.Result, error)
	// StartProgress shows that a step goes on (Factory.StartProgress).
	StartProgress func(string) *cmdutil.Progress
	// Logger is the station's log in home (Factory.Logger).
	Logger func(home string) *slog.Logger
}

// NewCmdDemo returns `station demo`. runF, when set, is called with the parsed
// options instead of running the demo.
func NewCmdDemo(f *cmdutil.Factory, runF func(*DemoOptions) error) *cobra.Command {
	opts := &DemoOptions{IO: &f.IO, Run: demo.Run, StartProgress: f.StartProgress, Logger: f.Logger}
	c := &cobra.Command{
		Use:   "demo",
		Short: "Build the example modules, install them in a throwaway station and run them",
		Long: `Demo shows the station end to end on embedded defaults, without touching your
own station or the internet:

  1. builds examples/hello and examples/stripe-invoicing from source,
  2. starts a stand-in for api.stripe.com on 127.0.0.1 and points the station
     at it through operator configuration (a resolve override, an extra CA and a
     grant of the loopback range — the same settings an operator would use),
  3. installs both modules into a temporary STATION_HOME,
  4. runs a command that succeeds, one that reaches the stand-in Stripe and
     one that the sandbox denies (station run would exit with code 3),
  5. prints the audit log.

Each step says how long it took; on a terminal the long ones (the builds, and
the compile at install) show a spinner while they run.

The home is deleted at the end unless --keep; with --home the demo uses that
directory (never your STATION_HOME) and leaves it. With --json the output is
a summary for scripts: the steps with their durations, each call with its
result or error and exit code, the audit log and how many requests reached
the stand-in APIs.

Run it from a checkout of the station repository (it builds the examples).
'station serve --demo' serves the same demo station for you to try commands
against.`,
		Example: `  go run ./cmd/station demo
  go run ./cmd/station demo --keep
  go run ./cmd/station demo --json | jq '.calls[] | {command, exit_code}'`,
		Args: cmdutil.ExactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return demoRun(cmd.Context(), opts)
		},
	}
	// Not the station commands' --home: the demo never uses $STATION_HOME,
	// and it has no daemon to skip (cmdutil.StationFlags is not applied).
	c.Flags().StringVar(&opts.Home, "home", "", "set the demo up in this directory and leave it there (default: a throwaway directory; never $STATION_HOME)")
	c.Flags().BoolVar(&opts.Keep, "keep", false, "keep the throwaway station home instead of deleting it")
	cmdutil.AddJSONFlag(c, &opts.JSON)
	return c
}

// demoRun sets the demo up, runs its calls and prints what happened: the steps
// as they go (on stdout, unless --json), then the calls, the audit log and
// a summary, or with --json all of it as one object.
func demoRun(ctx context.Context, opts *DemoOptions) error {
	home, throwaway := opts.Home, opts.Home == ""
	if throwaway {
		var err error
		if home, err = os.MkdirTemp("", "station-demo-"); err != nil {
			return err
		}
		if !opts.Keep {
			defer os.RemoveAll(home)
		}
	}
	steps := opts.IO.Out
	if opts.JSON {
		steps = io.Discard
	}
	what := "STATION_HOME"
	if throwaway {
		what = "throwaway STATION_HOME"
	}
	fmt.Fprintf(steps, "station demo — %s=%s\n", what, cmdutil.TermText(home))

	res, err := opts.Run(ctx, demo.Options{Home: home, Logger: opts.Logger(home), Cache: opts.IO.Cache, Progress: newProgress(steps, opts.StartProgress)})
	if res == nil {
		return err
	}
	r := newResult(res, !throwaway || opts.Keep)
	if err != nil {
		if !opts.JSON {
			r.Text(opts.IO.Out)
		}
		return err
	}
	return cmdutil.Print(opts.IO.Out, opts.JSON, r)
}

// DemoResult is what `station demo` prints.
type DemoResult struct {
	Home  string `json:"home"`
	Kept  bool   `json:"kept"`
	Steps []Step `json:"steps"`
	Calls []Call `json:"calls"`
	// Allowed and Denied count the calls.
	Allowed int                 `json:"allowed"`
	Denied  int                 `json:"denied"`
	Audit   []store.AuditRecord `json:"audit"`
	// APIRequests is how many requests reached the stand-in APIs.
	APIRequests int   `json:"api_requests"`
	DurationMS  int64 `json:"duration_ms"`
}

// Step is a step of the setup and how long it took.
type Step struct {
	Step       string `json:"step"` // build, apis or install
	Module     string `json:"module,omitempty"`
	Dir        string `json:"dir,omitempty"`
	DurationMS int64  `json:"duration_ms"`
}

// Call is one module call the demo made.
type Call struct {
	Module  string                 `json:"module"`
	Command string                 `json:"command"`
	Input   cmdutil.ModuleDocument `json:"input"`
	Output  cmdutil.ModuleDocument `json:"output,omitempty"`
	// Denied is whether the sandbox denied it; ExitCode is what station run
	// would have exited with, Error its message.
	Denied   bool   `json:"denied"`
	ExitCode int    `json:"exit_code"`
	Error    string `json:"error,omitempty"`
}

func newResult(res *demo.Result, kept bool) *DemoResult {
	r := &DemoResult{Home: res.Home, Kept: kept, Audit: res.Audit, APIRequests: res.APIRequests, DurationMS: res.Took.Milliseconds(),
		Steps: []Step{}, Calls: []Call{}}
	if r.Audit == nil {
		r.Audit = []store.AuditRecord{}
	}
	for _, s := range res.Steps {
		r.Steps = append(r.Steps, Step{Step: string(s.Kind), Module: s.Module, Dir: s.Dir, DurationMS: s.Took.Milliseconds()})
	}
	for _, c := range res.Calls {
		call := Call{Module: c.Module, Command: c.Command, Input: cmdutil.ModuleDocument(c.Input), Output: cmdutil.ModuleDocument(c.Output), ExitCode: cmdutil.ExitCode(c.Err)}
		if c.Err != nil {
			call.Error = c.Err.Error()
		}
		call.Denied = call.ExitCode == cmdutil.ExitViolation
		if call.Denied {
			r.Denied++
		} else if c.Err == nil {
			r.Allowed++
		}
		r.Calls = append(r.Calls, call)
	}
	return r
}

// Text prints the calls, the audit log and a summary.
func (r *DemoResult) Text(w io.Writer) error {
	for _, c := range r.Calls {
		fmt.Fprintf(w, "\n==> station run %s %s --input '%s'\n", cmdutil.TermText(c.Module), cmdutil.TermText(c.Command), oneLine(c.Input))
		switch {
		case c.Denied:
			fmt.Fprintf(w, "    denied (station run exits with code %d): %s\n", c.ExitCode, cmdutil.TermText(c.Error))
			fmt.Fprintln(w, "    ^ the network gate refused it, as the manifest declares: no connection was attempted")
		case c.Error != "":
			fmt.Fprintf(w, "    failed (station run exits with code %d): %s\n", c.ExitCode, cmdutil.TermText(c.Error))
		default:
			fmt.Fprintf(w, "    %s\n", oneLine(c.Output))
		}
	}
	if len(r.Audit) > 0 {
		fmt.Fprintf(w, "\n==> station audit\n")
		for _, a := range r.Audit {
			fmt.Fprintf(w, "    %s  %-22s %-15s %-8s %s  %s %s\n", a.Time.Local().Format("15:04:05.000"), cmdutil.TermText(a.Module), cmdutil.TermText(a.Command), cmdutil.TermText(string(a.Capability)), cmdutil.Decision(a), cmdutil.TermText(a.Target), cmdutil.TermText(a.Reason))
		}
	}
	if len(r.Calls) == 0 || r.Calls[len(r.Calls)-1].Error != "" && !r.Calls[len(r.Calls)-1].Denied {
		return nil // it failed: the error says why
	}
	fmt.Fprintf(w, "\ndemo finished in %s: %d %s allowed, %d denied; the stand-in APIs saw %d %s, all from allowed calls.\n",
		cmdutil.Round(time.Duration(r.DurationMS)*time.Millisecond), r.Allowed, plural(r.Allowed, "call", "calls"), r.Denied, r.APIRequests, plural(r.APIRequests, "request", "requests"))
	if r.Kept {
		fmt.Fprintf(w, "The demo station is in %s; look around with: go run ./cmd/station audit --home %s\n", cmdutil.TermText(r.Home), cmdutil.TermText(r.Home))
	}
	return nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// oneLine is a JSON document on one line, safe to print; anything else
// through TermText.
func oneLine(doc []byte) string {
	var b bytes.Buffer
	if err := json.Compact(&b, doc); err != nil {
		return cmdutil.TermText(string(doc))
	}
	return string(cmdutil.JSONText(b.Bytes()))
}

// newProgress returns the Progress that prints the demo's steps to w: a
// line when each starts and, when it ends, what it did and how long it took.
// The long steps (builds and installs) also show start's spinner while they
// run (on a terminal only; Factory.StartProgress).
func newProgress(w io.Writer, start func(string) *cmdutil.Progress) demo.Progress {
	return &progress{w: w, start: start}
}

type progress struct {
	w     io.Writer
	start func(string) *cmdutil.Progress
	p     *cmdutil.Progress
}

func (p *progress) Begin(s demo.Step) {
	switch s.Kind {
	case demo.StepBuild:
		fmt.Fprintf(p.w, "\n==> building %s from %s (GOOS=wasip1 GOARCH=wasm)\n", cmdutil.TermText(s.Module), cmdutil.TermText(s.Dir))
		p.p = p.start("building " + s.Module)
	case demo.StepAPIs:
		fmt.Fprintf(p.w, "\n==> starting stand-ins for api.stripe.com, api.groq.com and an LLM provider on 127.0.0.1\n")
	case demo.StepInstall:
		fmt.Fprintf(p.w, "\n==> station module install %s\n", cmdutil.TermText(s.Dir))
		p.p = p.start("checking and compiling " + s.Dir)
	}
}

func (p *progress) End(s demo.Step, err error) {
	if p.p != nil {
		p.p.Stop()
		p.p = nil
	}
	took := cmdutil.Round(s.Took)
	if err != nil {
		fmt.Fprintf(p.w, "    failed after %s\n", took)
		return
	}
	switch s.Kind {
	case demo.StepBuild:
		fmt.Fprintf(p.w, "    built in %s\n", took)
	case demo.StepAPIs:
		fmt.Fprintf(p.w, "    started in %s: Stripe and Groq on %s, the LLM provider on %s; config.yaml routes module egress there:\n", took, cmdutil.TermText(s.Addr), cmdutil.TermText(s.LLMAddr))
		for _, l := range strings.Split(strings.TrimSpace(s.Config), "\n") {
			fmt.Fprintf(p.w, "      %s\n", cmdutil.TermText(l))
		}
	case demo.StepInstall:
		if s.Plan != nil {
			cmdutil.PrintPlan(p.w, *s.Plan)
		}
		fmt.Fprintf(p.w, "    (approved by the demo; normally you are asked)\n    checked, compiled and installed in %s\n", took)
	}
}
