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

// The station's hub state (schema 4): the hub it is logged in to and the
// relay cursor, publisher keys pinned on first use (per hub and owner since
// schema 7), where each hub-installed
// module came from, team memberships with the last lockfile revision
// applied, and team changes that wait for the operator's approval. The hub
// token itself is not in the database (RATIONALE.md).

// HubLogin is the hub this station is logged in to.
type HubLogin struct {
	URL     string
	Account string
	// Cursor is the seq of the last relay event the station handled.
	Cursor   int64
	LoggedIn time.Time
}

// HubLogin returns the station's hub login; the error wraps ErrNotFound
// when the station is not logged in.
func (s *Store) HubLogin(ctx context.Context) (HubLogin, error) {
	var l HubLogin
	var at int64
	err := s.db.QueryRowContext(ctx, `SELECT url, account, cursor, logged_in FROM hub_login WHERE id = 1`).Scan(&l.URL, &l.Account, &l.Cursor, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return HubLogin{}, fmt.Errorf("hub login: %w", ErrNotFound)
	}
	if err != nil {
		return HubLogin{}, fmt.Errorf("hub login: %w", err)
	}
	l.LoggedIn = sqldb.FromNanos(at)
	return l, nil
}

// PutHubLogin records a login. A login to another hub or as another
// account forgets the previous one's cursor, teams and pending changes
// (they belong to that hub and account); pinned keys and module origins
// are kept.
func (s *Store) PutHubLogin(ctx context.Context, l HubLogin) error {
	at, err := sqldb.ToNanos(l.LoggedIn)
	if err != nil {
		return fmt.Errorf("put hub login: %w", err)
	}
	err = s.tx(ctx, func(tx *sql.Tx) error {
		var url, account string
		err := tx.QueryRowContext(ctx, `SELECT url, account FROM hub_login WHERE id = 1`).Scan(&url, &account)
		same := err == nil && url == l.URL && account == l.Account
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if !same {
			if err := forgetHub(ctx, tx); err != nil {
				return err
			}
			l.Cursor = 0
		} else if err := tx.QueryRowContext(ctx, `SELECT cursor FROM hub_login WHERE id = 1`).Scan(&l.Cursor); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO hub_login (id, url, account, cursor, logged_in) VALUES (1, ?, ?, ?, ?)
			ON CONFLICT (id) DO UPDATE SET url = excluded.url, account = excluded.account,
				cursor = excluded.cursor, logged_in = excluded.logged_in`, l.URL, l.Account, l.Cursor, at)
		return err
	})
	if err != nil {
		return fmt.Errorf("put hub login: %w", err)
	}
	return nil
}

func forgetHub(ctx context.Context, tx *sql.Tx) error {
	for _, q := range []string{`DELETE FROM hub_login`, `DELETE FROM hub_teams`, `DELETE FROM hub_pending`} {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

// DeleteHubLogin forgets the login, its cursor, teams and pending changes.
func (s *Store) DeleteHubLogin(ctx context.Context) error {
	if err := s.tx(ctx, func(tx *sql.Tx) error { return forgetHub(ctx, tx) }); err != nil {
		return fmt.Errorf("delete hub login: %w", err)
	}
	return nil
}

// SetHubCursor records the seq of the last relay event handled.
func (s *Store) SetHubCursor(ctx context.Context, cursor int64) error {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE hub_login SET cursor = ? WHERE id = 1`, cursor)
		return err
	})
	if err != nil {
		return fmt.Errorf("set hub cursor: %w", err)
	}
	return nil
}

// HubKey is a publisher key the station trusts for one owner's modules
// from one hub (schema 7). The same account name on two hubs may be two
// people: a key pinned for dave on one hub says nothing about dave on
// another.
type HubKey struct {
	// HubURL is the hub the key was pinned from. "" for a pin made before
	// schema 7 that no installed module's origin tied to a hub: such a pin
	// is trusted on no hub, and a different key is asked about
	// (hubsync).
	HubURL    string
	Owner     string
	KeyID     string
	PublicKey string
	PinnedAt  time.Time
}

const keyColumns = `hub_url, owner, key_id, public_key, pinned_at`

// HubKeys returns the keys pinned for owner on the hub at hubURL, oldest
// first: the keys the station trusts for that owner's modules from that
// hub, and no other.
func (s *Store) HubKeys(ctx context.Context, hubURL, owner string) ([]HubKey, error) {
	if hubURL == "" {
		return nil, fmt.Errorf("pinned keys of %s: no hub given", owner)
	}
	return s.hubKeys(ctx, `SELECT `+keyColumns+` FROM hub_keys WHERE hub_url = ? AND owner = ? ORDER BY pinned_at, key_id`, hubURL, owner)
}

