package hubserver

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/sqldb"
)

// Postgres is the Store of a hub on PostgreSQL: the same tables and rules
// as SQLite, for hubs that outgrow one machine's disk. Every write is one
// transaction at READ COMMITTED that first takes the locks its rules need
// (SQLite's single writer gives them for free):
//
//   - events get their sequence number from the one row of event_seq,
//     locked by the UPDATE that increments it until the transaction ends,
//     so numbers are assigned in commit order and a reader that sees event
//     N sees every event below it;
//   - a module, a team, the station's releases and advisory numbers are
//     serialized by a transaction-scoped advisory lock on their name (or a
//     counter row), taken before the rule's reads, so the read-check-write
//     of a version's precedence, a lockfile's base revision, a team's last
//     owner or an invite's single use sees every earlier commit;
//   - a report (and an advisory) is locked with SELECT ... FOR UPDATE
//     before its state, thread or advisory is read.
//
// A transaction that fails with a serialization failure or a deadlock
// (SQLSTATE 40001, 40P01) is run again from the start, up to
// pgMaxAttempts times: every write is a function that can be re-run.
type Postgres struct {
	pool      *pgxpool.Pool
	lastSweep atomic.Int64 // of rate_buckets, Unix nanoseconds (postgres_cluster.go)

	pingMu   sync.Mutex
	pingConn *pgx.Conn // the readiness check's own connection (health.go)
}

var _ Store = (*Postgres)(nil)

