package store

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/station-dev/station/internal/sqldb"
)

// LLMRecord is one row of llm_usage: a completion the station paid for,
// for a module's llm_complete call or (with Module "") for the station's own
// use, such as a workflow's llm step (FinishStepAttempt records those).
type LLMRecord struct {
	ID               int64     `json:"id"`
	Time             time.Time `json:"time"`
	Module           string    `json:"module"` // "" for the station's own calls
	Trace            string    `json:"trace,omitempty"`
	Model            string    `json:"model"`
	PromptTokens     int       `json:"prompt_tokens"`
	CompletionTokens int       `json:"completion_tokens"`
}

// Tokens returns the prompt and completion tokens of u together.
func (u LLMRecord) Tokens() int64 { return int64(u.PromptTokens) + int64(u.CompletionTokens) }

// LLMTotal is what a module (or the station, Module "") spent in a period.
type LLMTotal struct {
	Module           string `json:"module"`
	Calls            int64  `json:"calls"`
	PromptTokens     int64  `json:"prompt_tokens"`
	CompletionTokens int64  `json:"completion_tokens"`
}

// AppendLLMUsage stores one completion's usage. It is written at once, not
// through the audit queue: a module's budget is read from these rows.
func (s *Store) AppendLLMUsage(ctx context.Context, u LLMRecord) error {
	at, err := sqldb.ToNanos(u.Time)
	if err != nil {
		return fmt.Errorf("append llm usage of %q: %w", u.Module, err)
	}
	if u.PromptTokens < 0 || u.CompletionTokens < 0 {
		return fmt.Errorf("append llm usage of %q: negative token count", u.Module)
	}
	err = s.tx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO llm_usage (time, module, trace, model, prompt_tokens, completion_tokens) VALUES (?, ?, ?, ?, ?, ?)`,
			at, u.Module, u.Trace, u.Model, u.PromptTokens, u.CompletionTokens)
		return err
	})
	if err != nil {
		return fmt.Errorf("append llm usage of %q: %w", u.Module, err)
	}
	return nil
}

// LLMTokensSince returns the prompt and completion tokens module ("" for the
// station) has used at or after since (the zero time: ever).
func (s *Store) LLMTokensSince(ctx context.Context, module string, since time.Time) (int64, error) {
	at, err := sinceNanos(since)
	if err != nil {
		return 0, fmt.Errorf("read llm usage of %q: %w", module, err)
	}
	var n int64
	err = s.db.QueryRowContext(ctx, `SELECT coalesce(sum(prompt_tokens + completion_tokens), 0) FROM llm_usage WHERE module = ? AND time >= ?`, module, at).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("read llm usage of %q: %w", module, err)
	}
	return n, nil
}

// LLMTotals returns, per module ("" for the station), the calls and tokens
// at or after since (the zero time: ever), ordered by module.
func (s *Store) LLMTotals(ctx context.Context, since time.Time) ([]LLMTotal, error) {
	at, err := sinceNanos(since)
	if err != nil {
		return nil, fmt.Errorf("read llm usage: %w", err)
	}
	out, err := sqldb.QueryAll(ctx, s.db, func(r sqldb.Scanner) (LLMTotal, error) {
		var t LLMTotal
		err := r.Scan(&t.Module, &t.Calls, &t.PromptTokens, &t.CompletionTokens)
		return t, err
	}, `SELECT module, count(*), sum(prompt_tokens), sum(completion_tokens) FROM llm_usage WHERE time >= ? GROUP BY module ORDER BY module`, at)
	if err != nil {
		return nil, fmt.Errorf("read llm usage: %w", err)
	}
	return out, nil
}

// LLMRecords returns the newest limit usage records of module ("" for the
// station's own), oldest first; limit 0 means 1000.
func (s *Store) LLMRecords(ctx context.Context, module string, limit int) ([]LLMRecord, error) {
	if limit <= 0 {
		limit = 1000
	}
	out, err := sqldb.QueryAll(ctx, s.db, func(r sqldb.Scanner) (LLMRecord, error) {
		var u LLMRecord
		var at int64
		if err := r.Scan(&u.ID, &at, &u.Module, &u.Trace, &u.Model, &u.PromptTokens, &u.CompletionTokens); err != nil {
			return LLMRecord{}, err
		}
		u.Time = sqldb.FromNanos(at)
		return u, nil
	}, `SELECT id, time, module, trace, model, prompt_tokens, completion_tokens FROM llm_usage WHERE module = ? ORDER BY id DESC LIMIT ?`, module, limit)
	if err != nil {
		return nil, fmt.Errorf("read llm usage of %q: %w", module, err)
	}
	slices.Reverse(out)
	return out, nil
}

// nanosPerDay is one UTC day in the time column's unit.
const nanosPerDay = int64(24 * time.Hour)

// LLMDay is what a module (or the station, Module "") spent on one UTC day.
type LLMDay struct {
	Module           string    `json:"module"`
	Day              time.Time `json:"day"` // midnight UTC
	Calls            int64     `json:"calls"`
	PromptTokens     int64     `json:"prompt_tokens"`
	CompletionTokens int64     `json:"completion_tokens"`
}

// Tokens returns the prompt and completion tokens of d together.
func (d LLMDay) Tokens() int64 { return d.PromptTokens + d.CompletionTokens }

// LLMDaily returns, per module ("" for the station) and UTC day, the calls
// and tokens at or after since (the zero time: ever), ordered by module,
// then day. Days without a call have no row.
func (s *Store) LLMDaily(ctx context.Context, since time.Time) ([]LLMDay, error) {
	at, err := sinceNanos(since)
	if err != nil {
		return nil, fmt.Errorf("read llm usage by day: %w", err)
	}
	out, err := sqldb.QueryAll(ctx, s.db, func(r sqldb.Scanner) (LLMDay, error) {
		var d LLMDay
		var day int64
		err := r.Scan(&d.Module, &day, &d.Calls, &d.PromptTokens, &d.CompletionTokens)
		d.Day = time.Unix(day*int64(24*time.Hour/time.Second), 0).UTC()
		return d, err
	}, `SELECT module, CASE WHEN time >= 0 THEN time / ?1 ELSE (time + 1) / ?1 - 1 END AS day, count(*), sum(prompt_tokens), sum(completion_tokens)
		FROM llm_usage WHERE time >= ?2 GROUP BY module, day ORDER BY module, day`, nanosPerDay, at)
	if err != nil {
		return nil, fmt.Errorf("read llm usage by day: %w", err)
	}
	return out, nil
}

// LLMWorkflowTotal is what the LLM calls made by a workflow's runs spent:
// its llm steps (the station's own use) and the llm_complete calls of the
// modules its steps ran, found by the trace of the step's attempt
// ("run/ID/step/STEP/attempt/N", workflow.Trace) and grouped by the run's
// workflow name.
type LLMWorkflowTotal struct {
	Workflow         string `json:"workflow"`
	Runs             int64  `json:"runs"` // the runs that made a call
	Calls            int64  `json:"calls"`
	PromptTokens     int64  `json:"prompt_tokens"`
	CompletionTokens int64  `json:"completion_tokens"`
}

// Tokens returns the prompt and completion tokens of t together.
func (t LLMWorkflowTotal) Tokens() int64 { return t.PromptTokens + t.CompletionTokens }

// LLMWorkflowTotals returns, per workflow, the calls and tokens of its runs
// at or after since (the zero time: ever), ordered by workflow. A call whose
// trace names no recorded run is in none.
func (s *Store) LLMWorkflowTotals(ctx context.Context, since time.Time) ([]LLMWorkflowTotal, error) {
	at, err := sinceNanos(since)
	if err != nil {
		return nil, fmt.Errorf("read llm usage by workflow: %w", err)
	}
	// The run id is the trace's digits between "run/" and "/step/"; a
	// trace with anything else there is no run's.
	out, err := sqldb.QueryAll(ctx, s.db, func(r sqldb.Scanner) (LLMWorkflowTotal, error) {
		var t LLMWorkflowTotal
		err := r.Scan(&t.Workflow, &t.Runs, &t.Calls, &t.PromptTokens, &t.CompletionTokens)
		return t, err
	}, `WITH traced AS (
			SELECT substr(trace, 5, instr(substr(trace, 5), '/step/') - 1) AS run, prompt_tokens, completion_tokens
			FROM llm_usage WHERE time >= ? AND trace GLOB 'run/*/step/*'
		)
		SELECT w.workflow, count(DISTINCT w.id), count(*), sum(t.prompt_tokens), sum(t.completion_tokens)
		FROM traced t JOIN workflow_runs w ON w.id = CAST(t.run AS INTEGER)
		WHERE t.run != '' AND t.run NOT GLOB '*[^0-9]*' AND length(t.run) <= 18
		GROUP BY w.workflow ORDER BY w.workflow`, at)
	if err != nil {
		return nil, fmt.Errorf("read llm usage by workflow: %w", err)
	}
	return out, nil
}

// sinceNanos is sqldb.ToNanos for the lower bound of a query: a time
// before the representable range means "from the start".
func sinceNanos(t time.Time) (int64, error) {
	if t.Before(time.Unix(0, math.MinInt64)) {
		return math.MinInt64, nil
	}
	return sqldb.ToNanos(t)
}
