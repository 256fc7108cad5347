package hubserver

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"modernc.org/sqlite" // the "sqlite" database/sql driver

	"github.com/station-dev/station/internal/sqldb"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/station-dev/station/hub"
)

// SQLite is the one-machine Store: one SQLite database file (the hub's own,
// never a station's). WAL mode with synchronous=NORMAL, foreign keys on,
// every write a BEGIN IMMEDIATE transaction, so writers are serialized and
// the event log is appended in commit order.
type SQLite struct {
	db   *sql.DB
	path string
}

var _ Store = (*SQLite)(nil)

// sqliteMigrations are the schema changes, in order: sqliteMigrations[i]
// takes the schema from version i to i+1. Append only.
//
// History:
//   - 1: accounts, tokens, keys, modules, versions, teams, members,
//     invites, events.
//   - 2: invites.id, the name an owner lists and revokes an invite by
//     (invites of schema 1 get the first 8 bytes of their hash, in hex);
//     invites indexed by team and by creator.
//   - 3: security reports: accounts.admin; reports, their threads
//     (report_events), credits, station_releases and advisories (OSV
//     records); events indexed by kind, for the advisory feed.
var sqliteMigrations = []string{
	`CREATE TABLE accounts (
		name       TEXT PRIMARY KEY NOT NULL,
		created_at INTEGER NOT NULL -- Unix nanoseconds, UTC (as every time below)
	) STRICT;
	CREATE TABLE tokens (
		id         TEXT PRIMARY KEY NOT NULL,
		account    TEXT NOT NULL REFERENCES accounts (name),
		hash       BLOB NOT NULL UNIQUE, -- SHA-256 of the secret; the secret is never stored
		label      TEXT NOT NULL,
		created_at INTEGER NOT NULL
	) STRICT;
	CREATE INDEX tokens_account ON tokens (account, created_at);
	CREATE TABLE keys (
		account    TEXT NOT NULL REFERENCES accounts (name),
		id         TEXT NOT NULL,
		public_key TEXT NOT NULL,
		created_at INTEGER NOT NULL,
		revoked_at INTEGER,
		PRIMARY KEY (account, id)
	) STRICT;
	CREATE TABLE modules (
		id          TEXT PRIMARY KEY NOT NULL,
		owner       TEXT NOT NULL REFERENCES accounts (name),
		description TEXT NOT NULL,
		latest      TEXT NOT NULL, -- '' when every version is yanked
		created_at  INTEGER NOT NULL,
		updated_at  INTEGER NOT NULL
	) STRICT;
	CREATE INDEX modules_owner ON modules (owner, id);
	CREATE TABLE versions (
		module          TEXT NOT NULL REFERENCES modules (id),
		version         TEXT NOT NULL,
		manifest_digest TEXT NOT NULL,
		wasm_digest     TEXT NOT NULL,
		wasm_size       INTEGER NOT NULL,
		key_id          TEXT NOT NULL,
		signature       TEXT NOT NULL,
		published_at    INTEGER NOT NULL,
		yanked_at       INTEGER,
		yank_reason     TEXT NOT NULL DEFAULT '',
		PRIMARY KEY (module, version)
	) STRICT;
	CREATE TABLE teams (
		name       TEXT PRIMARY KEY NOT NULL,
		created_at INTEGER NOT NULL,
		revision   INTEGER NOT NULL,
		lockfile   BLOB NOT NULL, -- JSON hub.Lockfile
		updated_at INTEGER NOT NULL,
		updated_by TEXT NOT NULL
	) STRICT;
	CREATE TABLE members (
		team      TEXT NOT NULL REFERENCES teams (name),
		account   TEXT NOT NULL REFERENCES accounts (name),
		role      TEXT NOT NULL CHECK (role IN ('owner', 'member')),
		joined_at INTEGER NOT NULL,
		PRIMARY KEY (team, account)
	) STRICT;
	CREATE INDEX members_account ON members (account, team);
	CREATE TABLE invites (
		hash       BLOB PRIMARY KEY NOT NULL, -- SHA-256 of the code
		team       TEXT NOT NULL REFERENCES teams (name),
		role       TEXT NOT NULL CHECK (role IN ('owner', 'member')),
		account    TEXT NOT NULL, -- '' for anyone holding the code
		created_by TEXT NOT NULL,
		created_at INTEGER NOT NULL,
		expires_at INTEGER NOT NULL
	) STRICT;
	CREATE INDEX invites_expiry ON invites (expires_at);
	-- AUTOINCREMENT: a sequence number is never reused, so a cursor always
	-- means the same point of the log.
	CREATE TABLE events (
		seq     INTEGER PRIMARY KEY AUTOINCREMENT,
		time    INTEGER NOT NULL,
		kind    TEXT NOT NULL,
		team    TEXT NOT NULL, -- '' for public events
		account TEXT NOT NULL, -- the account a membership event is about
		data    BLOB NOT NULL  -- JSON hub.Event without seq
	) STRICT;
	CREATE INDEX events_team ON events (team, seq);`,
	`ALTER TABLE invites ADD COLUMN id TEXT NOT NULL DEFAULT '';
	UPDATE invites SET id = lower(hex(substr(hash, 1, 8)));
	CREATE UNIQUE INDEX invites_team_id ON invites (team, id);
	CREATE INDEX invites_creator ON invites (team, created_by);`,
	`ALTER TABLE accounts ADD COLUMN admin INTEGER NOT NULL DEFAULT 0 CHECK (admin IN (0, 1));
	CREATE TABLE reports (
		id            TEXT PRIMARY KEY NOT NULL, -- R- and 12 random characters
		target        TEXT NOT NULL,             -- a module id, or 'station'
		owner         TEXT NOT NULL,             -- the target's owner; '' for the station (admins only)
		introduced    TEXT NOT NULL,             -- '' when not given (as every optional text below)
		last_affected TEXT NOT NULL,
		title         TEXT NOT NULL,
		body          TEXT NOT NULL,
		cwe           TEXT NOT NULL,
		severity_level TEXT NOT NULL CHECK (severity_level IN ('low', 'medium', 'high', 'critical')),
		severity_cvss TEXT NOT NULL,
		reproduction  TEXT NOT NULL,
		state         TEXT NOT NULL CHECK (state IN ('new', 'triaged', 'confirmed', 'fixed', 'duplicate', 'wontfix', 'invalid')),
		reporter      TEXT NOT NULL REFERENCES accounts (name),
		fixed_in      TEXT NOT NULL,
		duplicate_of  TEXT NOT NULL,
		advisory      TEXT NOT NULL,
		published_at  INTEGER,                   -- NULL while private
		created_at    INTEGER NOT NULL,
		updated_at    INTEGER NOT NULL
	) STRICT;
	CREATE INDEX reports_created ON reports (created_at, id);
	CREATE INDEX reports_target ON reports (target, created_at);
	CREATE INDEX reports_owner ON reports (owner, created_at);
	CREATE INDEX reports_reporter ON reports (reporter, created_at);
	-- A report's thread; seq counts within the report, so that a reader of
	-- one report learns nothing of the activity of others.
	CREATE TABLE report_events (
		report TEXT NOT NULL REFERENCES reports (id),
		seq    INTEGER NOT NULL,
		kind   TEXT NOT NULL,
		actor  TEXT NOT NULL,
		time   INTEGER NOT NULL,
		data   BLOB NOT NULL, -- JSON hub.ReportEvent without seq
		PRIMARY KEY (report, seq)
	) STRICT;
	CREATE TABLE credits (
		report     TEXT NOT NULL REFERENCES reports (id),
		account    TEXT NOT NULL REFERENCES accounts (name),
		amount     INTEGER NOT NULL CHECK (amount > 0),
		reason     TEXT NOT NULL,
		awarded_by TEXT NOT NULL,
		time       INTEGER NOT NULL
	) STRICT;
	CREATE INDEX credits_account ON credits (account, time);
	CREATE INDEX credits_report ON credits (report);
	CREATE TABLE station_releases (
		version     TEXT PRIMARY KEY NOT NULL,
		recorded_by TEXT NOT NULL,
		recorded_at INTEGER NOT NULL
	) STRICT;
	CREATE TABLE advisories (
		id        TEXT PRIMARY KEY NOT NULL, -- STATION-YEAR-NUMBER
		target    TEXT NOT NULL,
		data      BLOB NOT NULL,             -- JSON hub.OSV, without the hub's URL (the server adds it)
		modified  INTEGER NOT NULL,
		withdrawn INTEGER,
		report    TEXT NOT NULL              -- '' for an advisory written directly
	) STRICT;
	CREATE INDEX advisories_target ON advisories (target, id);
	CREATE UNIQUE INDEX advisories_report ON advisories (report) WHERE report != '';
	CREATE INDEX events_kind ON events (kind, seq);`,
}

