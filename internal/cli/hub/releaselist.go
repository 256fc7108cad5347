package hub

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	hubapi "github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/cli/cmdutil"
)

// ReleaseListOptions are what `station hub release list` was asked to do.
type ReleaseListOptions struct {
	IO      *cmdutil.IOStreams
	Session func(context.Context) (ReleaseService, error)
	JSON    bool
}

// NewCmdReleaseList returns `station hub release list`.
func NewCmdReleaseList(f *cmdutil.Factory, runF func(*ReleaseListOptions) error) *cobra.Command {
	opts := &ReleaseListOptions{IO: &f.IO, Session: releaseSession(f)}
	c := &cobra.Command{
		Use:   "list",
		Short: "List the station's releases the hub recorded",
		Long: `List shows the station releases the hub recorded, the highest version first:
the versions a report against the station may be fixed in.

With --json: [{"version", "recorded_by", "recorded_at"}] (the version
without its "station-v").`,
		Example: "  station hub release list\n  station hub release list --json",
		Args:    cmdutil.ExactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return releaseListRun(cmd.Context(), opts)
		},
	}
	cmdutil.AddJSONFlag(c, &opts.JSON)
	return c
}

// ReleaseListResult is the recorded releases, highest first.
type ReleaseListResult []hubapi.Release

// Text implements cmdutil.Texter: a table. Every cell is the hub's answer.
func (r ReleaseListResult) Text(w io.Writer) error {
	tw := cmdutil.NewTable(w)
	fmt.Fprintln(tw, "RELEASE\tRECORDED BY\tRECORDED AT")
	for _, rel := range r {
		fmt.Fprintf(tw, "%s%s\t%s\t%s\n", ReleasePrefix, cmdutil.TermText(rel.Version), cmdutil.TermText(rel.RecordedBy), rel.RecordedAt.Local().Format(time.RFC3339))
	}
	return tw.Flush()
}

func releaseListRun(ctx context.Context, opts *ReleaseListOptions) error {
	s, err := opts.Session(ctx)
	if err != nil {
		return err
	}
	rels, err := s.Releases(ctx)
	if err != nil {
		return err
	}
	if rels == nil {
		rels = []hubapi.Release{}
	}
	if len(rels) == 0 && !opts.JSON {
		fmt.Fprintln(opts.IO.Err, "the hub has recorded no station release (an admin records one: station hub release record VERSION)")
		return nil
	}
	return cmdutil.Print(opts.IO.Out, opts.JSON, ReleaseListResult(rels))
}
