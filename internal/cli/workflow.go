package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/station"
	"github.com/station-dev/station/internal/store"
	"github.com/station-dev/station/internal/workflow"
)

func (a *app) workflowCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "workflow",
		Short: "Check, run, resume and inspect workflows",
		Long: `A workflow is a YAML file of steps that call module commands or the station's
llm built-in, with inputs built from the workflow's inputs and earlier steps'
outputs by ${{ expression }} templates. See docs/workflows.md.

Every module call of a step goes through the same dispatch as station run,
under the module's approved permissions. Runs are recorded as they progress;
a run that stopped (Ctrl-C, a crash) resumes from its first unfinished step.`,
	}
	c.AddCommand(a.workflowRunCmd(), a.workflowCheckCmd(), a.workflowResumeCmd(), a.workflowRunsCmd(), a.workflowShowCmd())
	return c
}

// wfStation is an open station with a workflow engine.
type wfStation struct {
	st       *station.Station
	engine   *workflow.Engine
	provider string // the LLM provider, described; "" when none
	llmErr   error  // why the configured provider cannot be used
}

// openWorkflows opens the station and builds its workflow engine.
func (a *app) openWorkflows(ctx context.Context) (*wfStation, error) {
	s, err := a.Open(ctx)
	if err != nil {
		return nil, err
	}
	return a.newWfStation(ctx, s)
}

// newWfStation builds the workflow engine of an open station (module steps
// through Station.Run, llm steps through the station's own LLM client) and
// marks runs whose process is gone as interrupted.
func (a *app) newWfStation(ctx context.Context, s *station.Station) (*wfStation, error) {
	w := &wfStation{st: s, engine: &workflow.Engine{Run: s.Run, Store: s.Store}}
	if w.llmErr = s.CheckLLM(); w.llmErr == nil && s.LLM != nil {
		w.engine.LLM = s.LLM
		if set, err := s.Config.LLMSettings(a.IO.Getenv); err == nil {
			w.provider = set.BaseURL
			if set.Model != "" {
				w.provider += " (model " + set.Model + ")"
			}
		}
	}
	if _, err := w.engine.Recover(ctx); err != nil {
		return nil, err
	}
	return w, nil
}

// check runs workflow.Check against the station's installed modules.
func (w *wfStation) check(ctx context.Context, wf *workflow.Workflow) (*workflow.Report, error) {
	return workflow.Check(ctx, wf, stationModules{w.st}, w.provider, w.llmErr)
}

// stationModules answers workflow.Check from the station's store, with the
// same checks the station makes before it loads a module.
type stationModules struct{ s *station.Station }

func (m stationModules) Module(ctx context.Context, id string) (*workflow.ModuleInfo, error) {
	in, err := m.s.Verify(ctx, id)
	if in == nil {
		return nil, err
	}
	info := &workflow.ModuleInfo{ID: id, Version: in.Version}
	if in.Manifest != nil { // the approval and the manifest could be read
		info.Permissions = in.Approved.Describe(m.s.ChildConfinement(in.Approved))
		for _, c := range in.Manifest.Commands {
			info.Commands = append(info.Commands, c.Name)
		}
	}
	if err != nil {
		info.Problem = err.Error()
	}
	return info, nil
}

// loadWorkflow reads a workflow file; the run records its absolute path.
func loadWorkflow(path string) (*workflow.Workflow, error) {
	wf, err := workflow.Load(path)
	if err != nil {
		return nil, err
	}
	if abs, err := filepath.Abs(path); err == nil {
		wf.File = abs
	}
	return wf, nil
}

