package hub

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/hubserver"
)

// ImportOptions are what `station hub import` was asked to do.
type ImportOptions struct {
	IO    *cmdutil.IOStreams
	File  string // the archive, "-" for stdin
	Data  string // --data
	DB    string // --db
	Blobs string // --blobs
	JSON  bool
}

// NewCmdImport returns `station hub import`.
func NewCmdImport(f *cmdutil.Factory, runF func(*ImportOptions) error) *cobra.Command {
	opts := &ImportOptions{IO: &f.IO}
	c := &cobra.Command{
		Use:   "import FILE|- (--db postgres://... --blobs oci://...|DIR | --data DIR)",
		Short: "Load a hub export into a new, empty hub and check that nothing was lost",
		Long: `Import loads an archive 'station hub export' wrote into a hub that holds
nothing yet: the PostgreSQL database --db (or $STATION_HUB_DB; migrated to
this hub's schema) with the blob store --blobs (a directory, or
oci://host/repository), or the SQLite hub of a new data directory --data.
A target with any account or event is refused: import into a new database.

Moving a one-machine hub onto PostgreSQL and an OCI registry:

  1. Stop the old hub (or keep every writer off it): what it commits after
     the export began is not moved.
  2. station hub export --data /srv/station-hub -o hub.tar.gz
  3. createdb hub (a new, empty database), then
     station hub import hub.tar.gz --db postgres://hub@db.internal/hub \
       --blobs oci://registry.internal/station-hub
  4. Start the new hub nodes (station hub serve --db ... --blobs ...) and
     point the hub's DNS name (its --public-url) at them. Stations keep
     their logins, tokens and cursors: the event log keeps its numbers.

Import trusts nothing in the archive: it checks every entry (names, sizes,
every row's columns and form, each table's rows and SHA-256, each blob's
digest) before it commits anything. The blobs are copied first, then the
tables are loaded in one transaction: a refused, truncated or corrupt
archive leaves no table changed (blobs already copied are content-addressed
and harmless; import again after fixing the cause). After the commit it
reads the target back — every table's rows and SHA-256, every blob opened
and hashed — and prints the comparison; any difference is an error (exit
status 1). Rate-limit buckets are not carried (they refill in seconds).

The tables wait in $TMPDIR while the blobs are copied; progress goes to
stderr. With --json the result is {"source", "created", "tables":
[{"name", "source_rows", "target_rows", "source_sha256", "target_sha256",
"match"}], "blobs": {"listed", "match", "bad"}, "artifacts", "ok"}.`,
		Example: `  station hub import hub.tar.gz --db postgres://hub@db.internal/hub --blobs oci://registry.internal/station-hub
  station hub import hub.tar --data /srv/new-hub --json`,
		Args: cmdutil.ExactArgs(1, "FILE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.File = args[0]
			if runF != nil {
				return runF(opts)
			}
			return importRun(cmd.Context(), opts)
		},
	}
	dataFlag(c, &opts.Data)
	dbFlag(c, &opts.DB)
	blobsFlag(c, &opts.Blobs)
	cmdutil.AddJSONFlag(c, &opts.JSON)
	return c
}

// ImportOutput is the result of `station hub import`.
type ImportOutput struct {
	*hubserver.ImportResult
}

// Text implements cmdutil.Texter: the comparison, table by table.
func (r ImportOutput) Text(w io.Writer) error {
	tw := cmdutil.NewTable(w)
	fmt.Fprintln(tw, "TABLE\tSOURCE ROWS\tTARGET ROWS\tMATCH")
	for _, t := range r.Tables {
		match := "yes"
		if !t.Match {
			match = "NO"
			if t.SourceRows == t.TargetRows {
				match = "NO (rows differ in content)"
			}
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\n", t.Name, t.SourceRows, t.TargetRows, match)
	}
	blobs := "yes"
	if len(r.Blobs.Bad) > 0 {
		blobs = "NO"
	}
	fmt.Fprintf(tw, "blobs\t%d\t%d\t%s\n", r.Blobs.Listed, r.Blobs.Match, blobs)
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, bad := range r.Blobs.Bad {
		fmt.Fprintf(w, "blob %s\n", cmdutil.TermText(bad))
	}
	if r.Artifacts > 0 {
		fmt.Fprintf(w, "%d versions stored and tagged as artifacts in the registry\n", r.Artifacts)
	}
	var err error
	if r.OK {
		_, err = fmt.Fprintf(w, "imported and verified: the target holds exactly what the %s hub exported on %s\n", r.Source.Store, r.Created.Format("2006-01-02 15:04:05 MST"))
	} else {
		_, err = fmt.Fprintln(w, "the target does NOT match the archive: do not serve from it")
	}
	return err
}

func importRun(ctx context.Context, opts *ImportOptions) error {
	db, err := dbOf(opts.DB, opts.IO.Getenv)
	if err != nil {
		return err
	}
	blobSpec := opts.Blobs
	var st hubserver.Store
	switch {
	case db != "" && opts.Data != "":
		return cmdutil.Usagef("give the target as --db (PostgreSQL) or --data (SQLite in a data directory), not both")
	case db != "":
		if blobSpec == "" {
			return cmdutil.Usagef("import --db needs --blobs: the blob store (oci://host/repository, or a directory) the new hub will serve its modules from")
		}
		p, err := hubserver.OpenPostgres(ctx, db)
		if err != nil {
			return err
		}
		st = p
	case opts.Data != "":
		st, err = hubserver.OpenSQLite(filepath.Join(opts.Data, "hub.db"))
		if err != nil {
			return err
		}
		if blobSpec == "" {
			blobSpec = filepath.Join(opts.Data, "blobs")
		}
	default:
		return cmdutil.Usagef("import needs a target: --db postgres://... with --blobs, or --data DIR for a new SQLite hub")
	}
	defer st.Close()
	blobs, err := hubserver.OpenBlobs(ctx, blobSpec)
	if err != nil {
		return err
	}
	in := opts.IO.In
	if opts.File != "-" {
		f, err := os.Open(opts.File)
		if err != nil {
			return fmt.Errorf("import: %w", err)
		}
		defer f.Close()
		in = f
	}
	res, err := hubserver.Import(ctx, in, st, blobs, hubserver.ImportOptions{Progress: opts.IO.Err})
	var ve *hubserver.VerifyError
	if err != nil && !errors.As(err, &ve) {
		return err
	}
	if perr := cmdutil.Print(opts.IO.Out, opts.JSON, ImportOutput{res}); perr != nil {
		return perr
	}
	return err
}
