package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/station-dev/station/internal/sqldb"
)

// The workflow run history. A run and its steps are written as the run
// progresses, each state transition in one transaction, so a station killed
// at any moment leaves a record that says exactly which steps finished (with
// their outputs) and which did not. Every write names the run's owner (the
// process running it) and is refused once another process has taken the run
// over, so a process that was wrongly thought dead cannot overwrite a resumed
// run.

// RunStatus is the state of a workflow run.
type RunStatus string

// The states of a workflow run.
const (
	RunRunning     RunStatus = "running"
	RunSucceeded   RunStatus = "succeeded"
	RunFailed      RunStatus = "failed"
	RunInterrupted RunStatus = "interrupted" // its process stopped mid-run; resumable
)

// StepStatus is the state of a workflow step (or of one attempt of it).
type StepStatus string

// The states of a workflow step.
const (
	StepPending   StepStatus = "pending"
	StepRunning   StepStatus = "running"
	StepSucceeded StepStatus = "succeeded"
	StepFailed    StepStatus = "failed"
	StepSkipped   StepStatus = "skipped" // its if condition was false
)

// Finished reports whether a step in status s is done for good in a run
// that is resumed: succeeded, skipped, or failed with continued set.
func (s StepStatus) Finished(continued bool) bool {
	return s == StepSucceeded || s == StepSkipped || (s == StepFailed && continued)
}

// ErrNotOwner is wrapped by the errors of writes to a run that the writer no
// longer owns (it finished, or another process resumed it).
var ErrNotOwner = errors.New("the run is not running in this process")

// WorkflowRun is one run of a workflow.
type WorkflowRun struct {
	ID       int64  `json:"id"`
	Workflow string `json:"workflow"`
	// File is the absolute path of the workflow file, and Digest its
	// sha256 digest when the run started.
	File   string          `json:"file"`
	Digest string          `json:"digest"`
	Inputs json.RawMessage `json:"inputs"`
	Status RunStatus       `json:"status"`
	// Output is the run's output (JSON) once it succeeded.
	Output json.RawMessage `json:"output,omitempty"`
	Error  string          `json:"error,omitempty"`
	// Owner names the process that runs (or last ran) the run.
	Owner      string    `json:"owner"`
	StartedAt  time.Time `json:"started_at"`
	UpdatedAt  time.Time `json:"updated_at"`
	FinishedAt time.Time `json:"finished_at"` // zero while unfinished
	// Resumes counts how often the run was resumed.
	Resumes int `json:"resumes"`
	// Steps are the run's steps in file order (WorkflowRun fills them;
	// WorkflowRuns does not).
	Steps []WorkflowStep `json:"steps,omitempty"`
}

// WorkflowStep is one step of a run.
type WorkflowStep struct {
	Step      string     `json:"step"`
	Position  int        `json:"position"`
	Uses      string     `json:"uses"`
	Status    StepStatus `json:"status"`
	Continued bool       `json:"continued,omitempty"`
	// Input is the JSON the last attempt was given; Output the JSON the
	// step produced once it succeeded.
	Input      json.RawMessage `json:"input,omitempty"`
	Output     json.RawMessage `json:"output,omitempty"`
	Error      string          `json:"error,omitempty"`
	Attempts   int             `json:"attempts"`
	StartedAt  time.Time       `json:"started_at"`
	FinishedAt time.Time       `json:"finished_at"`
	// AttemptLog holds every attempt, oldest first.
	AttemptLog []StepAttempt `json:"attempt_log,omitempty"`
}

// StepAttempt is one attempt of a step.
type StepAttempt struct {
	Attempt int `json:"attempt"`
	// Trace is the trace the attempt's module call carried
	// (sandbox.WithTrace): its audit records are AuditFilter{Trace: Trace}.
	Trace      string     `json:"trace"`
	Status     StepStatus `json:"status"`
	Error      string     `json:"error,omitempty"`
	ErrorKind  string     `json:"error_kind,omitempty"`
	StartedAt  time.Time  `json:"started_at"`
	FinishedAt time.Time  `json:"finished_at"`
}

// NewWorkflowStep declares a step of a new run.
type NewWorkflowStep struct {
	Step string
	Uses string
}

// NewWorkflowRun is what CreateWorkflowRun records.
type NewWorkflowRun struct {
	Workflow, File, Digest string
	Inputs                 []byte // JSON object
	Owner                  string
	Steps                  []NewWorkflowStep // in file order
	At                     time.Time
}

