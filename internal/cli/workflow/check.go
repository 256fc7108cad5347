package workflow

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/workflow"
)

// CheckOptions are what `station workflow check` was asked to do.
type CheckOptions struct {
	IO      *cmdutil.IOStreams
	Service func(context.Context) (Service, error)
	File    string
	JSON    bool
}

// NewCmdCheck returns `station workflow check`. runF, when set, is called
// with the parsed options instead of running the command.
func NewCmdCheck(f *cmdutil.Factory, runF func(*CheckOptions) error) *cobra.Command {
	opts := &CheckOptions{IO: &f.IO, Service: service(f)}
	c := &cobra.Command{
		Use:   "check FILE",
		Short: "Validate a workflow and list every module and permission it will use",
		Long: `Check validates the workflow file (syntax, expressions, references, the
dependency graph) and lists, before anything runs, every step with what it
depends on, every module with the commands the workflow calls and the
permissions the operator approved for it, and the LLM provider llm steps use.
It fails if a module is not installed, lacks a command, or is not runnable as
approved (its manifest asks for more than was approved, or its file changed),
if llm steps have no provider, or if a step passes a stored secret
(${{ secrets.NAME }}) that its module does not declare or that has no value
(station secret set NAME --module ID). A secret a module declares, that no
step passes and that has no value, is a warning: the module may need it.

With --json the report is printed as JSON (its "problems" are empty when the
workflow can run); the exit code is the same.`,
		Example: "  station workflow check examples/workflows/invoice.yaml\n  station workflow check nightly.yaml --json",
		Args:    cmdutil.ExactArgs(1, "FILE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.File = args[0]
			if runF != nil {
				return runF(opts)
			}
			return checkRun(cmd.Context(), opts)
		},
	}
	cmdutil.AddJSONFlag(c, &opts.JSON)
	return c
}

func checkRun(ctx context.Context, opts *CheckOptions) error {
	wf, err := workflow.LoadFile(opts.File)
	if err != nil {
		return err
	}
	svc, err := opts.Service(ctx)
	if err != nil {
		return err
	}
	rep, cerr := svc.Check(ctx, wf)
	if rep == nil {
		return cerr
	}
	if err := cmdutil.Print(opts.IO.Out, opts.JSON, Report{rep}); err != nil {
		return err
	}
	if cerr != nil && opts.JSON {
		// The problems are in the report; the error says how many.
		return fmt.Errorf("%w: %d problem(s)", workflow.ErrCheck, len(rep.Problems))
	}
	return cerr
}

// Report is what `workflow check` prints: the check's report, and "ok"
// when it found no problem (the problems themselves are the error).
type Report struct{ *workflow.Report }

// Text prints the report: names from the workflow file, versions, commands
// and permissions from the modules' manifests, all through TermText.
func (r Report) Text(w io.Writer) error {
	list := func(ss []string) string { return strings.Join(cmdutil.TermList(ss), ", ") }
	fmt.Fprintf(w, "workflow %s (%s)\n", cmdutil.TermText(r.Workflow), cmdutil.TermText(r.File))
	fmt.Fprintln(w, "steps:")
	tw := cmdutil.NewTable(w)
	for _, s := range r.Steps {
		needs := "-"
		if len(s.Needs) > 0 {
			needs = list(s.Needs)
		}
		fmt.Fprintf(tw, "  %s\t%s\tafter: %s\n", cmdutil.TermText(s.ID), cmdutil.TermText(s.Uses), needs)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
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
		for _, sec := range m.Secrets {
			set := "set"
			if !sec.Set {
				set = "NOT SET"
			}
			passed := ""
			if len(sec.Steps) > 0 {
				passed = " (passed by steps " + list(sec.Steps) + ")"
			}
			fmt.Fprintf(w, "    secret %s, sent only to %s: %s%s\n", cmdutil.TermText(sec.Name), list(sec.Hosts), set, passed)
		}
	}
	if r.LLM != nil {
		p := cmdutil.TermText(r.LLM.Provider)
		if p == "" {
			p = "NONE CONFIGURED"
		}
		fmt.Fprintf(w, "llm (steps %s): the station's own provider, %s; no module's policy applies to it\n", list(r.LLM.Steps), p)
	}
	for _, warn := range r.Warnings {
		fmt.Fprintf(w, "warning: %s\n", cmdutil.TermText(warn))
	}
	if len(r.Problems) == 0 {
		_, err := fmt.Fprintln(w, "ok: the workflow can run")
		return err
	}
	return nil
}
