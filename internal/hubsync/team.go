package hubsync

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/hubclient"
	"github.com/station-dev/station/internal/station"
	"github.com/station-dev/station/internal/store"
)

// Report is what applying a team lockfile did.
type Report struct {
	Team     string
	Revision int64
	// Previous is the revision applied here before this one (-1 for
	// none): a Revision no newer was applied already.
	Previous int64
	// Installed are the modules installed or changed.
	Installed []Result
	// Unchanged are the modules already at the pinned version.
	Unchanged []string
	// Pending are the changes that wait for the operator's approval; the
	// installed versions keep running.
	Pending []Plan
	// Rejected are the changes the operator rejected (RejectPending) that
	// the lockfile still pins: they stay rejected, nobody is asked about
	// them again, and the installed versions keep running.
	Rejected []Plan
	// Failed are the modules that could not be applied, with the reason.
	Failed []ModuleError
	// Workflows are the team workflows written, by name.
	Workflows []string
	// SecretsNeeded are the secrets the team's modules declare that have
	// no value on this station yet: the lockfile carries names and hosts,
	// never values, so each member sets them.
	SecretsNeeded []SecretNeed
}

// SecretNeed is a secret a module needs and this station has no value for.
type SecretNeed struct {
	Module, Name string
	Hosts        []string
}

// ModuleError is why one module of a lockfile was not applied.
type ModuleError struct {
	ID, Version string
	Err         error
}

func (e ModuleError) Error() string { return fmt.Sprintf("%s@%s: %v", e.ID, e.Version, e.Err) }

// WorkflowDir is where a team's workflows are written:
// STATION_HOME/teams/TEAM/workflows/NAME.yaml.
func WorkflowDir(home, team string) string {
	return filepath.Join(home, "teams", team, "workflows")
}

// Apply applies a team lockfile on this station: each pinned module is
// installed at its version and digests unless it is already; a version
// that asks for more than the station approved (or is signed by a key not
// pinned) goes to approve, or, with a nil approve, is recorded as pending
// while the installed version keeps running. Modules installed here but
// absent from the lockfile are left alone. The team's workflows are written
// to WorkflowDir. A lockfile that does not validate changes nothing.
//
// A change the operator rejected (RejectPending) of the version the
// lockfile still pins is not shown to approve: it stays recorded as
// rejected (Report.Rejected), and is neither logged nor reported as
// waiting for approval again. Only ApprovePending takes it.
func (s *Session) Apply(ctx context.Context, tl hub.TeamLockfile, approve Approver) (*Report, error) {
	return s.apply(ctx, tl, approve, change{})
}

// change is one module version of a team lockfile.
type change struct{ module, version string }

// keepPending is the approver of a change that stays pending (or
// rejected): it declines without asking anyone.
func keepPending(p Plan) (bool, error) { return false, &PendingError{Plan: p} }

