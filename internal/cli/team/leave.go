package team

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/station-dev/station/internal/cli/cmdutil"
)

// LeaveOptions are what `station team leave` was asked to do.
type LeaveOptions struct {
	IO      *cmdutil.IOStreams
	Session func(context.Context) (Service, error)
	Team    string
	JSON    bool
}

// NewCmdLeave returns `station team leave`.
func NewCmdLeave(f *cmdutil.Factory, runF func(*LeaveOptions) error) *cobra.Command {
	opts := &LeaveOptions{IO: &f.IO, Session: session(f)}
	c := &cobra.Command{
		Use:   "leave TEAM",
		Short: "Leave a team (its modules stay installed)",
		Long: `Leave takes this account out of TEAM on the hub and forgets the team here:
its lockfile no longer applies and its pending changes are dropped. The
modules it installed stay installed (station module remove ID removes one).
The last owner of a team cannot leave it.

With --json: {"team"}.`,
		Example: "  station team leave acme",
		Args:    cmdutil.ExactArgs(1, "TEAM"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Team = args[0]
			if runF != nil {
				return runF(opts)
			}
			return leaveRun(cmd.Context(), opts)
		},
	}
	cmdutil.AddJSONFlag(c, &opts.JSON)
	return c
}

// LeaveResult is the team left.
type LeaveResult struct {
	Team string `json:"team"`
}

// Text implements cmdutil.Texter.
func (r LeaveResult) Text(w io.Writer) error {
	_, err := fmt.Fprintf(w, "left team %s; its modules stay installed (station module remove ID)\n", cmdutil.TermText(r.Team))
	return err
}

func leaveRun(ctx context.Context, opts *LeaveOptions) error {
	s, err := opts.Session(ctx)
	if err != nil {
		return err
	}
	if err := s.Leave(ctx, opts.Team); err != nil {
		return err
	}
	return cmdutil.Print(opts.IO.Out, opts.JSON, LeaveResult{Team: opts.Team})
}
