package hubserver

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/sqldb"
)

// The rules of modules and teams (Store has them), checked in the
// transaction that makes the change, once for both stores (ruleTx): a
// version's precedence, a yank, an invite's single use by the account it
// is for while its creator is an owner, a team's last owner, a lockfile's
// base revision. Each asks for the lock PostgreSQL needs before the reads
// it decides on: the module's for a publish or a yank, the team's for any
// change of its members, invites or lockfile.

// Modules.

type versionName struct {
	name   string
	yanked bool
}

func versionNames(ctx context.Context, q ruleTx, module string) ([]versionName, error) {
	out, err := all(ctx, q, func(r sqldb.Scanner) (versionName, error) {
		var v versionName
		err := r.Scan(&v.name, &v.yanked)
		return v, err
	}, `SELECT version, yanked_at IS NOT NULL FROM versions WHERE module = ?`, module)
	if err != nil {
		return nil, fmt.Errorf("list versions: %w", err)
	}
	return out, nil
}

// latestOf returns the highest version that is not yanked, or "".
func latestOf(vs []versionName) string {
	latest := ""
	for _, v := range vs {
		if !v.yanked && (latest == "" || hub.CompareVersions(v.name, latest) > 0) {
			latest = v.name
		}
	}
	return latest
}

const versionColumns = `module, version, manifest_digest, wasm_digest, wasm_size, key_id, signature, published_at, yanked_at, yank_reason`

func scanVersion(sc sqldb.Scanner) (Version, error) {
	var v Version
	var at int64
	var yanked *int64
	err := sc.Scan(&v.Module, &v.Version.Version, &v.ManifestDigest, &v.WasmDigest, &v.WasmSize, &v.KeyID, &v.Signature, &at, &yanked, &v.YankReason)
	v.PublishedAt, v.Yanked = sqldb.FromNanos(at), yanked != nil
	return v, err
}