func (a *app) workflowRunCmd() *cobra.Command {
	var inputs []string
	var inputsJSON string
	var asJSON, compact bool
	c := &cobra.Command{
		Use:   "run FILE",
		Short: "Run a workflow, showing each step, and print its output",
		Long: `Run checks the workflow (every module installed and runnable as approved, an
LLM provider for llm steps), records a new run, and runs its steps: each step
starts as soon as the steps it depends on have finished, up to max_parallel
at once. Progress goes to standard error; the workflow's output (JSON) to
standard output. With --json, standard output is a stream of JSON events, one
per line, the last one run_finished with the output.

A run stopped by Ctrl-C or a crash can be resumed with station workflow
resume RUN.

Exit codes: 0 ok, 1 error or failed step, 2 usage, 3 a step failed on a
sandbox violation, 4 a step's module crashed or timed out.`,
		Example: `  station workflow run examples/workflows/invoice.yaml --input customer=cus_42
  station workflow run nightly.yaml --inputs @inputs.json --json`,
		Args: cmdutil.ExactArgs(1, "FILE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			wf, err := loadWorkflow(args[0])
			if err != nil {
				return err
			}
			given, err := a.workflowInputs(wf, inputs, inputsJSON)
			if err != nil {
				return err
			}
			p := a.progress(asJSON, len(wf.Steps))
			if c := a.Daemon(ctx); c != nil {
				res, err := a.runInDaemon(ctx, c, args[0], given, 0, p)
				return p.finish(res, err, compact)
			}
			w, err := a.openWorkflows(ctx)
			if err != nil {
				return err
			}
			if _, err := w.check(ctx, wf); err != nil {
				return err
			}
			w.engine.Events = p.event
			res, err := w.engine.Start(ctx, wf, given)
			return p.finish(res, err, compact)
		},
	}
	c.Flags().StringArrayVarP(&inputs, "input", "i", nil, "an input, NAME=VALUE (repeatable; VALUE is JSON unless the input is a string)")
	c.Flags().StringVar(&inputsJSON, "inputs", "", "all inputs as one JSON object: inline, @FILE, or - for standard input")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON events, one per line, instead of progress lines")
	c.Flags().BoolVar(&compact, "compact", false, "print the output without indentation")
	return c
}

// workflowInputs gathers --inputs and --input NAME=VALUE (which wins).
func (a *app) workflowInputs(wf *workflow.Workflow, pairs []string, all string) (map[string]any, error) {
	given := map[string]any{}
	if all != "" {
		raw, err := cmdutil.ReadInput(a.IO.In, all)
		if err != nil {
			return nil, cmdutil.Usagef("--inputs: %w", err)
		}
		var v any
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			return nil, cmdutil.Usagef("--inputs: %w", err)
		}
		m, ok := v.(map[string]any)
		if !ok {
			return nil, cmdutil.UsageError{Err: errors.New("--inputs must be a JSON object of input names to values")}
		}
		given = m
	}
	for _, p := range pairs {
		name, value, ok := strings.Cut(p, "=")
		if !ok {
			return nil, cmdutil.Usagef("--input %q: write NAME=VALUE", p)
		}
		in := wf.Input(name)
		if in == nil {
			given[name] = value // ResolveInputs reports it with the known inputs
			continue
		}
		v, err := in.ParseValue(value)
		if err != nil {
			return nil, cmdutil.UsageError{Err: err}
		}
		given[name] = v
	}
	return given, nil
}

// progress prints a run's events: lines on stderr, or JSON lines on
// stdout.
type progress struct {
	a      *app
	asJSON bool
	steps  int
	mu     sync.Mutex
}

func (a *app) progress(asJSON bool, steps int) *progress {
	return &progress{a: a, asJSON: asJSON, steps: steps}
}

