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

// SaveUsage stores what module's files take.
func (s *Store) SaveUsage(ctx context.Context, module string, u fsgate.Usage) error {
	if module == "" {
		return errors.New("save usage: empty module id")
	}
	err := s.tx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO module_usage (module, bytes, entries, updated_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (module) DO UPDATE SET bytes = excluded.bytes, entries = excluded.entries, updated_at = excluded.updated_at`,
			module, max(u.Bytes, 0), max(u.Entries, 0), time.Now().UnixNano())
		return err
	})
	if err != nil {
		return fmt.Errorf("save usage of %s: %w", module, err)
	}
	return nil
}