// HubKeysOnEveryHub returns the keys pinned for owner on any hub (and
// those pinned before the station recorded hubs, with HubURL ""), by hub
// and then oldest first. They are what the operator is shown when a hub
// presents another key for an owner; they are trusted only through
// HubKeys.
func (s *Store) HubKeysOnEveryHub(ctx context.Context, owner string) ([]HubKey, error) {
	return s.hubKeys(ctx, `SELECT `+keyColumns+` FROM hub_keys WHERE owner = ? ORDER BY hub_url, pinned_at, key_id`, owner)
}

func (s *Store) hubKeys(ctx context.Context, q string, args ...any) ([]HubKey, error) {
	owner := args[len(args)-1]
	out, err := sqldb.QueryAll(ctx, s.db, func(r sqldb.Scanner) (HubKey, error) {
		var k HubKey
		var at int64
		if err := r.Scan(&k.HubURL, &k.Owner, &k.KeyID, &k.PublicKey, &at); err != nil {
			return HubKey{}, err
		}
		k.PinnedAt = sqldb.FromNanos(at)
		return k, nil
	}, q, args...)
	if err != nil {
		return nil, fmt.Errorf("pinned keys of %s: %w", owner, err)
	}
	return out, nil
}

// PutHubKey pins a key for its owner on its hub (a no-op if exactly this
// key is pinned there already). The hub must be named.
func (s *Store) PutHubKey(ctx context.Context, k HubKey) error {
	if k.HubURL == "" {
		return fmt.Errorf("pin key %s of %s: no hub given", k.KeyID, k.Owner)
	}
	at, err := sqldb.ToNanos(k.PinnedAt)
	if err != nil {
		return fmt.Errorf("pin key %s: %w", k.KeyID, err)
	}
	err = s.tx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO hub_keys (`+keyColumns+`) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (hub_url, owner, key_id, public_key) DO NOTHING`, k.HubURL, k.Owner, k.KeyID, k.PublicKey, at)
		return err
	})
	if err != nil {
		return fmt.Errorf("pin key %s of %s on %s: %w", k.KeyID, k.Owner, k.HubURL, err)
	}
	return nil
}

// HubOrigin says where a hub-installed module came from.
type HubOrigin struct {
	Module         string
	HubURL         string
	Version        string
	ManifestDigest string
	WasmDigest     string
	KeyID          string
	// Team is the team whose lockfile installed the module ("" for a
	// direct install).
	Team        string
	InstalledAt time.Time
}

// HubOrigin returns the origin of module; the error wraps ErrNotFound for
// a module that was not installed from a hub.
func (s *Store) HubOrigin(ctx context.Context, module string) (HubOrigin, error) {
	o, err := sqldb.QueryOne(ctx, s.db, scanOrigin, `SELECT `+originColumns+` FROM hub_origins WHERE module = ?`, module)
	if errors.Is(err, sql.ErrNoRows) {
		return HubOrigin{}, fmt.Errorf("origin of %s: %w", module, ErrNotFound)
	}
	if err != nil {
		return HubOrigin{}, fmt.Errorf("origin of %s: %w", module, err)
	}
	return o, nil
}

// HubOrigins returns the origin of every hub-installed module, by module.
func (s *Store) HubOrigins(ctx context.Context) ([]HubOrigin, error) {
	out, err := sqldb.QueryAll(ctx, s.db, scanOrigin, `SELECT `+originColumns+` FROM hub_origins ORDER BY module`)
	if err != nil {
		return nil, fmt.Errorf("module origins: %w", err)
	}
	return out, nil
}

const originColumns = `module, hub_url, version, manifest_digest, wasm_digest, key_id, team, installed_at`

func scanOrigin(r sqldb.Scanner) (HubOrigin, error) {
	var o HubOrigin
	var at int64
	if err := r.Scan(&o.Module, &o.HubURL, &o.Version, &o.ManifestDigest, &o.WasmDigest, &o.KeyID, &o.Team, &at); err != nil {
		return HubOrigin{}, err
	}
	o.InstalledAt = sqldb.FromNanos(at)
	return o, nil
}

// PutHubOrigin records (or replaces) where a module came from.
func (s *Store) PutHubOrigin(ctx context.Context, o HubOrigin) error {
	at, err := sqldb.ToNanos(o.InstalledAt)
	if err != nil {
		return fmt.Errorf("record origin of %s: %w", o.Module, err)
	}
	err = s.tx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO hub_origins (`+originColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (module) DO UPDATE SET hub_url = excluded.hub_url, version = excluded.version,
				manifest_digest = excluded.manifest_digest, wasm_digest = excluded.wasm_digest,
				key_id = excluded.key_id, team = excluded.team, installed_at = excluded.installed_at`,
			o.Module, o.HubURL, o.Version, o.ManifestDigest, o.WasmDigest, o.KeyID, o.Team, at)
		return err
	})
	s.changed()
	if err != nil {
		return fmt.Errorf("record origin of %s: %w", o.Module, err)
	}
	return nil
}

// DeleteHubOrigin forgets where module came from (it was removed).
func (s *Store) DeleteHubOrigin(ctx context.Context, module string) error {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM hub_origins WHERE module = ?`, module)
		return err
	})
	s.changed()
	if err != nil {
		return fmt.Errorf("forget origin of %s: %w", module, err)
	}
	return nil
}