func (p *progress) event(ev workflow.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.asJSON {
		b, _ := json.Marshal(ev)
		p.a.IO.Out.Write(append(cmdutil.JSONText(b), '\n'))
		return
	}
	// The workflow's and the steps' names come from the workflow file, the
	// errors from modules and the engine.
	w := p.a.IO.Err
	step, wf := cmdutil.TermText(ev.Step), cmdutil.TermText(ev.Workflow)
	switch ev.Kind {
	case workflow.EventRunStarted:
		fmt.Fprintf(w, "run %d: workflow %s (%d steps)\n", ev.RunID, wf, p.steps)
	case workflow.EventRunResumed:
		fmt.Fprintf(w, "run %d: resuming workflow %s\n", ev.RunID, wf)
	case workflow.EventStepReused:
		fmt.Fprintf(w, "  reused    %s (finished before the resume)\n", step)
	case workflow.EventStepStarted:
		attempt := ""
		if ev.Attempt > 1 {
			attempt = fmt.Sprintf(", attempt %d", ev.Attempt)
		}
		fmt.Fprintf(w, "  started   %s (%s%s)\n", step, cmdutil.TermText(ev.Uses), attempt)
	case workflow.EventStepSucceeded:
		fmt.Fprintf(w, "  ok        %s in %s\n", step, cmdutil.Round(ev.Duration))
	case workflow.EventStepRetrying:
		fmt.Fprintf(w, "  retrying  %s: attempt %d failed after %s: %s; next attempt in %s\n", step, ev.Attempt, cmdutil.Round(ev.Duration), cmdutil.TermText(ev.Error), ev.Delay)
	case workflow.EventStepFailed:
		more := ""
		if ev.Continued {
			more = " (continue_on_error: the run goes on)"
		}
		fmt.Fprintf(w, "  FAILED    %s after %s: %s%s\n", step, cmdutil.Round(ev.Duration), cmdutil.TermText(ev.Error), more)
	case workflow.EventStepSkipped:
		fmt.Fprintf(w, "  skipped   %s (its if is false)\n", step)
	case workflow.EventRunFinished:
		fmt.Fprintf(w, "run %d %s in %s\n", ev.RunID, cmdutil.TermText(string(ev.Status)), cmdutil.Round(ev.Duration))
	}
}

// finish prints a run's output (unless events already carried it) and
// returns its error.
func (p *progress) finish(res *workflow.Result, err error, compact bool) error {
	if err != nil || res == nil || p.asJSON {
		return err
	}
	cmdutil.PrintResult(p.a.IO.Out, []byte(res.Output), compact)
	return nil
}

func (a *app) workflowCheckCmd() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "check FILE",
		Short: "Validate a workflow and list every module and permission it will use",
		Long: `Check validates the workflow file (syntax, expressions, references, the
dependency graph) and lists, before anything runs, every step with what it
depends on, every module with the commands the workflow calls and the
permissions the operator approved for it, and the LLM provider llm steps use.
It fails if a module is not installed, lacks a command, or is not runnable as
approved (its manifest asks for more than was approved, or its file changed),
or if llm steps have no provider.`,
		Example: "  station workflow check examples/workflows/invoice.yaml",
		Args:    cmdutil.ExactArgs(1, "FILE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			wf, err := loadWorkflow(args[0])
			if err != nil {
				return err
			}
			w, err := a.openWorkflows(ctx)
			if err != nil {
				return err
			}
			rep, cerr := w.check(ctx, wf)
			if rep == nil {
				return cerr
			}
			if asJSON {
				if err := cmdutil.WriteJSON(a.IO.Out, rep); err != nil {
					return err
				}
				if cerr != nil {
					return fmt.Errorf("%w: %d problem(s)", workflow.ErrCheck, len(rep.Problems))
				}
				return nil
			}
			printReport(a.IO.Out, rep)
			if cerr != nil {
				return cerr
			}
			fmt.Fprintln(a.IO.Out, "ok: the workflow can run")
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	return c
}

// printReport prints workflow check's report: names from the workflow
// file, versions, commands and permissions from the modules' manifests, all
// through termText.
func printReport(w io.Writer, r *workflow.Report) {
	list := func(ss []string) string { return strings.Join(cmdutil.TermList(ss), ", ") }
	fmt.Fprintf(w, "workflow %s (%s)\n", cmdutil.TermText(r.Workflow), cmdutil.TermText(r.File))
	fmt.Fprintln(w, "steps:")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, s := range r.Steps {
		needs := "-"
		if len(s.Needs) > 0 {
			needs = list(s.Needs)
		}
		fmt.Fprintf(tw, "  %s\t%s\tafter: %s\n", cmdutil.TermText(s.ID), cmdutil.TermText(s.Uses), needs)
	}
	tw.Flush()
	if len(r.Modules) > 0 {
		fmt.Fprintln(w, "modules:")
	}
	for _, m := range r.Modules {
		if !m.Installed {
			fmt.Fprintf(w, "  %s — NOT INSTALLED (steps %s)\n", cmdutil.TermText(m.ID), list(m.Steps))
			continue
		}
		fmt.Fprintf(w, "  %s %s — commands %s (steps %s)\n", cmdutil.TermText(m.ID), cmdutil.TermText(m.Version), list(m.Commands), list(m.Steps))
		cmdutil.PrintPermissions(w, "    - ", "        ", m.Permissions)
	}
	if r.LLM != nil {
		p := cmdutil.TermText(r.LLM.Provider)
		if p == "" {
			p = "NONE CONFIGURED"
		}
		fmt.Fprintf(w, "llm (steps %s): the station's own provider, %s; no module's policy applies to it\n", list(r.LLM.Steps), p)
	}
}