// publish is Store.Publish in a write transaction.
func publish(ctx context.Context, q ruleTx, v Version) (hub.Event, error) {
	at, err := sqldb.ToNanos(v.PublishedAt)
	if err != nil {
		return hub.Event{}, fmt.Errorf("publish: %w", err)
	}
	// Two publishes of one module take turns, so the precedence check
	// below sees the other's version.
	if err := q.lockName(ctx, "module", v.Module); err != nil {
		return hub.Event{}, err
	}
	owner, _, _ := strings.Cut(v.Module, "/")
	versions, err := versionNames(ctx, q, v.Module)
	if err != nil {
		return hub.Event{}, err
	}
	for _, have := range versions {
		if hub.CompareVersions(have.name, v.Version.Version) == 0 {
			return hub.Event{}, fmt.Errorf("%w: %s@%s", ErrExists, v.Module, have.name)
		}
	}
	if len(versions) == 0 {
		if err := q.exec(ctx, `INSERT INTO modules (id, owner, description, latest, created_at, updated_at) VALUES (?, ?, ?, '', ?, ?)`,
			v.Module, owner, v.Description, at, at); err != nil {
			return hub.Event{}, fmt.Errorf("create module: %w", err)
		}
	}
	err = q.exec(ctx, `INSERT INTO versions (module, version, manifest_digest, wasm_digest, wasm_size, key_id, signature, published_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, v.Module, v.Version.Version, v.ManifestDigest, v.WasmDigest, v.WasmSize, v.KeyID, v.Signature, at)
	if q.unique(err) {
		return hub.Event{}, fmt.Errorf("%w: %s@%s", ErrExists, v.Module, v.Version.Version)
	}
	if err != nil {
		return hub.Event{}, fmt.Errorf("insert version: %w", err)
	}
	versions = append(versions, versionName{v.Version.Version, false})
	if err := q.exec(ctx, `UPDATE modules SET description = ?, latest = ?, updated_at = ? WHERE id = ?`,
		v.Description, latestOf(versions), at, v.Module); err != nil {
		return hub.Event{}, fmt.Errorf("update module: %w", err)
	}
	return q.appendEvent(ctx, hub.Event{Kind: hub.EventModulePublished, Time: v.PublishedAt.UTC(), Actor: owner,
		Module: v.Module, Version: v.Version.Version, ManifestDigest: v.ManifestDigest, WasmDigest: v.WasmDigest})
}

// setYanked is Store.SetYanked in a write transaction.
func setYanked(ctx context.Context, q ruleTx, module, version string, yanked bool, reason, actor string, at time.Time) (hub.Version, *hub.Event, error) {
	n, err := sqldb.ToNanos(at)
	if err != nil {
		return hub.Version{}, nil, fmt.Errorf("yank: %w", err)
	}
	// Under the module's lock: a publish's latest, and a triage's check
	// that a fix is not yanked, see this change or none of it.
	if err := q.lockName(ctx, "module", module); err != nil {
		return hub.Version{}, nil, err
	}
	v, err := scanVersion(q.queryRow(ctx, `SELECT `+versionColumns+` FROM versions WHERE module = ? AND version = ?`, module, version))
	if isNoRows(err) {
		return hub.Version{}, nil, ErrNotFound
	}
	if err != nil {
		return hub.Version{}, nil, err
	}
	out := v.Version
	if v.Yanked == yanked {
		return out, nil, nil
	}
	kind := hub.EventModuleYanked
	if yanked {
		err = q.exec(ctx, `UPDATE versions SET yanked_at = ?, yank_reason = ? WHERE module = ? AND version = ?`, n, reason, module, version)
		out.Yanked, out.YankReason = true, reason
	} else {
		kind = hub.EventModuleUnyanked
		err = q.exec(ctx, `UPDATE versions SET yanked_at = NULL, yank_reason = '' WHERE module = ? AND version = ?`, module, version)
		out.Yanked, out.YankReason = false, ""
	}
	if err != nil {
		return out, nil, fmt.Errorf("update version: %w", err)
	}
	names, err := versionNames(ctx, q, module)
	if err != nil {
		return out, nil, err
	}
	if err := q.exec(ctx, `UPDATE modules SET latest = ?, updated_at = ? WHERE id = ?`, latestOf(names), n, module); err != nil {
		return out, nil, fmt.Errorf("update module: %w", err)
	}
	ev, err := q.appendEvent(ctx, hub.Event{Kind: kind, Time: at.UTC(), Actor: actor, Module: module, Version: version, Reason: reason})
	return out, &ev, err
}

// Teams.

// createTeam is Store.CreateTeam in a write transaction.
func createTeam(ctx context.Context, q ruleTx, name, owner string, at time.Time) (hub.Event, error) {
	n, err := sqldb.ToNanos(at)
	if err != nil {
		return hub.Event{}, fmt.Errorf("create team: %w", err)
	}
	empty, _ := json.Marshal(hub.Lockfile{Modules: []hub.LockedModule{}, Workflows: []hub.Workflow{}})
	err = q.exec(ctx, `INSERT INTO teams (name, created_at, revision, lockfile, updated_at, updated_by) VALUES (?, ?, 0, ?, 0, '')`, name, n, empty)
	if q.unique(err) {
		return hub.Event{}, ErrExists
	}
	if err != nil {
		return hub.Event{}, fmt.Errorf("create team: %w", err)
	}
	if err := q.exec(ctx, `INSERT INTO members (team, account, role, joined_at) VALUES (?, ?, 'owner', ?)`, name, owner, n); err != nil {
		return hub.Event{}, fmt.Errorf("add owner: %w", err)
	}
	return q.appendEvent(ctx, hub.Event{Kind: hub.EventTeamCreated, Time: at.UTC(), Actor: owner, Team: name, Account: owner, Role: hub.RoleOwner})
}

// roleIn returns account's role in team: ErrNotFound when it is not a
// member.
func roleIn(ctx context.Context, q ruleTx, team, account string) (string, error) {
	var role string
	err := q.queryRow(ctx, `SELECT role FROM members WHERE team = ? AND account = ?`, team, account).Scan(&role)
	if isNoRows(err) {
		return "", ErrNotFound
	}
	return role, err
}

// requireOwner checks that actor owns team.
func requireOwner(ctx context.Context, q ruleTx, team, actor string) error {
	role, err := roleIn(ctx, q, team, actor)
	if err != nil {
		return err
	}
	if role != hub.RoleOwner {
		return ErrNotOwner
	}
	return nil
}

// requireAnotherOwner returns ErrLastOwner unless team has an owner
// besides the one that is leaving or losing the role.
func requireAnotherOwner(ctx context.Context, q ruleTx, team string) error {
	var n int
	if err := q.queryRow(ctx, `SELECT count(*) FROM members WHERE team = ? AND role = 'owner'`, team).Scan(&n); err != nil {
		return err
	}
	if n <= 1 {
		return ErrLastOwner
	}
	return nil
}

// dropInvitesOf deletes the invites account made for team: they are only
// as good as its role, which it is losing (RATIONALE.md, "Why is an invite
// checked again when it is used, and deleted when its creator loses the
// role?").
func dropInvitesOf(ctx context.Context, q ruleTx, team, account string) error {
	if err := q.exec(ctx, `DELETE FROM invites WHERE team = ? AND created_by = ?`, team, account); err != nil {
		return fmt.Errorf("delete the invites of %s: %w", account, err)
	}
	return nil
}

const inviteColumns = `hash, id, team, role, account, created_by, created_at, expires_at`

func scanInvite(r sqldb.Scanner) (Invite, error) {
	var inv Invite
	var hash []byte
	var created, expires int64
	if err := r.Scan(&hash, &inv.ID, &inv.Team, &inv.Role, &inv.Account, &inv.CreatedBy, &created, &expires); err != nil {
		return Invite{}, err
	}
	copy(inv.Hash[:], hash)
	inv.CreatedAt, inv.ExpiresAt = sqldb.FromNanos(created), sqldb.FromNanos(expires)
	return inv, nil
}

// addInvite is Store.AddInvite in a write transaction.
func addInvite(ctx context.Context, q ruleTx, inv Invite) error {
	created, err := sqldb.ToNanos(inv.CreatedAt)
	if err != nil {
		return fmt.Errorf("add invite: %w", err)
	}
	expires, err := sqldb.ToNanos(inv.ExpiresAt)
	if err != nil {
		return fmt.Errorf("add invite: expiry: %w", err)
	}
	// Under the team's lock: a demotion of the creator either comes after
	// (and deletes this invite) or before (and refuses it).
	if err := q.lockName(ctx, "team", inv.Team); err != nil {
		return err
	}
	if err := requireOwner(ctx, q, inv.Team, inv.CreatedBy); err != nil {
		return err
	}
	// Expired invites are dead weight; drop them while holding the lock.
	if err := q.exec(ctx, `DELETE FROM invites WHERE expires_at <= ?`, created); err != nil {
		return err
	}
	return q.exec(ctx, `INSERT INTO invites (hash, id, team, role, account, created_by, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		inv.Hash[:], inv.ID, inv.Team, inv.Role, inv.Account, inv.CreatedBy, created, expires)
}

// invites is Store.Invites in a transaction.
func invites(ctx context.Context, q ruleTx, team, actor string, at time.Time) ([]Invite, error) {
	n, err := sqldb.ToNanos(at)
	if err != nil {
		return nil, fmt.Errorf("list invites: %w", err)
	}
	if err := requireOwner(ctx, q, team, actor); err != nil {
		return nil, err
	}
	out, err := all(ctx, q, scanInvite, `SELECT `+inviteColumns+` FROM invites WHERE team = ? AND expires_at > ? ORDER BY created_at, id`, team, n)
	if err != nil {
		return nil, fmt.Errorf("list invites: %w", err)
	}
	return out, nil
}

// revokeInvites is Store.RevokeInvites in a write transaction.
func revokeInvites(ctx context.Context, q ruleTx, team, id, actor string, at time.Time) ([]Invite, error) {
	if err := q.lockName(ctx, "team", team); err != nil {
		return nil, err
	}
	if err := requireOwner(ctx, q, team, actor); err != nil {
		return nil, err
	}
	deleted, err := all(ctx, q, scanInvite, `DELETE FROM invites WHERE team = ? AND (CAST(? AS text) = '' OR id = ?) RETURNING `+inviteColumns, team, id, id)
	if err != nil {
		return nil, fmt.Errorf("revoke invites: %w", err)
	}
	out := []Invite{}
	for _, inv := range deleted {
		if inv.ExpiresAt.After(at) { // an expired invite is gone already; deleting it revokes nothing
			out = append(out, inv)
		}
	}
	slices.SortFunc(out, func(a, b Invite) int { return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), strings.Compare(a.ID, b.ID)) })
	if id != "" && len(out) == 0 {
		return nil, ErrNoInvite
	}
	return out, nil
}