// CreateWorkflowRun records a new run, running and owned by r.Owner, with
// every step pending, in one transaction, and returns its id.
func (s *Store) CreateWorkflowRun(ctx context.Context, r NewWorkflowRun) (int64, error) {
	at, err := sqldb.ToNanos(r.At)
	if err != nil {
		return 0, fmt.Errorf("create workflow run: %w", err)
	}
	if !json.Valid(r.Inputs) {
		return 0, fmt.Errorf("create workflow run: inputs are not valid JSON")
	}
	var id int64
	err = s.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO workflow_runs (workflow, file, digest, inputs, status, owner, started_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, r.Workflow, r.File, r.Digest, blob(r.Inputs), RunRunning, r.Owner, at, at)
		if err != nil {
			return err
		}
		if id, err = res.LastInsertId(); err != nil {
			return err
		}
		for i, st := range r.Steps {
			if _, err := tx.ExecContext(ctx, `INSERT INTO workflow_steps (run_id, step, position, uses, status) VALUES (?, ?, ?, ?, ?)`,
				id, st.Step, i, st.Uses, StepPending); err != nil {
				return fmt.Errorf("step %s: %w", st.Step, err)
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("create workflow run: %w", err)
	}
	return id, nil
}

// owned fails unless run id is running and owned by owner.
func owned(ctx context.Context, tx *sql.Tx, id int64, owner string) error {
	var status RunStatus
	var o string
	err := tx.QueryRowContext(ctx, `SELECT status, owner FROM workflow_runs WHERE id = ?`, id).Scan(&status, &o)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("run %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return err
	}
	if status != RunRunning || o != owner {
		return fmt.Errorf("run %d is %s (owner %s): %w", id, status, o, ErrNotOwner)
	}
	return nil
}

// touch sets the run's updated_at.
func touch(ctx context.Context, tx *sql.Tx, id, at int64) error {
	_, err := tx.ExecContext(ctx, `UPDATE workflow_runs SET updated_at = ? WHERE id = ?`, at, id)
	return err
}

// AttemptStart is what StartStepAttempt records.
type AttemptStart struct {
	RunID   int64
	Owner   string
	Step    string
	Attempt int    // the step's stored attempts + 1
	Trace   string // the trace of the attempt's module call
	Input   []byte // JSON
	At      time.Time
}

// StartStepAttempt records that attempt a.Attempt of a step started: the
// step is running with input a.Input, and the attempt is logged. The
// attempt number must follow the stored one, so two writers cannot both
// start the same attempt.
func (s *Store) StartStepAttempt(ctx context.Context, a AttemptStart) error {
	at, err := sqldb.ToNanos(a.At)
	if err != nil {
		return fmt.Errorf("start step %s: %w", a.Step, err)
	}
	if !json.Valid(a.Input) {
		return fmt.Errorf("start step %s: input is not valid JSON", a.Step)
	}
	err = s.tx(ctx, func(tx *sql.Tx) error {
		if err := owned(ctx, tx, a.RunID, a.Owner); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `UPDATE workflow_steps SET status = ?, input = ?, output = NULL, error = '', continued = 0,
				attempts = ?, started_at = CASE WHEN attempts = 0 OR status != 'running' THEN ? ELSE started_at END, finished_at = 0
			WHERE run_id = ? AND step = ? AND attempts = ? AND status IN ('pending', 'running')`,
			StepRunning, a.Input, a.Attempt, at, a.RunID, a.Step, a.Attempt-1)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return fmt.Errorf("attempt %d does not follow the stored attempts, or the step is finished", a.Attempt)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO workflow_attempts (run_id, step, attempt, trace, status, started_at) VALUES (?, ?, ?, ?, ?, ?)`,
			a.RunID, a.Step, a.Attempt, a.Trace, StepRunning, at); err != nil {
			return err
		}
		return touch(ctx, tx, a.RunID, at)
	})
	if err != nil {
		return fmt.Errorf("run %d: start step %s attempt %d: %w", a.RunID, a.Step, a.Attempt, err)
	}
	return nil
}

// LLMUsage is what an LLM call of a step cost; it is stored in llm_usage
// (as the station's own spending: no module) with the attempt's trace.
type LLMUsage struct {
	Model            string
	PromptTokens     int
	CompletionTokens int
}

// AttemptEnd is what FinishStepAttempt records.
type AttemptEnd struct {
	RunID   int64
	Owner   string
	Step    string
	Attempt int
	// Err is "" when the attempt succeeded; ErrKind classifies a failure
	// (for example "violation", "timeout", "command").
	Err, ErrKind string
	// Output is the step's output when the attempt succeeded.
	Output []byte
	// Final finishes the step: succeeded if Err is "", failed otherwise.
	// A failed attempt that will be retried is not final.
	Final bool
	// Continued marks a final failure the run goes on after.
	Continued bool
	// Usage, if set, is recorded in llm_usage in the same transaction.
	Usage *LLMUsage
	At    time.Time
}

// FinishStepAttempt records the end of an attempt and, if it is final, of
// its step, in one transaction.
func (s *Store) FinishStepAttempt(ctx context.Context, a AttemptEnd) error {
	at, err := sqldb.ToNanos(a.At)
	if err != nil {
		return fmt.Errorf("finish step %s: %w", a.Step, err)
	}
	if a.Err == "" && !json.Valid(a.Output) {
		return fmt.Errorf("finish step %s: output is not valid JSON", a.Step)
	}
	status := StepSucceeded
	var output []byte
	if a.Err != "" {
		status = StepFailed
	} else {
		output = a.Output
	}
	err = s.tx(ctx, func(tx *sql.Tx) error {
		if err := owned(ctx, tx, a.RunID, a.Owner); err != nil {
			return err
		}
		var trace string
		err := tx.QueryRowContext(ctx, `SELECT trace FROM workflow_attempts WHERE run_id = ? AND step = ? AND attempt = ? AND status = ?`,
			a.RunID, a.Step, a.Attempt, StepRunning).Scan(&trace)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("attempt %d is not running", a.Attempt)
		}
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE workflow_attempts SET status = ?, error = ?, error_kind = ?, finished_at = ?
			WHERE run_id = ? AND step = ? AND attempt = ?`, status, a.Err, a.ErrKind, at, a.RunID, a.Step, a.Attempt); err != nil {
			return err
		}
		if a.Final {
			if _, err := tx.ExecContext(ctx, `UPDATE workflow_steps SET status = ?, output = ?, error = ?, continued = ?, finished_at = ?
				WHERE run_id = ? AND step = ?`, status, output, a.Err, a.Continued, at, a.RunID, a.Step); err != nil {
				return err
			}
		} else if _, err := tx.ExecContext(ctx, `UPDATE workflow_steps SET error = ? WHERE run_id = ? AND step = ?`, a.Err, a.RunID, a.Step); err != nil {
			return err
		}
		if u := a.Usage; u != nil {
			if _, err := tx.ExecContext(ctx, `INSERT INTO llm_usage (time, module, trace, model, prompt_tokens, completion_tokens) VALUES (?, '', ?, ?, ?, ?)`,
				at, trace, u.Model, u.PromptTokens, u.CompletionTokens); err != nil {
				return err
			}
		}
		return touch(ctx, tx, a.RunID, at)
	})
	if err != nil {
		return fmt.Errorf("run %d: finish step %s attempt %d: %w", a.RunID, a.Step, a.Attempt, err)
	}
	return nil
}

