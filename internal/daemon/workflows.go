package daemon

import (
	"context"
	"errors"
	"net/http"
	"strconv"
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
	Start(ctx context.Context, req WorkflowRequest) (any, error)
	// Check validates a workflow and lists the modules and permissions it
	// will use.
	Check(ctx context.Context, req WorkflowRequest) (any, error)
	// Runs lists the newest runs.
	Runs(ctx context.Context, limit int) (any, error)
	// Run returns one run with its steps.
	Run(ctx context.Context, id string) (any, error)
}

// ErrWorkflow marks errors of the workflow itself (invalid file, a failed
// run): the client gets code "workflow" and status 422.
var ErrWorkflow = errors.New("workflow")

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
		writeJSON(w, http.StatusUnprocessableEntity, struct {
			Error  *APIError `json:"error"`
			Result any       `json:"result,omitempty"`
		}{&APIError{Code: CodeWorkflow, Message: err.Error()}, v})
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
	v, err := s.wf.Start(r.Context(), req)
	s.workflowAnswer(w, v, err)
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
