package ui

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/station-dev/station/internal/store"
	"github.com/station-dev/station/internal/workflow"
)

// RunsPageSize is how many of the newest runs the Runs page lists, as
// station workflow runs does by default.
const RunsPageSize = 50

// noWorkflows is what the Runs pages say when the daemon serves no
// workflow engine.
const noWorkflows = "This daemon does not serve workflows, so it shows no runs here: station workflow runs lists them."

// badge is the badge class of a run's or a step's status.
func badge(status string) string {
	switch status {
	case string(store.RunSucceeded):
		return "ok"
	case string(store.RunFailed):
		return "bad"
	case string(store.RunRunning), string(store.RunInterrupted):
		return "warn"
	}
	return ""
}

// resumable reports whether a run in status st may be resumed: the rule
// of store.ClaimWorkflowRun, which station workflow resume goes through
// (and so does resumeRun: this only decides whether to offer it).
func resumable(st store.RunStatus) bool {
	return st == store.RunInterrupted || st == store.RunFailed
}

// runRow is one run on the Runs page.
type runRow struct {
	store.WorkflowRun
	Took time.Duration // 0 while unfinished
}

func (r runRow) Badge() string { return badge(string(r.Status)) }

type runsPageData struct {
	// Served is false when the daemon serves no workflow engine.
	Served bool
	Limit  int
	Runs   []runRow
}

func (s *Server) runsPage(w http.ResponseWriter, r *http.Request) {
	data := runsPageData{Served: s.wf != nil, Limit: RunsPageSize}
	if s.wf == nil {
		s.render(w, r, http.StatusOK, "runs", "Runs", data)
		return
	}
	runs, err := s.wf.Runs(r.Context(), RunsPageSize)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	for _, run := range runs {
		row := runRow{WorkflowRun: run}
		if !run.FinishedAt.IsZero() {
			row.Took = run.FinishedAt.Sub(run.StartedAt)
		}
		data.Runs = append(data.Runs, row)
	}
	s.render(w, r, http.StatusOK, "runs", "Runs", data)
}

// runPageData is one run's timeline.
type runPageData struct {
	Run store.WorkflowRun
	// Took is the run's duration: to its end, or so far (to its last
	// record, or now while it runs) when Finished is false.
	Took      time.Duration
	Finished  bool
	Resumable bool
	// Inputs and Output are the run's JSON documents, indented.
	Inputs, Output string
	Steps          []stepRow
}

func (d runPageData) Badge() string { return badge(string(d.Run.Status)) }

// stepRow is one step of the timeline.
type stepRow struct {
	store.WorkflowStep
	Took time.Duration
	// Offset and Width place the step on the run's span, in percent of
	// the run's duration (Width 0: it never started).
	Offset, Width int
	// InputJSON and OutputJSON are its documents, indented.
	InputJSON, OutputJSON string
	Tries                 []attemptRow
}

func (st stepRow) Badge() string { return badge(string(st.Status)) }

// attemptRow is one attempt of a step, with the sandbox decisions of its
// module call.
type attemptRow struct {
	store.StepAttempt
	Took      time.Duration
	Decisions []auditRow
}

func (a attemptRow) Badge() string { return badge(string(a.Status)) }

// indentJSON is doc indented for a <pre>; a document that does not parse
// is shown as it is.
func indentJSON(doc json.RawMessage) string {
	if len(doc) == 0 {
		return ""
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, doc, "", "  "); err != nil {
		return string(doc)
	}
	return buf.String()
}

// runID reads the {id} of the address, or answers 404.
func (s *Server) runID(w http.ResponseWriter, r *http.Request) (int64, bool) {
	if s.wf == nil {
		s.fail(w, r, http.StatusNotFound, noWorkflows)
		return 0, false
	}
	id, err := workflow.ParseRunID(r.PathValue("id"))
	if err != nil {
		s.fail(w, r, http.StatusNotFound, "There is no such run: "+err.Error()+" (the Runs page lists them).")
		return 0, false
	}
	return id, true
}

// show reads run id as station workflow show does, or answers (404 for a
// run the station does not have).
func (s *Server) show(w http.ResponseWriter, r *http.Request, id int64) (*workflow.ShownRun, bool) {
	s.flushAudit(r)
	shown, err := s.wf.Show(r.Context(), id)
	if errors.Is(err, workflow.ErrNoRun) {
		s.fail(w, r, http.StatusNotFound, fmt.Sprintf("There is no run %d (the Runs page lists them).", id))
		return nil, false
	}
	if err != nil {
		s.failErr(w, r, err)
		return nil, false
	}
	return shown, true
}