func (a *app) workflowResumeCmd() *cobra.Command {
	var file string
	var asJSON, compact bool
	c := &cobra.Command{
		Use:   "resume RUN",
		Short: "Resume an interrupted or failed run from its first unfinished step",
		Long: `Resume runs again the steps of RUN that did not finish; steps that did
(succeeded, skipped, or failed with continue_on_error) keep their recorded
outputs and are not run again. The workflow file must be the one the run
started with: a changed file is refused (start a new run instead).`,
		Example: "  station workflow resume 12",
		Args:    cmdutil.ExactArgs(1, "RUN"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			id, err := runID(args[0])
			if err != nil {
				return err
			}
			w, err := a.openWorkflows(ctx)
			if err != nil {
				return err
			}
			run, err := w.st.Store.WorkflowRun(ctx, id)
			if err != nil {
				return err
			}
			if file == "" {
				file = run.File
			}
			wf, err := loadWorkflow(file)
			if err != nil {
				return err
			}
			p := a.progress(asJSON, len(wf.Steps))
			if c := a.Daemon(ctx); c != nil {
				res, err := a.runInDaemon(ctx, c, file, nil, id, p)
				return p.finish(res, err, compact)
			}
			if _, err := w.check(ctx, wf); err != nil {
				return err
			}
			w.engine.Events = p.event
			res, err := w.engine.Resume(ctx, wf, id)
			return p.finish(res, err, compact)
		},
	}
	c.Flags().StringVarP(&file, "file", "f", "", "the workflow file (default: the path the run was started from)")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON events, one per line, instead of progress lines")
	c.Flags().BoolVar(&compact, "compact", false, "print the output without indentation")
	return c
}

func runID(s string) (int64, error) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id <= 0 {
		return 0, cmdutil.Usagef("%q is not a run id (station workflow runs lists them)", s)
	}
	return id, nil
}

func (a *app) workflowRunsCmd() *cobra.Command {
	var limit int
	var asJSON bool
	c := &cobra.Command{
		Use:   "runs",
		Short: "List workflow runs, newest first",
		Args:  cmdutil.ExactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			w, err := a.openWorkflows(ctx)
			if err != nil {
				return err
			}
			runs, err := w.st.Store.WorkflowRuns(ctx, limit)
			if err != nil {
				return err
			}
			if asJSON {
				if runs == nil {
					runs = []store.WorkflowRun{}
				}
				return cmdutil.WriteJSON(a.IO.Out, runs)
			}
			if len(runs) == 0 {
				fmt.Fprintln(a.IO.Err, "no workflow runs recorded")
				return nil
			}
			tw := tabwriter.NewWriter(a.IO.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "RUN\tWORKFLOW\tSTATUS\tSTARTED\tTOOK\tFILE")
			for _, r := range runs {
				took := "-"
				if !r.FinishedAt.IsZero() {
					took = cmdutil.Round(r.FinishedAt.Sub(r.StartedAt)).String()
				}
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", r.ID, cmdutil.TermText(r.Workflow), cmdutil.TermText(string(r.Status)), r.StartedAt.Local().Format("2006-01-02 15:04:05"), took, cmdutil.TermText(r.File))
			}
			return tw.Flush()
		},
	}
	c.Flags().IntVar(&limit, "limit", 50, "at most this many (the newest)")
	c.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return c
}

// shownRun is what workflow show --json prints: the run, and the audit
// records of each attempt's module call, by trace.
type shownRun struct {
	store.WorkflowRun
	Audit map[string][]store.AuditRecord `json:"audit"`
}

