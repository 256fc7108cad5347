// Package sqldb opens the embedded SQLite databases — the station's store
// and the hub's — the one way: a private file, WAL, immediate write
// transactions, a busy timeout, and append-only migrations applied in one
// transaction.
package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"time"

	_ "modernc.org/sqlite" // the "sqlite" driver
)

// BusyTimeout is how long a statement waits for the write lock.
const BusyTimeout = 10 * time.Second

// Open opens the database at path, creating it (mode 0600, and its
// directory, mode 0700) if needed. It returns the database and the file's
// absolute path.
func Open(path string) (*sql.DB, string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, "", err
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return nil, "", err
	}
	// Create the file here so that it is private to the user: the SQLite
	// driver would create it with the umask's mode.
	f, err := os.OpenFile(abs, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, "", err
	}
	f.Close()
	q := url.Values{}
	q.Set("_busy_timeout", fmt.Sprint(BusyTimeout.Milliseconds()))
	q.Set("_journal_mode", "WAL")
	q.Set("_synchronous", "NORMAL")
	q.Set("_foreign_keys", "1")
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite", (&url.URL{Scheme: "file", Path: abs, RawQuery: q.Encode()}).String())
	if err != nil {
		return nil, "", err
	}
	return db, abs, nil
}

// Tx runs fn in a write transaction (BEGIN IMMEDIATE), committing if fn
// returns nil.
func Tx(ctx context.Context, db *sql.DB, fn func(*sql.Tx) error) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

// Migrate brings the database to schema version len(migrations) in one
// transaction: migrations[i] takes it from version i to i+1. A database
// newer than that is refused with tooNew(have, supported).
func Migrate(ctx context.Context, db *sql.DB, migrations []string, tooNew func(have, supported int) error) error {
	return Tx(ctx, db, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL) STRICT`); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		var v int
		switch err := tx.QueryRowContext(ctx, `SELECT version FROM schema_version`).Scan(&v); {
		case errors.Is(err, sql.ErrNoRows):
			if _, err := tx.ExecContext(ctx, `INSERT INTO schema_version (version) VALUES (0)`); err != nil {
				return fmt.Errorf("migrate: %w", err)
			}
		case err != nil:
			return fmt.Errorf("migrate: read schema version: %w", err)
		}
		if v > len(migrations) {
			return tooNew(v, len(migrations))
		}
		if v == len(migrations) {
			return nil
		}
		for ; v < len(migrations); v++ {
			if _, err := tx.ExecContext(ctx, migrations[v]); err != nil {
				return fmt.Errorf("migrate to schema version %d: %w", v+1, err)
			}
		}
		if _, err := tx.ExecContext(ctx, `UPDATE schema_version SET version = ?`, v); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		return nil
	})
}