// sqliteMaxConns bounds the connections a SQLite hub opens.
const sqliteMaxConns = 32

// OpenSQLite opens (creating it, mode 0600, if needed) the hub database at
// path and migrates it to the current schema.
func OpenSQLite(path string) (*SQLite, error) {
	db, abs, err := sqldb.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open hub database %s: %w", path, err)
	}
	// A bounded pool: every connection holds descriptors of its own (the
	// database and its WAL), so a burst of streams reconnecting at once
	// would otherwise open thousands and run the process out of them. WAL
	// readers run in parallel up to the bound; the rest wait their turn,
	// within their request's deadline, and writers take turns anyway.
	db.SetMaxOpenConns(sqliteMaxConns)
	db.SetMaxIdleConns(sqliteMaxConns)
	s := &SQLite{db: db, path: abs}
	if err := s.migrate(context.Background()); err != nil {
		db.Close()
		return nil, fmt.Errorf("open hub database %s: %w", path, err)
	}
	return s, nil
}

// Close closes the database.
func (s *SQLite) Close() error { return s.db.Close() }

func (s *SQLite) migrate(ctx context.Context) error {
	return sqldb.Migrate(ctx, s.db, sqliteMigrations, func(have, supported int) error {
		return fmt.Errorf("the hub database has schema version %d, newer than this hub supports (%d): upgrade station", have, supported)
	})
}

