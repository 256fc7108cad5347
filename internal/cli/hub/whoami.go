package hub

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/hubsync"
)

// WhoamiOptions are what `station hub whoami` was asked to do.
type WhoamiOptions struct {
	IO      *cmdutil.IOStreams
	Session func(context.Context) (Service, error)
	JSON    bool
}

// NewCmdWhoami returns `station hub whoami`.
func NewCmdWhoami(f *cmdutil.Factory, runF func(*WhoamiOptions) error) *cobra.Command {
	opts := &WhoamiOptions{IO: &f.IO, Session: session(f)}
	c := &cobra.Command{
		Use:   "whoami",
		Short: "Show the hub and account this station is logged in as",
		Long: `Whoami asks the hub which account the saved token belongs to, so it also
checks that the token still works. With --json: {"hub", "account"}.`,
		Example: "  station hub whoami\n  station hub whoami --json",
		Args:    cmdutil.ExactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return whoamiRun(cmd.Context(), opts)
		},
	}
	cmdutil.AddJSONFlag(c, &opts.JSON)
	return c
}

// IdentityResult is who the station is on its hub: {"hub", "account"}.
type IdentityResult hubsync.Identity

// Text implements cmdutil.Texter. The account name came from the hub.
func (r IdentityResult) Text(w io.Writer) error {
	_, err := fmt.Fprintf(w, "%s on %s\n", cmdutil.TermText(r.Account), cmdutil.TermText(r.Hub))
	return err
}

func whoamiRun(ctx context.Context, opts *WhoamiOptions) error {
	s, err := opts.Session(ctx)
	if err != nil {
		return err
	}
	id, err := s.WhoAmI(ctx)
	if err != nil {
		return err
	}
	return cmdutil.Print(opts.IO.Out, opts.JSON, IdentityResult(id))
}