// pgMigrations are the PostgreSQL schema changes, in order: pgMigrations[i]
// takes the schema from version i to i+1, each in its own transaction.
// Append only. Times are Unix nanoseconds (bigint), as in SQLite, so that
// both stores refuse and round-trip the same times; text that is sorted is
// COLLATE "C", so that listings come out in SQLite's (byte) order.
//
// History:
//   - 1: everything of SQLite schema 3 (accounts with admin, tokens, keys,
//     modules, versions, teams, members, invites with ids, events,
//     reports, report_events, credits, station_releases, advisories), and
//     the counters SQLite does not need: event_seq (the event log's
//     sequence, locked by each append) and advisory_counters (the last
//     advisory number of each year).
//   - 2: rate_buckets, the rate limits every hub node shares (UNLOGGED:
//     not worth a write-ahead log record per request; a crash forgets
//     them, which only refills every bucket).
var pgMigrations = []string{
	`CREATE TABLE accounts (
		name       text COLLATE "C" PRIMARY KEY,
		created_at bigint NOT NULL, -- Unix nanoseconds, UTC (as every time below)
		admin      boolean NOT NULL DEFAULT false
	);
	CREATE TABLE tokens (
		id         text COLLATE "C" PRIMARY KEY,
		account    text COLLATE "C" NOT NULL REFERENCES accounts (name),
		hash       bytea NOT NULL UNIQUE, -- SHA-256 of the secret; the secret is never stored
		label      text NOT NULL,
		created_at bigint NOT NULL
	);
	CREATE INDEX tokens_account ON tokens (account, created_at);
	CREATE TABLE keys (
		account    text COLLATE "C" NOT NULL REFERENCES accounts (name),
		id         text COLLATE "C" NOT NULL,
		public_key text NOT NULL,
		created_at bigint NOT NULL,
		revoked_at bigint,
		PRIMARY KEY (account, id)
	);
	CREATE TABLE modules (
		id          text COLLATE "C" PRIMARY KEY,
		owner       text COLLATE "C" NOT NULL REFERENCES accounts (name),
		description text NOT NULL,
		latest      text NOT NULL, -- '' when every version is yanked
		created_at  bigint NOT NULL,
		updated_at  bigint NOT NULL
	);
	CREATE INDEX modules_owner ON modules (owner, id);
	CREATE TABLE versions (
		module          text COLLATE "C" NOT NULL REFERENCES modules (id),
		version         text COLLATE "C" NOT NULL,
		manifest_digest text NOT NULL,
		wasm_digest     text NOT NULL,
		wasm_size       bigint NOT NULL,
		key_id          text NOT NULL,
		signature       text NOT NULL,
		published_at    bigint NOT NULL,
		yanked_at       bigint,
		yank_reason     text NOT NULL DEFAULT '',
		PRIMARY KEY (module, version)
	);
	CREATE TABLE teams (
		name       text COLLATE "C" PRIMARY KEY,
		created_at bigint NOT NULL,
		revision   bigint NOT NULL,
		lockfile   bytea NOT NULL, -- JSON hub.Lockfile
		updated_at bigint NOT NULL,
		updated_by text NOT NULL
	);
	CREATE TABLE members (
		team      text COLLATE "C" NOT NULL REFERENCES teams (name),
		account   text COLLATE "C" NOT NULL REFERENCES accounts (name),
		role      text NOT NULL CHECK (role IN ('owner', 'member')),
		joined_at bigint NOT NULL,
		PRIMARY KEY (team, account)
	);
	CREATE INDEX members_account ON members (account, team);
	CREATE TABLE invites (
		hash       bytea PRIMARY KEY, -- SHA-256 of the code
		id         text COLLATE "C" NOT NULL,
		team       text COLLATE "C" NOT NULL REFERENCES teams (name),
		role       text NOT NULL CHECK (role IN ('owner', 'member')),
		account    text NOT NULL, -- '' for anyone holding the code
		created_by text COLLATE "C" NOT NULL,
		created_at bigint NOT NULL,
		expires_at bigint NOT NULL
	);
	CREATE INDEX invites_expiry ON invites (expires_at);
	CREATE UNIQUE INDEX invites_team_id ON invites (team, id);
	CREATE INDEX invites_creator ON invites (team, created_by);
	-- The last sequence number given to an event. Its one row is locked by
	-- every append until the appending transaction ends, so numbers are
	-- given in commit order; a number is never reused (a rolled-back append
	-- rolls the counter back with it, so there are no gaps either).
	CREATE TABLE event_seq (
		one  boolean PRIMARY KEY DEFAULT true CHECK (one),
		last bigint NOT NULL
	);
	INSERT INTO event_seq (one, last) VALUES (true, 0);
	CREATE TABLE events (
		seq     bigint PRIMARY KEY,
		time    bigint NOT NULL,
		kind    text NOT NULL,
		team    text COLLATE "C" NOT NULL, -- '' for public events
		account text COLLATE "C" NOT NULL, -- the account a membership event is about
		data    bytea NOT NULL             -- JSON hub.Event without seq
	);
	CREATE INDEX events_team ON events (team, seq);
	CREATE INDEX events_kind ON events (kind, seq);
	CREATE TABLE reports (
		id             text COLLATE "C" PRIMARY KEY, -- R- and 12 random characters
		target         text COLLATE "C" NOT NULL,    -- a module id, or 'station'
		owner          text COLLATE "C" NOT NULL,    -- the target's owner; '' for the station (admins only)
		introduced     text NOT NULL,                -- '' when not given (as every optional text below)
		last_affected  text NOT NULL,
		title          text NOT NULL,
		body           text NOT NULL,
		cwe            text NOT NULL,
		severity_level text NOT NULL CHECK (severity_level IN ('low', 'medium', 'high', 'critical')),
		severity_cvss  text NOT NULL,
		reproduction   text NOT NULL,
		state          text NOT NULL CHECK (state IN ('new', 'triaged', 'confirmed', 'fixed', 'duplicate', 'wontfix', 'invalid')),
		reporter       text COLLATE "C" NOT NULL REFERENCES accounts (name),
		fixed_in       text NOT NULL,
		duplicate_of   text NOT NULL,
		advisory       text NOT NULL,
		published_at   bigint, -- NULL while private
		created_at     bigint NOT NULL,
		updated_at     bigint NOT NULL
	);
	CREATE INDEX reports_created ON reports (created_at, id);
	CREATE INDEX reports_target ON reports (target, created_at);
	CREATE INDEX reports_owner ON reports (owner, created_at);
	CREATE INDEX reports_reporter ON reports (reporter, created_at);
	CREATE TABLE report_events (
		report text COLLATE "C" NOT NULL REFERENCES reports (id),
		seq    bigint NOT NULL,
		kind   text NOT NULL,
		actor  text NOT NULL,
		time   bigint NOT NULL,
		data   bytea NOT NULL, -- JSON hub.ReportEvent without seq
		PRIMARY KEY (report, seq)
	);
	CREATE TABLE credits (
		n          bigserial PRIMARY KEY, -- the order of awards of equal time
		report     text COLLATE "C" NOT NULL REFERENCES reports (id),
		account    text COLLATE "C" NOT NULL REFERENCES accounts (name),
		amount     bigint NOT NULL CHECK (amount > 0),
		reason     text NOT NULL,
		awarded_by text NOT NULL,
		time       bigint NOT NULL
	);
	CREATE INDEX credits_account ON credits (account, time);
	CREATE INDEX credits_report ON credits (report);
	CREATE TABLE station_releases (
		version     text COLLATE "C" PRIMARY KEY,
		recorded_by text NOT NULL,
		recorded_at bigint NOT NULL
	);
	CREATE TABLE advisory_counters (
		year integer PRIMARY KEY,
		last integer NOT NULL
	);
	CREATE TABLE advisories (
		n         bigserial UNIQUE, -- the order advisories were stored in
		id        text COLLATE "C" PRIMARY KEY, -- STATION-YEAR-NUMBER
		target    text COLLATE "C" NOT NULL,
		data      bytea NOT NULL,  -- JSON hub.OSV, without the hub's URL (the server adds it)
		modified  bigint NOT NULL,
		withdrawn bigint,
		report    text COLLATE "C" NOT NULL -- '' for an advisory written directly
	);
	CREATE INDEX advisories_target ON advisories (target, n);
	CREATE UNIQUE INDEX advisories_report ON advisories (report) WHERE report <> '';`,
	`CREATE UNLOGGED TABLE rate_buckets (
		key    text COLLATE "C" PRIMARY KEY,
		tokens double precision NOT NULL, -- as of at
		at     bigint NOT NULL            -- Unix nanoseconds
	);
	CREATE INDEX rate_buckets_at ON rate_buckets (at);`,
}

