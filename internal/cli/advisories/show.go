package advisories

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/hubsync"
	"github.com/station-dev/station/internal/station"
	"github.com/station-dev/station/internal/store"
)

// ShowOptions are what `station advisories show` was asked to do.
type ShowOptions struct {
	IO      *cmdutil.IOStreams
	Open    func(context.Context) (*station.Station, error)
	Session func(context.Context, *station.Station) (*hubsync.Session, error)
	ID      string
	// Offline is --offline: only what the station stored.
	Offline bool
	JSON    bool
}

// NewCmdShow returns `station advisories show`.
func NewCmdShow(f *cmdutil.Factory, runF func(*ShowOptions) error) *cobra.Command {
	opts := &ShowOptions{IO: &f.IO, Open: f.Open, Session: func(ctx context.Context, st *station.Station) (*hubsync.Session, error) {
		return hubsync.Open(ctx, st, f.FileLogger(st.Home))
	}}
	c := &cobra.Command{
		Use:   "show ID",
		Short: "Show one advisory: what it affects, how bad it is, what fixes it",
		Long: `Show prints the advisory ID (an OSV record, STATION-YEAR-NUMBER) as this
station stored it: its summary, severity, the versions it affects and the one
that fixes them, the details, references and credits, and whether it was
withdrawn. An advisory the station has not stored is asked of the hub it is
logged in to (not with --offline).

With --json: the OSV record itself (https://ossf.github.io/osv-schema/), as
the hub serves it.`,
		Example: "  station advisories show STATION-2026-0007\n  station advisories show STATION-2026-0007 --json",
		Args:    cmdutil.ExactArgs(1, "ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.ID = args[0]
			if !hub.ValidAdvisoryID(opts.ID) {
				return cmdutil.Usagef("%q is not an advisory id (%s-YEAR-NUMBER, as station advisories lists them)", opts.ID, hub.AdvisoryPrefix)
			}
			if runF != nil {
				return runF(opts)
			}
			return showRun(cmd.Context(), opts)
		},
	}
	c.Flags().BoolVar(&opts.Offline, "offline", false, "only what this station stored; do not ask the hub")
	cmdutil.AddJSONFlag(c, &opts.JSON)
	return c
}

// ShowResult is one advisory: in JSON, exactly the OSV record.
type ShowResult struct {
	hub.OSV
	from string // the hub it came from
}

func showRun(ctx context.Context, opts *ShowOptions) error {
	st, err := opts.Open(ctx)
	if err != nil {
		return err
	}
	login, lerr := st.Store.HubLogin(ctx)
	if lerr != nil && !errors.Is(lerr, store.ErrNotFound) {
		return lerr
	}
	stored, err := st.Store.AdvisoryByID(ctx, opts.ID)
	switch {
	case err == nil:
		pick := stored[0]
		for _, a := range stored {
			if a.HubURL == login.URL {
				pick = a
			}
		}
		if len(stored) > 1 {
			fmt.Fprintf(opts.IO.Err, "station: %d hubs published an advisory %s; showing the one of %s\n", len(stored), opts.ID, cmdutil.TermText(pick.HubURL))
		}
		return cmdutil.Print(opts.IO.Out, opts.JSON, &ShowResult{OSV: pick.OSV, from: pick.HubURL})
	case !errors.Is(err, store.ErrNotFound):
		return err
	case opts.Offline || lerr != nil:
		return fmt.Errorf("this station knows no advisory %s (station advisories reads them from the hub)", opts.ID)
	}
	sess, err := opts.Session(ctx, st)
	if err != nil {
		return err
	}
	a, err := sess.Client.Advisory(ctx, opts.ID)
	if err != nil {
		return err
	}
	if a.ID != opts.ID {
		return fmt.Errorf("asked for advisory %s, the hub answered with %q", opts.ID, cmdutil.TermText(a.ID))
	}
	return cmdutil.Print(opts.IO.Out, opts.JSON, &ShowResult{OSV: a, from: sess.Login.URL})
}

// rangeText is a range in words: ">= 1.0.0, < 1.0.1".
func rangeText(r hub.Range) string {
	var parts []string
	if r.Introduced != "0" {
		parts = append(parts, ">= "+r.Introduced)
	}
	switch {
	case r.Fixed != "":
		parts = append(parts, "< "+r.Fixed)
	case r.LastAffected != "":
		parts = append(parts, "<= "+r.LastAffected)
	}
	if len(parts) == 0 {
		return "every version"
	}
	return strings.Join(parts, ", ")
}

// Text prints the advisory for a person; all of it came from a hub.
func (r *ShowResult) Text(w io.Writer) error {
	t := cmdutil.TermText
	a := &r.OSV
	level := a.Level()
	if level == "" {
		level = "unknown severity"
	}
	for _, s := range a.Severity {
		level += ", " + t(s.Score)
	}
	fmt.Fprintf(w, "%s (%s)\n", t(a.ID), t(level))
	if a.Withdrawn != nil {
		fmt.Fprintf(w, "WITHDRAWN at %s: stations no longer apply it\n", a.Withdrawn.Local().Format(time.RFC3339))
	}
	fmt.Fprintf(w, "summary:   %s\n", t(a.Summary))
	if len(a.Aliases) > 0 {
		fmt.Fprintf(w, "aliases:   %s\n", strings.Join(cmdutil.TermList(a.Aliases), ", "))
	}
	if r.from != "" {
		fmt.Fprintf(w, "hub:       %s\n", t(r.from))
	}
	fmt.Fprintf(w, "published: %s\nmodified:  %s\n", a.Published.Local().Format(time.RFC3339), a.Modified.Local().Format(time.RFC3339))
	if a.Database != nil && len(a.Database.CWEIDs) > 0 {
		fmt.Fprintf(w, "cwe:       %s\n", strings.Join(cmdutil.TermList(a.Database.CWEIDs), ", "))
	}
	fmt.Fprintln(w, "affects:")
	var seen []string
	for _, af := range a.Affected {
		name := af.Package.Name
		if af.Package.Ecosystem != hub.Ecosystem {
			fmt.Fprintf(w, "  %s (ecosystem %s, not this station's)\n", t(name), t(af.Package.Ecosystem))
			continue
		}
		if slices.Contains(seen, name) {
			continue
		}
		seen = append(seen, name)
		for _, rg := range a.Ranges(name) {
			fixed := ""
			if rg.Fixed != "" {
				fixed = " (fixed in " + t(rg.Fixed) + ")"
			}
			fmt.Fprintf(w, "  %s: %s%s\n", t(name), t(rangeText(rg)), fixed)
		}
	}
	if a.Details != "" {
		fmt.Fprintf(w, "details:\n  %s\n", cmdutil.TermBlock(a.Details, "  "))
	}
	if len(a.References) > 0 {
		fmt.Fprintln(w, "references:")
		for _, ref := range a.References {
			fmt.Fprintf(w, "  %s %s\n", t(ref.Type), t(ref.URL))
		}
	}
	if len(a.Credits) > 0 {
		fmt.Fprintln(w, "credits:")
		for _, c := range a.Credits {
			fmt.Fprintf(w, "  %s (%s)\n", t(c.Name), t(c.Type))
		}
	}
	return nil
}