// HubTeam is a team this station's account belongs to.
type HubTeam struct {
	Name   string
	HubURL string
	Role   string
	// Revision is the last lockfile revision applied; -1 before the first.
	Revision int64
	SyncedAt time.Time
	// LastError is why the last sync did not apply everything ("" if it
	// did).
	LastError string
}

// HubTeams returns the station's teams, by name.
func (s *Store) HubTeams(ctx context.Context) ([]HubTeam, error) {
	out, err := sqldb.QueryAll(ctx, s.db, func(r sqldb.Scanner) (HubTeam, error) {
		var t HubTeam
		var at int64
		if err := r.Scan(&t.Name, &t.HubURL, &t.Role, &t.Revision, &at, &t.LastError); err != nil {
			return HubTeam{}, err
		}
		if at != 0 {
			t.SyncedAt = sqldb.FromNanos(at)
		}
		return t, nil
	}, `SELECT name, hub_url, role, revision, synced_at, last_error FROM hub_teams ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("teams: %w", err)
	}
	return out, nil
}

// HubTeam returns one team; the error wraps ErrNotFound if the station
// does not belong to it.
func (s *Store) HubTeam(ctx context.Context, name string) (HubTeam, error) {
	ts, err := s.HubTeams(ctx)
	if err != nil {
		return HubTeam{}, err
	}
	for _, t := range ts {
		if t.Name == name {
			return t, nil
		}
	}
	return HubTeam{}, fmt.Errorf("team %s: %w", name, ErrNotFound)
}

// PutHubTeam records (or replaces) a membership.
func (s *Store) PutHubTeam(ctx context.Context, t HubTeam) error {
	var at int64
	if !t.SyncedAt.IsZero() {
		var err error
		if at, err = sqldb.ToNanos(t.SyncedAt); err != nil {
			return fmt.Errorf("record team %s: %w", t.Name, err)
		}
	}
	err := s.tx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO hub_teams (name, hub_url, role, revision, synced_at, last_error) VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (name) DO UPDATE SET hub_url = excluded.hub_url, role = excluded.role,
				revision = excluded.revision, synced_at = excluded.synced_at, last_error = excluded.last_error`,
			t.Name, t.HubURL, t.Role, t.Revision, at, t.LastError)
		return err
	})
	if err != nil {
		return fmt.Errorf("record team %s: %w", t.Name, err)
	}
	return nil
}

// DeleteHubTeam forgets a membership and the team's pending changes. The
// modules its lockfile installed stay installed.
func (s *Store) DeleteHubTeam(ctx context.Context, name string) error {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM hub_pending WHERE team = ?`, name); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `DELETE FROM hub_teams WHERE name = ?`, name)
		return err
	})
	if err != nil {
		return fmt.Errorf("forget team %s: %w", name, err)
	}
	return nil
}

// HubPending is a team change that asks for more than the operator
// approved and waits for `station team sync` (or `station team approve`) to
// approve it, or that the operator rejected (schema 11). Meanwhile the
// installed version keeps running.
type HubPending struct {
	Team        string
	Module      string
	Version     string
	Revision    int64
	FromVersion string
	// Escalations say in plain words what the change asks beyond the
	// approval.
	Escalations []string
	RecordedAt  time.Time
	// RejectedAt is when the operator rejected the change (`station team
	// reject`); zero while it waits for approval.
	RejectedAt time.Time
}

// HubPendings returns the pending changes of team ("": of every team), by
// team and module, the rejected ones with them.
func (s *Store) HubPendings(ctx context.Context, team string) ([]HubPending, error) {
	out, err := sqldb.QueryAll(ctx, s.db, func(r sqldb.Scanner) (HubPending, error) {
		var p HubPending
		var esc []byte
		var at, rejected int64
		if err := r.Scan(&p.Team, &p.Module, &p.Version, &p.Revision, &p.FromVersion, &esc, &at, &rejected); err != nil {
			return HubPending{}, err
		}
		if err := json.Unmarshal(esc, &p.Escalations); err != nil {
			return HubPending{}, fmt.Errorf("escalations of %s/%s: %w", p.Team, p.Module, err)
		}
		p.RecordedAt = sqldb.FromNanos(at)
		if rejected != 0 {
			p.RejectedAt = sqldb.FromNanos(rejected)
		}
		return p, nil
	}, `SELECT team, module, version, revision, from_version, escalations, recorded_at, rejected_at
		FROM hub_pending WHERE ? = '' OR team = ? ORDER BY team, module`, team, team)
	if err != nil {
		return nil, fmt.Errorf("pending changes: %w", err)
	}
	return out, nil
}

