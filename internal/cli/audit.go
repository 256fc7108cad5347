package cli

import (
	"fmt"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/station-dev/station/internal/audit"
	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/station"
	"github.com/station-dev/station/internal/store"
)

func (a *app) auditCmd() *cobra.Command {
	var f store.AuditFilter
	var asJSON bool
	var since time.Duration
	c := &cobra.Command{
		Use:   "audit",
		Short: "List sandbox decisions (allowed and denied)",
		Long: `Audit lists every decision the sandbox gates made: time, module, command,
capability, target, decision, folded and reason. Newest last.

A module's records are rate-limited: at most ` + strconv.Itoa(audit.MaxPerWindow) + ` in any minute (` + strconv.Itoa(audit.RecordsPerWindow) + `
allowed and ` + strconv.Itoa(audit.RecordsPerWindow) + ` denied decisions one by one, and up to ` + strconv.Itoa(audit.SummariesPerWindow) + ` summary rows of
each). A summary row stands for the decisions FOLDED says (the JSON field
"folded"; 0 for a decision recorded one by one), which are in no other row.`,
		Example: "  station audit --denied\n  station audit --module dave/stripe-invoicing --json",
		Args:    cmdutil.ExactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if since > 0 {
				f.Since = time.Now().Add(-since)
			}
			var recs []store.AuditRecord
			var err error
			if c := a.Daemon(ctx); c != nil {
				// The daemon flushes its audit queue first: calls that just
				// returned are in the answer.
				recs, err = c.Audit(ctx, f)
			} else {
				var s *station.Station
				if s, err = a.Open(ctx); err != nil {
					return err
				}
				recs, err = s.Store.Audit(ctx, f)
			}
			if err != nil {
				return err
			}
			if asJSON {
				if recs == nil {
					recs = []store.AuditRecord{}
				}
				return cmdutil.WriteJSON(a.IO.Out, recs)
			}
			if len(recs) == 0 {
				fmt.Fprintln(a.IO.Err, "no sandbox decisions recorded")
				return nil
			}
			tw := tabwriter.NewWriter(a.IO.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "TIME\tMODULE\tCOMMAND\tCAPABILITY\tTARGET\tDECISION\tFOLDED\tREASON")
			for _, r := range recs {
				d := "allow"
				if !r.Allowed {
					d = "DENY"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Time.Local().Format("2006-01-02 15:04:05.000"), cmdutil.TermText(r.Module), cmdutil.TermText(r.Command), cmdutil.TermText(string(r.Capability)), cmdutil.TermText(r.Target), d, folded(r.Folded), cmdutil.TermText(r.Reason))
			}
			return tw.Flush()
		},
	}
	c.Flags().StringVar(&f.Module, "module", "", "only decisions of this module")
	c.Flags().BoolVar(&f.DeniedOnly, "denied", false, "only denials")
	c.Flags().IntVar(&f.Limit, "limit", 1000, "at most this many (the newest)")
	c.Flags().DurationVar(&since, "since", 0, "only decisions newer than this (e.g. 1h)")
	c.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return c
}

// folded is a record's FOLDED column: the decisions a summary row stands
// for, "-" for a decision recorded one by one.
func folded(n int) string {
	if n == 0 {
		return "-"
	}
	return strconv.Itoa(n)
}
