package report

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/cli/cmdutil"
)

// ShowOptions are what `station report show` was asked to do.
type ShowOptions struct {
	IO      *cmdutil.IOStreams
	Session func(context.Context) (*Login, error)
	ID      string
	JSON    bool
}

// NewCmdShow returns `station report show`.
func NewCmdShow(f *cmdutil.Factory, runF func(*ShowOptions) error) *cobra.Command {
	opts := &ShowOptions{IO: &f.IO, Session: session(f)}
	c := &cobra.Command{
		Use:   "show ID",
		Short: "Show a security report with its thread",
		Long: `Show prints a report: its target, state, severity, the versions it affects,
its reporter, what became of it (fixed in, duplicate of, advisory, credits,
published), its body and reproduction, and its thread as a conversation — who
did what and when: state changes, severity changes, credits awarded,
comments, re-checks on a version.

A private report is shown only to its reporter, the target's owner and the
hub's admins; to anyone else it does not exist (report_not_found), exactly as
an id that was never filed. Bodies and comments are Markdown, shown as written.

With --json: the report with "body", "reproduction" and "thread": [{"seq",
"kind", "actor", "time", "comment", "from", "to", "fixed_in", "duplicate_of",
"verified_in", "credits", "reason", "advisory", "severity"}].`,
		Example: "  station report show R-7kq2m4xw3pna\n  station report show R-7kq2m4xw3pna --json",
		Args:    cmdutil.ExactArgs(1, "ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.ID = args[0]
			if err := checkID("report", opts.ID); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return showRun(cmd.Context(), opts)
		},
	}
	cmdutil.AddJSONFlag(c, &opts.JSON)
	return c
}

// ShowResult is a report with its thread.
type ShowResult hub.Report

// indent starts every line of a text from the hub but the first, so that
// none of them can pass for a line the station printed.
const indent = "    "

// block is a text of several lines from the hub (a body, a comment), each
// line indented and through cmdutil.TermBlock: a file written with CRLF line
// ends reads as lines, not as escaped carriage returns.
func block(s string) string {
	s = strings.TrimRight(strings.ReplaceAll(s, "\r\n", "\n"), "\n")
	return indent + cmdutil.TermBlock(s, indent)
}

// Text implements cmdutil.Texter: the header, the body, the reproduction
// and the thread. Every field is the hub's text, and is printed through
// cmdutil.TermText or, where it may have several lines, TermBlock.
func (r ShowResult) Text(w io.Writer) error {
	rep := hub.Report(r)
	fmt.Fprintf(w, "%s: %s\n", cmdutil.TermText(r.ID), cmdutil.TermText(r.Title))
	tw := cmdutil.NewTable(w)
	row := func(k, v string) { fmt.Fprintf(tw, "  %s:\t%s\n", k, v) }
	row("target", cmdutil.TermText(r.Target))
	row("state", cmdutil.TermText(r.State))
	row("severity", severity(r.Severity))
	row("versions", versions(rep))
	if r.CWE != "" {
		row("weakness", cmdutil.TermText(r.CWE))
	}
	row("reporter", cmdutil.TermText(r.Reporter))
	row("filed", when(r.CreatedAt))
	row("updated", when(r.UpdatedAt))
	if r.FixedIn != "" {
		row("fixed in", cmdutil.TermText(r.FixedIn))
	}
	if r.DuplicateOf != "" {
		row("duplicate of", cmdutil.TermText(r.DuplicateOf))
	}
	if r.Advisory != "" {
		row("advisory", cmdutil.TermText(r.Advisory))
	}
	if r.Credits != 0 {
		row("credits", fmt.Sprintf("%d", r.Credits))
	}
	if r.PublishedAt != nil {
		row("published", when(*r.PublishedAt))
	} else {
		row("private", "read only by "+audience(r.Target, cmdutil.TermText(r.Reporter)))
	}
	tw.Flush()
	fmt.Fprintln(w)
	fmt.Fprintln(w, block(r.Body))
	if r.Reproduction != "" {
		fmt.Fprintln(w, "\nreproduction:")
		fmt.Fprintln(w, block(r.Reproduction))
	}
	if len(r.Thread) > 0 {
		fmt.Fprintln(w, "\nthread:")
		for _, e := range r.Thread {
			writeEvent(w, e)
		}
	}
	return nil
}

// writeEvent prints one entry of a thread: when, who, what, and what they
// wrote under it.
func writeEvent(w io.Writer, e hub.ReportEvent) {
	fmt.Fprintf(w, "  %s  %s  %s\n", when(e.Time), cmdutil.TermText(e.Actor), what(e))
	if strings.TrimSpace(e.Comment) != "" {
		fmt.Fprintln(w, block(e.Comment))
	}
}

// what says what an event of a thread did.
func what(e hub.ReportEvent) string {
	switch e.Kind {
	case hub.ReportFiled:
		return "filed the report"
	case hub.ReportState:
		s := cmdutil.TermText(e.From) + " → " + cmdutil.TermText(e.To)
		if e.FixedIn != "" {
			s += " (fixed in " + cmdutil.TermText(e.FixedIn) + ")"
		}
		if e.DuplicateOf != "" {
			s += " (duplicate of " + cmdutil.TermText(e.DuplicateOf) + ")"
		}
		return s
	case hub.ReportCredit:
		s := fmt.Sprintf("%+d credits", e.Credits)
		if e.Reason != "" {
			s += ": " + cmdutil.TermText(e.Reason)
		}
		return s
	case hub.ReportComment:
		if e.VerifiedIn != "" {
			return "verified on " + cmdutil.TermText(e.VerifiedIn)
		}
		return "commented"
	case hub.ReportSeverity:
		if e.Severity == nil {
			return "changed the severity"
		}
		return "severity set to " + severity(*e.Severity)
	case hub.ReportPublished:
		return "published the report"
	case hub.ReportAdvisory:
		if e.Advisory == "" {
			return "published an advisory"
		}
		return "published advisory " + cmdutil.TermText(e.Advisory)
	}
	// A kind this station does not know yet is shown as the hub named it.
	return cmdutil.TermText(e.Kind)
}

func showRun(ctx context.Context, opts *ShowOptions) error {
	l, err := opts.Session(ctx)
	if err != nil {
		return err
	}
	r, err := l.Hub.Report(ctx, opts.ID)
	if err != nil {
		return err
	}
	return cmdutil.Print(opts.IO.Out, opts.JSON, ShowResult(r))
}