// PostgresSchemaVersion is the schema version this hub's PostgreSQL store
// migrates to.
var PostgresSchemaVersion = len(pgMigrations)

// Tunables of OpenPostgres.
const (
	// DefaultStatementTimeout bounds every statement of the pool.
	DefaultStatementTimeout = 30 * time.Second
	// pgMaxAttempts is how many times a transaction is run when it keeps
	// failing with a serialization failure or a deadlock.
	pgMaxAttempts = 8
	// pgMigrateLock is the advisory lock key that serializes migrations
	// of several hub nodes starting at once.
	pgMigrateLock = 0x5374_6174_696f_6e // "Station"
)

// PostgresOption adjusts OpenPostgres.
type PostgresOption func(*pgOptions)

type pgOptions struct {
	statementTimeout time.Duration
	maxConns         int32
	migrate          bool
}

// WithStatementTimeout sets the statement timeout of the pool's
// connections (default DefaultStatementTimeout; 0 turns it off).
func WithStatementTimeout(d time.Duration) PostgresOption {
	return func(o *pgOptions) { o.statementTimeout = d }
}

// WithMaxConns sets the size of the connection pool (default: pgxpool's,
// the larger of 4 and the number of CPUs).
func WithMaxConns(n int32) PostgresOption {
	return func(o *pgOptions) { o.maxConns = n }
}

// WithoutMigrate makes OpenPostgres leave the schema as it is (for
// `station hub migrate status`, and for nodes whose operator migrates
// separately): a database at an older schema is then refused.
func WithoutMigrate() PostgresOption {
	return func(o *pgOptions) { o.migrate = false }
}

// SchemaError is returned by OpenPostgres (and Migrate) for a database
// whose schema the hub cannot use: newer than the code, or (without
// migrating) older.
type SchemaError struct {
	Have, Supported int
}

func (e *SchemaError) Error() string {
	if e.Have > e.Supported {
		return fmt.Sprintf("the hub database has schema version %d, newer than this hub supports (%d): upgrade station", e.Have, e.Supported)
	}
	return fmt.Sprintf("the hub database has schema version %d, older than this hub needs (%d): run `station hub migrate --db DSN`", e.Have, e.Supported)
}

// OpenPostgres connects to the PostgreSQL database dsn (a postgres:// URL
// or a keyword/value string, as libpq takes) with a connection pool and
// migrates it to the current schema (unless WithoutMigrate). A database
// with a newer schema is refused (*SchemaError).
func OpenPostgres(ctx context.Context, dsn string, opts ...PostgresOption) (*Postgres, error) {
	o := pgOptions{statementTimeout: DefaultStatementTimeout, migrate: true}
	for _, opt := range opts {
		opt(&o)
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// pgx's parse errors quote the DSN, password included: say only
		// that it did not parse.
		return nil, errors.New("open hub database: the PostgreSQL DSN does not parse: give postgres://user:password@host:port/database?sslmode=... or host=... dbname=... (libpq's forms)")
	}
	if o.statementTimeout > 0 {
		cfg.ConnConfig.RuntimeParams["statement_timeout"] = fmt.Sprint(o.statementTimeout.Milliseconds())
	}
	if o.maxConns > 0 {
		cfg.MaxConns = o.maxConns
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open hub database: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("open hub database on %s: %w", cfg.ConnConfig.Host, err)
	}
	p := &Postgres{pool: pool}
	if o.migrate {
		err = p.Migrate(ctx)
	} else {
		var have int
		if have, err = p.SchemaVersion(ctx); err == nil && have != len(pgMigrations) {
			err = &SchemaError{Have: have, Supported: len(pgMigrations)}
		}
	}
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("open hub database: %w", err)
	}
	return p, nil
}