// SkipStep records that a pending step was skipped (its condition was
// false).
func (s *Store) SkipStep(ctx context.Context, runID int64, owner, step string, at time.Time) error {
	n, err := sqldb.ToNanos(at)
	if err != nil {
		return fmt.Errorf("skip step %s: %w", step, err)
	}
	err = s.tx(ctx, func(tx *sql.Tx) error {
		if err := owned(ctx, tx, runID, owner); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `UPDATE workflow_steps SET status = ?, started_at = ?, finished_at = ?, input = NULL, output = NULL, error = ''
			WHERE run_id = ? AND step = ? AND status = ?`, StepSkipped, n, n, runID, step, StepPending)
		if err != nil {
			return err
		}
		if c, _ := res.RowsAffected(); c != 1 {
			return errors.New("the step is not pending")
		}
		return touch(ctx, tx, runID, n)
	})
	if err != nil {
		return fmt.Errorf("run %d: skip step %s: %w", runID, step, err)
	}
	return nil
}

// FinishWorkflowRun records the end of a run: succeeded (with output),
// failed or interrupted (with errMsg).
func (s *Store) FinishWorkflowRun(ctx context.Context, id int64, owner string, status RunStatus, output []byte, errMsg string, at time.Time) error {
	n, err := sqldb.ToNanos(at)
	if err != nil {
		return fmt.Errorf("finish run %d: %w", id, err)
	}
	switch status {
	case RunSucceeded:
		if !json.Valid(output) {
			return fmt.Errorf("finish run %d: output is not valid JSON", id)
		}
	case RunFailed, RunInterrupted:
		output = nil
	default:
		return fmt.Errorf("finish run %d: %q is not a final status", id, status)
	}
	finished := n
	if status == RunInterrupted {
		finished = 0
	}
	err = s.tx(ctx, func(tx *sql.Tx) error {
		if err := owned(ctx, tx, id, owner); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `UPDATE workflow_runs SET status = ?, output = ?, error = ?, updated_at = ?, finished_at = ? WHERE id = ?`,
			status, output, errMsg, n, finished, id)
		return err
	})
	if err != nil {
		return fmt.Errorf("finish run %d: %w", id, err)
	}
	return nil
}

