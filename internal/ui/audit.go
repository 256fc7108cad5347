package ui

import (
	"bytes"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/station-dev/station/internal/sandbox"
	"github.com/station-dev/station/internal/store"
	"github.com/station-dev/station/internal/workflow"
)

// AuditPageSize is how many decisions one page of the audit log shows.
const AuditPageSize = 100

// auditQuery is the audit page's filters, as in its address.
type auditQuery struct {
	Module, Capability, Result, Trace string
	Since, Until                      string // the form's datetime-local values, UTC
	Before                            int64
}

// capabilities are the choices of the capability filter.
var capabilities = []sandbox.Capability{sandbox.Network, sandbox.Filesystem, sandbox.Subprocess, sandbox.LLM, sandbox.Host, sandbox.Advisory}

const formTime = "2006-01-02T15:04"

// parseAuditQuery reads the filters; a value that does not parse is an
// error that says what to write.
func parseAuditQuery(q url.Values) (auditQuery, store.AuditFilter, error) {
	a := auditQuery{Module: strings.TrimSpace(q.Get("module")), Capability: q.Get("capability"), Result: q.Get("result"),
		Trace: strings.TrimSpace(q.Get("trace")), Since: q.Get("since"), Until: q.Get("until")}
	f := store.AuditFilter{Module: a.Module, Trace: a.Trace, Limit: AuditPageSize}
	switch a.Result {
	case "", "all":
		a.Result = ""
	case "denied":
		f.DeniedOnly = true
	case "allowed":
		f.AllowedOnly = true
	default:
		return a, f, fmt.Errorf("result: want all, allowed or denied, not %q", a.Result)
	}
	if a.Capability != "" {
		if !slices.Contains(capabilities, sandbox.Capability(a.Capability)) {
			return a, f, fmt.Errorf("capability: want one of %v, not %q", capabilities, a.Capability)
		}
		f.Capability = sandbox.Capability(a.Capability)
	}
	for _, t := range []struct {
		name string
		v    string
		to   *time.Time
	}{{"since", a.Since, &f.Since}, {"until", a.Until, &f.Until}} {
		if t.v == "" {
			continue
		}
		at, err := time.Parse(formTime, t.v)
		if err != nil {
			if at, err = time.Parse(time.RFC3339Nano, t.v); err != nil {
				return a, f, fmt.Errorf("%s: want a time like 2026-12-01T09:30 (UTC) or an RFC 3339 time, not %q", t.name, t.v)
			}
		}
		*t.to = at.UTC()
	}
	if v := q.Get("before"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			return a, f, fmt.Errorf("before: want a decision id (a positive number), not %q", v)
		}
		a.Before, f.Before = n, n
	}
	return a, f, nil
}

// values is the query of a, without the cursor.
func (a auditQuery) values() url.Values {
	v := url.Values{}
	for k, s := range map[string]string{"module": a.Module, "capability": a.Capability, "result": a.Result, "trace": a.Trace, "since": a.Since, "until": a.Until} {
		if s != "" {
			v.Set(k, s)
		}
	}
	return v
}

// auditRow is one decision as the page shows it.
type auditRow struct {
	store.AuditRecord
	// Run is the workflow run of the decision's trace (0 if none): a
	// denial links to it.
	Run int64
}

func auditRows(recs []store.AuditRecord) []auditRow {
	out := make([]auditRow, len(recs))
	for i, r := range recs {
		out[i] = auditRow{AuditRecord: r, Run: runOfTrace(r.Trace)}
	}
	return out
}

// runOfTrace returns the run id of a workflow step's trace
// (workflow.Trace), or 0.
func runOfTrace(trace string) int64 {
	rest, ok := strings.CutPrefix(trace, "run/")
	if !ok {
		return 0
	}
	id, _, ok := strings.Cut(rest, "/step/")
	if !ok {
		return 0
	}
	n, err := workflow.ParseRunID(id)
	if err != nil {
		return 0
	}
	return n
}

type auditPageData struct {
	Query        auditQuery
	Capabilities []sandbox.Capability
	Rows         []auditRow
	// Older is the address of the next page (older decisions), "" at the
	// end; Newest the id the live tail starts after.
	Older  string
	Newest int64
	Stream string // the live tail's address
	Error  string
}