// Close closes the pool.
func (p *Postgres) Close() error {
	p.pingMu.Lock()
	if p.pingConn != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		p.pingConn.Close(ctx)
		cancel()
		p.pingConn = nil
	}
	p.pingMu.Unlock()
	p.pool.Close()
	return nil
}

// SchemaVersion returns the database's schema version (0 for a database
// the hub never migrated).
func (p *Postgres) SchemaVersion(ctx context.Context) (int, error) {
	var migrated bool
	if err := p.pool.QueryRow(ctx, `SELECT to_regclass('schema_migrations') IS NOT NULL`).Scan(&migrated); err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	if !migrated {
		return 0, nil
	}
	var v int
	if err := p.pool.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&v); err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	return v, nil
}

// Migrate brings the database to PostgresSchemaVersion, one transaction
// per migration, each recorded in schema_migrations. Several nodes may
// migrate at once: an advisory lock makes them take turns, and each skips
// what another applied. A database with a newer schema is refused
// (*SchemaError) and left alone.
func (p *Postgres) Migrate(ctx context.Context) error {
	if _, err := p.pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    integer PRIMARY KEY,
		applied_at timestamptz NOT NULL DEFAULT now()
	)`); err != nil && !isPgCode(err, "23505") { // two nodes creating it at once
		return fmt.Errorf("migrate: %w", err)
	}
	for next := 1; next <= len(pgMigrations); next++ {
		err := pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
			// A migration is not a request: it may rebuild a large table,
			// and a node waits here while another migrates. The pool's
			// statement timeout would cancel either.
			if _, err := tx.Exec(ctx, `SET LOCAL statement_timeout = 0`); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(pgMigrateLock)); err != nil {
				return err
			}
			var have int
			if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&have); err != nil {
				return fmt.Errorf("read schema version: %w", err)
			}
			if have > len(pgMigrations) {
				return &SchemaError{Have: have, Supported: len(pgMigrations)}
			}
			if have >= next {
				return nil
			}
			if _, err := tx.Exec(ctx, pgMigrations[next-1]); err != nil {
				return fmt.Errorf("migrate to schema version %d: %w", next, err)
			}
			_, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version) VALUES ($1)`, next)
			return err
		})
		if err != nil {
			return err
		}
	}
	// A database at the latest version already (no migration ran) may
	// still be newer.
	have, err := p.SchemaVersion(ctx)
	if err != nil {
		return err
	}
	if have > len(pgMigrations) {
		return &SchemaError{Have: have, Supported: len(pgMigrations)}
	}
	return nil
}

// pgQuerier runs queries: the pool or a transaction.
type pgQuerier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// pgAll is sqldb.QueryAll for pgx: what scan makes of each row, [] (not
// nil) for none.
func pgAll[T any](ctx context.Context, q pgQuerier, scan func(sqldb.Scanner) (T, error), query string, args ...any) ([]T, error) {
	rows, err := q.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []T{}
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// isPgCode reports whether err is a PostgreSQL error with SQLSTATE code.
func isPgCode(err error, codes ...string) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && slices.Contains(codes, pe.Code)
}

// isUnique reports a UNIQUE or PRIMARY KEY violation.
func isUnique(err error) bool { return isPgCode(err, "23505") }

// retryable reports a serialization failure or a deadlock: the
// transaction did nothing and may be run again.
func retryable(err error) bool { return isPgCode(err, "40001", "40P01") }

