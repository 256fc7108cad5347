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

// Module is an installed module.
type Module struct {
	ID      string
	Version string
	// Digest identifies the module's WebAssembly binary; the station checks
	// it before loading.
	Digest string
	// Manifest is the module.yaml text the operator approved.
	Manifest []byte
	// WasmPath is where the binary is stored.
	WasmPath string
	// Approved is the JSON of the permissions the operator approved.
	Approved []byte
	// InstalledAt is when the module was installed (UTC when read back).
	InstalledAt time.Time
	// Source is the directory the module's files were read from at
	// install, as an absolute path (schema 8); "" for a module installed
	// before the station recorded it. A hub install reads them from a
	// temporary directory of the station's own: its hub origin says where
	// it came from.
	Source string
}

// PutModule inserts m, or replaces the module with the same ID, in one
// transaction.
func (s *Store) PutModule(ctx context.Context, m Module) error {
	if m.ID == "" {
		return errors.New("put module: empty id")
	}
	if len(m.Approved) > 0 && !json.Valid(m.Approved) {
		return fmt.Errorf("put module %s: approved permissions are not valid JSON", m.ID)
	}
	at, err := sqldb.ToNanos(m.InstalledAt)
	if err != nil {
		return fmt.Errorf("put module %s: installed at: %w", m.ID, err)
	}
	err = s.tx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO modules (id, version, digest, manifest, wasm_path, approved, installed_at, source)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (id) DO UPDATE SET version = excluded.version, digest = excluded.digest,
				manifest = excluded.manifest, wasm_path = excluded.wasm_path,
				approved = excluded.approved, installed_at = excluded.installed_at, source = excluded.source`,
			m.ID, m.Version, m.Digest, blob(m.Manifest), m.WasmPath, blob(m.Approved), at, m.Source)
		return err
	})
	s.changed()
	if err != nil {
		return fmt.Errorf("put module %s: %w", m.ID, err)
	}
	return nil
}

// blob makes a nil slice an empty blob (the columns are NOT NULL).
func blob(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

const moduleColumns = `id, version, digest, manifest, wasm_path, approved, installed_at, source`

func scanModule(r sqldb.Scanner) (Module, error) {
	var m Module
	var at int64
	if err := r.Scan(&m.ID, &m.Version, &m.Digest, &m.Manifest, &m.WasmPath, &m.Approved, &at, &m.Source); err != nil {
		return Module{}, err
	}
	m.InstalledAt = sqldb.FromNanos(at)
	return m, nil
}

// Module returns the installed module id; the error wraps ErrNotFound when
// there is none.
func (s *Store) Module(ctx context.Context, id string) (Module, error) {
	m, err := sqldb.QueryOne(ctx, s.db, scanModule, `SELECT `+moduleColumns+` FROM modules WHERE id = ?`, id)
	if errors.Is(err, sql.ErrNoRows) {
		return Module{}, fmt.Errorf("module %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return Module{}, fmt.Errorf("module %s: %w", id, err)
	}
	return m, nil
}

// Modules returns every installed module, sorted by ID.
func (s *Store) Modules(ctx context.Context) ([]Module, error) {
	out, err := sqldb.QueryAll(ctx, s.db, scanModule, `SELECT `+moduleColumns+` FROM modules ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("list modules: %w", err)
	}
	return out, nil
}

// DeleteModule removes the installed module id; the error wraps ErrNotFound
// when there is none. The module's audit records are kept.
func (s *Store) DeleteModule(ctx context.Context, id string) error {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM modules WHERE id = ?`, id)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return ErrNotFound
		}
		return nil
	})
	s.changed()
	if err != nil {
		return fmt.Errorf("delete module %s: %w", id, err)
	}
	return nil
}
