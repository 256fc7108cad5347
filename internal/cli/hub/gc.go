package hub

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/hubserver"
	"github.com/station-dev/station/internal/units"
)

// GCOptions are what `station hub gc` was asked to do.
type GCOptions struct {
	IO        *cmdutil.IOStreams
	Data      string        // --data
	DB        string        // --db
	Blobs     string        // --blobs
	OlderThan time.Duration // --older-than
	DryRun    bool          // --dry-run
	JSON      bool          // --json
}

// NewCmdGC returns `station hub gc`.
func NewCmdGC(f *cmdutil.Factory, runF func(*GCOptions) error) *cobra.Command {
	opts := &GCOptions{IO: &f.IO}
	c := &cobra.Command{
		Use:   "gc",
		Short: "Remove the blobs no version names (what publishes that did not finish left)",
		Long: `Gc removes from the hub's blob directory every blob that no published
version names and that is older than --older-than (default 1h): what a
publish that failed, or whose hub was killed, stored before the version
would have been recorded. They are harmless — nothing serves them — but
take space. A younger unnamed blob may belong to a publish still in
flight, so it is left for a later run; a version's blobs are never touched.
The hub may keep serving while gc runs.

The hub is the one of the data directory (--data, $STATION_HUB_DATA,
default ~/.station-hub), or the PostgreSQL database --db with the blob
directory --blobs. Blobs in an OCI registry are the registry's to collect:
a publish that did not finish leaves an untagged artifact there, which
'registry garbage-collect --delete-untagged' removes.`,
		Example: "  station hub gc --dry-run\n  station hub gc --db postgres://hub@db.internal/hub --blobs /srv/hub-blobs --json",
		Args:    cmdutil.ExactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.OlderThan < time.Minute {
				return cmdutil.Usagef("--older-than must be at least 1m: a younger blob may belong to a publish in flight")
			}
			if runF != nil {
				return runF(opts)
			}
			return gcRun(cmd.Context(), opts)
		},
	}
	dataFlag(c, &opts.Data)
	dbFlag(c, &opts.DB)
	blobsFlag(c, &opts.Blobs)
	c.Flags().DurationVar(&opts.OlderThan, "older-than", hubserver.DefaultCollectAge, "remove only unnamed blobs at least this old")
	c.Flags().BoolVar(&opts.DryRun, "dry-run", false, "list what would be removed; remove nothing")
	cmdutil.AddJSONFlag(c, &opts.JSON)
	return c
}

func gcRun(ctx context.Context, opts *GCOptions) error {
	st, blobSpec, err := openExisting(ctx, "gc", opts.Data, opts.DB, opts.Blobs, opts.IO.Getenv)
	if err != nil {
		return err
	}
	defer st.Close()
	if strings.Contains(blobSpec, "://") {
		return cmdutil.Usagef("the blobs are in an OCI registry: the registry collects them ('registry garbage-collect --delete-untagged' removes what unfinished publishes left)")
	}
	bd, err := hubserver.OpenBlobDir(blobSpec)
	if err != nil {
		return err
	}
	rep, err := hubserver.CollectBlobs(ctx, st, bd, hubserver.CollectOptions{OlderThan: opts.OlderThan, DryRun: opts.DryRun})
	if err != nil {
		return err
	}
	return cmdutil.Print(opts.IO.Out, opts.JSON, gcResult{rep, opts.OlderThan.String()})
}

// gcResult is what `station hub gc` prints.
type gcResult struct {
	*hubserver.CollectReport
	OlderThan string `json:"older_than"`
}

func (r gcResult) Text(w io.Writer) error {
	verb := "removed"
	if r.DryRun {
		verb = "would remove"
	}
	for _, b := range r.Removed {
		fmt.Fprintf(w, "%s %s  %s  (stored %s)\n", verb, b.Digest, units.Bytes(b.Size), b.Time.Format(time.RFC3339))
	}
	_, err := fmt.Fprintf(w, "%s %d unnamed blobs (%s); kept %d that versions name and %d younger than %s\n",
		verb, len(r.Removed), units.Bytes(r.RemovedBytes), r.Kept, r.Young, r.OlderThan)
	return err
}