// ErrDigestChanged is wrapped by ClaimWorkflowRun's error when the workflow
// file no longer has the digest the run started with.
var ErrDigestChanged = errors.New("the workflow file changed since the run started")

// ClaimWorkflowRun takes over an interrupted or failed run for owner, to
// resume it: the run is running again, every unfinished step is pending
// again (its attempts are kept and go on counting), and the run is returned
// as it is then. digest must be the run's digest.
func (s *Store) ClaimWorkflowRun(ctx context.Context, id int64, owner, digest string, at time.Time) (WorkflowRun, error) {
	n, err := sqldb.ToNanos(at)
	if err != nil {
		return WorkflowRun{}, fmt.Errorf("resume run %d: %w", id, err)
	}
	err = s.tx(ctx, func(tx *sql.Tx) error {
		var status RunStatus
		var d string
		err := tx.QueryRowContext(ctx, `SELECT status, digest FROM workflow_runs WHERE id = ?`, id).Scan(&status, &d)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		switch status {
		case RunInterrupted, RunFailed:
		case RunRunning:
			return errors.New("it is still running")
		default:
			return fmt.Errorf("it %s; only an interrupted or failed run can be resumed", status)
		}
		if d != digest {
			return fmt.Errorf("%w (it had %s, it has %s now)", ErrDigestChanged, d, digest)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE workflow_runs SET status = ?, owner = ?, output = NULL, error = '', updated_at = ?, finished_at = 0, resumes = resumes + 1 WHERE id = ?`,
			RunRunning, owner, n, id); err != nil {
			return err
		}
		// Attempts that were running when the process stopped never
		// finished: record that, then make every unfinished step pending.
		if _, err := tx.ExecContext(ctx, `UPDATE workflow_attempts SET status = ?, error = 'interrupted', error_kind = 'interrupted', finished_at = ?
			WHERE run_id = ? AND status = ?`, StepFailed, n, id, StepRunning); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE workflow_steps SET status = ?, output = NULL, finished_at = 0
			WHERE run_id = ? AND NOT (status IN ('succeeded', 'skipped') OR (status = 'failed' AND continued = 1))`, StepPending, id)
		return err
	})
	if err != nil {
		return WorkflowRun{}, fmt.Errorf("resume run %d: %w", id, err)
	}
	return s.WorkflowRun(ctx, id)
}

