package workflow

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/station-dev/station/internal/daemon"
	"github.com/station-dev/station/internal/store"
)

// This file is the workflow service on both sides of the station daemon:
// Daemon is what `station serve` answers /v1/workflows with, and Remote is
// what the CLI runs a workflow through when a daemon serves its home. The
// daemon imports no workflow code (it serves a daemon.WorkflowService), so
// the dependency runs this way only.

// Daemon returns v as the daemon serves it.
func (v *Service) Daemon() daemon.WorkflowService { return daemonService{v} }

type daemonService struct{ v *Service }

// asWorkflow marks an error as the workflow's own (daemon.ErrWorkflow): the
// client gets it with the run as far as it got, and the failed call.
func asWorkflow(err error) error {
	if err == nil || errors.Is(err, daemon.ErrWorkflow) {
		return err
	}
	return &markedError{err}
}

type markedError struct{ err error }

func (e *markedError) Error() string   { return e.err.Error() }
func (e *markedError) Unwrap() []error { return []error{daemon.ErrWorkflow, e.err} }

func (d daemonService) parse(req daemon.WorkflowRequest) (*Workflow, error) {
	if req.Source == "" {
		return nil, asWorkflow(errors.New(`"source" is required: the workflow file's text`))
	}
	name := req.Name
	if name == "" {
		name = "workflow.yaml"
	}
	wf, err := Parse(name, []byte(req.Source))
	return wf, asWorkflow(err)
}

func (d daemonService) Start(ctx context.Context, req daemon.WorkflowRequest, events func(any)) (any, error) {
	wf, err := d.parse(req)
	if err != nil {
		return nil, err
	}
	send := func(ev Event) { events(ev) }
	var res *Result
	if req.Resume != "" {
		id, perr := ParseRunID(req.Resume)
		if perr != nil {
			return nil, asWorkflow(perr)
		}
		res, err = d.v.resume(ctx, wf, id, req.Inputs, send)
	} else {
		res, err = d.v.Start(ctx, wf, req.Inputs, send)
	}
	if res == nil {
		return nil, asWorkflow(err)
	}
	return res, asWorkflow(err)
}

func (d daemonService) Check(ctx context.Context, req daemon.WorkflowRequest) (any, error) {
	wf, err := d.parse(req)
	if err != nil {
		return nil, err
	}
	rep, err := d.v.Check(ctx, wf)
	if rep == nil {
		return nil, asWorkflow(err)
	}
	return rep, asWorkflow(err)
}

func (d daemonService) Runs(ctx context.Context, limit int) (any, error) {
	return d.v.Runs(ctx, limit)
}

func (d daemonService) Run(ctx context.Context, id string) (any, error) {
	n, err := ParseRunID(id)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", store.ErrNotFound, err)
	}
	return d.v.Show(ctx, n)
}

// Remote runs workflows in the station daemon that serves this home, with
// the same progress events, result and errors (a step's *sandbox.Violation
// or *host.CallError) as Service in process. The client reads the workflow
// file and sends its text: the daemon never reads a file a client names.
type Remote struct{ Client *daemon.Client }

// Start runs wf (read again from wf.File, which must still be the file wf
// was parsed from) in the daemon.
func (r Remote) Start(ctx context.Context, wf *Workflow, inputs map[string]any, events func(Event)) (*Result, error) {
	src, err := readSource(wf.File)
	if err != nil {
		return nil, err
	}
	if d := digest(src); d != wf.Digest {
		return nil, fmt.Errorf("workflow %s: %s changed while it was being read; run it again", wf.Name, wf.File)
	}
	return r.stream(ctx, daemon.WorkflowRequest{Name: wf.File, Source: string(src), Inputs: inputs}, events)
}

// Resume resumes run id in the daemon, with the workflow file at file ("":
// the path the run started from, as the daemon recorded it) and the run's
// secret inputs given again.
func (r Remote) Resume(ctx context.Context, id int64, file string, inputs map[string]any, events func(Event)) (*Result, error) {
	if file == "" {
		var run store.WorkflowRun
		if err := r.Client.WorkflowRun(ctx, strconv.FormatInt(id, 10), &run); err != nil {
			if isNotFound(err) {
				return nil, &noRunError{err}
			}
			return nil, err
		}
		file = run.File
	}
	src, err := readSource(file)
	if err != nil {
		return nil, err
	}
	return r.stream(ctx, daemon.WorkflowRequest{Name: file, Source: string(src), Resume: strconv.FormatInt(id, 10), Inputs: inputs}, events)
}

func isNotFound(err error) bool {
	var ae *daemon.APIError
	return errors.As(err, &ae) && ae.Code == daemon.CodeNotFound
}

func (r Remote) stream(ctx context.Context, req daemon.WorkflowRequest, events func(Event)) (*Result, error) {
	var res struct {
		Result
		// OldRunID is the run of a daemon from before the snake_case keys
		// ({"RunID", "Status", "Output"}; the others match either way).
		OldRunID int64 `json:"RunID"`
	}
	err := r.Client.StreamWorkflow(ctx, req, func(raw json.RawMessage) {
		var ev Event
		if events != nil && json.Unmarshal(raw, &ev) == nil {
			ev.Duration = time.Duration(ev.DurationMS) * time.Millisecond
			ev.Delay = time.Duration(ev.DelayMS) * time.Millisecond
			events(ev)
		}
	}, &res)
	if res.RunID == 0 {
		res.RunID = res.OldRunID
	}
	if res.RunID == 0 {
		return nil, err
	}
	return &res.Result, err
}

// readSource reads a workflow file as Load does, for the daemon.
func readSource(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("load workflow: %w", err)
	}
	defer f.Close()
	src, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("load workflow %s: %w", path, err)
	}
	return src, nil
}

func digest(src []byte) string {
	sum := sha256.Sum256(src)
	return "sha256:" + hex.EncodeToString(sum[:])
}