// apply is Apply, where take, a change the operator rejected, is shown to
// approve all the same (ApprovePending: the operator changed their mind).
func (s *Session) apply(ctx context.Context, tl hub.TeamLockfile, approve Approver, take change) (*Report, error) {
	if msg := hub.CheckName(tl.Team); msg != "" {
		return nil, fmt.Errorf("apply lockfile: team %q %s", tl.Team, msg)
	}
	if err := tl.Lockfile.Validate(); err != nil {
		return nil, fmt.Errorf("apply the lockfile of team %s at revision %d: %w", tl.Team, tl.Revision, err)
	}
	st := s.Station
	team, err := st.Store.HubTeam(ctx, tl.Team)
	if errors.Is(err, store.ErrNotFound) {
		team = store.HubTeam{Name: tl.Team, HubURL: s.Login.URL, Role: hub.RoleMember, Revision: -1}
	} else if err != nil {
		return nil, err
	}
	rep := &Report{Team: tl.Team, Revision: tl.Revision, Previous: team.Revision}
	recorded, err := st.Store.HubPendings(ctx, tl.Team)
	if err != nil {
		return nil, err
	}
	rejected := map[change]bool{}
	for _, p := range recorded {
		if !p.RejectedAt.IsZero() {
			rejected[change{p.Module, p.Version}] = true
		}
	}
	delete(rejected, take)
	var pending []store.HubPending
	for _, m := range tl.Lockfile.Modules {
		perms := m.Permissions
		ask, wasRejected := approve, rejected[change{m.ID, m.Version}]
		if wasRejected && ask != nil {
			ask = keepPending
		}
		res, err := s.Install(ctx, Request{ID: m.ID, Version: m.Version, Team: tl.Team, TeamPermissions: &perms,
			Pin: &hubclient.Pin{ManifestDigest: m.ManifestDigest, WasmDigest: m.WasmDigest}}, ask)
		var pe *PendingError
		switch {
		case errors.As(err, &pe):
			p := store.HubPending{Team: tl.Team, Module: m.ID, Version: m.Version, Revision: tl.Revision, Escalations: pe.Plan.Differences(), RecordedAt: s.now()}
			if pe.Plan.Plan.Replaces != nil {
				p.FromVersion = pe.Plan.Plan.Replaces.Version
			}
			pending = append(pending, p) // a rejection of the same version is kept (store.ReplaceHubPendings)
			if wasRejected {
				rep.Rejected = append(rep.Rejected, pe.Plan)
				s.log().Info("team change stays rejected; the approved version keeps running", "team", tl.Team, "module", m.ID, "version", m.Version)
				break
			}
			rep.Pending = append(rep.Pending, pe.Plan)
			s.log().Warn("team change waits for approval (station team approve or reject)", "team", tl.Team, "module", m.ID, "version", m.Version, "asks", strings.Join(p.Escalations, "; "))
		case err != nil:
			rep.Failed = append(rep.Failed, ModuleError{ID: m.ID, Version: m.Version, Err: err})
			s.log().Warn("team module not applied", "team", tl.Team, "module", m.ID, "version", m.Version, "err", err.Error())
		case res.Changed:
			rep.Installed = append(rep.Installed, res)
		default:
			rep.Unchanged = append(rep.Unchanged, m.ID)
		}
	}
	if err := st.Store.ReplaceHubPendings(ctx, tl.Team, pending); err != nil {
		return rep, err
	}
	for _, m := range tl.Lockfile.Modules {
		for _, sec := range m.Permissions.Secrets {
			if _, ok, err := st.Secrets.Lookup(m.ID, sec.Name); err == nil && !ok {
				rep.SecretsNeeded = append(rep.SecretsNeeded, SecretNeed{Module: m.ID, Name: sec.Name, Hosts: sec.Hosts})
			}
		}
	}
	names, err := writeWorkflows(WorkflowDir(st.Home, tl.Team), tl.Lockfile.Workflows)
	if err != nil {
		rep.Failed = append(rep.Failed, ModuleError{ID: "workflows", Err: err})
	}
	rep.Workflows = names
	team.Revision, team.SyncedAt, team.LastError = tl.Revision, s.now(), ""
	if len(rep.Failed) > 0 {
		msgs := make([]string, len(rep.Failed))
		for i, f := range rep.Failed {
			msgs[i] = f.Error()
		}
		team.LastError = strings.Join(msgs, "; ")
	}
	if err := st.Store.PutHubTeam(ctx, team); err != nil {
		return rep, err
	}
	return rep, nil
}

// writeWorkflows makes dir hold exactly the team's workflows, NAME.yaml
// each (names are validated: lower-case letters, digits and hyphens).
func writeWorkflows(dir string, wfs []hub.Workflow) ([]string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("team workflows: %w", err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("team workflows: %w", err)
	}
	defer root.Close()
	var names []string
	for _, w := range wfs {
		name := w.Name + ".yaml"
		if cur, err := root.ReadFile(name); err == nil && string(cur) == w.Source {
			names = append(names, w.Name)
			continue
		}
		if err := root.WriteFile(".tmp-"+name, []byte(w.Source), 0o600); err != nil {
			return names, fmt.Errorf("team workflow %s: %w", w.Name, err)
		}
		if err := root.Rename(".tmp-"+name, name); err != nil {
			return names, fmt.Errorf("team workflow %s: %w", w.Name, err)
		}
		names = append(names, w.Name)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		n, ok := strings.CutSuffix(e.Name(), ".yaml")
		if ok && !e.IsDir() && !slices.Contains(names, n) {
			root.Remove(e.Name()) // the team dropped it
		}
	}
	return names, nil
}