// tx runs fn in a write transaction (BEGIN IMMEDIATE), committing if fn
// returns nil.
func (s *SQLite) tx(ctx context.Context, fn func(*sql.Tx) error) error {
	return sqldb.Tx(ctx, s.db, fn)
}

// isConstraint reports a UNIQUE or PRIMARY KEY violation.
func isConstraint(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	return se.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE || se.Code() == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY
}

// sqliteQuerier runs statements: a *sql.DB or a *sql.Tx.
type sqliteQuerier interface {
	sqldb.Querier
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// sqliteTx is a SQLite write transaction (or the database, for a read) as
// the shared rules use it (ruleTx). The rules' SQL is SQLite's already.
// Its locks are no-ops: a write transaction began with BEGIN IMMEDIATE,
// so it has been the database's one writer from its first statement, and
// nothing it reads changes under it before it commits.
type sqliteTx struct{ q sqliteQuerier }

func (t sqliteTx) exec(ctx context.Context, query string, args ...any) error {
	_, err := t.q.ExecContext(ctx, query, args...)
	return err
}

func (t sqliteTx) queryRow(ctx context.Context, query string, args ...any) sqldb.Scanner {
	return t.q.QueryRowContext(ctx, query, args...)
}

func (t sqliteTx) queryEach(ctx context.Context, scan func(sqldb.Scanner) error, query string, args ...any) error {
	_, err := sqldb.QueryAll(ctx, t.q, func(r sqldb.Scanner) (struct{}, error) { return struct{}{}, scan(r) }, query, args...)
	return err
}

func (sqliteTx) unique(err error) bool { return isConstraint(err) }

func (t sqliteTx) appendEvent(ctx context.Context, ev hub.Event) (hub.Event, error) {
	return appendEvent(ctx, t.q, ev)
}

func (t sqliteTx) nextAdvisoryID(ctx context.Context, at time.Time) (string, error) {
	return nextAdvisoryID(ctx, t.q, at)
}

func (sqliteTx) lockName(context.Context, string, string) error { return nil }
func (sqliteTx) lockReport(context.Context, string) error       { return nil }
func (sqliteTx) lockAdvisory(context.Context, string) error     { return nil }
func (sqliteTx) lockAccount(context.Context, string) error      { return nil }

// appendEvent adds ev to the log inside tx and returns it with its seq.
func appendEvent(ctx context.Context, tx sqliteQuerier, ev hub.Event) (hub.Event, error) {
	ev.Seq = 0
	at, err := sqldb.ToNanos(ev.Time)
	if err != nil {
		return ev, fmt.Errorf("append event: %w", err)
	}
	data, err := json.Marshal(ev)
	if err != nil {
		return ev, err
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO events (time, kind, team, account, data) VALUES (?, ?, ?, ?, ?)`,
		at, ev.Kind, ev.Team, ev.Account, data)
	if err != nil {
		return ev, fmt.Errorf("append event: %w", err)
	}
	ev.Seq, err = res.LastInsertId()
	return ev, err
}

// Accounts and tokens.

func (s *SQLite) CreateAccount(ctx context.Context, name string, at time.Time) (hub.Account, error) {
	n, err := sqldb.ToNanos(at)
	if err != nil {
		return hub.Account{}, fmt.Errorf("create account: %w", err)
	}
	_, err = s.db.ExecContext(ctx, `INSERT INTO accounts (name, created_at) VALUES (?, ?)`, name, n)
	if isConstraint(err) {
		return hub.Account{}, ErrExists
	}
	if err != nil {
		return hub.Account{}, fmt.Errorf("create account: %w", err)
	}
	return hub.Account{Name: name, CreatedAt: at.UTC()}, nil
}

func (s *SQLite) Account(ctx context.Context, name string) (hub.Account, error) {
	var at int64
	var admin bool
	err := s.db.QueryRowContext(ctx, `SELECT created_at, admin FROM accounts WHERE name = ?`, name).Scan(&at, &admin)
	if errors.Is(err, sql.ErrNoRows) {
		return hub.Account{}, ErrNotFound
	}
	if err != nil {
		return hub.Account{}, fmt.Errorf("read account: %w", err)
	}
	return hub.Account{Name: name, CreatedAt: sqldb.FromNanos(at), Admin: admin}, nil
}

func (s *SQLite) SetAdmin(ctx context.Context, name string, admin bool) error {
	res, err := s.db.ExecContext(ctx, `UPDATE accounts SET admin = ? WHERE name = ?`, admin, name)
	if err != nil {
		return fmt.Errorf("set admin: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrNotFound
	}
	return nil
}

func (s *SQLite) AddToken(ctx context.Context, t Token) error {
	at, err := sqldb.ToNanos(t.CreatedAt)
	if err != nil {
		return fmt.Errorf("add token: %w", err)
	}
	return s.tx(ctx, func(tx *sql.Tx) error {
		if err := exists(ctx, sqliteTx{tx}, `SELECT 1 FROM accounts WHERE name = ?`, t.Account); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO tokens (id, account, hash, label, created_at) VALUES (?, ?, ?, ?, ?)`,
			t.ID, t.Account, t.Hash[:], t.Label, at)
		if isConstraint(err) {
			return ErrExists
		}
		return err
	})
}

