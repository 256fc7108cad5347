package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/station-dev/station/internal/fsgate"
)

// LoadUsage returns what module's files take, as last saved; zero for a
// module never saved.
func (s *Store) LoadUsage(ctx context.Context, module string) (fsgate.Usage, error) {
	var u fsgate.Usage
	err := s.db.QueryRowContext(ctx, `SELECT bytes, entries FROM module_usage WHERE module = ?`, module).Scan(&u.Bytes, &u.Entries)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return fsgate.Usage{}, nil
	case err != nil:
		return fsgate.Usage{}, fmt.Errorf("load usage of %s: %w", module, err)
	case u.Bytes < 0 || u.Entries < 0:
		return fsgate.Usage{}, fmt.Errorf("load usage of %s: the stored usage (%d bytes, %d entries) is negative", module, u.Bytes, u.Entries)
	}
	return u, nil
}

// AddUsage adds d to what module's files take (never below zero) and
// returns the total stored now, with what other processes added.
func (s *Store) AddUsage(ctx context.Context, module string, d fsgate.Usage) (fsgate.Usage, error) {
	if module == "" {
		return fsgate.Usage{}, errors.New("add usage: empty module id")
	}
	var total fsgate.Usage
	err := s.tx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO module_usage (module, bytes, entries, updated_at) VALUES (?, MAX(0, ?), MAX(0, ?), ?)
			ON CONFLICT (module) DO UPDATE SET bytes = MAX(0, bytes + ?), entries = MAX(0, entries + ?), updated_at = excluded.updated_at`,
			module, d.Bytes, d.Entries, time.Now().UnixNano(), d.Bytes, d.Entries)
		if err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, `SELECT bytes, entries FROM module_usage WHERE module = ?`, module).Scan(&total.Bytes, &total.Entries)
	})
	if err != nil {
		return fsgate.Usage{}, fmt.Errorf("add usage of %s: %w", module, err)
	}
	return total, nil
}
