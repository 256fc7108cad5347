package hub

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/hubsync"
)

// LogoutOptions are what `station hub logout` was asked to do.
type LogoutOptions struct {
	IO *cmdutil.IOStreams
	// Logout forgets the station's login (hubsync.Logout).
	Logout func(ctx context.Context) error
}

// NewCmdLogout returns `station hub logout`.
func NewCmdLogout(f *cmdutil.Factory, runF func(*LogoutOptions) error) *cobra.Command {
	opts := &LogoutOptions{IO: &f.IO, Logout: func(ctx context.Context) error {
		s, err := f.Open(ctx)
		if err != nil {
			return err
		}
		return hubsync.Logout(ctx, s)
	}}
	return &cobra.Command{
		Use:   "logout",
		Short: "Forget the hub login and remove the saved token",
		Long: `Logout removes STATION_HOME/hub-token and forgets the hub, its teams and
pending team changes. Installed modules stay installed. The token itself stays
valid on the hub until you revoke it there. A running daemon stops following
the hub's relay within two seconds.`,
		Example: "  station hub logout",
		Args:    cmdutil.ExactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return logoutRun(cmd.Context(), opts)
		},
	}
}

func logoutRun(ctx context.Context, opts *LogoutOptions) error {
	if err := opts.Logout(ctx); err != nil {
		return err
	}
	fmt.Fprintln(opts.IO.Out, "logged out")
	return nil
}
