package ui

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/hubsync"
	"github.com/station-dev/station/internal/store"
)

// Teams decides pending team changes: the same services as station team
// approve and station team reject (internal/hubsync). Team "" is an
// upgrade the operator ran that waits for approval (hubsync.UpgradePendings).
type Teams interface {
	// Approve installs the pending change of module to version for team
	// (it needs the hub) and returns what it did, in a line.
	Approve(ctx context.Context, team, module, version string) (string, error)
	// Reject keeps the approved version running and stops asking about
	// this change.
	Reject(ctx context.Context, team, module, version string) error
}

// approval is one pending (or rejected) team change as the Approvals page
// shows it: what it asks beyond the approval, and what runs meanwhile.
type approval struct {
	hubsync.PendingChange
	// Running are the permissions of the version that keeps running, in
	// plain words (nil when the module is not installed).
	Running []permLine
}

type approvalsData struct {
	Pending, Rejected []approval
	// CanDecide is false when the daemon was started without a way to
	// reach the hub.
	CanDecide bool
}

func (s *Server) approvalsPage(w http.ResponseWriter, r *http.Request) {
	ts, err := hubsync.Status(r.Context(), s.st, "")
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	ups, err := hubsync.UpgradePendings(r.Context(), s.st)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	data := approvalsData{CanDecide: s.teams != nil}
	changes := ups
	for _, t := range ts {
		changes = append(changes, t.Pending...)
	}
	for _, p := range changes {
		a := approval{PendingChange: p}
		if p.FromVersion != "" {
			if in, err := hubsync.Describe(r.Context(), s.st, p.Module); err == nil {
				a.Running = permLines(in.Approved.Describe(in.Confinement))
			}
		}
		if p.RejectedAt.IsZero() {
			data.Pending = append(data.Pending, a)
		} else {
			data.Rejected = append(data.Rejected, a)
		}
	}
	s.render(w, r, http.StatusOK, "approvals", "Approvals", data)
}

// decide approves or rejects one pending change (the form of the
// Approvals page) and goes back there with what happened.
func (s *Server) decide(w http.ResponseWriter, r *http.Request) {
	team, module, version, decision := r.PostFormValue("team"), r.PostFormValue("module"), r.PostFormValue("version"), r.PostFormValue("decision")
	// Team "" (store.UpgradeTeam) is an upgrade the operator ran.
	if team != store.UpgradeTeam && hub.CheckName(team) != "" || hub.CheckModuleID(module) != "" || version == "" || len(version) > 128 {
		s.fail(w, r, http.StatusBadRequest, "The form named no pending change (team, module and version are needed): go back to Approvals and use its buttons.")
		return
	}
	if s.teams == nil {
		s.fail(w, r, http.StatusServiceUnavailable, "This daemon cannot decide team changes; use station team approve or station team reject.")
		return
	}
	var msg string
	var err error
	switch decision {
	case "approve":
		msg, err = s.teams.Approve(r.Context(), team, module, version)
	case "reject":
		if err = s.teams.Reject(r.Context(), team, module, version); err == nil {
			msg = "rejected: " + module + "@" + version + " for team " + team + "; the approved version keeps running"
			if team == store.UpgradeTeam {
				msg = "rejected: the upgrade of " + module + " to " + version + "; the approved version keeps running"
			}
		}
	default:
		s.fail(w, r, http.StatusBadRequest, "decision: want approve or reject.")
		return
	}
	var none *hubsync.NoPendingError
	var moved *hubsync.MovedOnError
	switch {
	case errors.As(err, &none), errors.As(err, &moved), errors.Is(err, store.ErrNotFound):
		s.fail(w, r, http.StatusConflict, err.Error())
		return
	case err != nil:
		s.log.Warn("ui: team decision failed", "team", team, "module", module, "version", version, "decision", decision, "err", err)
		s.fail(w, r, http.StatusBadGateway, decision+" "+module+"@"+version+": "+err.Error())
		return
	}
	s.log.Info("ui: team change decided", "team", team, "module", module, "version", version, "decision", decision)
	redirectFlash(w, r, Prefix+"approvals", msg)
}

func (s *Server) teamsPage(w http.ResponseWriter, r *http.Request) {
	ts, err := hubsync.Status(r.Context(), s.st, "")
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	login, err := s.st.Store.HubLogin(r.Context())
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		s.failErr(w, r, err)
		return
	}
	s.render(w, r, http.StatusOK, "teams", "Teams", teamsData{Teams: ts, Hub: login.URL, Account: login.Account})
}

type teamsData struct {
	Teams        []hubsync.TeamStatus
	Hub, Account string
}

func (s *Server) advisoriesPage(w http.ResponseWriter, r *http.Request) {
	_, fs := s.findings(r)
	if fs == nil {
		s.fail(w, r, http.StatusInternalServerError, "The advisories could not be read; station advisories says why.")
		return
	}
	data := advisoriesData{Findings: fs}
	for _, f := range fs.Modules {
		if f.Affected() {
			data.Affected = append(data.Affected, f)
		} else {
			data.Clear = append(data.Clear, f)
		}
	}
	slices.SortFunc(data.Affected, func(a, b hubsync.Finding) int { return strings.Compare(a.Module, b.Module) })
	s.render(w, r, http.StatusOK, "advisories", "Advisories", data)
}

type advisoriesData struct {
	Findings        *hubsync.Findings
	Affected, Clear []hubsync.Finding
}