// acceptInvite is Store.AcceptInvite in a write transaction: it returns
// the team joined and the role.
func acceptInvite(ctx context.Context, q ruleTx, hash [32]byte, account string, at time.Time) (team, role string, ev hub.Event, err error) {
	n, err := sqldb.ToNanos(at)
	if err != nil {
		return "", "", hub.Event{}, fmt.Errorf("accept invite: %w", err)
	}
	// Find the team, take its lock, then read the invite again: two
	// accepts of one code, or an accept and its creator's demotion, take
	// turns.
	err = q.queryRow(ctx, `SELECT team FROM invites WHERE hash = ?`, hash[:]).Scan(&team)
	if isNoRows(err) {
		return "", "", hub.Event{}, ErrInviteInvalid
	}
	if err != nil {
		return "", "", hub.Event{}, err
	}
	if err := q.lockName(ctx, "team", team); err != nil {
		return "", "", hub.Event{}, err
	}
	var forAccount, creator string
	var expires int64
	err = q.queryRow(ctx, `SELECT team, role, account, created_by, expires_at FROM invites WHERE hash = ?`, hash[:]).Scan(&team, &role, &forAccount, &creator, &expires)
	if isNoRows(err) || err == nil && (expires <= n || forAccount != "" && forAccount != account) {
		return "", "", hub.Event{}, ErrInviteInvalid
	}
	if err != nil {
		return "", "", hub.Event{}, err
	}
	// The creator must still be allowed to grant the role: an owner, now.
	// (Losing the role deletes the invites too; this holds even for an
	// invite a deletion missed.)
	if err := requireOwner(ctx, q, team, creator); errors.Is(err, ErrNotFound) || errors.Is(err, ErrNotOwner) {
		return "", "", hub.Event{}, ErrInviteInvalid
	} else if err != nil {
		return "", "", hub.Event{}, err
	}
	if _, err := roleIn(ctx, q, team, account); err == nil {
		return "", "", hub.Event{}, ErrAlreadyMember
	} else if !errors.Is(err, ErrNotFound) {
		return "", "", hub.Event{}, err
	}
	if err := q.exec(ctx, `DELETE FROM invites WHERE hash = ?`, hash[:]); err != nil {
		return "", "", hub.Event{}, err
	}
	if err := q.exec(ctx, `INSERT INTO members (team, account, role, joined_at) VALUES (?, ?, ?, ?)`, team, account, role, n); err != nil {
		return "", "", hub.Event{}, fmt.Errorf("add member: %w", err)
	}
	ev, err = q.appendEvent(ctx, hub.Event{Kind: hub.EventMemberJoined, Time: at.UTC(), Actor: account, Team: team, Account: account, Role: role})
	return team, role, ev, err
}

