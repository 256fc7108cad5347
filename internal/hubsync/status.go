package hubsync

import (
	"context"
	"fmt"
	"time"

	"github.com/station-dev/station/internal/station"
	"github.com/station-dev/station/internal/store"
)

// TeamStatus is a team as this station's records know it: what `station
// team status` shows, without asking the hub. The names and messages in it
// came from the hub and its lockfile.
type TeamStatus struct {
	Name   string `json:"name"`
	HubURL string `json:"hub_url"`
	Role   string `json:"role"`
	// Revision is the lockfile revision last applied here; -1 before the
	// first.
	Revision int64     `json:"revision"`
	SyncedAt time.Time `json:"synced_at,omitzero"`
	// LastError is why the last sync did not apply everything ("" if it
	// did).
	LastError string `json:"last_error,omitempty"`
	// WorkflowDir is where the team's workflows are written.
	WorkflowDir string `json:"workflow_dir"`
	// Pending are the changes that wait for the operator's approval, and
	// those the operator rejected (RejectedAt set) that the lockfile last
	// applied still pins.
	Pending []PendingChange `json:"pending"`
	// Affected are the team's modules installed here (those its lockfile
	// installed) that a known advisory affects or whose version is yanked,
	// from what this station last heard from the hub (station advisories
	// refreshes it).
	Affected []Finding `json:"affected"`
}

// PendingChange is a team change that waits for the operator's approval,
// or that the operator rejected (RejectedAt), while the approved version
// (FromVersion, "" when the module is not installed) keeps running.
type PendingChange struct {
	Team        string `json:"team"`
	Module      string `json:"module"`
	Version     string `json:"version"`
	Revision    int64  `json:"revision"`
	FromVersion string `json:"from_version,omitempty"`
	// Escalations say in plain words what the change asks beyond the
	// approval.
	Escalations []string  `json:"escalations"`
	RecordedAt  time.Time `json:"recorded_at"`
	// RejectedAt is when the operator rejected the change (RejectPending);
	// zero while it waits for approval.
	RejectedAt time.Time `json:"rejected_at,omitzero"`
}

// NotMemberError is a team name this station (or, for a sync, the hub
// account) is not a member of.
type NotMemberError struct {
	Team string
	// Account is set when the hub said so (a sync): the account is not a
	// member. Otherwise this station's records do not list the team.
	Account bool
}

func (e *NotMemberError) Error() string {
	if e.Account {
		return fmt.Sprintf("this account is not a member of team %s", e.Team)
	}
	return fmt.Sprintf("this station is not a member of team %s", e.Team)
}

// Status returns the teams this station is a member of (only team, when
// it is not ""), each with the revision applied and the changes pending,
// from the station's records: no hub login is needed. A team this station
// is not in is a *NotMemberError.
func Status(ctx context.Context, st *station.Station, team string) ([]TeamStatus, error) {
	teams, err := st.Store.HubTeams(ctx)
	if err != nil {
		return nil, err
	}
	pend, err := st.Store.HubPendings(ctx, team)
	if err != nil {
		return nil, err
	}
	affected, err := teamAffected(ctx, st)
	if err != nil {
		return nil, err
	}
	out := []TeamStatus{}
	for _, t := range teams {
		if team != "" && t.Name != team {
			continue
		}
		ts := TeamStatus{Name: t.Name, HubURL: t.HubURL, Role: t.Role, Revision: t.Revision, SyncedAt: t.SyncedAt, LastError: t.LastError,
			WorkflowDir: WorkflowDir(st.Home, t.Name), Pending: []PendingChange{}, Affected: nonNilAffected(affected[t.Name])}
		for _, p := range pend {
			if p.Team == t.Name {
				ts.Pending = append(ts.Pending, pendingChange(p))
			}
		}
		out = append(out, ts)
	}
	if team != "" && len(out) == 0 {
		return nil, &NotMemberError{Team: team}
	}
	return out, nil
}

func pendingChange(p store.HubPending) PendingChange {
	return PendingChange{Team: p.Team, Module: p.Module, Version: p.Version, Revision: p.Revision,
		FromVersion: p.FromVersion, Escalations: nonNil(p.Escalations), RecordedAt: p.RecordedAt, RejectedAt: p.RejectedAt}
}

// teamAffected returns, by team, the installed modules that team's
// lockfile installed and that an advisory affects or that are yanked.
func teamAffected(ctx context.Context, st *station.Station) (map[string][]Finding, error) {
	origins, err := st.Store.HubOrigins(ctx)
	if err != nil {
		return nil, err
	}
	team := map[string]string{}
	for _, o := range origins {
		if o.Team != "" {
			team[o.Module] = o.Team
		}
	}
	if len(team) == 0 {
		return nil, nil
	}
	installed, err := st.InstalledAdvisories(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string][]Finding{}
	for _, va := range installed {
		if t, ok := team[va.Module]; ok && (len(va.Advisories) > 0 || va.Yank != nil) {
			out[t] = append(out[t], finding(va))
		}
	}
	return out, nil
}

func nonNilAffected(a []Finding) []Finding {
	if a == nil {
		return []Finding{}
	}
	return a
}