// Sync applies the current lockfile of team. An answer that is the
// lockfile of another team changes nothing: what a sync of team changes is
// team's, whatever the hub says.
func (s *Session) Sync(ctx context.Context, team string, approve Approver) (*Report, error) {
	return s.sync(ctx, team, approve, change{})
}

// sync is Sync, with apply's take.
func (s *Session) sync(ctx context.Context, team string, approve Approver, take change) (*Report, error) {
	tl, err := s.Client.Lockfile(ctx, team)
	if err != nil {
		return nil, err
	}
	if tl.Team != team {
		return nil, fmt.Errorf("sync team %s: the hub answered with the lockfile of team %q; nothing was applied", team, clip(tl.Team))
	}
	return s.apply(ctx, tl, approve, take)
}

// clip shortens a name the hub sent for a message (it is quoted with %q,
// so it cannot carry control characters).
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

// checkTeam refuses a team name the hub sent that is not a team name:
// names become directories (WorkflowDir) and store keys.
func checkTeam(what, name string) error {
	if msg := hub.CheckName(name); msg != "" {
		return fmt.Errorf("%s: the hub named team %q, which %s", what, clip(name), msg)
	}
	return nil
}

// RefreshTeams makes the store's memberships those the hub lists for the
// account: it records teams joined elsewhere and forgets teams left.
func (s *Session) RefreshTeams(ctx context.Context) ([]store.HubTeam, error) {
	ts, err := s.Client.Teams(ctx)
	if err != nil {
		return nil, err
	}
	for _, t := range ts {
		if err := checkTeam("list teams", t.Name); err != nil {
			return nil, err // before anything is recorded
		}
	}
	have, err := s.Station.Store.HubTeams(ctx)
	if err != nil {
		return nil, err
	}
	for _, h := range have {
		if !slices.ContainsFunc(ts, func(t hub.Team) bool { return t.Name == h.Name }) {
			if err := s.Station.Store.DeleteHubTeam(ctx, h.Name); err != nil {
				return nil, err
			}
		}
	}
	for _, t := range ts {
		i := slices.IndexFunc(have, func(h store.HubTeam) bool { return h.Name == t.Name })
		rec := store.HubTeam{Name: t.Name, HubURL: s.Login.URL, Role: t.Role, Revision: -1}
		if i >= 0 {
			rec = have[i]
			rec.Role = t.Role
		}
		if err := s.Station.Store.PutHubTeam(ctx, rec); err != nil {
			return nil, err
		}
	}
	return s.Station.Store.HubTeams(ctx)
}

// CreateTeam creates a team this account owns and records it. With
// fromInstalled, it pushes the station's hub-installed modules as the
// team's first lockfile; otherwise the team starts with an empty one.
func (s *Session) CreateTeam(ctx context.Context, name string, fromInstalled bool) (hub.Team, *hub.TeamLockfile, error) {
	t, err := s.Client.CreateTeam(ctx, name)
	if err != nil {
		return hub.Team{}, nil, err
	}
	if t.Name != name {
		return t, nil, fmt.Errorf("create team %s: the hub answered for team %q", name, clip(t.Name))
	}
	if err := s.Station.Store.PutHubTeam(ctx, store.HubTeam{Name: name, HubURL: s.Login.URL, Role: t.Role, Revision: 0, SyncedAt: s.now()}); err != nil {
		return t, nil, err
	}
	if !fromInstalled {
		return t, nil, nil
	}
	tl, _, err := s.Push(ctx, name, nil, nil)
	if err != nil {
		return t, nil, err
	}
	return t, &tl, nil
}

// Join uses an invite code, records the team and applies its lockfile.
func (s *Session) Join(ctx context.Context, code string, approve Approver) (hub.Team, *Report, error) {
	t, err := s.Client.Join(ctx, strings.TrimSpace(code))
	if err != nil {
		return hub.Team{}, nil, err
	}
	// The code names the team only to the hub: the answer is the one
	// place the station learns which team it joined.
	if err := checkTeam("join team", t.Name); err != nil {
		return t, nil, err
	}
	if err := s.Station.Store.PutHubTeam(ctx, store.HubTeam{Name: t.Name, HubURL: s.Login.URL, Role: t.Role, Revision: -1}); err != nil {
		return t, nil, err
	}
	rep, err := s.Sync(ctx, t.Name, approve)
	return t, rep, err
}

