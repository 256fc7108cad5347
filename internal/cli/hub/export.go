package hub

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/hubserver"
)

// ExportOptions are what `station hub export` was asked to do.
type ExportOptions struct {
	IO     *cmdutil.IOStreams
	Data   string // --data
	DB     string // --db
	Blobs  string // --blobs
	Output string // -o, "-" for stdout
	Gzip   bool   // --gzip (or an -o ending in .gz or .tgz)
}

// NewCmdExport returns `station hub export`.
func NewCmdExport(f *cmdutil.Factory, runF func(*ExportOptions) error) *cobra.Command {
	opts := &ExportOptions{IO: &f.IO}
	c := &cobra.Command{
		Use:   "export [-o FILE|-]",
		Short: "Write everything a hub keeps to one archive, to move it (station hub import)",
		Long: `Export writes the whole hub — accounts, token hashes, keys, modules and
versions, teams with members, invites and lockfiles, the event log with its
sequence numbers, reports with their threads, credits, advisories, station
releases, the counters events and advisories are numbered from — and every
blob its versions name, to one tar archive (gzip-compressed with --gzip or
an -o ending in .gz or .tgz). 'station hub import' loads it into a new
hub, of the same store or the other: a one-machine hub moves onto
PostgreSQL and an OCI registry this way, or back.

The source is the hub of the data directory (--data, $STATION_HUB_DATA,
default ~/.station-hub: hub.db and blobs/), or the PostgreSQL database
--db (or $STATION_HUB_DB) with the blob store --blobs (a directory, or
oci://host/repository). The tables are read in one snapshot: a hub still
serving goes on, and what it commits after the export began is not in the
archive — so stop the hub first (or keep writers off it) unless losing
those writes is fine.

The archive holds token hashes and private reports: keep it as you keep
the database. -o FILE is created with mode 0600 and never overwritten; it
appears only once the export is complete. Progress goes to stderr.`,
		Example: `  station hub export --data /srv/station-hub -o hub.tar.gz
  station hub export --db postgres://hub@db.internal/hub --blobs oci://registry.internal/station-hub -o - | ssh new-host station hub import - ...`,
		Args: cmdutil.ExactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return exportRun(cmd.Context(), opts)
		},
	}
	dataFlag(c, &opts.Data)
	dbFlag(c, &opts.DB)
	blobsFlag(c, &opts.Blobs)
	c.Flags().StringVarP(&opts.Output, "output", "o", "-", "the archive to write, or - for stdout")
	c.Flags().BoolVar(&opts.Gzip, "gzip", false, "compress the archive (the default for an -o ending in .gz or .tgz)")
	return c
}

// blobsFlag adds --blobs to c.
func blobsFlag(c *cobra.Command, blobs *string) {
	c.Flags().StringVar(blobs, "blobs", "", "the hub's blob store: a directory, or oci://host[:port]/repository (default: blobs/ in the data directory)")
}

func exportRun(ctx context.Context, opts *ExportOptions) error {
	st, blobSpec, err := openExisting(ctx, "export", opts.Data, opts.DB, opts.Blobs, opts.IO.Getenv)
	if err != nil {
		return err
	}
	defer st.Close()
	blobs, err := hubserver.OpenBlobs(ctx, blobSpec)
	if err != nil {
		return err
	}

	gz := opts.Gzip || strings.HasSuffix(opts.Output, ".gz") || strings.HasSuffix(opts.Output, ".tgz")
	var out io.Writer = opts.IO.Out
	var file *os.File
	if opts.Output != "-" {
		// Written beside its name and renamed once complete: a failed
		// export leaves no file that looks like an archive.
		if _, err := os.Lstat(opts.Output); err == nil {
			return fmt.Errorf("export: %s exists: give a new file (an archive is never overwritten)", opts.Output)
		}
		file, err = os.OpenFile(opts.Output+".partial", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return fmt.Errorf("export: %w", err)
		}
		defer func() {
			if file != nil {
				file.Close()
				os.Remove(file.Name())
			}
		}()
		out = file
	}
	m, err := hubserver.Export(ctx, st, blobs, out, hubserver.ExportOptions{Gzip: gz, Progress: opts.IO.Err})
	if err != nil {
		return err
	}
	if file != nil {
		if err := file.Sync(); err != nil {
			return fmt.Errorf("export: %w", err)
		}
		if err := file.Close(); err != nil {
			return fmt.Errorf("export: %w", err)
		}
		if err := os.Rename(file.Name(), opts.Output); err != nil {
			return fmt.Errorf("export: %w", err)
		}
		file = nil
	}
	var rows, bytes int64
	for _, t := range m.Tables {
		rows += t.Rows
	}
	for _, b := range m.Blobs {
		bytes += b.Size
	}
	where := "stdout"
	if opts.Output != "-" {
		where = opts.Output
	}
	fmt.Fprintf(opts.IO.Err, "exported %d rows in %d tables and %d blobs (%d bytes) from %s schema %d to %s\n",
		rows, len(m.Tables), len(m.Blobs), bytes, m.Source.Store, m.Source.Schema, cmdutil.TermText(where))
	return nil
}

// openExisting opens the hub an offline command (export, gc) works on and
// returns it with its blob store's spec: the PostgreSQL database db (--db,
// $STATION_HUB_DB), not migrated — such a command changes nothing of the
// schema — with the blob store --blobs or $STATION_HUB_BLOBS, which it then
// needs; else the SQLite hub of the data directory, which must hold one,
// with its blobs/ unless told otherwise.
func openExisting(ctx context.Context, verb, data, dbFlag, blobsFlag string, getenv func(string) string) (hubserver.Store, string, error) {
	db, err := dbOf(dbFlag, getenv)
	if err != nil {
		return nil, "", err
	}
	if db != "" {
		if blobsFlag == "" && getenv("STATION_HUB_BLOBS") == "" {
			return nil, "", cmdutil.Usagef("%s --db needs --blobs: the blob store (a directory, or oci://host/repository) the hub serves its modules from", verb)
		}
		blobs, err := blobsOf(blobsFlag, "", getenv)
		if err != nil {
			return nil, "", err
		}
		st, err := hubserver.OpenPostgres(ctx, db, hubserver.WithoutMigrate())
		if err != nil {
			return nil, "", err
		}
		return st, blobs, nil
	}
	dir, err := dataDir(data, getenv)
	if err != nil {
		return nil, "", err
	}
	// A data directory that holds no hub is a mistake, not an empty hub.
	if _, err := os.Stat(filepath.Join(dir, "hub.db")); errors.Is(err, fs.ErrNotExist) {
		return nil, "", cmdutil.Usagef("no hub in %s (no hub.db): give the hub's data directory (--data) or its PostgreSQL database (--db)", dir)
	}
	blobs, err := blobsOf(blobsFlag, dir, getenv)
	if err != nil {
		return nil, "", err
	}
	st, err := hubserver.OpenSQLite(filepath.Join(dir, "hub.db"))
	if err != nil {
		return nil, "", err
	}
	return st, blobs, nil
}
