package store

import (
	"context"
	"fmt"

	"github.com/station-dev/station/internal/sqldb"
)

// migrations are the schema changes, in order: migrations[i] takes the
// schema from version i to i+1. Append only; never edit one that has
// shipped.
//
// History:
//   - 1: modules, audit.
//   - 2: audit.trace (what a call was part of: a workflow step, a daemon
//     request); llm_usage (tokens the station spent for each module).
//   - 3: workflow_runs, workflow_steps, workflow_attempts (workflow run
//     history, persisted as runs progress, for show and resume).
//   - 4: hub_login (the hub this station is logged in to, and the relay
//     cursor), hub_keys (publisher keys pinned on first use), hub_origins
//     (where each hub-installed module came from), hub_teams (memberships
//     with the last applied lockfile revision), hub_pending (team changes
//     that wait for the operator's approval). See hub.go.
//   - 5: module_usage (what each module's files take: bytes grown and
//     names created, so that the quota and the entry limit hold across
//     restarts). See usage.go.
//   - 6: audit.folded (how many decisions a rate-limit summary row stands
//     for; 0 for a decision recorded one by one). Summary rows stored
//     before it get their count from their reason text.
//   - 7: hub_keys.hub_url (a key is pinned per hub and owner: the same
//     account name on two hubs may be two people). A pin made before gets
//     the hub of every installed module whose origin names that owner and
//     key; a pin no origin names gets an empty hub_url (trusted on no hub,
//     shown when a hub presents another key for its owner). The primary
//     key also takes the public key, so a key that shares another's id can
//     be pinned. See hub.go.
//   - 8: modules.source (the directory a module was installed from, for
//     `module show`), empty for a module installed before. See modules.go.
//   - 9: hub_advisories (the OSV advisories each hub published, as
//     received), hub_yanks (the versions each hub yanked: a row means
//     yanked), advisory_allows (the operator's allowances to run a module
//     version an advisory affects) and hub_advisory_feeds (the advisory
//     feed cursor of each hub, and when it was last read). See
//     advisories.go.
//   - 10: advisory_allows.hub_url (the hub whose advisory an allowance
//     allows: hubs number their advisories each on their own, so another
//     hub's advisory of the same id is not allowed by it). An allowance
//     made before gets the hub the module version was installed from when
//     that hub published the advisory, or else the one hub that did; one
//     that names no such hub gets an empty hub_url and allows nothing
//     (the operator allows it again).
//   - 11: hub_pending.rejected_at (when the operator rejected a pending
//     team change, 0 while it waits): a rejected change stays rejected
//     while its team's lockfile pins the same version, and a lockfile that
//     pins another version of the module is pending again. A change
//     recorded before is pending (0). See hub.go.
var migrations = []string{
	// 1
	`CREATE TABLE modules (
		id           TEXT PRIMARY KEY NOT NULL,
		version      TEXT NOT NULL,
		digest       TEXT NOT NULL,
		manifest     BLOB NOT NULL,
		wasm_path    TEXT NOT NULL,
		approved     BLOB NOT NULL,
		installed_at INTEGER NOT NULL -- Unix nanoseconds, UTC
	) STRICT;
	CREATE TABLE audit (
		id         INTEGER PRIMARY KEY, -- insertion order
		time       INTEGER NOT NULL,    -- Unix nanoseconds, UTC
		module     TEXT NOT NULL,
		command    TEXT NOT NULL,
		capability TEXT NOT NULL,
		target     TEXT NOT NULL,
		allowed    INTEGER NOT NULL,    -- 0 or 1
		reason     TEXT NOT NULL
	) STRICT;
	CREATE INDEX audit_module ON audit (module, id);
	CREATE INDEX audit_time ON audit (time);
	-- Denials are rare and what the operator looks for; a partial index
	-- costs nothing on the allowed decisions that make up most writes.
	CREATE INDEX audit_denied ON audit (id) WHERE allowed = 0;`,
	// 2
	`ALTER TABLE audit ADD COLUMN trace TEXT NOT NULL DEFAULT '';
	CREATE INDEX audit_trace ON audit (trace, id) WHERE trace != '';
	CREATE TABLE llm_usage (
		id                INTEGER PRIMARY KEY,
		time              INTEGER NOT NULL, -- Unix nanoseconds, UTC
		module            TEXT NOT NULL,    -- '' for the station's own calls (workflow llm steps)
		trace             TEXT NOT NULL,
		model             TEXT NOT NULL,
		prompt_tokens     INTEGER NOT NULL,
		completion_tokens INTEGER NOT NULL
	) STRICT;
	CREATE INDEX llm_usage_module ON llm_usage (module, time);`,
	// 3
	`CREATE TABLE workflow_runs (
		id          INTEGER PRIMARY KEY,
		workflow    TEXT NOT NULL,      -- the workflow's name
		file        TEXT NOT NULL,      -- the absolute path it was read from
		digest      TEXT NOT NULL,      -- sha256 of the file: resume refuses a changed file
		inputs      BLOB NOT NULL,      -- JSON object of the resolved inputs
		status      TEXT NOT NULL,      -- running, succeeded, failed, interrupted
		output      BLOB,               -- JSON, once succeeded
		error       TEXT NOT NULL DEFAULT '',
		owner       TEXT NOT NULL,      -- the process running it (pid:start:nonce)
		started_at  INTEGER NOT NULL,   -- Unix nanoseconds, UTC
		updated_at  INTEGER NOT NULL,
		finished_at INTEGER NOT NULL DEFAULT 0,
		resumes     INTEGER NOT NULL DEFAULT 0
	) STRICT;
	CREATE INDEX workflow_runs_running ON workflow_runs (id) WHERE status = 'running';
	CREATE TABLE workflow_steps (
		run_id      INTEGER NOT NULL REFERENCES workflow_runs (id) ON DELETE CASCADE,
		step        TEXT NOT NULL,
		position    INTEGER NOT NULL,   -- order in the file
		uses        TEXT NOT NULL,      -- "owner/slug command" or "llm"
		status      TEXT NOT NULL,      -- pending, running, succeeded, failed, skipped
		continued   INTEGER NOT NULL DEFAULT 0, -- failed, and the run went on (continue_on_error)
		input       BLOB,               -- JSON the last attempt was given
		output      BLOB,               -- JSON, once succeeded
		error       TEXT NOT NULL DEFAULT '',
		attempts    INTEGER NOT NULL DEFAULT 0,
		started_at  INTEGER NOT NULL DEFAULT 0,
		finished_at INTEGER NOT NULL DEFAULT 0,
		PRIMARY KEY (run_id, step)
	) STRICT;
	CREATE TABLE workflow_attempts (
		run_id      INTEGER NOT NULL,
		step        TEXT NOT NULL,
		attempt     INTEGER NOT NULL,   -- 1-based, never reused (a resume goes on counting)
		trace       TEXT NOT NULL,      -- the audit trace of the attempt's module call
		status      TEXT NOT NULL,      -- running, succeeded, failed
		error       TEXT NOT NULL DEFAULT '',
		error_kind  TEXT NOT NULL DEFAULT '',
		started_at  INTEGER NOT NULL,
		finished_at INTEGER NOT NULL DEFAULT 0,
		PRIMARY KEY (run_id, step, attempt),
		FOREIGN KEY (run_id, step) REFERENCES workflow_steps (run_id, step) ON DELETE CASCADE
	) STRICT;`,
	// 4
	`CREATE TABLE hub_login (
		id        INTEGER PRIMARY KEY CHECK (id = 1), -- one login per station
		url       TEXT NOT NULL,     -- the hub's base URL
		account   TEXT NOT NULL,     -- the account the token belongs to (the token is in STATION_HOME/hub-token)
		cursor    INTEGER NOT NULL DEFAULT 0, -- seq of the last relay event handled
		logged_in INTEGER NOT NULL   -- Unix nanoseconds, UTC
	) STRICT;
	CREATE TABLE hub_keys (
		owner      TEXT NOT NULL,    -- the account whose modules the key signs
		key_id     TEXT NOT NULL,    -- minisign key id
		public_key TEXT NOT NULL,    -- the base64 line of the minisign public key
		pinned_at  INTEGER NOT NULL,
		PRIMARY KEY (owner, key_id)
	) STRICT;
	CREATE TABLE hub_origins (
		module          TEXT PRIMARY KEY NOT NULL,
		hub_url         TEXT NOT NULL,
		version         TEXT NOT NULL,
		manifest_digest TEXT NOT NULL,
		wasm_digest     TEXT NOT NULL,
		key_id          TEXT NOT NULL,
		team            TEXT NOT NULL DEFAULT '', -- the team whose lockfile installed it, '' for a direct install
		installed_at    INTEGER NOT NULL
	) STRICT;
	CREATE TABLE hub_teams (
		name      TEXT PRIMARY KEY NOT NULL,
		hub_url   TEXT NOT NULL,
		role      TEXT NOT NULL,
		revision  INTEGER NOT NULL DEFAULT 0, -- the last lockfile revision applied (-1: none yet)
		synced_at INTEGER NOT NULL DEFAULT 0,
		last_error TEXT NOT NULL DEFAULT ''
	) STRICT;
	CREATE TABLE hub_pending (
		team            TEXT NOT NULL,
		module          TEXT NOT NULL,
		version         TEXT NOT NULL,
		revision        INTEGER NOT NULL, -- the lockfile revision that asked for it
		from_version    TEXT NOT NULL,    -- the version installed (and running) meanwhile, '' if none
		escalations     BLOB NOT NULL,    -- JSON array of plain-word lines: what it asks beyond the approval
		recorded_at     INTEGER NOT NULL,
		PRIMARY KEY (team, module)
	) STRICT;`,
	// 5
	`CREATE TABLE module_usage (
		module     TEXT PRIMARY KEY NOT NULL,
		bytes      INTEGER NOT NULL,
		entries    INTEGER NOT NULL,
		updated_at INTEGER NOT NULL -- Unix nanoseconds, UTC
	) STRICT;`,
	// 6
	`ALTER TABLE audit ADD COLUMN folded INTEGER NOT NULL DEFAULT 0; -- decisions a summary row stands for, 0 if none
	UPDATE audit SET folded = CAST(substr(reason, 19, instr(reason, ' more ') - 19) AS INTEGER)
		WHERE reason LIKE 'audit rate limit: % more %' AND target LIKE '(% decisions)';`,
	// 7
	`CREATE TABLE hub_keys_7 (
		hub_url    TEXT NOT NULL,    -- the hub the key was pinned from; '' for a pin from before schema 7 no origin names
		owner      TEXT NOT NULL,    -- the account on that hub whose modules the key signs
		key_id     TEXT NOT NULL,    -- minisign key id
		public_key TEXT NOT NULL,    -- the base64 line of the minisign public key
		pinned_at  INTEGER NOT NULL,
		PRIMARY KEY (hub_url, owner, key_id, public_key)
	) STRICT;
	INSERT INTO hub_keys_7 (hub_url, owner, key_id, public_key, pinned_at)
		SELECT DISTINCT o.hub_url, k.owner, k.key_id, k.public_key, k.pinned_at
		FROM hub_keys k JOIN hub_origins o
			ON o.key_id = k.key_id AND substr(o.module, 1, instr(o.module, '/') - 1) = k.owner
		WHERE o.hub_url != '';
	INSERT INTO hub_keys_7 (hub_url, owner, key_id, public_key, pinned_at)
		SELECT '', k.owner, k.key_id, k.public_key, k.pinned_at FROM hub_keys k
		WHERE NOT EXISTS (SELECT 1 FROM hub_keys_7 n WHERE n.owner = k.owner AND n.key_id = k.key_id);
	DROP TABLE hub_keys;
	ALTER TABLE hub_keys_7 RENAME TO hub_keys;
	CREATE INDEX hub_keys_owner ON hub_keys (owner);`,
	// 8
	`ALTER TABLE modules ADD COLUMN source TEXT NOT NULL DEFAULT ''; -- the directory it was installed from, '' if not recorded`,
	// 9
	`CREATE TABLE hub_advisories (
		hub_url   TEXT NOT NULL,    -- the hub that published it
		id        TEXT NOT NULL,    -- STATION-YYYY-NNNN
		target    TEXT NOT NULL,    -- the module id or 'station' it is about (its first affected package)
		data      BLOB NOT NULL,    -- JSON of the hub.OSV record
		modified  INTEGER NOT NULL, -- Unix nanoseconds, UTC: OSV modified
		withdrawn INTEGER NOT NULL DEFAULT 0, -- Unix nanoseconds, UTC; 0 while in force
		PRIMARY KEY (hub_url, id)
	) STRICT;
	CREATE INDEX hub_advisories_target ON hub_advisories (target);
	CREATE TABLE hub_yanks (
		hub_url   TEXT NOT NULL,
		module    TEXT NOT NULL,
		version   TEXT NOT NULL,
		reason    TEXT NOT NULL,
		yanked_at INTEGER NOT NULL, -- Unix nanoseconds, UTC
		PRIMARY KEY (hub_url, module, version)
	) STRICT;
	CREATE TABLE advisory_allows (
		module     TEXT NOT NULL,
		version    TEXT NOT NULL,
		advisory   TEXT NOT NULL,   -- the advisory id
		reason     TEXT NOT NULL,   -- why the operator runs it anyway
		allowed_at INTEGER NOT NULL,
		PRIMARY KEY (module, version, advisory)
	) STRICT;
	CREATE TABLE hub_advisory_feeds (
		hub_url   TEXT PRIMARY KEY NOT NULL,
		cursor    INTEGER NOT NULL, -- the feed cursor to read on from
		synced_at INTEGER NOT NULL  -- Unix nanoseconds, UTC: when a page of it was last stored
	) STRICT;`,
	// 10
	`ALTER TABLE advisory_allows ADD COLUMN hub_url TEXT NOT NULL DEFAULT ''; -- the hub whose advisory it allows
	UPDATE advisory_allows SET hub_url = coalesce(
		(SELECT o.hub_url FROM hub_origins o JOIN hub_advisories a ON a.hub_url = o.hub_url AND a.id = advisory_allows.advisory
			WHERE o.module = advisory_allows.module AND o.version = advisory_allows.version),
		(SELECT CASE WHEN count(*) = 1 THEN min(a.hub_url) END FROM hub_advisories a WHERE a.id = advisory_allows.advisory),
		'');`,
	// 11
	`ALTER TABLE hub_pending ADD COLUMN rejected_at INTEGER NOT NULL DEFAULT 0; -- Unix nanoseconds, UTC, when the operator rejected it; 0 while it waits`,
}

// SchemaVersion is the schema version this package writes: the number of
// migrations.
const SchemaVersion = 11

// migrate brings the database to SchemaVersion in one transaction.
func (s *Store) migrate(ctx context.Context) error {
	return sqldb.Migrate(ctx, s.db, migrations, func(have, _ int) error {
		return fmt.Errorf("the database has schema version %d, newer than this station supports (%d): upgrade station, or use a different STATION_HOME", have, SchemaVersion)
	})
}