// Push sets the team lockfile's entries for modules ids (every
// hub-installed module when ids is empty) to the versions installed here
// with the permissions approved here, adds or replaces workflows, keeps the
// rest of the lockfile, and pushes it on the current revision (pulling and
// merging again when another push won the race). Only team owners may
// push. The revision pushed is then applied here (applyPushed), and the
// report says what that did.
func (s *Session) Push(ctx context.Context, team string, ids []string, workflows []hub.Workflow) (hub.TeamLockfile, *Report, error) {
	entries, err := s.lockedModules(ctx, ids)
	if err != nil {
		return hub.TeamLockfile{}, nil, err
	}
	for attempt := 0; ; attempt++ {
		cur, err := s.Client.Lockfile(ctx, team)
		if err != nil {
			return hub.TeamLockfile{}, nil, err
		}
		l := cur.Lockfile
		for _, e := range entries {
			if i := slices.IndexFunc(l.Modules, func(m hub.LockedModule) bool { return m.ID == e.ID }); i >= 0 {
				l.Modules[i] = e
			} else {
				l.Modules = append(l.Modules, e)
			}
		}
		for _, w := range workflows {
			if i := slices.IndexFunc(l.Workflows, func(x hub.Workflow) bool { return x.Name == w.Name }); i >= 0 {
				l.Workflows[i] = w
			} else {
				l.Workflows = append(l.Workflows, w)
			}
		}
		if l.Modules == nil {
			l.Modules = []hub.LockedModule{}
		}
		if l.Workflows == nil {
			l.Workflows = []hub.Workflow{}
		}
		tl, err := s.Client.PushLockfile(ctx, team, cur.Revision, l)
		if hub.CodeOf(err) == hub.CodeRevisionConflict && attempt < 3 {
			continue // someone pushed meanwhile: merge onto theirs
		}
		if err != nil {
			return hub.TeamLockfile{}, nil, err
		}
		s.log().Info("pushed team lockfile", "team", team, "revision", tl.Revision, "modules", len(entries), "workflows", len(workflows))
		rep, err := s.applyPushed(ctx, team, tl)
		return tl, rep, err
	}
}

// lockedModules returns lockfile entries for installed hub modules.
func (s *Session) lockedModules(ctx context.Context, ids []string) ([]hub.LockedModule, error) {
	st := s.Station.Store
	if len(ids) == 0 {
		origins, err := st.HubOrigins(ctx)
		if err != nil {
			return nil, err
		}
		for _, o := range origins {
			if rec, err := st.Module(ctx, o.Module); err == nil && rec.Version == o.Version && rec.Digest == o.WasmDigest {
				ids = append(ids, o.Module)
			}
		}
	}
	var out []hub.LockedModule
	for _, id := range ids {
		rec, err := st.Module(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("push %s: the module is not installed on this station (install it from the hub first: station module install %s)", id, id)
		}
		o, err := st.HubOrigin(ctx, id)
		if err != nil || o.Version != rec.Version || o.WasmDigest != rec.Digest {
			return nil, fmt.Errorf("push %s: the installed %s@%s did not come from the hub (publish it, then install it with station module install %s@%s)", id, id, rec.Version, id, rec.Version)
		}
		var p station.Permissions
		if err := json.Unmarshal(rec.Approved, &p); err != nil {
			return nil, fmt.Errorf("push %s: stored approval: %w", id, err)
		}
		e := hub.LockedModule{ID: id, Version: o.Version, ManifestDigest: o.ManifestDigest, WasmDigest: o.WasmDigest, Permissions: ToHub(p)}
		if err := s.checkPinnable(ctx, e); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// Leave leaves a team and forgets it here. The modules its lockfile
// installed stay installed.
func (s *Session) Leave(ctx context.Context, team string) error {
	if err := s.Client.Leave(ctx, team); err != nil {
		return err
	}
	return s.Station.Store.DeleteHubTeam(ctx, team)
}
