package report

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/cli/cmdutil"
)

// CreditsOptions are what `station report credits` was asked to do.
type CreditsOptions struct {
	IO      *cmdutil.IOStreams
	Session func(context.Context) (*Login, error)
	// Account is the account asked about; "" for the one this station is
	// logged in as.
	Account string
	JSON    bool
}

// NewCmdCredits returns `station report credits`.
func NewCmdCredits(f *cmdutil.Factory, runF func(*CreditsOptions) error) *cobra.Command {
	opts := &CreditsOptions{IO: &f.IO, Session: session(f)}
	c := &cobra.Command{
		Use:   "credits [ACCOUNT]",
		Short: "Show an account's credits for security reports",
		Long: `Credits shows the credits an account earned for its security reports — the
balance and every award: how many, what for, who awarded it and when — of the
account this station is logged in as, or of ACCOUNT. Credits are public. An
award says what it was for, who awarded it and for which report only once the
report is published: until then it shows its amount and time, and "a private
report", so that a credit tells nothing of a private report.

With --json: {"account", "balance", "history": [{"amount", "reason",
"awarded_by", "time", "report", "target"}]}.`,
		Example: "  station report credits\n  station report credits bob --json",
		Args:    cmdutil.MaxArgs(1, "[ACCOUNT]"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.Account = args[0]
				if msg := hub.CheckName(opts.Account); msg != "" {
					return cmdutil.Usagef("account %q %s", opts.Account, msg)
				}
			}
			if runF != nil {
				return runF(opts)
			}
			return creditsRun(cmd.Context(), opts)
		},
	}
	cmdutil.AddJSONFlag(c, &opts.JSON)
	return c
}

// CreditsResult is an account's credit record.
type CreditsResult hub.Credits

// Text implements cmdutil.Texter: the balance, then the awards, newest
// last, as the hub lists them.
func (r CreditsResult) Text(w io.Writer) error {
	account := cmdutil.TermText(r.Account)
	fmt.Fprintf(w, "%s: %d credits from %d award(s)\n", account, r.Balance, len(r.History))
	if len(r.History) == 0 {
		return nil
	}
	tw := cmdutil.NewTable(w)
	fmt.Fprintln(tw, "WHEN\tCREDITS\tREASON\tAWARDED BY\tREPORT")
	for _, e := range r.History {
		report := "a private report"
		if e.Report != "" {
			report = cmdutil.TermText(e.Report) + " (" + cmdutil.TermText(e.Target) + ")"
		}
		fmt.Fprintf(tw, "%s\t%+d\t%s\t%s\t%s\n", when(e.Time), e.Amount, orDash(e.Reason), orDash(e.AwardedBy), report)
	}
	return tw.Flush()
}

func creditsRun(ctx context.Context, opts *CreditsOptions) error {
	l, err := opts.Session(ctx)
	if err != nil {
		return err
	}
	account := opts.Account
	if account == "" {
		account = l.Account
	}
	c, err := l.Hub.Credits(ctx, account)
	if err != nil {
		return err
	}
	if c.History == nil {
		c.History = []hub.CreditEntry{}
	}
	return cmdutil.Print(opts.IO.Out, opts.JSON, CreditsResult(c))
}

// orDash is a cell of the hub's text, "-" when the hub left it out.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return cmdutil.TermText(s)
}