// setRole is Store.SetRole in a write transaction.
func setRole(ctx context.Context, q ruleTx, team, account, role, actor string, at time.Time) (hub.Member, hub.Event, error) {
	if err := q.lockName(ctx, "team", team); err != nil {
		return hub.Member{}, hub.Event{}, err
	}
	if err := requireOwner(ctx, q, team, actor); err != nil {
		return hub.Member{}, hub.Event{}, err
	}
	var old string
	var joined int64
	err := q.queryRow(ctx, `SELECT role, joined_at FROM members WHERE team = ? AND account = ?`, team, account).Scan(&old, &joined)
	if isNoRows(err) {
		return hub.Member{}, hub.Event{}, ErrNoMember
	}
	if err != nil {
		return hub.Member{}, hub.Event{}, err
	}
	m := hub.Member{Account: account, Role: role, JoinedAt: sqldb.FromNanos(joined)}
	if old == role {
		return m, hub.Event{}, nil
	}
	if old == hub.RoleOwner {
		if err := requireAnotherOwner(ctx, q, team); err != nil {
			return m, hub.Event{}, err
		}
	}
	if err := q.exec(ctx, `UPDATE members SET role = ? WHERE team = ? AND account = ?`, role, team, account); err != nil {
		return m, hub.Event{}, err
	}
	if old == hub.RoleOwner {
		if err := dropInvitesOf(ctx, q, team, account); err != nil {
			return m, hub.Event{}, err
		}
	}
	ev, err := q.appendEvent(ctx, hub.Event{Kind: hub.EventMemberRole, Time: at.UTC(), Actor: actor, Team: team, Account: account, Role: role})
	return m, ev, err
}

