package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/station-dev/station/internal/daemon"
	"github.com/station-dev/station/internal/station"
	"github.com/station-dev/station/internal/store"
	"github.com/station-dev/station/internal/workflow"
)

// workflowService serves the daemon's /v1/workflows endpoints with the same
// engine `station workflow` uses in process.
func (a *app) workflowService(ctx context.Context, s *station.Station) (daemon.WorkflowService, error) {
	w, err := a.newWfStation(ctx, s)
	if err != nil {
		return nil, err
	}
	return wfService{w}, nil
}

type wfService struct{ w *wfStation }

// asWorkflow marks an error as the workflow's own (daemon.ErrWorkflow).
func asWorkflow(err error) error {
	if err == nil || errors.Is(err, daemon.ErrWorkflow) {
		return err
	}
	return &markedError{err}
}

type markedError struct{ err error }

func (e *markedError) Error() string   { return e.err.Error() }
func (e *markedError) Unwrap() []error { return []error{daemon.ErrWorkflow, e.err} }

func (v wfService) parse(req daemon.WorkflowRequest) (*workflow.Workflow, error) {
	if req.Source == "" {
		return nil, asWorkflow(errors.New(`"source" is required: the workflow file's text`))
	}
	name := req.Name
	if name == "" {
		name = "workflow.yaml"
	}
	wf, err := workflow.Parse(name, []byte(req.Source))
	return wf, asWorkflow(err)
}

func (v wfService) Start(ctx context.Context, req daemon.WorkflowRequest, events func(any)) (any, error) {
	wf, err := v.parse(req)
	if err != nil {
		return nil, err
	}
	if _, err := v.w.check(ctx, wf); err != nil {
		return nil, asWorkflow(err)
	}
	eng := *v.w.engine // a copy per run: its own event sink
	eng.Events = func(ev workflow.Event) { events(ev) }
	var res *workflow.Result
	if req.Resume != "" {
		id, perr := runID(req.Resume)
		if perr != nil {
			return nil, asWorkflow(perr)
		}
		res, err = eng.Resume(ctx, wf, id)
	} else {
		res, err = eng.Start(ctx, wf, req.Inputs)
	}
	if res == nil {
		return nil, asWorkflow(err)
	}
	return res, asWorkflow(err)
}

func (v wfService) Check(ctx context.Context, req daemon.WorkflowRequest) (any, error) {
	wf, err := v.parse(req)
	if err != nil {
		return nil, err
	}
	rep, err := v.w.check(ctx, wf)
	if rep == nil {
		return nil, asWorkflow(err)
	}
	return rep, asWorkflow(err)
}

func (v wfService) Runs(ctx context.Context, limit int) (any, error) {
	if _, err := v.w.engine.Recover(ctx); err != nil {
		return nil, err
	}
	runs, err := v.w.st.Store.WorkflowRuns(ctx, limit)
	if runs == nil {
		runs = []store.WorkflowRun{}
	}
	return runs, err
}

func (v wfService) Run(ctx context.Context, id string) (any, error) {
	n, err := runID(id)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", store.ErrNotFound, err)
	}
	if _, err := v.w.engine.Recover(ctx); err != nil {
		return nil, err
	}
	return v.w.show(ctx, n)
}

// show reads a run with the audit records of each attempt's module call.
func (w *wfStation) show(ctx context.Context, id int64) (*shownRun, error) {
	run, err := w.st.Store.WorkflowRun(ctx, id)
	if err != nil {
		return nil, err
	}
	shown := &shownRun{WorkflowRun: run, Audit: map[string][]store.AuditRecord{}}
	for _, st := range run.Steps {
		for _, at := range st.AttemptLog {
			recs, err := w.st.Store.Audit(ctx, store.AuditFilter{Trace: at.Trace})
			if err != nil {
				return nil, err
			}
			if len(recs) > 0 {
				shown.Audit[at.Trace] = recs
			}
		}
	}
	return shown, nil
}

// runInDaemon runs (or resumes) the workflow file at path in the daemon,
// printing its progress as it happens; it is the daemon's counterpart of
// Engine.Start/Resume in process.
func (a *app) runInDaemon(ctx context.Context, c *daemon.Client, path string, inputs map[string]any, resume int64, p *progress) (*workflow.Result, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load workflow: %w", err)
	}
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	req := daemon.WorkflowRequest{Name: path, Source: string(src), Inputs: inputs}
	if resume > 0 {
		req.Resume = strconv.FormatInt(resume, 10)
	}
	var res workflow.Result
	err = c.StreamWorkflow(ctx, req, func(raw json.RawMessage) {
		var ev workflow.Event
		if json.Unmarshal(raw, &ev) == nil {
			ev.Duration = time.Duration(ev.DurationMS) * time.Millisecond
			ev.Delay = time.Duration(ev.DelayMS) * time.Millisecond
			p.event(ev)
		}
	}, &res)
	if res.RunID == 0 {
		return nil, err
	}
	return &res, err
}