// InterruptOrphanedRuns marks every running run whose process is gone
// (alive returns false for it) as interrupted, each in its own transaction
// that re-checks the run is unchanged, and returns their ids.
func (s *Store) InterruptOrphanedRuns(ctx context.Context, alive func(WorkflowRun) bool, at time.Time) ([]int64, error) {
	n, err := sqldb.ToNanos(at)
	if err != nil {
		return nil, fmt.Errorf("recover workflow runs: %w", err)
	}
	runs, err := s.queryRuns(ctx, `WHERE status = 'running' ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("recover workflow runs: %w", err)
	}
	var ids []int64
	for _, r := range runs {
		if alive(r) {
			continue
		}
		err := s.tx(ctx, func(tx *sql.Tx) error {
			res, err := tx.ExecContext(ctx, `UPDATE workflow_runs SET status = ?, error = ?, updated_at = ? WHERE id = ? AND status = ? AND owner = ?`,
				RunInterrupted, "the station stopped during the run (resume it with: station workflow resume "+fmt.Sprint(r.ID)+")", n, r.ID, RunRunning, r.Owner)
			if err != nil {
				return err
			}
			if c, _ := res.RowsAffected(); c == 1 {
				ids = append(ids, r.ID)
			}
			return nil
		})
		if err != nil {
			return ids, fmt.Errorf("recover workflow run %d: %w", r.ID, err)
		}
	}
	return ids, nil
}

const runColumns = `id, workflow, file, digest, inputs, status, output, error, owner, started_at, updated_at, finished_at, resumes`

func scanRun(r sqldb.Scanner) (WorkflowRun, error) {
	var w WorkflowRun
	var inputs, output []byte
	var started, updated, finished int64
	if err := r.Scan(&w.ID, &w.Workflow, &w.File, &w.Digest, &inputs, &w.Status, &output, &w.Error, &w.Owner, &started, &updated, &finished, &w.Resumes); err != nil {
		return WorkflowRun{}, err
	}
	w.Inputs, w.Output = inputs, output
	w.StartedAt, w.UpdatedAt = sqldb.FromNanos(started), sqldb.FromNanos(updated)
	if finished != 0 {
		w.FinishedAt = sqldb.FromNanos(finished)
	}
	return w, nil
}

func (s *Store) queryRuns(ctx context.Context, tail string, args ...any) ([]WorkflowRun, error) {
	return sqldb.QueryAll(ctx, s.db, scanRun, `SELECT `+runColumns+` FROM workflow_runs `+tail, args...)
}

// WorkflowRuns returns the newest limit runs (without their steps), newest
// first; limit 0 means 100.
func (s *Store) WorkflowRuns(ctx context.Context, limit int) ([]WorkflowRun, error) {
	if limit <= 0 {
		limit = 100
	}
	runs, err := s.queryRuns(ctx, `ORDER BY id DESC LIMIT ?`, limit)
	if err != nil {
		return nil, fmt.Errorf("list workflow runs: %w", err)
	}
	return runs, nil
}

// WorkflowRun returns run id with its steps and their attempts; the error
// wraps ErrNotFound when there is none. It reads in one transaction, so the
// run and its steps are one consistent snapshot.
func (s *Store) WorkflowRun(ctx context.Context, id int64) (WorkflowRun, error) {
	var run WorkflowRun
	err := func() error {
		tx, err := s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
		if err != nil {
			return err
		}
		defer tx.Rollback()
		run, err = sqldb.QueryOne(ctx, tx, scanRun, `SELECT `+runColumns+` FROM workflow_runs WHERE id = ?`, id)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		steps, err := sqldb.QueryAll(ctx, tx, scanStep, `SELECT step, position, uses, status, continued, input, output, error, attempts, started_at, finished_at
			FROM workflow_steps WHERE run_id = ? ORDER BY position`, id)
		if err != nil {
			return err
		}
		index := map[string]int{}
		for _, st := range steps {
			index[st.Step] = len(run.Steps)
			run.Steps = append(run.Steps, st)
		}
		attempts, err := sqldb.QueryAll(ctx, tx, scanAttempt, `SELECT step, attempt, trace, status, error, error_kind, started_at, finished_at
			FROM workflow_attempts WHERE run_id = ? ORDER BY step, attempt`, id)
		if err != nil {
			return err
		}
		for _, a := range attempts {
			if i, ok := index[a.step]; ok {
				run.Steps[i].AttemptLog = append(run.Steps[i].AttemptLog, a.StepAttempt)
			}
		}
		return nil
	}()
	if err != nil {
		return WorkflowRun{}, fmt.Errorf("workflow run %d: %w", id, err)
	}
	return run, nil
}

func scanStep(r sqldb.Scanner) (WorkflowStep, error) {
	var st WorkflowStep
	var input, output []byte
	var started, finished int64
	if err := r.Scan(&st.Step, &st.Position, &st.Uses, &st.Status, &st.Continued, &input, &output, &st.Error, &st.Attempts, &started, &finished); err != nil {
		return WorkflowStep{}, err
	}
	st.Input, st.Output = input, output
	if started != 0 {
		st.StartedAt = sqldb.FromNanos(started)
	}
	if finished != 0 {
		st.FinishedAt = sqldb.FromNanos(finished)
	}
	return st, nil
}

// stepAttempt is an attempt with the step it belongs to.
type stepAttempt struct {
	step string
	StepAttempt
}

func scanAttempt(r sqldb.Scanner) (stepAttempt, error) {
	var a stepAttempt
	var started, finished int64
	if err := r.Scan(&a.step, &a.Attempt, &a.Trace, &a.Status, &a.Error, &a.ErrorKind, &started, &finished); err != nil {
		return stepAttempt{}, err
	}
	a.StartedAt = sqldb.FromNanos(started)
	if finished != 0 {
		a.FinishedAt = sqldb.FromNanos(finished)
	}
	return a, nil
}