// removeMember is Store.RemoveMember in a write transaction.
func removeMember(ctx context.Context, q ruleTx, team, account, actor string, at time.Time) (hub.Event, error) {
	if err := q.lockName(ctx, "team", team); err != nil {
		return hub.Event{}, err
	}
	kind := hub.EventMemberLeft
	if actor != account {
		kind = hub.EventMemberRemoved
		if err := requireOwner(ctx, q, team, actor); err != nil {
			return hub.Event{}, err
		}
	}
	role, err := roleIn(ctx, q, team, account)
	if errors.Is(err, ErrNotFound) && actor != account {
		return hub.Event{}, ErrNoMember
	}
	if err != nil {
		return hub.Event{}, err
	}
	if role == hub.RoleOwner {
		if err := requireAnotherOwner(ctx, q, team); err != nil {
			return hub.Event{}, err
		}
	}
	if err := q.exec(ctx, `DELETE FROM members WHERE team = ? AND account = ?`, team, account); err != nil {
		return hub.Event{}, err
	}
	if err := dropInvitesOf(ctx, q, team, account); err != nil {
		return hub.Event{}, err
	}
	return q.appendEvent(ctx, hub.Event{Kind: kind, Time: at.UTC(), Actor: actor, Team: team, Account: account})
}

// pushLockfile is Store.PushLockfile in a write transaction.
func pushLockfile(ctx context.Context, q ruleTx, team string, base int64, l hub.Lockfile, actor string, at time.Time) (hub.TeamLockfile, hub.Event, error) {
	if l.Modules == nil {
		l.Modules = []hub.LockedModule{}
	}
	if l.Workflows == nil {
		l.Workflows = []hub.Workflow{}
	}
	data, err := json.Marshal(l)
	if err != nil {
		return hub.TeamLockfile{}, hub.Event{}, err
	}
	n, err := sqldb.ToNanos(at)
	if err != nil {
		return hub.TeamLockfile{}, hub.Event{}, fmt.Errorf("store lockfile: %w", err)
	}
	// Under the team's lock, which every push takes: the revision read
	// below stays the team's until this commits.
	if err := q.lockName(ctx, "team", team); err != nil {
		return hub.TeamLockfile{}, hub.Event{}, err
	}
	if err := requireOwner(ctx, q, team, actor); err != nil {
		return hub.TeamLockfile{}, hub.Event{}, err
	}
	var current int64
	if err := q.queryRow(ctx, `SELECT revision FROM teams WHERE name = ?`, team).Scan(&current); err != nil {
		return hub.TeamLockfile{}, hub.Event{}, err
	}
	if current != base {
		return hub.TeamLockfile{}, hub.Event{}, &ConflictError{Base: base, Current: current}
	}
	if err := q.exec(ctx, `UPDATE teams SET revision = ?, lockfile = ?, updated_at = ?, updated_by = ? WHERE name = ?`,
		base+1, data, n, actor, team); err != nil {
		return hub.TeamLockfile{}, hub.Event{}, fmt.Errorf("store lockfile: %w", err)
	}
	ev, err := q.appendEvent(ctx, hub.Event{Kind: hub.EventLockfilePushed, Time: at.UTC(), Actor: actor, Team: team, Revision: base + 1})
	if err != nil {
		return hub.TeamLockfile{}, ev, err
	}
	return hub.TeamLockfile{Team: team, Revision: base + 1, Lockfile: l, UpdatedAt: at.UTC(), UpdatedBy: actor}, ev, nil
}

// Reads of modules and teams, the same in both stores (on the pool: they
// lock nothing).

