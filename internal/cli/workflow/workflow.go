// Package workflow is `station workflow`: check, run, resume and inspect
// workflows. The engine, and the daemon's side of it, are in
// internal/workflow (Service, Remote); these commands parse flags, call it
// and print what it returns.
package workflow

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/store"
	"github.com/station-dev/station/internal/workflow"
)

// NewCmdWorkflow returns `station workflow` with its subcommands.
func NewCmdWorkflow(f *cmdutil.Factory) *cobra.Command {
	c := &cobra.Command{
		Use:   "workflow",
		Short: "Check, run, resume and inspect workflows",
		Long: `A workflow is a YAML file of steps that call module commands or the station's
llm built-in, with inputs built from the workflow's inputs and earlier steps'
outputs by ${{ expression }} templates. See docs/workflows.md.

Every module call of a step goes through the same dispatch as station run,
under the module's approved permissions. Runs are recorded as they progress;
a run that stopped (Ctrl-C, a crash) resumes from its first unfinished step.

An API key is best a stored secret (station secret set), which a step passes
by reference as ${{ secrets.NAME }}: its module never sees the value, only
its network gate does, for the hosts the secret is bound to. An input
declared secret: true is given to the modules that use it, and reads
` + workflow.Redacted + ` in every run record, listing and progress line.`,
		Example: `  station workflow check examples/workflows/invoice.yaml
  station workflow run examples/workflows/invoice.yaml --input customer=cus_42
  station workflow runs
  station workflow show 1`,
	}
	c.AddCommand(NewCmdRun(f, nil), NewCmdCheck(f, nil), NewCmdResume(f, nil), NewCmdRuns(f, nil), NewCmdShow(f, nil))
	return cmdutil.Group(c)
}

// Runner runs workflows: the station's engine in this process
// (*workflow.Service) or, when a daemon serves the station home, the
// daemon's (workflow.Remote), with the same events, results and errors.
type Runner interface {
	Start(ctx context.Context, wf *workflow.Workflow, inputs map[string]any, events func(workflow.Event)) (*workflow.Result, error)
	Resume(ctx context.Context, id int64, file string, inputs map[string]any, events func(workflow.Event)) (*workflow.Result, error)
}

// Service checks workflows and reads runs: *workflow.Service, the station
// opened in this process.
type Service interface {
	Check(ctx context.Context, wf *workflow.Workflow) (*workflow.Report, error)
	Runs(ctx context.Context, limit int) ([]store.WorkflowRun, error)
	Show(ctx context.Context, id int64) (*workflow.ShownRun, error)
}

// inProcess opens the station and its workflow engine in this process.
func inProcess(f *cmdutil.Factory) func(context.Context) (*workflow.Service, error) {
	return func(ctx context.Context) (*workflow.Service, error) {
		s, err := f.Open(ctx)
		if err != nil {
			return nil, err
		}
		return workflow.NewService(ctx, s, f.IO.Getenv)
	}
}

// service is inProcess as a Service.
func service(f *cmdutil.Factory) func(context.Context) (Service, error) {
	open := inProcess(f)
	return func(ctx context.Context) (Service, error) { return open(ctx) }
}

// runner is the daemon serving this station home, or else the engine in
// this process.
func runner(f *cmdutil.Factory) func(context.Context) (Runner, error) {
	open := inProcess(f)
	return func(ctx context.Context) (Runner, error) {
		if c := f.Daemon(ctx); c != nil {
			return workflow.Remote{Client: c}, nil
		}
		return open(ctx)
	}
}

// parseRunID reads a RUN argument.
func parseRunID(s string) (int64, error) {
	id, err := workflow.ParseRunID(s)
	if err != nil {
		return 0, cmdutil.Usagef("%v (station workflow runs lists them)", err)
	}
	return id, nil
}

// inputs gathers --inputs (a JSON object) and each --input NAME=VALUE (which
// wins), reading VALUE as the workflow declares the input (as text when wf
// is nil).
func inputs(stdin io.Reader, wf *workflow.Workflow, pairs []string, all string) (map[string]any, error) {
	given := map[string]any{}
	if all != "" {
		raw, err := cmdutil.ReadInput(stdin, all)
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
			return nil, cmdutil.UsageError{Err: errors.New(`--inputs must be a JSON object of input names to values, such as '{"customer":"cus_42"}'`)}
		}
		given = m
	}
	for _, p := range pairs {
		name, value, ok := strings.Cut(p, "=")
		if !ok {
			return nil, cmdutil.Usagef("--input %q: write NAME=VALUE", p)
		}
		var in *workflow.Input
		if wf != nil {
			in = wf.Input(name)
		}
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
