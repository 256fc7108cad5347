package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"sync"

	"github.com/station-dev/station/internal/host"
	"github.com/station-dev/station/internal/sandbox"
)

// WorkflowRequest is the body of POST /v1/workflows/runs and
// POST /v1/workflows/check.
type WorkflowRequest struct {
	// Name is the workflow file's name, used in error positions
	// ("invoice.yaml:12:5").
	Name string `json:"name"`
	// Source is the workflow file's YAML text. The daemon never reads files
	// a client names: the client sends what it read.
	Source string `json:"source"`
	// Inputs are the workflow's inputs.
	Inputs map[string]any `json:"inputs,omitempty"`
	// Resume, if set, resumes this run from its first unfinished step
	// instead of starting a new one; Source must be the same file.
	Resume string `json:"resume,omitempty"`
}

// WorkflowService is what the daemon needs of the workflow engine. Results
// are returned to the client as JSON, as they are.
type WorkflowService interface {
	// Start runs (or resumes) a workflow to its end and returns the run.
	// It calls events with each progress event, possibly concurrently.
	Start(ctx context.Context, req WorkflowRequest, events func(any)) (any, error)
	// Check validates a workflow and lists the modules and permissions it
	// will use.
	Check(ctx context.Context, req WorkflowRequest) (any, error)
	// Runs lists the newest runs.
	Runs(ctx context.Context, limit int) (any, error)
	// Run returns one run with its steps.
	Run(ctx context.Context, id string) (any, error)
}

// ErrWorkflow marks errors of the workflow itself (invalid file, a failed
// run): the client gets code "workflow" and status 422, with the failed
// call's kind and violation when a step's module call failed.
var ErrWorkflow = errors.New("workflow")

// workflowError is a workflow failure as a client sees it: ErrWorkflow, and
// the call error that failed the step, if any (so that errors.As finds the
// *host.CallError or *sandbox.Violation, as in process).
type workflowError struct {
	msg  string
	call error // nil, a *host.CallError or a *sandbox.Violation
}

func (e *workflowError) Error() string { return e.msg }
func (e *workflowError) Unwrap() []error {
	if e.call == nil {
		return []error{ErrWorkflow}
	}
	return []error{ErrWorkflow, e.call}
}

// workflowAPIError describes a workflow failure, with the step's failed
// call when there is one.
func workflowAPIError(err error) *APIError {
	e := &APIError{Code: CodeWorkflow, Message: err.Error()}
	var ce *host.CallError
	var v *sandbox.Violation
	switch {
	case errors.As(err, &ce):
		e.Module, e.Command, e.Kind, e.Detail, e.Violation, e.Limit = ce.Module, ce.Command, ce.Kind, ce.Msg, ce.Violation, apiLimit(ce.Limit)
	case errors.As(err, &v):
		e.Module, e.Violation = v.Module, v
	}
	return e
}

func (s *Server) workflows(w http.ResponseWriter) bool {
	if s.wf == nil {
		writeError(w, http.StatusServiceUnavailable, &APIError{Code: CodeUnavailable, Message: "this daemon serves no workflows"})
		return false
	}
	return true
}

func (s *Server) workflowAnswer(w http.ResponseWriter, v any, err error) {
	switch {
	case err == nil:
		writeJSON(w, http.StatusOK, v)
	case errors.Is(err, ErrWorkflow):
		writeJSON(w, http.StatusUnprocessableEntity, streamLine{Error: workflowAPIError(err), Result: v})
	default:
		writeFailure(w, s.log, err)
	}
}

func (s *Server) workflowStart(w http.ResponseWriter, r *http.Request) {
	if !s.workflows(w) {
		return
	}
	var req WorkflowRequest
	if e := decodeBody(r, &req); e != nil {
		writeError(w, e.status(), e)
		return
	}
	if r.URL.Query().Get("stream") != "true" {
		v, err := s.wf.Start(r.Context(), req, func(any) {})
		s.workflowAnswer(w, v, err)
		return
	}
	// A stream: one JSON object per line, {"event": ...} for each progress
	// event, then {"result": ...} or {"error": ..., "result": ...}.
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	var mu sync.Mutex
	enc := json.NewEncoder(w)
	send := func(l streamLine) {
		mu.Lock()
		defer mu.Unlock()
		enc.Encode(l)
		rc.Flush()
	}
	v, err := s.wf.Start(r.Context(), req, func(ev any) { send(streamLine{Event: ev}) })
	switch {
	case err == nil:
		send(streamLine{Result: v})
	case errors.Is(err, ErrWorkflow):
		send(streamLine{Error: workflowAPIError(err), Result: v})
	default:
		s.log.Warn("daemon: workflow run failed", "err", err)
		send(streamLine{Error: &APIError{Code: CodeInternal, Message: err.Error()}, Result: v})
	}
}

// streamLine is one line of a workflow stream, and the body of a workflow
// error answer.
type streamLine struct {
	Event  any       `json:"event,omitempty"`
	Error  *APIError `json:"error,omitempty"`
	Result any       `json:"result,omitempty"`
}

func (s *Server) workflowCheck(w http.ResponseWriter, r *http.Request) {
	if !s.workflows(w) {
		return
	}
	var req WorkflowRequest
	if e := decodeBody(r, &req); e != nil {
		writeError(w, e.status(), e)
		return
	}
	v, err := s.wf.Check(r.Context(), req)
	s.workflowAnswer(w, v, err)
}

func (s *Server) workflowRuns(w http.ResponseWriter, r *http.Request) {
	if !s.workflows(w) {
		return
	}
	limit := 50
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 10000 {
			writeError(w, http.StatusBadRequest, &APIError{Code: CodeBadRequest, Message: "limit: want a number from 1 to 10000"})
			return
		}
		limit = n
	}
	v, err := s.wf.Runs(r.Context(), limit)
	s.workflowAnswer(w, v, err)
}

func (s *Server) workflowRun(w http.ResponseWriter, r *http.Request) {
	if !s.workflows(w) {
		return
	}
	v, err := s.wf.Run(r.Context(), r.PathValue("id"))
	s.workflowAnswer(w, v, err)
}
