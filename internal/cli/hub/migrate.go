package hub

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/hubserver"
)

// Migrator reads (status) or migrates the schema of the PostgreSQL hub
// database db and returns its version before and after.
type Migrator func(ctx context.Context, db string, status bool) (before, after int, err error)

// MigrateOptions are what `station hub migrate` was asked to do.
type MigrateOptions struct {
	IO      *cmdutil.IOStreams
	Migrate Migrator
	DB      string // --db
	Status  bool   // migrate status
	JSON    bool
}

// NewCmdMigrate returns `station hub migrate`.
func NewCmdMigrate(f *cmdutil.Factory, runF func(*MigrateOptions) error) *cobra.Command {
	opts := &MigrateOptions{IO: &f.IO, Migrate: migrate}
	c := &cobra.Command{
		Use:   "migrate [status]",
		Short: "Bring a PostgreSQL hub database to this hub's schema, or show its schema",
		Long: `Migrate applies the schema changes this hub has and the PostgreSQL database
(--db or $STATION_HUB_DB) does not, one transaction each, recorded in its
schema_migrations table. Hub nodes migrating at once take turns. It refuses
a database whose schema is newer than this hub's: upgrade station instead.
'station hub serve --db' migrates at start too; migrate lets the operator do
it first, once, before starting nodes.

'migrate status' changes nothing: it prints the database's schema version
and this hub's.

The SQLite database in a hub's data directory migrates itself when the hub
opens it; migrate is for PostgreSQL.

With --json the output is {"database", "schema", "latest", "applied"}:
database without its password, applied the number of migrations run.`,
		Example: `  station hub migrate --db postgres://hub@db.internal/hub
  STATION_HUB_DB=postgres://hub@db.internal/hub station hub migrate status --json`,
		Args: cobra.MatchAll(cobra.MaximumNArgs(1), func(_ *cobra.Command, args []string) error {
			if len(args) == 1 && args[0] != "status" {
				return cmdutil.Usagef("unknown argument %q: migrate takes only \"status\"", args[0])
			}
			return nil
		}),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Status = len(args) == 1
			if runF != nil {
				return runF(opts)
			}
			return migrateRun(cmd.Context(), opts)
		},
	}
	dbFlag(c, &opts.DB)
	cmdutil.AddJSONFlag(c, &opts.JSON)
	return c
}

// MigrateResult is a hub database's schema after migrate (or, for
// status, as it is).
type MigrateResult struct {
	Database string `json:"database"` // without the password
	Schema   int    `json:"schema"`
	Latest   int    `json:"latest"`
	Applied  int    `json:"applied"`
	status   bool
}

// Text implements cmdutil.Texter.
func (r MigrateResult) Text(w io.Writer) error {
	db := cmdutil.TermText(r.Database)
	var err error
	switch {
	case !r.status:
		_, err = fmt.Fprintf(w, "%s: schema %d (applied %d migrations)\n", db, r.Schema, r.Applied)
	case r.Schema == r.Latest:
		_, err = fmt.Fprintf(w, "%s: schema %d, up to date\n", db, r.Schema)
	case r.Schema < r.Latest:
		_, err = fmt.Fprintf(w, "%s: schema %d, this hub's is %d: run station hub migrate\n", db, r.Schema, r.Latest)
	default:
		_, err = fmt.Fprintf(w, "%s: schema %d, newer than this hub's (%d): upgrade station\n", db, r.Schema, r.Latest)
	}
	return err
}

func migrateRun(ctx context.Context, opts *MigrateOptions) error {
	db, err := dbOf(opts.DB, opts.IO.Getenv)
	if err != nil {
		return err
	}
	if db == "" {
		return cmdutil.Usagef("migrate needs a PostgreSQL database (--db postgres://... or $STATION_HUB_DB); the SQLite database in a data directory migrates itself when the hub starts")
	}
	before, after, err := opts.Migrate(ctx, db, opts.Status)
	if err != nil {
		return err
	}
	return cmdutil.Print(opts.IO.Out, opts.JSON, MigrateResult{Database: redactDB(db), Schema: after, Latest: hubserver.PostgresSchemaVersion, Applied: after - before, status: opts.Status})
}

// migrate is the Migrator of a real PostgreSQL database.
func migrate(ctx context.Context, db string, status bool) (int, int, error) {
	before, err := hubserver.PostgresSchemaOf(ctx, db)
	if err != nil {
		return 0, 0, err
	}
	if status {
		return before, before, nil
	}
	if before > hubserver.PostgresSchemaVersion {
		return 0, 0, &hubserver.SchemaError{Have: before, Supported: hubserver.PostgresSchemaVersion}
	}
	st, err := hubserver.OpenPostgres(ctx, db)
	if err != nil {
		var se *hubserver.SchemaError
		if errors.As(err, &se) {
			return 0, 0, se
		}
		return 0, 0, err
	}
	defer st.Close()
	after, err := st.SchemaVersion(ctx)
	return before, after, err
}
