package store

import (
	"context"
	"path/filepath"
	"testing"
	"time"
)

// TestModuleSource: the directory a module was installed from round-trips,
// and a module stored before schema 8 reads back with none.
func TestModuleSource(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "station.db")
	saved := migrations
	t.Cleanup(func() { migrations = saved })
	migrations = saved[:7]
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.Exec(`INSERT INTO modules (id, version, digest, manifest, wasm_path, approved, installed_at) VALUES ('a/old', '1.0.0', 'sha256:0', x'', '', x'7b7d', 1)`); err != nil {
		t.Fatal(err)
	}
	s.Close()
	migrations = saved
	if s, err = Open(path); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if m, err := s.Module(ctx, "a/old"); err != nil || m.Source != "" {
		t.Errorf("a module from before schema 8: %+v, %v", m, err)
	}
	m := Module{ID: "a/b", Version: "1.0.0", Digest: "sha256:1", Approved: []byte("{}"), InstalledAt: time.Unix(1, 0), Source: "/src/b"}
	if err := s.PutModule(ctx, m); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Module(ctx, "a/b"); err != nil || got.Source != "/src/b" {
		t.Errorf("Module = %+v, %v", got, err)
	}
	m.Source = ""
	if err := s.PutModule(ctx, m); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Modules(ctx); len(got) != 2 || got[1].Source != "" {
		t.Errorf("a reinstall replaces the source: %+v", got)
	}
}
