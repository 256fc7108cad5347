package ui

import (
	"net/http"
	"slices"
	"strings"

	"github.com/station-dev/station/internal/hubsync"
	"github.com/station-dev/station/internal/store"
)

// moduleRow is one installed module on the Modules page.
type moduleRow struct {
	ID, Version, Description string
	Origin                   hubsync.Origin
	// Permissions are the approved permissions in plain words
	// (station.Permissions.Describe, as station module show prints them).
	Permissions []permLine
	Loaded      bool
	Finding     *hubsync.Finding // nil when nothing is known against it
	Commands    []commandRow
}

// permLine is one line of station.Permissions.Describe; Loud lines (in
// capitals: programs, broad grants) are shown as warnings, Sub lines
// (indented in the CLI) under the line before.
type permLine struct {
	Text      string
	Loud, Sub bool
}

type commandRow struct{ Name, Description string }

func permLines(lines []string) []permLine {
	out := make([]permLine, 0, len(lines))
	for _, l := range lines {
		sub := strings.HasPrefix(l, "  ")
		t := strings.TrimSpace(l)
		if t == "" {
			continue
		}
		out = append(out, permLine{Text: t, Sub: sub, Loud: strings.Contains(t, "MAY ") || strings.Contains(t, "BROAD")})
	}
	return out
}

// describe reads one installed module as station module show does, and
// returns what hubsync.Describe read with it.
func (s *Server) describe(r *http.Request, id string, findings map[string]hubsync.Finding) (moduleRow, *hubsync.ModuleInfo, error) {
	in, err := hubsync.Describe(r.Context(), s.st, id)
	if err != nil {
		return moduleRow{}, nil, err
	}
	row := moduleRow{ID: in.Module.ID, Version: in.Module.Version, Origin: in.Origin, Loaded: s.st.Host.Module(id) != nil,
		Permissions: permLines(in.Approved.Describe(in.Confinement))}
	if in.Manifest != nil {
		row.Description = in.Manifest.Description
		for _, c := range in.Manifest.Commands {
			row.Commands = append(row.Commands, commandRow{Name: c.Name, Description: c.Description})
		}
	}
	if f, ok := findings[id]; ok && f.Affected() {
		row.Finding = &f
	}
	return row, in, nil
}

// findings returns what the station knows against each installed module,
// by id; a failure to read it leaves the pages without it (logged).
func (s *Server) findings(r *http.Request) (map[string]hubsync.Finding, *hubsync.Findings) {
	fs, err := hubsync.CheckAdvisories(r.Context(), s.st, s.version)
	if err != nil {
		s.log.Warn("ui: advisories", "err", err)
		return nil, nil
	}
	out := map[string]hubsync.Finding{}
	for _, f := range fs.Modules {
		out[f.Module] = f
	}
	return out, fs
}

func (s *Server) modulesPage(w http.ResponseWriter, r *http.Request) {
	ms, err := s.st.Store.Modules(r.Context())
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	byID, _ := s.findings(r)
	rows := make([]moduleRow, 0, len(ms))
	for _, m := range ms {
		row, _, err := s.describe(r, m.ID, byID)
		if err != nil {
			s.failErr(w, r, err)
			return
		}
		rows = append(rows, row)
	}
	s.render(w, r, http.StatusOK, "modules", "Modules", rows)
}

// modulePageData is one module's page.
type modulePageData struct {
	Module    moduleRow
	Decisions []auditRow
	Limits    any
	Digest    string
	Installed string
}

// moduleDecisions is how many of a module's newest decisions its page
// shows (the audit page, filtered to it, has them all).
const moduleDecisions = 50

func (s *Server) modulePage(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("owner") + "/" + r.PathValue("slug")
	byID, _ := s.findings(r)
	row, in, err := s.describe(r, id, byID)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	s.flushAudit(r)
	recs, err := s.st.Store.Audit(r.Context(), store.AuditFilter{Module: id, Limit: moduleDecisions})
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	slices.Reverse(recs)
	s.render(w, r, http.StatusOK, "module", id, modulePageData{Module: row, Decisions: auditRows(recs), Limits: in.Limits, Digest: in.Module.Digest,
		Installed: in.Module.InstalledAt.Format("2006-01-02 15:04 MST")})
}

// flushAudit writes the daemon's buffered decisions, so that a page shows
// the calls that just returned.
func (s *Server) flushAudit(r *http.Request) {
	if err := s.st.Audit.Flush(r.Context()); err != nil {
		s.log.Warn("ui: audit flush", "err", err)
	}
}
