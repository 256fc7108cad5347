package daemon

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/station-dev/station/internal/host"
	"github.com/station-dev/station/internal/sandbox"
	"github.com/station-dev/station/internal/station"
	"github.com/station-dev/station/internal/store"
)

// Error codes of the API (the "code" of an error body). They are part of the
// API's contract; docs/api.md lists them.
const (
	CodeBadRequest   = "bad_request"  // 400: malformed body or parameters
	CodeUnauthorized = "unauthorized" // 401: no or wrong token
	CodeForbidden    = "forbidden"    // 403: a web page, or a Host that is not the daemon's
	CodeNotFound     = "not_found"    // 404: no such module, run or endpoint
	CodeTooLarge     = "too_large"    // 413: body over MaxRequestBytes
	CodeCallFailed   = "call_failed"  // 422: the module command failed (see kind, violation)
	CodeNotApproved  = "not_approved" // 409: the module's approval does not hold (reinstall)
	CodeUnavailable  = "unavailable"  // 503: the daemon serves no workflows
	CodeInternal     = "internal"     // 500: anything else
	CodeWorkflow     = "workflow"     // 422: the workflow is invalid or failed
)

// APIError is the body of every error answer: {"error": APIError}.
type APIError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	// For call_failed: the host's error kind (command, unknown, crash,
	// timeout, fault), the module's own message and the denial that made the
	// call fail, if any.
	Module    string             `json:"module,omitempty"`
	Command   string             `json:"command,omitempty"`
	Kind      host.ErrorKind     `json:"kind,omitempty"`
	Detail    string             `json:"detail,omitempty"`
	Violation *sandbox.Violation `json:"violation,omitempty"`
	// Limit is the first refusal over a limit during the call, if any.
	Limit *APILimit `json:"limit,omitempty"`
}

// APILimit is a *sandbox.LimitError on the wire, with the keys of a
// violation: Bytes says Limit counts bytes, Key is the setting that raises
// it and KeyIn the file it is set in ("manifest" or "config").
type APILimit struct {
	Module     string             `json:"module"`
	Capability sandbox.Capability `json:"capability"`
	Target     string             `json:"target"`
	Reason     string             `json:"reason"`
	Limit      int64              `json:"limit,omitempty"`
	Bytes      bool               `json:"bytes,omitempty"`
	Key        string             `json:"key,omitempty"`
	KeyIn      sandbox.KeyFile    `json:"key_in,omitempty"`
}

func apiLimit(le *sandbox.LimitError) *APILimit {
	if le == nil {
		return nil
	}
	return &APILimit{Module: le.Module, Capability: le.Capability, Target: le.Target, Reason: le.Reason, Limit: le.Limit,
		Bytes: le.Bytes, Key: le.Key, KeyIn: le.KeyIn}
}

func (l *APILimit) err() *sandbox.LimitError {
	if l == nil {
		return nil
	}
	return &sandbox.LimitError{Module: l.Module, Capability: l.Capability, Target: l.Target, Reason: l.Reason, Limit: l.Limit,
		Bytes: l.Bytes, Key: l.Key, KeyIn: l.KeyIn}
}

func (e *APIError) Error() string { return e.Message }

// status is the HTTP status that goes with e's code.
func (e *APIError) status() int {
	switch e.Code {
	case CodeBadRequest:
		return http.StatusBadRequest
	case CodeUnauthorized:
		return http.StatusUnauthorized
	case CodeForbidden:
		return http.StatusForbidden
	case CodeNotFound:
		return http.StatusNotFound
	case CodeTooLarge:
		return http.StatusRequestEntityTooLarge
	case CodeCallFailed, CodeWorkflow:
		return http.StatusUnprocessableEntity
	case CodeNotApproved:
		return http.StatusConflict
	case CodeUnavailable:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// Err turns an API error back into the error the station would have
// returned in process, so that a client maps it to the same exit code: a
// *host.CallError (wrapping its *sandbox.Violation) for a failed call, a
// bare *sandbox.Violation, or the APIError itself.
func (e *APIError) Err() error {
	switch {
	case e.Code == CodeCallFailed && e.Kind != "":
		return &host.CallError{Module: e.Module, Command: e.Command, Kind: e.Kind, Msg: e.Detail, Violation: e.Violation, Limit: e.Limit.err()}
	case e.Code == CodeCallFailed && e.Violation != nil:
		return e.Violation
	case e.Code == CodeNotApproved:
		return fmt.Errorf("%s: %w", e.Message, station.ErrNotApproved)
	case e.Code == CodeWorkflow:
		we := &workflowError{msg: e.Message}
		if e.Kind != "" {
			we.call = &host.CallError{Module: e.Module, Command: e.Command, Kind: e.Kind, Msg: e.Detail, Violation: e.Violation, Limit: e.Limit.err()}
		} else if e.Violation != nil {
			we.call = e.Violation
		}
		return we
	}
	return e
}

type errorBody struct {
	Error *APIError `json:"error"`
}

func writeError(w http.ResponseWriter, status int, e *APIError) {
	writeJSON(w, status, errorBody{Error: e})
}

// writeFailure maps an error from the station to an answer. It is the only
// place that does.
func writeFailure(w http.ResponseWriter, log *slog.Logger, err error) {
	var ce *host.CallError
	var v *sandbox.Violation
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &ce):
		writeError(w, http.StatusUnprocessableEntity, &APIError{Code: CodeCallFailed, Message: err.Error(), Module: ce.Module, Command: ce.Command, Kind: ce.Kind, Detail: ce.Msg, Violation: ce.Violation, Limit: apiLimit(ce.Limit)})
	case errors.As(err, &v):
		writeError(w, http.StatusUnprocessableEntity, &APIError{Code: CodeCallFailed, Message: err.Error(), Module: v.Module, Violation: v})
	case errors.Is(err, store.ErrNotFound), errors.Is(err, host.ErrUnknownModule):
		writeError(w, http.StatusNotFound, &APIError{Code: CodeNotFound, Message: err.Error()})
	case errors.Is(err, station.ErrNotApproved):
		writeError(w, http.StatusConflict, &APIError{Code: CodeNotApproved, Message: err.Error()})
	case errors.As(err, &mbe):
		writeError(w, http.StatusRequestEntityTooLarge, &APIError{Code: CodeTooLarge, Message: err.Error()})
	default:
		log.Warn("daemon: request failed", "err", err)
		writeError(w, http.StatusInternalServerError, &APIError{Code: CodeInternal, Message: err.Error()})
	}
}