func (s *SQLite) TokenByHash(ctx context.Context, hash [32]byte) (Token, error) {
	t := Token{Hash: hash}
	var at int64
	err := s.db.QueryRowContext(ctx, `SELECT id, account, label, created_at FROM tokens WHERE hash = ?`, hash[:]).Scan(&t.ID, &t.Account, &t.Label, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return Token{}, ErrNotFound
	}
	if err != nil {
		return Token{}, fmt.Errorf("read token: %w", err)
	}
	t.CreatedAt = sqldb.FromNanos(at)
	return t, nil
}

func (s *SQLite) Tokens(ctx context.Context, account string) ([]Token, error) {
	out, err := sqldb.QueryAll(ctx, s.db, func(r sqldb.Scanner) (Token, error) {
		t := Token{Account: account}
		var at int64
		err := r.Scan(&t.ID, &t.Label, &at)
		t.CreatedAt = sqldb.FromNanos(at)
		return t, err
	}, `SELECT id, label, created_at FROM tokens WHERE account = ? ORDER BY created_at, id`, account)
	if err != nil {
		return nil, fmt.Errorf("list tokens: %w", err)
	}
	return out, nil
}

func (s *SQLite) DeleteToken(ctx context.Context, account, id string) error {
	res, err := s.db.ExecContext(ctx, `DELETE FROM tokens WHERE account = ? AND id = ?`, account, id)
	if err != nil {
		return fmt.Errorf("delete token: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrNotFound
	}
	return nil
}

// Keys.

func (s *SQLite) AddKey(ctx context.Context, k hub.Key) error {
	at, err := sqldb.ToNanos(k.CreatedAt)
	if err != nil {
		return fmt.Errorf("add key: %w", err)
	}
	_, err = s.db.ExecContext(ctx, `INSERT INTO keys (account, id, public_key, created_at) VALUES (?, ?, ?, ?)`,
		k.Account, k.ID, k.PublicKey, at)
	if isConstraint(err) {
		return ErrExists
	}
	if err != nil {
		return fmt.Errorf("add key: %w", err)
	}
	return nil
}

func (s *SQLite) Keys(ctx context.Context, account string) ([]hub.Key, error) {
	out, err := sqldb.QueryAll(ctx, s.db, func(r sqldb.Scanner) (hub.Key, error) {
		k := hub.Key{Account: account}
		var at int64
		var revoked *int64
		err := r.Scan(&k.ID, &k.PublicKey, &at, &revoked)
		k.CreatedAt, k.RevokedAt = sqldb.FromNanos(at), optTime(revoked)
		return k, err
	}, `SELECT id, public_key, created_at, revoked_at FROM keys WHERE account = ? ORDER BY created_at, id`, account)
	if err != nil {
		return nil, fmt.Errorf("list keys: %w", err)
	}
	return out, nil
}

func (s *SQLite) RevokeKey(ctx context.Context, account, id string, at time.Time) (hub.Key, hub.Event, error) {
	var k hub.Key
	var ev hub.Event
	n, err := sqldb.ToNanos(at)
	if err != nil {
		return k, ev, fmt.Errorf("revoke key: %w", err)
	}
	err = s.tx(ctx, func(tx *sql.Tx) error {
		var created int64
		err := tx.QueryRowContext(ctx, `SELECT public_key, created_at FROM keys WHERE account = ? AND id = ? AND revoked_at IS NULL`, account, id).Scan(&k.PublicKey, &created)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE keys SET revoked_at = ? WHERE account = ? AND id = ?`, n, account, id); err != nil {
			return err
		}
		t := at.UTC()
		k.ID, k.Account, k.CreatedAt, k.RevokedAt = id, account, sqldb.FromNanos(created), &t
		ev, err = appendEvent(ctx, tx, hub.Event{Kind: hub.EventKeyRevoked, Time: t, Actor: account, Account: account, KeyID: id})
		return err
	})
	return k, ev, err
}

// Modules.

func (s *SQLite) Publish(ctx context.Context, v Version) (hub.Event, error) {
	var ev hub.Event
	err := s.tx(ctx, func(tx *sql.Tx) (err error) {
		ev, err = publish(ctx, sqliteTx{tx}, v)
		return err
	})
	return ev, err
}

func (s *SQLite) Module(ctx context.Context, id string) (hub.Module, error) {
	return readModule(ctx, sqliteTx{s.db}, id)
}

func (s *SQLite) Version(ctx context.Context, module, version string) (Version, error) {
	return readVersion(ctx, sqliteTx{s.db}, module, version)
}

func (s *SQLite) SetYanked(ctx context.Context, module, version string, yanked bool, reason, actor string, at time.Time) (hub.Version, *hub.Event, error) {
	var out hub.Version
	var evp *hub.Event
	err := s.tx(ctx, func(tx *sql.Tx) (err error) {
		out, evp, err = setYanked(ctx, sqliteTx{tx}, module, version, yanked, reason, actor, at)
		return err
	})
	return out, evp, err
}

func (s *SQLite) Search(ctx context.Context, query, owner string, offset, limit int) ([]hub.Module, error) {
	like := "%" + strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(query) + "%"
	out, err := sqldb.QueryAll(ctx, s.db, func(r sqldb.Scanner) (hub.Module, error) {
		var m hub.Module
		var created, updated int64
		err := r.Scan(&m.ID, &m.Owner, &m.Description, &m.Latest, &created, &updated)
		m.CreatedAt, m.UpdatedAt = sqldb.FromNanos(created), sqldb.FromNanos(updated)
		return m, err
	}, `SELECT id, owner, description, latest, created_at, updated_at FROM modules
		WHERE (id LIKE ?1 ESCAPE '\' OR description LIKE ?1 ESCAPE '\') AND (?2 = '' OR owner = ?2)
		ORDER BY id LIMIT ?3 OFFSET ?4`, like, owner, limit, offset)
	if err != nil {
		return nil, fmt.Errorf("search modules: %w", err)
	}
	return out, nil
}

// Teams.

func (s *SQLite) CreateTeam(ctx context.Context, name, owner string, at time.Time) (hub.Event, error) {
	var ev hub.Event
	err := s.tx(ctx, func(tx *sql.Tx) (err error) {
		ev, err = createTeam(ctx, sqliteTx{tx}, name, owner, at)
		return err
	})
	return ev, err
}

func (s *SQLite) Team(ctx context.Context, name string) (hub.Team, error) {
	return readTeam(ctx, sqliteTx{s.db}, name)
}

func (s *SQLite) TeamsOf(ctx context.Context, account string) ([]hub.Team, error) {
	return teamsOf(ctx, sqliteTx{s.db}, account)
}

func (s *SQLite) Members(ctx context.Context, team string) ([]string, error) {
	return members(ctx, sqliteTx{s.db}, team)
}

func (s *SQLite) AddInvite(ctx context.Context, inv Invite) error {
	return s.tx(ctx, func(tx *sql.Tx) error { return addInvite(ctx, sqliteTx{tx}, inv) })
}

func (s *SQLite) Invites(ctx context.Context, team, actor string, at time.Time) ([]Invite, error) {
	var out []Invite
	err := s.tx(ctx, func(tx *sql.Tx) (err error) {
		out, err = invites(ctx, sqliteTx{tx}, team, actor, at)
		return err
	})
	return out, err
}

func (s *SQLite) RevokeInvites(ctx context.Context, team, id, actor string, at time.Time) ([]Invite, error) {
	var out []Invite
	err := s.tx(ctx, func(tx *sql.Tx) (err error) {
		out, err = revokeInvites(ctx, sqliteTx{tx}, team, id, actor, at)
		return err
	})
	return out, err
}

func (s *SQLite) AcceptInvite(ctx context.Context, hash [32]byte, account string, at time.Time) (hub.Team, hub.Event, error) {
	var team, role string
	var ev hub.Event
	err := s.tx(ctx, func(tx *sql.Tx) (err error) {
		team, role, ev, err = acceptInvite(ctx, sqliteTx{tx}, hash, account, at)
		return err
	})
	if err != nil {
		return hub.Team{}, hub.Event{}, err
	}
	t, err := s.Team(ctx, team)
	t.Role = role
	return t, ev, err
}

func (s *SQLite) SetRole(ctx context.Context, team, account, role, actor string, at time.Time) (hub.Member, hub.Event, error) {
	var m hub.Member
	var ev hub.Event
	err := s.tx(ctx, func(tx *sql.Tx) (err error) {
		m, ev, err = setRole(ctx, sqliteTx{tx}, team, account, role, actor, at)
		return err
	})
	return m, ev, err
}

func (s *SQLite) RemoveMember(ctx context.Context, team, account, actor string, at time.Time) (hub.Event, error) {
	var ev hub.Event
	err := s.tx(ctx, func(tx *sql.Tx) (err error) {
		ev, err = removeMember(ctx, sqliteTx{tx}, team, account, actor, at)
		return err
	})
	return ev, err
}

func (s *SQLite) Lockfile(ctx context.Context, team string) (hub.TeamLockfile, error) {
	return readLockfile(ctx, sqliteTx{s.db}, team)
}

func (s *SQLite) PushLockfile(ctx context.Context, team string, base int64, l hub.Lockfile, actor string, at time.Time) (hub.TeamLockfile, hub.Event, error) {
	var tl hub.TeamLockfile
	var ev hub.Event
	err := s.tx(ctx, func(tx *sql.Tx) (err error) {
		tl, ev, err = pushLockfile(ctx, sqliteTx{tx}, team, base, l, actor, at)
		return err
	})
	return tl, ev, err
}

// Events.

func scanEvent(r sqldb.Scanner) (hub.Event, error) {
	var seq int64
	var data []byte
	if err := r.Scan(&seq, &data); err != nil {
		return hub.Event{}, err
	}
	var ev hub.Event
	if err := json.Unmarshal(data, &ev); err != nil {
		return hub.Event{}, fmt.Errorf("decode event %d: %w", seq, err)
	}
	ev.Seq = seq
	return ev, nil
}

func (s *SQLite) EventsFor(ctx context.Context, viewer string, after, upTo int64, limit int) ([]hub.Event, error) {
	out, err := sqldb.QueryAll(ctx, s.db, scanEvent, `SELECT seq, data FROM events
		WHERE seq > ?1 AND seq <= ?2
		  AND (team = '' OR team IN (SELECT team FROM members WHERE account = ?3)
		       OR (?3 != '' AND account = ?3 AND kind IN (?5, ?6)))
		ORDER BY seq LIMIT ?4`, after, upTo, viewer, limit, hub.EventMemberLeft, hub.EventMemberRemoved)
	if err != nil {
		return nil, fmt.Errorf("read events: %w", err)
	}
	return out, nil
}

func (s *SQLite) EventsAfter(ctx context.Context, after int64, limit int) ([]hub.Event, error) {
	out, err := sqldb.QueryAll(ctx, s.db, scanEvent, `SELECT seq, data FROM events WHERE seq > ? ORDER BY seq LIMIT ?`, after, limit)
	if err != nil {
		return nil, fmt.Errorf("read events: %w", err)
	}
	return out, nil
}

func (s *SQLite) LastSeq(ctx context.Context) (int64, error) {
	var seq sql.NullInt64
	if err := s.db.QueryRowContext(ctx, `SELECT max(seq) FROM events`).Scan(&seq); err != nil {
		return 0, fmt.Errorf("read last event: %w", err)
	}
	return seq.Int64, nil
}
