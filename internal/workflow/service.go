package workflow

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"

	"github.com/station-dev/station/internal/station"
	"github.com/station-dev/station/internal/store"
)

// Service is the workflow engine of an open station: module steps through
// Station.Run (the one dispatch entry point), llm steps through the
// station's own LLM client, runs recorded in its store. `station workflow`
// uses it in process; `station serve` serves it on /v1/workflows (Daemon),
// and Remote is its client there.
type Service struct {
	Station *station.Station
	Engine  *Engine
	// Provider describes the LLM provider llm steps use; "" when none.
	Provider string
	// LLMErr is why the configured provider cannot be used, if it cannot.
	LLMErr error
}

// NewService builds the workflow engine of s (getenv reads the LLM
// settings, as the station did when it opened) and marks runs whose process
// is gone as interrupted.
func NewService(ctx context.Context, s *station.Station, getenv func(string) string) (*Service, error) {
	v := &Service{Station: s, Engine: &Engine{Run: s.Run, Store: s.Store}}
	if v.LLMErr = s.CheckLLM(); v.LLMErr == nil && s.LLM != nil {
		v.Engine.LLM = s.LLM
		if set, err := s.Config.LLMSettings(getenv); err == nil {
			v.Provider = set.BaseURL
			if set.Model != "" {
				v.Provider += " (model " + set.Model + ")"
			}
		}
	}
	if _, err := v.Engine.Recover(ctx); err != nil {
		return nil, err
	}
	return v, nil
}

// LoadFile is Load, with the workflow's File made absolute: a run records
// it, and resume reads the file from there.
func LoadFile(path string) (*Workflow, error) {
	wf, err := Load(path)
	if err != nil {
		return nil, err
	}
	if abs, err := filepath.Abs(path); err == nil {
		wf.File = abs
	}
	return wf, nil
}

// ErrNoRun is wrapped by the error for a run id the store does not have
// (with store.ErrNotFound).
var ErrNoRun = errors.New("no such run")

// ParseRunID reads a run id as a person or a client wrote it.
func ParseRunID(s string) (int64, error) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id <= 0 {
		return 0, fmt.Errorf("%s is not a run id", quote(s))
	}
	return id, nil
}

// Check runs Check against the station's installed modules and its LLM
// provider.
func (v *Service) Check(ctx context.Context, wf *Workflow) (*Report, error) {
	return Check(ctx, wf, stationModules{v.Station}, v.Provider, v.LLMErr)
}

// Start checks wf and runs it with inputs to the end, calling events (if
// set) with each progress event. The result is nil when nothing was
// recorded: the check failed, or the inputs are wrong.
func (v *Service) Start(ctx context.Context, wf *Workflow, inputs map[string]any, events func(Event)) (*Result, error) {
	if _, err := v.Check(ctx, wf); err != nil {
		return nil, err
	}
	return v.engine(events).Start(ctx, wf, inputs)
}

// Resume resumes run id from its first unfinished step, with the workflow
// file at file ("": the path the run started from), which must be the one
// the run started with. inputs are the run's secret inputs, given again
// (they are not stored); nil when it has none.
func (v *Service) Resume(ctx context.Context, id int64, file string, inputs map[string]any, events func(Event)) (*Result, error) {
	if file == "" {
		run, err := v.run(ctx, id)
		if err != nil {
			return nil, err
		}
		file = run.File
	}
	wf, err := LoadFile(file)
	if err != nil {
		return nil, err
	}
	return v.resume(ctx, wf, id, inputs, events)
}

func (v *Service) resume(ctx context.Context, wf *Workflow, id int64, inputs map[string]any, events func(Event)) (*Result, error) {
	if _, err := v.Check(ctx, wf); err != nil {
		return nil, err
	}
	if _, err := v.Engine.Recover(ctx); err != nil {
		return nil, err
	}
	return v.engine(events).Resume(ctx, wf, id, inputs)
}

// engine is a copy of the engine with its own event sink, for one run.
func (v *Service) engine(events func(Event)) *Engine {
	eng := *v.Engine
	eng.Events = events
	return &eng
}

// Runs lists the newest runs (at most limit), newest first.
func (v *Service) Runs(ctx context.Context, limit int) ([]store.WorkflowRun, error) {
	if _, err := v.Engine.Recover(ctx); err != nil {
		return nil, err
	}
	runs, err := v.Station.Store.WorkflowRuns(ctx, limit)
	if runs == nil {
		runs = []store.WorkflowRun{}
	}
	return runs, err
}

// ShownRun is a run with the audit records of each attempt's module call,
// by trace: what `station workflow show` prints.
type ShownRun struct {
	store.WorkflowRun
	Audit map[string][]store.AuditRecord `json:"audit"`
}

// Show reads run id with the audit records of each attempt's module call.
func (v *Service) Show(ctx context.Context, id int64) (*ShownRun, error) {
	if _, err := v.Engine.Recover(ctx); err != nil {
		return nil, err
	}
	run, err := v.run(ctx, id)
	if err != nil {
		return nil, err
	}
	shown := &ShownRun{WorkflowRun: run, Audit: map[string][]store.AuditRecord{}}
	for _, st := range run.Steps {
		for _, at := range st.AttemptLog {
			recs, err := v.Station.Store.Audit(ctx, store.AuditFilter{Trace: at.Trace})
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

// run reads run id; an id the store does not have is ErrNoRun.
func (v *Service) run(ctx context.Context, id int64) (store.WorkflowRun, error) {
	run, err := v.Station.Store.WorkflowRun(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		err = &noRunError{err}
	}
	return run, err
}

// noRunError is the store's error for a run it does not have, marked
// ErrNoRun.
type noRunError struct{ err error }

func (e *noRunError) Error() string   { return e.err.Error() }
func (e *noRunError) Unwrap() []error { return []error{ErrNoRun, e.err} }

// stationModules answers Check from the station's store, with the same
// checks the station makes before it loads a module.
type stationModules struct{ s *station.Station }

func (m stationModules) Module(ctx context.Context, id string) (*ModuleInfo, error) {
	in, err := m.s.Verify(ctx, id)
	if in == nil {
		return nil, err
	}
	info := &ModuleInfo{ID: id, Version: in.Version}
	if in.Manifest != nil { // the approval and the manifest could be read
		info.Permissions = in.Approved.Describe(m.s.ChildConfinement(in.Approved))
		for _, c := range in.Manifest.Commands {
			info.Commands = append(info.Commands, c.Name)
		}
		for _, sec := range in.Manifest.Requires.Secrets {
			_, set, lerr := m.s.Secrets.Lookup(id, sec.Name)
			if lerr != nil {
				return nil, fmt.Errorf("module %s: secret %s: %w", id, sec.Name, lerr)
			}
			info.Secrets = append(info.Secrets, SecretInfo{Name: sec.Name, Hosts: sec.Hosts, Set: set})
		}
	}
	if err != nil {
		info.Problem = err.Error()
	}
	return info, nil
}
