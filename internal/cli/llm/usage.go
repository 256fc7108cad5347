package llm

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/station"
)

// Usage reads what the station's LLM spent: *station.Station.
type Usage interface {
	LLMUsage(ctx context.Context, since, now time.Time) ([]station.LLMUsage, error)
}

// UsageOptions are what `station llm usage` was asked to do.
type UsageOptions struct {
	IO    *cmdutil.IOStreams
	Usage func(context.Context) (Usage, error)
	Since time.Duration
	JSON  bool
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// NewCmdUsage returns `station llm usage`. runF, when set, is called with
// the parsed options instead of running the command.
func NewCmdUsage(f *cmdutil.Factory, runF func(*UsageOptions) error) *cobra.Command {
	opts := &UsageOptions{IO: &f.IO, Usage: func(ctx context.Context) (Usage, error) { return f.Open(ctx) }}
	c := &cobra.Command{
		Use:   "usage",
		Short: "Tokens spent per module (and by workflows), with each module's daily budget",
		Long: `Usage sums the tokens the station's LLM spent, per module, over --since
(default the last 24 hours), and shows each module's approved daily budget
next to what counts against it now (a rolling 24 hours). Workflow llm steps
are the station's own use, listed as (station); with --json its "module" is
"(station)" too.`,
		Example: "  station llm usage\n  station llm usage --since 168h --json",
		Args:    cmdutil.ExactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.Since <= 0 {
				return cmdutil.Usagef("--since must be positive (e.g. 24h)")
			}
			if runF != nil {
				return runF(opts)
			}
			return usageRun(cmd.Context(), opts)
		},
	}
	c.Flags().DurationVar(&opts.Since, "since", 24*time.Hour, "sum usage over this period")
	cmdutil.AddJSONFlag(c, &opts.JSON)
	return c
}

// stationOwn is how the station's own use (workflow llm steps) is listed.
const stationOwn = "(station)"

func usageRun(ctx context.Context, opts *UsageOptions) error {
	src, err := opts.Usage(ctx)
	if err != nil {
		return err
	}
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	t := now()
	rows, err := src.LLMUsage(ctx, t.Add(-opts.Since), t)
	if err != nil {
		return err
	}
	if len(rows) == 0 && !opts.JSON {
		fmt.Fprintf(opts.IO.Err, "no LLM usage in the last %s\n", period(opts.Since))
		return nil
	}
	out := make(UsageRows, len(rows))
	for i, r := range rows {
		r.Module = cmp.Or(r.Module, stationOwn)
		out[i] = r
	}
	return cmdutil.Print(opts.IO.Out, opts.JSON, out)
}

// period is d as a person writes it: 24h, 1h30m, 90m0s is 1h30m.
func period(d time.Duration) string {
	s := d.String()
	if t, ok := strings.CutSuffix(s, "m0s"); ok {
		s = t + "m"
	}
	if t, ok := strings.CutSuffix(s, "h0m"); ok {
		s = t + "h"
	}
	return s
}

// UsageRows is what `station llm usage` prints; in JSON, an array of rows.
type UsageRows []station.LLMUsage

// Text prints the rows as a table; module ids go through TermText.
func (rs UsageRows) Text(w io.Writer) error {
	tw := cmdutil.NewTable(w)
	fmt.Fprintf(tw, "MODULE\tCALLS\tPROMPT\tCOMPLETION\tBUDGET/DAY\tLAST 24H\n")
	for _, r := range rs {
		budget, used := "-", "-"
		if r.Module != stationOwn {
			used = fmt.Sprint(r.UsedInWindow)
		}
		if r.BudgetTokensPerDay > 0 {
			budget = fmt.Sprint(r.BudgetTokensPerDay)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%s\n", cmdutil.TermText(r.Module), r.Calls, r.PromptTokens, r.CompletionTokens, budget, used)
	}
	return tw.Flush()
}
