package hub

import (
	"context"
	"strings"

	"github.com/spf13/cobra"

	hubapi "github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/cli/cmdutil"
)

// NewCmdRelease returns `station hub release`: the station's own releases
// as the hub records them (reports against the station are fixed in one).
// Its commands use a station's hub login: give them the station's flags
// (cmdutil.StationFlags).
func NewCmdRelease(f *cmdutil.Factory) *cobra.Command {
	c := &cobra.Command{
		Use:   "release",
		Short: "Record and list the station's releases on the hub",
		Long: `Release records the station's own releases on the hub this station is logged
in to. A report against the station (station report file --target station)
is fixed in a recorded release, and the station's advisories name the
releases they affect and the one that fixes them. A release is named
station-v and its version (station-v0.72.0); the commands take the name or
the version alone, with or without a "v".

'record' is for the hub's admins; 'list' is for everyone.`,
		Example: `  station hub release record 0.72.0
  station hub release list`,
	}
	c.AddCommand(NewCmdReleaseRecord(f, nil), NewCmdReleaseList(f, nil))
	return cmdutil.Group(c)
}

// ReleaseService is what the release commands ask of the station's hub
// client (*hubclient.Client).
type ReleaseService interface {
	RecordRelease(ctx context.Context, version string) (hubapi.Release, error)
	Releases(ctx context.Context) ([]hubapi.Release, error)
}

// releaseSession opens the Factory's station and its hub login, and
// returns its hub client.
func releaseSession(f *cmdutil.Factory) func(context.Context) (ReleaseService, error) {
	return func(ctx context.Context) (ReleaseService, error) {
		s, err := f.HubSession(ctx)
		if err != nil {
			return nil, err
		}
		return s.Client, nil
	}
}

// ReleasePrefix starts the name of every station release: "station-v"
// and its version.
const ReleasePrefix = "station-v"

// releaseVersion reads a release as a person names it — "station-v0.72.0",
// "v0.72.0" or "0.72.0" — and returns its version, "0.72.0".
func releaseVersion(s string) (string, error) {
	v := s
	if rest, ok := strings.CutPrefix(v, ReleasePrefix); ok {
		v = rest
	} else if rest, ok := strings.CutPrefix(v, "v"); ok {
		v = rest
	}
	if msg := hubapi.CheckVersion(v); msg != "" {
		return "", cmdutil.Usagef("%q is not a station release: %s (write 0.72.0, v0.72.0 or station-v0.72.0)", s, msg)
	}
	return v, nil
}