// ReplaceHubPendings makes ps the whole set of team's pending changes, in
// one transaction. A change of the same module and version as one recorded
// before keeps that one's rejection (RejectHubPending): a rejected change
// stays rejected while the lockfile pins that version. Any other change is
// recorded with its own RejectedAt (zero: it waits for approval), so another
// version of a rejected module waits for approval again.
func (s *Store) ReplaceHubPendings(ctx context.Context, team string, ps []HubPending) error {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		type key struct{ module, version string }
		type row struct {
			key
			at int64
		}
		was, err := sqldb.QueryAll(ctx, tx, func(r sqldb.Scanner) (row, error) {
			var w row
			return w, r.Scan(&w.module, &w.version, &w.at)
		}, `SELECT module, version, rejected_at FROM hub_pending WHERE team = ? AND rejected_at != 0`, team)
		if err != nil {
			return err
		}
		rejected := map[key]int64{}
		for _, w := range was {
			rejected[w.key] = w.at
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM hub_pending WHERE team = ?`, team); err != nil {
			return err
		}
		for _, p := range ps {
			esc, err := json.Marshal(p.Escalations)
			if err != nil {
				return err
			}
			at, err := sqldb.ToNanos(p.RecordedAt)
			if err != nil {
				return err
			}
			rej, kept := rejected[key{p.Module, p.Version}]
			if !kept && !p.RejectedAt.IsZero() {
				if rej, err = sqldb.ToNanos(p.RejectedAt); err != nil {
					return err
				}
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO hub_pending (team, module, version, revision, from_version, escalations, recorded_at, rejected_at)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, team, p.Module, p.Version, p.Revision, p.FromVersion, esc, at, rej); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("record pending changes of team %s: %w", team, err)
	}
	return nil
}

// UpgradeTeam is the team of a pending change that is no team's: an
// upgrade the operator ran (station module upgrade) that asks for more
// than was approved and was not approved then.
const UpgradeTeam = ""

// PutHubPending records one pending change of team (UpgradeTeam for an
// upgrade), replacing the one recorded for its module. The same version
// as before keeps its rejection, as ReplaceHubPendings does.
func (s *Store) PutHubPending(ctx context.Context, p HubPending) error {
	esc, err := json.Marshal(p.Escalations)
	if err != nil {
		return err
	}
	at, err := sqldb.ToNanos(p.RecordedAt)
	if err != nil {
		return fmt.Errorf("record pending change of %s: %w", p.Module, err)
	}
	err = s.tx(ctx, func(tx *sql.Tx) error {
		var rej int64
		err := tx.QueryRowContext(ctx, `SELECT rejected_at FROM hub_pending WHERE team = ? AND module = ? AND version = ?`, p.Team, p.Module, p.Version).Scan(&rej)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM hub_pending WHERE team = ? AND module = ?`, p.Team, p.Module); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO hub_pending (team, module, version, revision, from_version, escalations, recorded_at, rejected_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, p.Team, p.Module, p.Version, p.Revision, p.FromVersion, esc, at, rej)
		return err
	})
	if err != nil {
		return fmt.Errorf("record pending change of %s: %w", p.Module, err)
	}
	return nil
}

// DeleteHubPending forgets team's pending change of module, if any.
func (s *Store) DeleteHubPending(ctx context.Context, team, module string) error {
	if _, err := s.db.ExecContext(ctx, `DELETE FROM hub_pending WHERE team = ? AND module = ?`, team, module); err != nil {
		return fmt.Errorf("forget pending change of %s: %w", module, err)
	}
	return nil
}

// RejectHubPending records that the operator rejected team's pending
// change of module to version, at at. The error wraps ErrNotFound when no
// such change is recorded (none of module, or one of another version).
func (s *Store) RejectHubPending(ctx context.Context, team, module, version string, at time.Time) error {
	if at.IsZero() {
		return fmt.Errorf("reject %s@%s of team %s: no time given", module, version, team)
	}
	n, err := sqldb.ToNanos(at)
	if err != nil {
		return fmt.Errorf("reject %s@%s of team %s: %w", module, version, team, err)
	}
	found := false
	err = s.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE hub_pending SET rejected_at = ? WHERE team = ? AND module = ? AND version = ?`, n, team, module, version)
		if err != nil {
			return err
		}
		c, err := res.RowsAffected()
		found = c > 0
		return err
	})
	if err != nil {
		return fmt.Errorf("reject %s@%s of team %s: %w", module, version, team, err)
	}
	if !found {
		return fmt.Errorf("reject %s@%s of team %s: no such pending change: %w", module, version, team, ErrNotFound)
	}
	return nil
}