func (s *Server) runPage(w http.ResponseWriter, r *http.Request) {
	id, ok := s.runID(w, r)
	if !ok {
		return
	}
	shown, ok := s.show(w, r, id)
	if !ok {
		return
	}
	s.render(w, r, http.StatusOK, "run", "Run "+strconv.FormatInt(id, 10), timeline(shown, s.now()))
}

// timeline lays out a run's steps on its span, at now.
func timeline(shown *workflow.ShownRun, now time.Time) runPageData {
	run := shown.WorkflowRun
	d := runPageData{Run: run, Finished: !run.FinishedAt.IsZero(), Resumable: resumable(run.Status),
		Inputs: indentJSON(run.Inputs), Output: indentJSON(run.Output)}
	// The run's span ends at its end; an unfinished one at its last
	// record (at least its steps' last), or now while it runs.
	end := run.FinishedAt
	if end.IsZero() {
		end = run.UpdatedAt
		for _, st := range run.Steps {
			end = latest(end, st.StartedAt, st.FinishedAt)
		}
		if run.Status == store.RunRunning {
			end = latest(end, now)
		}
	}
	span := end.Sub(run.StartedAt)
	d.Took = span
	pct := func(t time.Time) int {
		if span <= 0 {
			return 0
		}
		return int(min(max(float64(t.Sub(run.StartedAt))*100/float64(span), 0), 100))
	}
	for _, st := range run.Steps {
		row := stepRow{WorkflowStep: st, InputJSON: indentJSON(st.Input), OutputJSON: indentJSON(st.Output)}
		if !st.StartedAt.IsZero() {
			stop := st.FinishedAt
			if stop.IsZero() {
				stop = end
			} else {
				row.Took = st.FinishedAt.Sub(st.StartedAt)
			}
			row.Offset = pct(st.StartedAt)
			// At least a sliver, so that a step that took no time shows.
			row.Width = max(pct(stop)-row.Offset, 1)
			row.Offset = min(row.Offset, 100-row.Width)
		}
		for _, at := range st.AttemptLog {
			a := attemptRow{StepAttempt: at}
			if !at.FinishedAt.IsZero() {
				a.Took = at.FinishedAt.Sub(at.StartedAt)
			}
			// In the order they were made, as station workflow show.
			recs := slices.Clone(shown.Audit[at.Trace])
			slices.SortStableFunc(recs, func(x, y store.AuditRecord) int { return cmp.Compare(x.ID, y.ID) })
			a.Decisions = auditRows(recs)
			row.Tries = append(row.Tries, a)
		}
		d.Steps = append(d.Steps, row)
	}
	return d
}

func latest(t time.Time, more ...time.Time) time.Time {
	for _, m := range more {
		if m.After(t) {
			t = m
		}
	}
	return t
}

// resumeRun resumes an interrupted or failed run in the background, as
// station workflow resume does (the same service; the run's secret inputs
// cannot be given here, so a run that has some is refused and the CLI has
// to resume it). The answer waits until the service has taken the run
// over, or refused to: a refusal is shown, with 409; a resumed run goes on
// after the answer, until it ends or the daemon stops.
func (s *Server) resumeRun(w http.ResponseWriter, r *http.Request) {
	id, ok := s.runID(w, r)
	if !ok {
		return
	}
	shown, ok := s.show(w, r, id)
	if !ok {
		return
	}
	run := shown.WorkflowRun
	if !resumable(run.Status) {
		s.fail(w, r, http.StatusConflict, fmt.Sprintf("Run %d is %s: only an interrupted or failed run can be resumed.", id, run.Status))
		return
	}
	claimed := make(chan struct{})
	var once sync.Once
	done := make(chan error, 1)
	s.jobs.Add(1)
	go func() {
		defer s.jobs.Done()
		res, err := s.wf.Resume(s.bg, id, run.File, nil, func(ev workflow.Event) {
			if ev.Kind == workflow.EventRunResumed {
				once.Do(func() { close(claimed) })
			}
		})
		if res != nil {
			s.log.Info("ui: resumed run ended", "run", id, "status", res.Status, "err", err)
		} else if err != nil {
			s.log.Warn("ui: resume refused", "run", id, "err", err)
		}
		done <- err
	}()
	select {
	case <-claimed:
	case err := <-done:
		if err != nil && !isClosed(claimed) {
			status := http.StatusConflict
			if errors.Is(err, workflow.ErrNoRun) {
				status = http.StatusNotFound
			}
			s.fail(w, r, status, fmt.Sprintf("Run %d was not resumed: %v", id, err))
			return
		}
		// It was resumed, and has ended already.
	case <-r.Context().Done():
		return
	}
	redirectFlash(w, r, Prefix+"runs/"+strconv.FormatInt(id, 10), fmt.Sprintf("resuming run %d", id))
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