// tx runs fn in a transaction, committing if fn returns nil, and runs it
// again (a new transaction) after a serialization failure or a deadlock.
// fn must set everything it returns afresh on each run.
func (p *Postgres) tx(ctx context.Context, fn func(pgx.Tx) error) error {
	for attempt := 1; ; attempt++ {
		err := pgx.BeginFunc(ctx, p.pool, fn)
		if err == nil || !retryable(err) || attempt == pgMaxAttempts {
			return err
		}
		t := time.NewTimer(time.Duration(attempt*attempt) * 5 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}

// lockName takes a transaction-scoped advisory lock on kind:name (a
// module, a team, the station's releases): every transaction that checks a
// rule about it takes the lock first, so it reads what earlier ones
// committed and decides before later ones read.
func lockName(ctx context.Context, tx pgQuerier, kind, name string) error {
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, kind+":"+name); err != nil {
		return fmt.Errorf("lock %s %s: %w", kind, name, err)
	}
	return nil
}

// pgAppendEvent adds ev to the log inside tx and returns it with its seq,
// the next number of event_seq, whose row stays locked until tx ends. It
// notifies pgEventsChannel with the seq, which PostgreSQL delivers to the
// listening hub nodes when (and only if) tx commits, in commit order.
func pgAppendEvent(ctx context.Context, tx pgQuerier, ev hub.Event) (hub.Event, error) {
	ev.Seq = 0
	at, err := sqldb.ToNanos(ev.Time)
	if err != nil {
		return ev, fmt.Errorf("append event: %w", err)
	}
	data, err := json.Marshal(ev)
	if err != nil {
		return ev, err
	}
	var seq int64
	if err := tx.QueryRow(ctx, `WITH s AS (UPDATE event_seq SET last = last + 1 RETURNING last),
		e AS (INSERT INTO events (seq, time, kind, team, account, data) SELECT last, $1, $2, $3, $4, $5 FROM s RETURNING seq)
		SELECT e.seq FROM e, pg_notify($6, e.seq::text)`,
		at, ev.Kind, ev.Team, ev.Account, data, pgEventsChannel).Scan(&seq); err != nil {
		return ev, fmt.Errorf("append event: %w", err)
	}
	ev.Seq = seq
	return ev, nil
}

// pgTx is a PostgreSQL transaction (or the pool, or a read-only
// snapshot) as the shared rules use it (ruleTx): their ? placeholders
// numbered $1, $2, …, pgx's "no rows" as database/sql's, and the locks of
// Postgres's doc comment, taken when the rules ask for them. A pgTx
// without write (a read) takes no lock.
type pgTx struct {
	q     pgQuerier
	write bool
}

// pgNumbered returns query with its ? placeholders numbered $1, $2, …
// (the rules' SQL has no ? of its own, in a literal or an operator).
func pgNumbered(query string) string {
	var b strings.Builder
	n := 0
	for i := 0; i < len(query); i++ {
		if query[i] != '?' {
			b.WriteByte(query[i])
			continue
		}
		n++
		b.WriteString("$" + strconv.Itoa(n))
	}
	return b.String()
}

func (t pgTx) exec(ctx context.Context, query string, args ...any) error {
	_, err := t.q.Exec(ctx, pgNumbered(query), args...)
	return err
}

// pgRow is a pgx.Row whose Scan says sql.ErrNoRows for no row.
type pgRow struct{ pgx.Row }

func (r pgRow) Scan(dest ...any) error {
	err := r.Row.Scan(dest...)
	if errors.Is(err, pgx.ErrNoRows) {
		return sql.ErrNoRows
	}
	return err
}

func (t pgTx) queryRow(ctx context.Context, query string, args ...any) sqldb.Scanner {
	return pgRow{t.q.QueryRow(ctx, pgNumbered(query), args...)}
}

func (t pgTx) queryEach(ctx context.Context, scan func(sqldb.Scanner) error, query string, args ...any) error {
	_, err := pgAll(ctx, t.q, func(r sqldb.Scanner) (struct{}, error) { return struct{}{}, scan(r) }, pgNumbered(query), args...)
	return err
}

func (pgTx) unique(err error) bool { return isUnique(err) }

func (t pgTx) appendEvent(ctx context.Context, ev hub.Event) (hub.Event, error) {
	return pgAppendEvent(ctx, t.q, ev)
}

func (t pgTx) nextAdvisoryID(ctx context.Context, at time.Time) (string, error) {
	return pgNextAdvisoryID(ctx, t.q, at)
}

func (t pgTx) lockName(ctx context.Context, kind, name string) error {
	if !t.write {
		return nil
	}
	return lockName(ctx, t.q, kind, name)
}

// lockReport locks the report's row (FOR UPDATE).
func (t pgTx) lockReport(ctx context.Context, id string) error {
	return t.lockRow(ctx, `SELECT 1 FROM reports WHERE id = $1 FOR UPDATE`, "report", id, ErrNotFound)
}

// lockAdvisory locks the advisory's row (FOR UPDATE); one that does not
// exist is left to the read after it to find out.
func (t pgTx) lockAdvisory(ctx context.Context, id string) error {
	return t.lockRow(ctx, `SELECT 1 FROM advisories WHERE id = $1 FOR UPDATE`, "advisory", id, nil)
}

// lockAccount takes a share lock on the account's row (FOR SHARE): a
// change of its admin flag waits for the commit.
func (t pgTx) lockAccount(ctx context.Context, name string) error {
	return t.lockRow(ctx, `SELECT 1 FROM accounts WHERE name = $1 FOR SHARE`, "account", name, nil)
}

// lockRow runs query, which locks the row of what key (in a write
// transaction only), and returns missing when there is no such row.
func (t pgTx) lockRow(ctx context.Context, query, what, key string, missing error) error {
	if !t.write {
		return nil
	}
	var one int
	err := t.q.QueryRow(ctx, query, key).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return missing
	}
	if err != nil {
		return fmt.Errorf("lock %s %s: %w", what, key, err)
	}
	return nil
}

// Accounts and tokens.

