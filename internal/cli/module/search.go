package module

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/hubclient"
)

// Searcher searches the hub's modules (*hubclient.Client).
type Searcher interface {
	Search(ctx context.Context, o hubclient.SearchOptions) (hub.SearchResponse, error)
}

// SearchOptions are what `station module search` was asked to do.
type SearchOptions struct {
	IO       *cmdutil.IOStreams
	Searcher func(context.Context) (Searcher, error)

	hubclient.SearchOptions // the query (the argument), --owner, --offset, --limit
	JSON                    bool
}

// NewCmdSearch returns `station module search`.
func NewCmdSearch(f *cmdutil.Factory, runF func(*SearchOptions) error) *cobra.Command {
	opts := &SearchOptions{IO: &f.IO, Searcher: func(ctx context.Context) (Searcher, error) {
		s, err := f.HubSession(ctx)
		if err != nil {
			return nil, err
		}
		return s.Client, nil
	}}
	c := &cobra.Command{
		Use:   "search [QUERY]",
		Short: "Search the hub's modules",
		Long: `Search lists the hub's modules whose id or description contains QUERY (any
case); without QUERY, all of them: id, latest version (not yanked) and
description, a page at a time (--limit, --offset).`,
		Example: `  station module search invoice
  station module search --owner dave
  station module search --json invoice`,
		Args: cmdutil.MaxArgs(1, "QUERY"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.Query = args[0]
			}
			if runF != nil {
				return runF(opts)
			}
			return searchRun(cmd.Context(), opts)
		},
	}
	c.Flags().StringVar(&opts.Owner, "owner", "", "only modules of this account")
	c.Flags().IntVar(&opts.Offset, "offset", 0, "skip this many results")
	c.Flags().IntVar(&opts.Limit, "limit", 0, "at most this many results (1-100, default 20)")
	cmdutil.AddJSONFlag(c, &opts.JSON)
	return c
}

// SearchResult is a page of the hub's answer.
type SearchResult struct {
	hub.SearchResponse
}

// Text implements cmdutil.Texter. The hub supplied all of it.
func (r SearchResult) Text(w io.Writer) error {
	tw := cmdutil.NewTable(w)
	fmt.Fprintln(tw, "ID\tLATEST\tDESCRIPTION")
	for _, m := range r.Modules {
		latest := cmdutil.TermText(m.Latest)
		if m.Latest == "" {
			latest = "(all yanked)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", cmdutil.TermText(m.ID), latest, cmdutil.TermText(m.Description))
	}
	return tw.Flush()
}

func searchRun(ctx context.Context, opts *SearchOptions) error {
	s, err := opts.Searcher(ctx)
	if err != nil {
		return err
	}
	res, err := s.Search(ctx, opts.SearchOptions)
	if err != nil {
		return err
	}
	if res.Modules == nil {
		res.Modules = []hub.Module{}
	}
	if len(res.Modules) == 0 && !opts.JSON {
		fmt.Fprintln(opts.IO.Err, "no modules found")
		return nil
	}
	if err := cmdutil.Print(opts.IO.Out, opts.JSON, SearchResult{res}); err != nil {
		return err
	}
	if res.Next > 0 && !opts.JSON {
		fmt.Fprintf(opts.IO.Err, "more results: --offset %d\n", res.Next)
	}
	return nil
}
