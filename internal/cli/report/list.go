package report

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/hubclient"
)

// ListOptions are what `station report list` was asked to do.
type ListOptions struct {
	IO      *cmdutil.IOStreams
	Session func(context.Context) (*Login, error)
	// Filter is --target, --state, --mine, --offset and --limit.
	Filter hubclient.ReportListOptions
	JSON   bool
}

// NewCmdList returns `station report list`.
func NewCmdList(f *cmdutil.Factory, runF func(*ListOptions) error) *cobra.Command {
	opts := &ListOptions{IO: &f.IO, Session: session(f)}
	c := &cobra.Command{
		Use:   "list",
		Short: "List the security reports you may read",
		Long: `List shows the reports this account may read, newest first: those it filed,
those against the modules it owns, every report for a hub admin, and every
published report. --target, --state and --mine narrow the list.

The hub answers a page at a time; when there are more, the command says which
--offset shows the next page.

With --json: {"reports": [{"id", "target", "title", "severity", "state",
"reporter", "created_at", "updated_at", ...}], "next"} (the reports without
their body and thread: station report show has them).`,
		Example: `  station report list --mine
  station report list --target alice/hello --state new
  station report list --target station --json`,
		Args: cmdutil.ExactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if t := opts.Filter.Target; t != "" {
				if err := checkTarget(t); err != nil {
					return err
				}
			}
			if s := opts.Filter.State; s != "" {
				if err := checkState(s); err != nil {
					return err
				}
			}
			if opts.Filter.Offset < 0 {
				return cmdutil.Usagef("--offset may not be negative")
			}
			if opts.Filter.Limit < 0 || opts.Filter.Limit > maxPage {
				return cmdutil.Usagef("--limit is 1 to %d (the hub's largest page; --offset shows the next)", maxPage)
			}
			if runF != nil {
				return runF(opts)
			}
			return listRun(cmd.Context(), opts)
		},
	}
	c.Flags().StringVar(&opts.Filter.Target, "target", "", "only reports against this module (OWNER/SLUG) or station")
	c.Flags().StringVar(&opts.Filter.State, "state", "", "only reports in this state ("+strings.Join(hub.ReportStates(), ", ")+")")
	c.Flags().BoolVar(&opts.Filter.Mine, "mine", false, "only reports you filed")
	c.Flags().IntVar(&opts.Filter.Offset, "offset", 0, "skip this many reports (the next page, as the command says)")
	c.Flags().IntVar(&opts.Filter.Limit, "limit", 0, "at most this many reports (default: the hub's page size)")
	cmdutil.AddJSONFlag(c, &opts.JSON)
	return c
}

// maxPage is the largest page of reports a hub answers
// (docs/hub-protocol.md).
const maxPage = 100

// ListResult is a page of reports.
type ListResult hub.ReportList

// Text implements cmdutil.Texter: a table. Every cell but the times is the
// hub's text.
func (r ListResult) Text(w io.Writer) error {
	tw := cmdutil.NewTable(w)
	fmt.Fprintln(tw, "ID\tTARGET\tSTATE\tSEVERITY\tTITLE\tREPORTER\tUPDATED")
	for _, rep := range r.Reports {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", cmdutil.TermText(rep.ID), cmdutil.TermText(rep.Target),
			state(rep), cmdutil.TermText(rep.Severity.Level), cmdutil.TermText(rep.Title), cmdutil.TermText(rep.Reporter), when(rep.UpdatedAt))
	}
	return tw.Flush()
}

// state is a report's state, and whether it is public.
func state(r hub.Report) string {
	s := cmdutil.TermText(r.State)
	if r.PublishedAt != nil {
		s += " (public)"
	}
	return s
}

func listRun(ctx context.Context, opts *ListOptions) error {
	l, err := opts.Session(ctx)
	if err != nil {
		return err
	}
	list, err := l.Hub.Reports(ctx, opts.Filter)
	if err != nil {
		return err
	}
	if list.Reports == nil {
		list.Reports = []hub.Report{}
	}
	if opts.JSON {
		return cmdutil.WriteJSON(opts.IO.Out, ListResult(list))
	}
	if len(list.Reports) == 0 {
		fmt.Fprintln(opts.IO.Err, "no reports (file one with: station report file --target OWNER/SLUG ...)")
		return nil
	}
	if err := ListResult(list).Text(opts.IO.Out); err != nil {
		return err
	}
	if list.Next > 0 {
		fmt.Fprintf(opts.IO.Err, "more reports: station report list%s --offset %d\n", filterFlags(opts.Filter), list.Next)
	}
	return nil
}

// filterFlags are the flags of f, for the command that lists the next
// page.
func filterFlags(f hubclient.ReportListOptions) string {
	var b strings.Builder
	if f.Target != "" {
		b.WriteString(" --target " + cmdutil.TermText(f.Target))
	}
	if f.State != "" {
		b.WriteString(" --state " + cmdutil.TermText(f.State))
	}
	if f.Mine {
		b.WriteString(" --mine")
	}
	if f.Limit > 0 {
		fmt.Fprintf(&b, " --limit %d", f.Limit)
	}
	return b.String()
}
