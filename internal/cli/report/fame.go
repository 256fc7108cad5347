package report

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/cli/cmdutil"
)

// FameOptions are what `station report fame` was asked to do.
type FameOptions struct {
	IO      *cmdutil.IOStreams
	Session func(context.Context) (*Login, error)
	JSON    bool
}

// NewCmdFame returns `station report fame`.
func NewCmdFame(f *cmdutil.Factory, runF func(*FameOptions) error) *cobra.Command {
	opts := &FameOptions{IO: &f.IO, Session: session(f)}
	c := &cobra.Command{
		Use:   "fame",
		Short: "Show the hub's hall of fame: reporters by credits",
		Long: `Fame lists the reporters the hub's maintainers credited for security
reports, the most credits first (ties by name), with how many awards make up
each one's credits. 'station report credits ACCOUNT' shows one reporter's
awards.

With --json: {"reporters": [{"account", "credits", "awards"}]}.`,
		Example: "  station report fame\n  station report fame --json",
		Args:    cmdutil.ExactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return fameRun(cmd.Context(), opts)
		},
	}
	cmdutil.AddJSONFlag(c, &opts.JSON)
	return c
}

// FameResult is the hall of fame.
type FameResult hub.HallOfFame

// Text implements cmdutil.Texter: a table, ranked. Ties share a rank.
func (r FameResult) Text(w io.Writer) error {
	tw := cmdutil.NewTable(w)
	fmt.Fprintln(tw, "RANK\tACCOUNT\tCREDITS\tAWARDS")
	rank := 0
	for i, p := range r.Reporters {
		if i == 0 || p.Credits != r.Reporters[i-1].Credits {
			rank = i + 1
		}
		fmt.Fprintf(tw, "%d\t%s\t%d\t%d\n", rank, cmdutil.TermText(p.Account), p.Credits, p.Awards)
	}
	return tw.Flush()
}

func fameRun(ctx context.Context, opts *FameOptions) error {
	l, err := opts.Session(ctx)
	if err != nil {
		return err
	}
	h, err := l.Hub.HallOfFame(ctx)
	if err != nil {
		return err
	}
	if h.Reporters == nil {
		h.Reporters = []hub.Reporter{}
	}
	if len(h.Reporters) == 0 && !opts.JSON {
		fmt.Fprintln(opts.IO.Err, "no credits awarded on this hub yet")
		return nil
	}
	return cmdutil.Print(opts.IO.Out, opts.JSON, FameResult(h))
}