func (a *app) workflowShowCmd() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "show RUN",
		Short: "Show a run: its steps, their inputs, outputs, errors, timings and sandbox decisions",
		Long: `Show prints a run: its steps, their inputs, outputs, errors, timings and the
sandbox decisions of each attempt. What modules and the workflow file supplied
is shown escaped (control characters as \xNN), and a document longer than
` + strconv.Itoa(cmdutil.MaxTermText) + ` bytes is cut; --json prints everything as it was recorded.`,
		Args: cmdutil.ExactArgs(1, "RUN"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			id, err := runID(args[0])
			if err != nil {
				return err
			}
			w, err := a.openWorkflows(ctx)
			if err != nil {
				return err
			}
			shown, err := w.show(ctx, id)
			if err != nil {
				return err
			}
			if asJSON {
				return cmdutil.WriteJSON(a.IO.Out, shown)
			}
			printRun(a.IO.Out, *shown)
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return c
}

// printRun prints workflow show: the workflow's and steps' names from its
// file, inputs, outputs and errors from the caller, modules and the engine,
// audit records from the gates — all through termText (the JSON documents
// on one line each).
func printRun(w io.Writer, r shownRun) {
	fmt.Fprintf(w, "run %d: workflow %s — %s\n", r.ID, cmdutil.TermText(r.Workflow), cmdutil.TermText(string(r.Status)))
	fmt.Fprintf(w, "  file     %s (%s)\n", cmdutil.TermText(r.File), cmdutil.TermText(r.Digest))
	fmt.Fprintf(w, "  started  %s", r.StartedAt.Local().Format("2006-01-02 15:04:05.000"))
	if !r.FinishedAt.IsZero() {
		fmt.Fprintf(w, ", took %s", cmdutil.Round(r.FinishedAt.Sub(r.StartedAt)))
	}
	if r.Resumes > 0 {
		fmt.Fprintf(w, ", resumed %d time(s)", r.Resumes)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "  inputs   %s\n", cmdutil.TermText(string(r.Inputs)))
	if len(r.Output) > 0 {
		fmt.Fprintf(w, "  output   %s\n", cmdutil.TermText(string(r.Output)))
	}
	if r.Error != "" {
		fmt.Fprintf(w, "  error    %s\n", cmdutil.TermText(r.Error))
	}
	for _, st := range r.Steps {
		status := cmdutil.TermText(string(st.Status))
		if st.Continued {
			status += " (continued)"
		}
		took := ""
		if !st.FinishedAt.IsZero() && !st.StartedAt.IsZero() {
			took = ", " + cmdutil.Round(st.FinishedAt.Sub(st.StartedAt)).String()
		}
		fmt.Fprintf(w, "step %s (%s): %s%s\n", cmdutil.TermText(st.Step), cmdutil.TermText(st.Uses), status, took)
		if len(st.Input) > 0 {
			fmt.Fprintf(w, "  input    %s\n", cmdutil.TermText(string(st.Input)))
		}
		if len(st.Output) > 0 {
			fmt.Fprintf(w, "  output   %s\n", cmdutil.TermText(string(st.Output)))
		}
		for _, at := range st.AttemptLog {
			line := fmt.Sprintf("  attempt %d: %s", at.Attempt, cmdutil.TermText(string(at.Status)))
			if !at.FinishedAt.IsZero() {
				line += " after " + cmdutil.Round(at.FinishedAt.Sub(at.StartedAt)).String()
			}
			if at.Error != "" {
				line += ": " + cmdutil.TermText(at.Error)
			}
			fmt.Fprintln(w, line)
			recs := r.Audit[at.Trace]
			slices.SortStableFunc(recs, func(x, y store.AuditRecord) int { return int(x.ID - y.ID) })
			for _, rec := range recs {
				d := "allow"
				if !rec.Allowed {
					d = "DENY "
				}
				if rec.Folded > 0 {
					d += fmt.Sprintf(" (folded %d)", rec.Folded)
				}
				fmt.Fprintf(w, "    %s %s %s %s %s\n", d, cmdutil.TermText(rec.Module), cmdutil.TermText(string(rec.Capability)), cmdutil.TermText(rec.Target), cmdutil.TermText(rec.Reason))
			}
		}
	}
}