func (s *Server) auditPage(w http.ResponseWriter, r *http.Request) {
	a, f, err := parseAuditQuery(r.URL.Query())
	data := auditPageData{Query: a, Capabilities: capabilities}
	if err != nil {
		data.Error = err.Error()
		s.render(w, r, http.StatusBadRequest, "audit", "Audit", data)
		return
	}
	s.flushAudit(r)
	// One more than a page says whether there is an older one.
	f.Limit = AuditPageSize + 1
	recs, err := s.st.Store.Audit(r.Context(), f)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	more := len(recs) > AuditPageSize
	if more {
		recs = recs[1:]
	}
	slices.Reverse(recs) // newest first
	data.Rows = auditRows(recs)
	v := a.values()
	if more {
		v.Set("before", strconv.FormatInt(recs[len(recs)-1].ID, 10))
		data.Older = Prefix + "audit?" + v.Encode()
		v.Del("before")
	}
	// The live tail follows only the first page, of decisions newer than
	// any shown, under the same filters.
	if a.Before == 0 {
		if len(recs) > 0 {
			data.Newest = recs[0].ID
		} else if last, err := s.st.Store.Audit(r.Context(), store.AuditFilter{Limit: 1}); err == nil && len(last) == 1 {
			data.Newest = last[0].ID
		}
		v.Set("after", strconv.FormatInt(data.Newest, 10))
		data.Stream = Prefix + "audit/stream?" + v.Encode()
	}
	s.render(w, r, http.StatusOK, "audit", "Audit", data)
}

// keepAlive is how long the live tail may stay silent.
const keepAlive = 15 * time.Second

// maxStreamBatch bounds the decisions one poll of the live tail sends.
const maxStreamBatch = 200

// auditStream is the live tail: server-sent events, one "decision" event
// per new decision that matches the filters, its data the table row's
// HTML (rendered, and so escaped, by the row template). It ends when the
// browser goes or the daemon stops.
func (s *Server) auditStream(w http.ResponseWriter, r *http.Request) {
	_, f, err := parseAuditQuery(r.URL.Query())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	after, err := strconv.ParseInt(r.URL.Query().Get("after"), 10, 64)
	if err != nil || after < 0 {
		http.Error(w, "after: want the id of the newest decision shown (0 for none)", http.StatusBadRequest)
		return
	}
	// A reconnecting EventSource says where it stopped.
	if v := r.Header.Get("Last-Event-ID"); v != "" {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n > after {
			after = n
		}
	}
	f.Before, f.Limit = 0, maxStreamBatch
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, "retry: 2000\n\n")
	if err := rc.Flush(); err != nil {
		return
	}
	t := time.NewTicker(s.poll)
	defer t.Stop()
	var buf bytes.Buffer
	wrote := time.Now()
	for {
		s.flushAudit(r)
		f.After = after
		recs, err := s.st.Store.Audit(r.Context(), f)
		if err != nil {
			if r.Context().Err() == nil {
				s.log.Warn("ui: audit stream", "err", err)
			}
			return
		}
		for _, row := range auditRows(recs) {
			buf.Reset()
			if err := s.pages["audit"].ExecuteTemplate(&buf, "auditrow", row); err != nil {
				s.log.Error("ui: audit row", "err", err)
				return
			}
			// One data line per line of HTML: the event's data is them
			// joined by newlines again. A carriage return also ends a
			// line of an event stream, and html/template leaves the ones
			// in a module's text alone: as a character reference it is
			// the same text and cannot start a field of its own.
			html := strings.ReplaceAll(strings.TrimSpace(buf.String()), "\r", "&#13;")
			fmt.Fprintf(w, "id: %d\nevent: decision\n", row.ID)
			for _, l := range strings.Split(html, "\n") {
				fmt.Fprintf(w, "data: %s\n", l)
			}
			fmt.Fprint(w, "\n")
			after = row.ID
		}
		if len(recs) > 0 || time.Since(wrote) > keepAlive {
			if len(recs) == 0 {
				fmt.Fprint(w, ": keep-alive\n\n") // a dead connection shows
			}
			if err := rc.Flush(); err != nil {
				return
			}
			wrote = time.Now()
		}
		select {
		case <-r.Context().Done():
			return
		case <-t.C:
		}
	}
}
