package hub

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/hubserver"
)

// dbFlag adds --db to c: the hub's database when it is not the SQLite
// file in the data directory.
func dbFlag(c *cobra.Command, db *string) {
	c.Flags().StringVar(db, "db", "", "the hub's PostgreSQL database, postgres://user:password@host:port/db?sslmode=... (default $STATION_HUB_DB, else SQLite in the data directory)")
}

// dbOf returns the PostgreSQL database to use: the flag, $STATION_HUB_DB,
// or "" for the SQLite database in the data directory. Only a postgres://
// (or postgresql://) URL is taken.
func dbOf(flag string, getenv func(string) string) (string, error) {
	db, from := flag, "--db"
	if db == "" {
		db, from = getenv("STATION_HUB_DB"), "$STATION_HUB_DB"
	}
	if db == "" {
		return "", nil
	}
	if !isPostgresURL(db) {
		return "", cmdutil.Usagef("%s: want a postgres:// URL (postgres://user:password@host:port/database?sslmode=...); without it the hub keeps SQLite in its data directory", from)
	}
	return db, nil
}

func isPostgresURL(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// redactDB returns db without its password, for messages.
func redactDB(db string) string {
	u, err := url.Parse(db)
	if err != nil {
		return "postgres://(a DSN that does not parse)"
	}
	return u.Redacted()
}

// blobsOf returns the hub's blob store: the flag, $STATION_HUB_BLOBS, or
// blobs/ in the data directory dir. A registry's URL is checked here (so a
// typo is a usage error, before anything is opened); the registry itself
// when it is opened.
func blobsOf(flag, dir string, getenv func(string) string) (string, error) {
	spec, from := flag, "--blobs"
	if spec == "" {
		spec, from = getenv("STATION_HUB_BLOBS"), "$STATION_HUB_BLOBS"
	}
	if spec == "" {
		return filepath.Join(dir, "blobs"), nil
	}
	if strings.Contains(spec, "://") {
		if _, err := hubserver.RedactBlobs(spec); err != nil {
			return "", cmdutil.Usagef("%s: %w", from, err)
		}
		return spec, nil
	}
	return filepath.Abs(spec)
}

// openHub opens the hub's store and blobs: SQLite in dir when db is "",
// else the PostgreSQL database db (migrated to the current schema); and
// the blob store blobs (a directory, or an OCI registry's repository:
// hubserver.OpenBlobs).
func openHub(ctx context.Context, dir, db, blobs string) (hubserver.Store, hubserver.Blobs, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, fmt.Errorf("open hub data directory %s: %w", dir, err)
	}
	var st hubserver.Store
	var err error
	if db == "" {
		st, err = hubserver.OpenSQLite(filepath.Join(dir, "hub.db"))
	} else {
		st, err = hubserver.OpenPostgres(ctx, db)
	}
	if err != nil {
		return nil, nil, err
	}
	b, err := hubserver.OpenBlobs(ctx, blobs)
	if err != nil {
		st.Close()
		return nil, nil, err
	}
	return st, b, nil
}

// openStore opens the store of where: a postgres:// URL, or a data
// directory (its SQLite database).
func openStore(ctx context.Context, where string) (hubserver.Store, error) {
	if isPostgresURL(where) {
		return hubserver.OpenPostgres(ctx, where)
	}
	st, _, err := hubserver.OpenDir(where)
	return st, err
}
