package workflow

import (
	"fmt"
	"io"
	"sync"

	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/workflow"
)

// Event is a progress event as `workflow run` and `workflow resume` print
// it for a person: one line. With --json the event itself is printed, one
// JSON object a line (workflow.Event, snake_case).
type Event struct {
	workflow.Event
	// Steps is how many steps the workflow has, for run_started; 0 when
	// unknown.
	Steps int `json:"-"`
}

// Text prints the event's line. The workflow's and the steps' names come
// from the workflow file, the errors from modules and the engine: all of it
// goes through TermText.
func (e Event) Text(w io.Writer) error {
	ev := e.Event
	step, wf := cmdutil.TermText(ev.Step), cmdutil.TermText(ev.Workflow)
	var err error
	switch ev.Kind {
	case workflow.EventRunStarted:
		steps := ""
		if e.Steps > 0 {
			steps = fmt.Sprintf(" (%d steps)", e.Steps)
		}
		_, err = fmt.Fprintf(w, "run %d: workflow %s%s\n", ev.RunID, wf, steps)
	case workflow.EventRunResumed:
		_, err = fmt.Fprintf(w, "run %d: resuming workflow %s\n", ev.RunID, wf)
	case workflow.EventStepReused:
		_, err = fmt.Fprintf(w, "  reused    %s (finished before the resume)\n", step)
	case workflow.EventStepStarted:
		attempt := ""
		if ev.Attempt > 1 {
			attempt = fmt.Sprintf(", attempt %d", ev.Attempt)
		}
		_, err = fmt.Fprintf(w, "  started   %s (%s%s)\n", step, cmdutil.TermText(ev.Uses), attempt)
	case workflow.EventStepSucceeded:
		_, err = fmt.Fprintf(w, "  ok        %s in %s\n", step, cmdutil.Round(ev.Duration))
	case workflow.EventStepRetrying:
		_, err = fmt.Fprintf(w, "  retrying  %s: attempt %d failed after %s: %s; next attempt in %s\n", step, ev.Attempt, cmdutil.Round(ev.Duration), cmdutil.TermText(ev.Error), ev.Delay)
	case workflow.EventStepFailed:
		more := ""
		if ev.Continued {
			more = " (continue_on_error: the run goes on)"
		}
		_, err = fmt.Fprintf(w, "  FAILED    %s after %s: %s%s\n", step, cmdutil.Round(ev.Duration), cmdutil.TermText(ev.Error), more)
	case workflow.EventStepSkipped:
		_, err = fmt.Fprintf(w, "  skipped   %s (its if is false)\n", step)
	case workflow.EventRunFinished:
		_, err = fmt.Fprintf(w, "run %d %s in %s\n", ev.RunID, cmdutil.TermText(string(ev.Status)), cmdutil.Round(ev.Duration))
	}
	return err
}

// progress prints a run's events as they come (from the steps'
// goroutines): lines on stderr, or with --json JSON lines on stdout.
type progress struct {
	io     *cmdutil.IOStreams
	asJSON bool
	steps  int

	mu  sync.Mutex
	err error // the first write that failed
}

func newProgress(streams *cmdutil.IOStreams, asJSON bool, steps int) *progress {
	return &progress{io: streams, asJSON: asJSON, steps: steps}
}

func (p *progress) event(ev workflow.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var err error
	if p.asJSON {
		err = cmdutil.WriteJSONLine(p.io.Out, ev)
	} else {
		err = Event{Event: ev, Steps: p.steps}.Text(p.io.Err)
	}
	if p.err == nil {
		p.err = err
	}
}

// finish prints a run's output (unless the events carried it) and returns
// the run's error, or else the first event that could not be printed.
func (p *progress) finish(res *workflow.Result, err error, compact bool) error {
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		return p.err
	}
	if res != nil && !p.asJSON {
		cmdutil.PrintResult(p.io.Out, []byte(res.Output), compact)
	}
	return nil
}
