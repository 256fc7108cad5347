// Package audit is `station audit`: the sandbox's decisions, as the audit
// log recorded them.
package audit

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	auditlog "github.com/station-dev/station/internal/audit"
	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/store"
)

// Log is where the audit records are read: the daemon serving this station
// home (*daemon.Client, which flushes its queue first) or the station's
// store (*store.Store).
type Log interface {
	Audit(ctx context.Context, f store.AuditFilter) ([]store.AuditRecord, error)
}

// AuditOptions are what `station audit` was asked to do.
type AuditOptions struct {
	IO     *cmdutil.IOStreams
	Log    func(context.Context) (Log, error)
	Filter store.AuditFilter
	// Since is --since: only decisions newer than this; 0 for all.
	Since time.Duration
	JSON  bool
	// Now is the clock --since counts back from; nil is time.Now.
	Now func() time.Time
}

// NewCmdAudit returns `station audit`. runF, when set, is called with the parsed
// options instead of running the command.
func NewCmdAudit(f *cmdutil.Factory, runF func(*AuditOptions) error) *cobra.Command {
	opts := &AuditOptions{IO: &f.IO, Log: auditLog(f)}
	c := &cobra.Command{
		Use:   "audit",
		Short: "List sandbox decisions (allowed and denied)",
		Long: `Audit lists every decision the sandbox gates made: time, module, command,
capability, target, decision, folded and reason. Newest last.

A module's records are rate-limited: at most ` + strconv.Itoa(auditlog.MaxPerWindow) + ` in any minute (` + strconv.Itoa(auditlog.RecordsPerWindow) + `
allowed and ` + strconv.Itoa(auditlog.RecordsPerWindow) + ` denied decisions one by one, and up to ` + strconv.Itoa(auditlog.SummariesPerWindow) + ` summary rows of
each). A summary row stands for the decisions FOLDED says (the JSON field
"folded"; 0 for a decision recorded one by one), which are in no other row.

If a station daemon (station serve) is running, the records come from it, with
the decisions of calls that just returned; --json prints an array of records
with snake_case keys.`,
		Example: "  station audit --denied\n  station audit --module dave/stripe-invoicing --json\n  station audit --since 1h",
		Args:    cmdutil.ExactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.Filter.Limit <= 0 {
				return cmdutil.Usagef("--limit must be positive (got %d)", opts.Filter.Limit)
			}
			if opts.Since < 0 {
				return cmdutil.Usagef("--since must be positive (e.g. 1h)")
			}
			if runF != nil {
				return runF(opts)
			}
			return auditRun(cmd.Context(), opts)
		},
	}
	c.Flags().StringVar(&opts.Filter.Module, "module", "", "only decisions of this module")
	c.Flags().BoolVar(&opts.Filter.DeniedOnly, "denied", false, "only denials")
	c.Flags().IntVar(&opts.Filter.Limit, "limit", 1000, "at most this many (the newest)")
	c.Flags().DurationVar(&opts.Since, "since", 0, "only decisions newer than this (e.g. 1h)")
	cmdutil.AddJSONFlag(c, &opts.JSON)
	return c
}

// auditLog is the daemon serving this home, or else the station's store.
func auditLog(f *cmdutil.Factory) func(context.Context) (Log, error) {
	return func(ctx context.Context) (Log, error) {
		if c := f.Daemon(ctx); c != nil {
			return c, nil
		}
		s, err := f.Open(ctx)
		if err != nil {
			return nil, err
		}
		return s.Store, nil
	}
}

// auditRun reads the records and prints them.
func auditRun(ctx context.Context, opts *AuditOptions) error {
	filter := opts.Filter
	if opts.Since > 0 {
		now := time.Now
		if opts.Now != nil {
			now = opts.Now
		}
		filter.Since = now().Add(-opts.Since)
	}
	log, err := opts.Log(ctx)
	if err != nil {
		return err
	}
	recs, err := log.Audit(ctx, filter)
	if err != nil {
		return err
	}
	if len(recs) == 0 && !opts.JSON {
		fmt.Fprintln(opts.IO.Err, "no sandbox decisions recorded")
		return nil
	}
	if recs == nil {
		recs = []store.AuditRecord{}
	}
	return cmdutil.Print(opts.IO.Out, opts.JSON, Records(recs))
}

// Records is what `station audit` prints; in JSON, an array of records.
type Records []store.AuditRecord

// Text prints the records as a table; what a module supplied (its id, its
// command, the targets and reasons its calls produced) goes through
// TermText.
func (rs Records) Text(w io.Writer) error {
	tw := cmdutil.NewTable(w)
	fmt.Fprintln(tw, "TIME\tMODULE\tCOMMAND\tCAPABILITY\tTARGET\tDECISION\tFOLDED\tREASON")
	for _, r := range rs {
		d := "allow"
		if !r.Allowed {
			d = "DENY"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Time.Local().Format("2006-01-02 15:04:05.000"), cmdutil.TermText(r.Module), cmdutil.TermText(r.Command), cmdutil.TermText(string(r.Capability)), cmdutil.TermText(r.Target), d, folded(r.Folded), cmdutil.TermText(r.Reason))
	}
	return tw.Flush()
}

// folded is a record's FOLDED column: the decisions a summary row stands
// for, "-" for a decision recorded one by one.
func folded(n int) string {
	if n == 0 {
		return "-"
	}
	return strconv.Itoa(n)
}
