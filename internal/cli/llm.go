package cli

import (
	"cmp"
	"encoding/json"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/station"
)

func (a *app) llmCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "llm",
		Short: "The station's own LLM: what modules and workflows spent",
		Long: `The station makes LLM requests with its own key, for workflow llm steps and
for modules granted requires.llm (docs/llm.md). No module ever sees the key.`,
	}
	c.AddCommand(a.llmUsageCmd())
	return c
}

// usageRow is one line of station llm usage.
type usageRow struct {
	Module           string `json:"module"` // "(station)" for workflow llm steps
	Calls            int64  `json:"calls"`
	PromptTokens     int64  `json:"prompt_tokens"`
	CompletionTokens int64  `json:"completion_tokens"`
	// BudgetTokensPerDay is the module's approved daily budget; 0 for
	// none (or the station's own use).
	BudgetTokensPerDay int64 `json:"budget_tokens_per_day,omitempty"`
	// UsedToday is what counts against the budget now: the last 24 hours.
	UsedToday int64 `json:"used_last_24h"`
}

func (a *app) llmUsageCmd() *cobra.Command {
	var since time.Duration
	var asJSON bool
	c := &cobra.Command{
		Use:   "usage",
		Short: "Tokens spent per module (and by workflows), with each module's daily budget",
		Long: `Usage sums the tokens the station's LLM spent, per module, over --since
(default the last 24 hours), and shows each module's approved daily budget
next to what counts against it now (a rolling 24 hours). Workflow llm steps
are the station's own use, listed as (station).`,
		Example: "  station llm usage\n  station llm usage --since 168h --json",
		Args:    cmdutil.ExactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			s, err := a.Open(ctx)
			if err != nil {
				return err
			}
			if since <= 0 {
				return cmdutil.Usagef("--since must be positive (e.g. 24h)")
			}
			now := time.Now()
			totals, err := s.Store.LLMTotals(ctx, now.Add(-since))
			if err != nil {
				return err
			}
			rows := make([]usageRow, 0, len(totals))
			for _, t := range totals {
				r := usageRow{Module: cmp.Or(t.Module, "(station)"), Calls: t.Calls, PromptTokens: t.PromptTokens, CompletionTokens: t.CompletionTokens}
				if t.Module != "" {
					if rec, err := s.Store.Module(ctx, t.Module); err == nil {
						var p station.Permissions
						if json.Unmarshal(rec.Approved, &p) == nil && p.LLM != nil {
							r.BudgetTokensPerDay = p.LLM.BudgetTokensPerDay
						}
					}
					if r.UsedToday, err = s.Store.LLMTokensSince(ctx, t.Module, now.Add(-station.BudgetWindow)); err != nil {
						return err
					}
				}
				rows = append(rows, r)
			}
			if asJSON {
				return cmdutil.WriteJSON(a.IO.Out, rows)
			}
			if len(rows) == 0 {
				fmt.Fprintf(a.IO.Err, "no LLM usage in the last %s\n", since)
				return nil
			}
			tw := tabwriter.NewWriter(a.IO.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintf(tw, "MODULE\tCALLS\tPROMPT\tCOMPLETION\tBUDGET/DAY\tLAST 24H\n")
			for _, r := range rows {
				budget, used := "-", "-"
				if r.Module != "(station)" {
					used = fmt.Sprint(r.UsedToday)
				}
				if r.BudgetTokensPerDay > 0 {
					budget = fmt.Sprint(r.BudgetTokensPerDay)
				}
				fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%s\n", cmdutil.TermText(r.Module), r.Calls, r.PromptTokens, r.CompletionTokens, budget, used)
			}
			return tw.Flush()
		},
	}
	c.Flags().DurationVar(&since, "since", 24*time.Hour, "sum usage over this period")
	c.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return c
}
