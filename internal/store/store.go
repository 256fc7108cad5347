// Package store keeps the station's state in one SQLite database,
// $STATION_HOME/station.db: the installed modules with their digests and
// approved permissions, and the audit log of every sandbox decision.
//
// The database runs in WAL mode with synchronous=NORMAL (a crash may lose
// the last transactions, never corrupt the file or tear one), foreign keys
// on and a busy timeout, and every write is a transaction that takes the
// write lock up front (BEGIN IMMEDIATE). The schema is versioned: Open applies
// the migrations the file lacks, in one transaction, and refuses a file
// written by a newer station.
//
// Times are stored as Unix nanoseconds (UTC) and read back in UTC, so they
// round-trip exactly for every time between the years 1678 and 2262; a time
// outside that range is an error (sqldb.ToNanos and sqldb.FromNanos, which
// the hub's database uses too).
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/station-dev/station/internal/sqldb"
)

// ErrNotFound is wrapped by the errors of lookups that find nothing.
var ErrNotFound = errors.New("not found")

// busyTimeout is how long a statement waits for another connection's write
// lock before failing with SQLITE_BUSY.
const busyTimeout = sqldb.BusyTimeout

// Store is an open station database. It is safe for concurrent use.
type Store struct {
	db   *sql.DB
	path string

	// changes counts the writes to what the station's run gate reads
	// (Changes).
	changes atomic.Uint64
}

// Changes returns a count that grows with every write made through this
// Store to what the station's run gate reads: installed modules, hub
// origins, advisories, yanks and advisory allowances. A reader that cached
// any of them and sees the count move reads them again; writes made by
// another process (another Store on the same file) do not move it.
func (s *Store) Changes() uint64 { return s.changes.Load() }

// changed records a write that Changes counts.
func (s *Store) changed() { s.changes.Add(1) }

// Open opens the database at path, creating it (mode 0600, and its
// directory, mode 0700) if needed, and migrates it to the current schema.
func Open(path string) (*Store, error) {
	db, abs, err := sqldb.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	s := &Store{db: db, path: abs}
	if err := s.migrate(context.Background()); err != nil {
		db.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	return s, nil
}

// Close closes the database.
func (s *Store) Close() error {
	return s.db.Close()
}

// CloseIdle closes the database connections no query holds now (the pool
// opens another when two queries overlap, and keeps up to two idle). Tests
// that count the process's descriptors call it, as they close idle HTTP
// connections: a connection still held by a query is not closed, and is
// counted.
func (s *Store) CloseIdle() {
	s.db.SetMaxIdleConns(0)
	s.db.SetMaxIdleConns(defaultMaxIdle)
}

// defaultMaxIdle is database/sql's default number of idle connections.
const defaultMaxIdle = 2

// Path returns the absolute path of the database file.
func (s *Store) Path() string { return s.path }

// tx runs fn in a write transaction, committing if fn returns nil.
func (s *Store) tx(ctx context.Context, fn func(*sql.Tx) error) error {
	return sqldb.Tx(ctx, s.db, fn)
}