func readModule(ctx context.Context, q ruleTx, id string) (hub.Module, error) {
	m := hub.Module{ID: id}
	var created, updated int64
	err := q.queryRow(ctx, `SELECT owner, description, latest, created_at, updated_at FROM modules WHERE id = ?`, id).
		Scan(&m.Owner, &m.Description, &m.Latest, &created, &updated)
	if isNoRows(err) {
		return hub.Module{}, ErrNotFound
	}
	if err != nil {
		return hub.Module{}, fmt.Errorf("read module: %w", err)
	}
	m.CreatedAt, m.UpdatedAt = sqldb.FromNanos(created), sqldb.FromNanos(updated)
	m.Versions, err = all(ctx, q, func(r sqldb.Scanner) (hub.Version, error) {
		v, err := scanVersion(r)
		return v.Version, err
	}, `SELECT `+versionColumns+` FROM versions WHERE module = ?`, id)
	if err != nil {
		return hub.Module{}, fmt.Errorf("list versions: %w", err)
	}
	slices.SortFunc(m.Versions, func(a, b hub.Version) int { return hub.CompareVersions(b.Version, a.Version) })
	return m, nil
}

func readVersion(ctx context.Context, q ruleTx, module, version string) (Version, error) {
	v, err := scanVersion(q.queryRow(ctx, `SELECT `+versionColumns+` FROM versions WHERE module = ? AND version = ?`, module, version))
	if isNoRows(err) {
		return Version{}, ErrNotFound
	}
	if err != nil {
		return Version{}, fmt.Errorf("read version: %w", err)
	}
	return v, nil
}

func readTeam(ctx context.Context, q ruleTx, name string) (hub.Team, error) {
	t := hub.Team{Name: name}
	var created int64
	err := q.queryRow(ctx, `SELECT created_at, revision FROM teams WHERE name = ?`, name).Scan(&created, &t.Revision)
	if isNoRows(err) {
		return hub.Team{}, ErrNotFound
	}
	if err != nil {
		return hub.Team{}, fmt.Errorf("read team: %w", err)
	}
	t.CreatedAt = sqldb.FromNanos(created)
	t.Members, err = all(ctx, q, func(r sqldb.Scanner) (hub.Member, error) {
		var m hub.Member
		var at int64
		err := r.Scan(&m.Account, &m.Role, &at)
		m.JoinedAt = sqldb.FromNanos(at)
		return m, err
	}, `SELECT account, role, joined_at FROM members WHERE team = ? ORDER BY joined_at, account`, name)
	if err != nil {
		return hub.Team{}, fmt.Errorf("list members: %w", err)
	}
	return t, nil
}

func teamsOf(ctx context.Context, q ruleTx, account string) ([]hub.Team, error) {
	out, err := all(ctx, q, func(r sqldb.Scanner) (hub.Team, error) {
		var t hub.Team
		var at int64
		err := r.Scan(&t.Name, &t.Role, &t.Revision, &at)
		t.CreatedAt = sqldb.FromNanos(at)
		return t, err
	}, `SELECT t.name, m.role, t.revision, t.created_at FROM members m JOIN teams t ON t.name = m.team WHERE m.account = ? ORDER BY t.name`, account)
	if err != nil {
		return nil, fmt.Errorf("list teams: %w", err)
	}
	return out, nil
}

func members(ctx context.Context, q ruleTx, team string) ([]string, error) {
	out, err := all(ctx, q, func(r sqldb.Scanner) (string, error) {
		var a string
		err := r.Scan(&a)
		return a, err
	}, `SELECT account FROM members WHERE team = ?`, team)
	if err != nil {
		return nil, fmt.Errorf("list members: %w", err)
	}
	return out, nil
}

func readLockfile(ctx context.Context, q ruleTx, team string) (hub.TeamLockfile, error) {
	tl := hub.TeamLockfile{Team: team}
	var data []byte
	var at int64
	err := q.queryRow(ctx, `SELECT revision, lockfile, updated_at, updated_by FROM teams WHERE name = ?`, team).Scan(&tl.Revision, &data, &at, &tl.UpdatedBy)
	if isNoRows(err) {
		return hub.TeamLockfile{}, ErrNotFound
	}
	if err != nil {
		return hub.TeamLockfile{}, fmt.Errorf("read lockfile: %w", err)
	}
	if at != 0 {
		tl.UpdatedAt = sqldb.FromNanos(at)
	}
	if err := json.Unmarshal(data, &tl.Lockfile); err != nil {
		return hub.TeamLockfile{}, fmt.Errorf("decode stored lockfile of %s: %w", team, err)
	}
	return tl, nil
}