func (p *Postgres) CreateAccount(ctx context.Context, name string, at time.Time) (hub.Account, error) {
	n, err := sqldb.ToNanos(at)
	if err != nil {
		return hub.Account{}, fmt.Errorf("create account: %w", err)
	}
	_, err = p.pool.Exec(ctx, `INSERT INTO accounts (name, created_at) VALUES ($1, $2)`, name, n)
	if isUnique(err) {
		return hub.Account{}, ErrExists
	}
	if err != nil {
		return hub.Account{}, fmt.Errorf("create account: %w", err)
	}
	return hub.Account{Name: name, CreatedAt: at.UTC()}, nil
}

func (p *Postgres) Account(ctx context.Context, name string) (hub.Account, error) {
	var at int64
	var admin bool
	err := p.pool.QueryRow(ctx, `SELECT created_at, admin FROM accounts WHERE name = $1`, name).Scan(&at, &admin)
	if errors.Is(err, pgx.ErrNoRows) {
		return hub.Account{}, ErrNotFound
	}
	if err != nil {
		return hub.Account{}, fmt.Errorf("read account: %w", err)
	}
	return hub.Account{Name: name, CreatedAt: sqldb.FromNanos(at), Admin: admin}, nil
}

func (p *Postgres) SetAdmin(ctx context.Context, name string, admin bool) error {
	tag, err := p.pool.Exec(ctx, `UPDATE accounts SET admin = $1 WHERE name = $2`, admin, name)
	if err != nil {
		return fmt.Errorf("set admin: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}

func (p *Postgres) AddToken(ctx context.Context, t Token) error {
	at, err := sqldb.ToNanos(t.CreatedAt)
	if err != nil {
		return fmt.Errorf("add token: %w", err)
	}
	// The foreign key checks the account inside the insert.
	_, err = p.pool.Exec(ctx, `INSERT INTO tokens (id, account, hash, label, created_at) VALUES ($1, $2, $3, $4, $5)`,
		t.ID, t.Account, t.Hash[:], t.Label, at)
	switch {
	case isPgCode(err, "23503"):
		return ErrNotFound
	case isUnique(err):
		return ErrExists
	case err != nil:
		return fmt.Errorf("add token: %w", err)
	}
	return nil
}

func (p *Postgres) TokenByHash(ctx context.Context, hash [32]byte) (Token, error) {
	t := Token{Hash: hash}
	var at int64
	err := p.pool.QueryRow(ctx, `SELECT id, account, label, created_at FROM tokens WHERE hash = $1`, hash[:]).Scan(&t.ID, &t.Account, &t.Label, &at)
	if errors.Is(err, pgx.ErrNoRows) {
		return Token{}, ErrNotFound
	}
	if err != nil {
		return Token{}, fmt.Errorf("read token: %w", err)
	}
	t.CreatedAt = sqldb.FromNanos(at)
	return t, nil
}

func (p *Postgres) Tokens(ctx context.Context, account string) ([]Token, error) {
	out, err := pgAll(ctx, p.pool, func(r sqldb.Scanner) (Token, error) {
		t := Token{Account: account}
		var at int64
		err := r.Scan(&t.ID, &t.Label, &at)
		t.CreatedAt = sqldb.FromNanos(at)
		return t, err
	}, `SELECT id, label, created_at FROM tokens WHERE account = $1 ORDER BY created_at, id`, account)
	if err != nil {
		return nil, fmt.Errorf("list tokens: %w", err)
	}
	return out, nil
}

func (p *Postgres) DeleteToken(ctx context.Context, account, id string) error {
	tag, err := p.pool.Exec(ctx, `DELETE FROM tokens WHERE account = $1 AND id = $2`, account, id)
	if err != nil {
		return fmt.Errorf("delete token: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}

// Keys.

func (p *Postgres) AddKey(ctx context.Context, k hub.Key) error {
	at, err := sqldb.ToNanos(k.CreatedAt)
	if err != nil {
		return fmt.Errorf("add key: %w", err)
	}
	_, err = p.pool.Exec(ctx, `INSERT INTO keys (account, id, public_key, created_at) VALUES ($1, $2, $3, $4)`,
		k.Account, k.ID, k.PublicKey, at)
	if isUnique(err) {
		return ErrExists
	}
	if err != nil {
		return fmt.Errorf("add key: %w", err)
	}
	return nil
}

func (p *Postgres) Keys(ctx context.Context, account string) ([]hub.Key, error) {
	out, err := pgAll(ctx, p.pool, func(r sqldb.Scanner) (hub.Key, error) {
		k := hub.Key{Account: account}
		var at int64
		var revoked *int64
		err := r.Scan(&k.ID, &k.PublicKey, &at, &revoked)
		k.CreatedAt, k.RevokedAt = sqldb.FromNanos(at), optTime(revoked)
		return k, err
	}, `SELECT id, public_key, created_at, revoked_at FROM keys WHERE account = $1 ORDER BY created_at, id`, account)
	if err != nil {
		return nil, fmt.Errorf("list keys: %w", err)
	}
	return out, nil
}

func (p *Postgres) RevokeKey(ctx context.Context, account, id string, at time.Time) (hub.Key, hub.Event, error) {
	var k hub.Key
	var ev hub.Event
	n, err := sqldb.ToNanos(at)
	if err != nil {
		return k, ev, fmt.Errorf("revoke key: %w", err)
	}
	err = p.tx(ctx, func(tx pgx.Tx) error {
		k = hub.Key{}
		var created int64
		err := tx.QueryRow(ctx, `UPDATE keys SET revoked_at = $1 WHERE account = $2 AND id = $3 AND revoked_at IS NULL RETURNING public_key, created_at`,
			n, account, id).Scan(&k.PublicKey, &created)
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		t := at.UTC()
		k.ID, k.Account, k.CreatedAt, k.RevokedAt = id, account, sqldb.FromNanos(created), &t
		ev, err = pgAppendEvent(ctx, tx, hub.Event{Kind: hub.EventKeyRevoked, Time: t, Actor: account, Account: account, KeyID: id})
		return err
	})
	return k, ev, err
}

// Modules.

func (p *Postgres) Publish(ctx context.Context, v Version) (hub.Event, error) {
	var ev hub.Event
	err := p.tx(ctx, func(tx pgx.Tx) (err error) {
		ev, err = publish(ctx, pgTx{tx, true}, v)
		return err
	})
	return ev, err
}

func (p *Postgres) Module(ctx context.Context, id string) (hub.Module, error) {
	return readModule(ctx, pgTx{q: p.pool}, id)
}

func (p *Postgres) Version(ctx context.Context, module, version string) (Version, error) {
	return readVersion(ctx, pgTx{q: p.pool}, module, version)
}

func (p *Postgres) SetYanked(ctx context.Context, module, version string, yanked bool, reason, actor string, at time.Time) (hub.Version, *hub.Event, error) {
	var out hub.Version
	var evp *hub.Event
	err := p.tx(ctx, func(tx pgx.Tx) (err error) {
		out, evp, err = setYanked(ctx, pgTx{tx, true}, module, version, yanked, reason, actor, at)
		return err
	})
	return out, evp, err
}

func (p *Postgres) Search(ctx context.Context, query, owner string, offset, limit int) ([]hub.Module, error) {
	like := "%" + strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(query) + "%"
	// ILIKE: SQLite's LIKE ignores ASCII case, and so does the search.
	out, err := pgAll(ctx, p.pool, func(r sqldb.Scanner) (hub.Module, error) {
		var m hub.Module
		var created, updated int64
		err := r.Scan(&m.ID, &m.Owner, &m.Description, &m.Latest, &created, &updated)
		m.CreatedAt, m.UpdatedAt = sqldb.FromNanos(created), sqldb.FromNanos(updated)
		return m, err
	}, `SELECT id, owner, description, latest, created_at, updated_at FROM modules
		WHERE (id ILIKE $1 ESCAPE '\' OR description ILIKE $1 ESCAPE '\') AND ($2::text = '' OR owner = $2)
		ORDER BY id LIMIT $3 OFFSET $4`, like, owner, limit, offset)
	if err != nil {
		return nil, fmt.Errorf("search modules: %w", err)
	}
	return out, nil
}

// Teams. Every change of a team's members, invites or lockfile first
// takes the team's lock.

func (p *Postgres) CreateTeam(ctx context.Context, name, owner string, at time.Time) (hub.Event, error) {
	var ev hub.Event
	err := p.tx(ctx, func(tx pgx.Tx) (err error) {
		ev, err = createTeam(ctx, pgTx{tx, true}, name, owner, at)
		return err
	})
	return ev, err
}

func (p *Postgres) Team(ctx context.Context, name string) (hub.Team, error) {
	return readTeam(ctx, pgTx{q: p.pool}, name)
}

func (p *Postgres) TeamsOf(ctx context.Context, account string) ([]hub.Team, error) {
	return teamsOf(ctx, pgTx{q: p.pool}, account)
}

func (p *Postgres) Members(ctx context.Context, team string) ([]string, error) {
	return members(ctx, pgTx{q: p.pool}, team)
}

func (p *Postgres) AddInvite(ctx context.Context, inv Invite) error {
	return p.tx(ctx, func(tx pgx.Tx) error { return addInvite(ctx, pgTx{tx, true}, inv) })
}

func (p *Postgres) Invites(ctx context.Context, team, actor string, at time.Time) ([]Invite, error) {
	var out []Invite
	err := p.tx(ctx, func(tx pgx.Tx) (err error) {
		out, err = invites(ctx, pgTx{tx, true}, team, actor, at)
		return err
	})
	return out, err
}

func (p *Postgres) RevokeInvites(ctx context.Context, team, id, actor string, at time.Time) ([]Invite, error) {
	var out []Invite
	err := p.tx(ctx, func(tx pgx.Tx) (err error) {
		out, err = revokeInvites(ctx, pgTx{tx, true}, team, id, actor, at)
		return err
	})
	return out, err
}

func (p *Postgres) AcceptInvite(ctx context.Context, hash [32]byte, account string, at time.Time) (hub.Team, hub.Event, error) {
	var team, role string
	var ev hub.Event
	err := p.tx(ctx, func(tx pgx.Tx) (err error) {
		team, role, ev, err = acceptInvite(ctx, pgTx{tx, true}, hash, account, at)
		return err
	})
	if err != nil {
		return hub.Team{}, hub.Event{}, err
	}
	t, err := p.Team(ctx, team)
	t.Role = role
	return t, ev, err
}

func (p *Postgres) SetRole(ctx context.Context, team, account, role, actor string, at time.Time) (hub.Member, hub.Event, error) {
	var m hub.Member
	var ev hub.Event
	err := p.tx(ctx, func(tx pgx.Tx) (err error) {
		m, ev, err = setRole(ctx, pgTx{tx, true}, team, account, role, actor, at)
		return err
	})
	return m, ev, err
}

func (p *Postgres) RemoveMember(ctx context.Context, team, account, actor string, at time.Time) (hub.Event, error) {
	var ev hub.Event
	err := p.tx(ctx, func(tx pgx.Tx) (err error) {
		ev, err = removeMember(ctx, pgTx{tx, true}, team, account, actor, at)
		return err
	})
	return ev, err
}

func (p *Postgres) Lockfile(ctx context.Context, team string) (hub.TeamLockfile, error) {
	return readLockfile(ctx, pgTx{q: p.pool}, team)
}

func (p *Postgres) PushLockfile(ctx context.Context, team string, base int64, l hub.Lockfile, actor string, at time.Time) (hub.TeamLockfile, hub.Event, error) {
	var tl hub.TeamLockfile
	var ev hub.Event
	err := p.tx(ctx, func(tx pgx.Tx) (err error) {
		tl, ev, err = pushLockfile(ctx, pgTx{tx, true}, team, base, l, actor, at)
		return err
	})
	return tl, ev, err
}

// Events.

func (p *Postgres) EventsFor(ctx context.Context, viewer string, after, upTo int64, limit int) ([]hub.Event, error) {
	out, err := pgAll(ctx, p.pool, scanEvent, `SELECT seq, data FROM events
		WHERE seq > $1 AND seq <= $2
		  AND (team = '' OR team IN (SELECT team FROM members WHERE account = $3)
		       OR ($3::text <> '' AND account = $3 AND kind IN ($5, $6)))
		ORDER BY seq LIMIT $4`, after, upTo, viewer, limit, hub.EventMemberLeft, hub.EventMemberRemoved)
	if err != nil {
		return nil, fmt.Errorf("read events: %w", err)
	}
	return out, nil
}

func (p *Postgres) EventsAfter(ctx context.Context, after int64, limit int) ([]hub.Event, error) {
	out, err := pgAll(ctx, p.pool, scanEvent, `SELECT seq, data FROM events WHERE seq > $1 ORDER BY seq LIMIT $2`, after, limit)
	if err != nil {
		return nil, fmt.Errorf("read events: %w", err)
	}
	return out, nil
}

func (p *Postgres) LastSeq(ctx context.Context) (int64, error) {
	var seq int64
	if err := p.pool.QueryRow(ctx, `SELECT coalesce(max(seq), 0) FROM events`).Scan(&seq); err != nil {
		return 0, fmt.Errorf("read last event: %w", err)
	}
	return seq, nil
}

// PostgresSchemaOf returns the schema version of the PostgreSQL database
// dsn without changing it (0 for a database no hub migrated), for
// `station hub migrate status`.
func PostgresSchemaOf(ctx context.Context, dsn string) (int, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return 0, errors.New("the PostgreSQL DSN does not parse: give postgres://user:password@host:port/database?sslmode=... or host=... dbname=... (libpq's forms)")
	}
	cfg.MaxConns = 1
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return 0, fmt.Errorf("open hub database: %w", err)
	}
	defer pool.Close()
	return (&Postgres{pool: pool}).SchemaVersion(ctx)
}
