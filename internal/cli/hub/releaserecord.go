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

// ReleaseRecordOptions are what `station hub release record` was asked to
// do.
type ReleaseRecordOptions struct {
	IO      *cmdutil.IOStreams
	Session func(context.Context) (ReleaseService, error)
	// Version is the release's version, without its "station-v".
	Version string
	JSON    bool
}

// NewCmdReleaseRecord returns `station hub release record`.
func NewCmdReleaseRecord(f *cmdutil.Factory, runF func(*ReleaseRecordOptions) error) *cobra.Command {
	opts := &ReleaseRecordOptions{IO: &f.IO, Session: releaseSession(f)}
	c := &cobra.Command{
		Use:   "record VERSION",
		Short: "Record a release of the station (hub admins)",
		Long: `Record tells the hub that the station was released as VERSION, so that a
report against the station can be fixed in it (station report triage ID
--state fixed --fixed-in VERSION) and advisories can name it. Only the hub's
admins record releases (the hub's operator makes one: station hub user admin
NAME), and a release is recorded once.

VERSION is a semantic version, written 0.72.0, v0.72.0 or station-v0.72.0
(the release's name); the hub is sent 0.72.0.

With --json: {"version", "recorded_by", "recorded_at"}.`,
		Example: "  station hub release record 0.72.0\n  station hub release record station-v0.72.0 --json",
		Args:    cmdutil.ExactArgs(1, "VERSION"),
		RunE: func(cmd *cobra.Command, args []string) error {
			v, err := releaseVersion(args[0])
			if err != nil {
				return err
			}
			opts.Version = v
			if runF != nil {
				return runF(opts)
			}
			return releaseRecordRun(cmd.Context(), opts)
		},
	}
	cmdutil.AddJSONFlag(c, &opts.JSON)
	return c
}

// ReleaseResult is a recorded release.
type ReleaseResult hubapi.Release

// Text implements cmdutil.Texter. The version and the account are the
// hub's answer.
func (r ReleaseResult) Text(w io.Writer) error {
	_, err := fmt.Fprintf(w, "recorded station release %s%s (by %s, %s)\n", ReleasePrefix, cmdutil.TermText(r.Version),
		cmdutil.TermText(r.RecordedBy), r.RecordedAt.Local().Format(time.RFC3339))
	return err
}

func releaseRecordRun(ctx context.Context, opts *ReleaseRecordOptions) error {
	s, err := opts.Session(ctx)
	if err != nil {
		return err
	}
	r, err := s.RecordRelease(ctx, opts.Version)
	if err != nil {
		return err
	}
	return cmdutil.Print(opts.IO.Out, opts.JSON, ReleaseResult(r))
}
