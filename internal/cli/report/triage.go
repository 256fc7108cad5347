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

// TriageOptions are what `station report triage` was asked to do.
type TriageOptions struct {
	IO          *cmdutil.IOStreams
	Session     func(context.Context) (*Login, error)
	ID          string
	State       string       // --state
	Comment     string       // --comment
	FixedIn     string       // --fixed-in
	DuplicateOf string       // --duplicate-of
	Severity    hub.Severity // --severity, --cvss
	Award       int64        // --award (0: none)
	Reason      string       // --reason
	Advisory    bool         // --advisory
	Publish     bool         // --publish
	JSON        bool
}

// NewCmdTriage returns `station report triage`.
func NewCmdTriage(f *cmdutil.Factory, runF func(*TriageOptions) error) *cobra.Command {
	opts := &TriageOptions{IO: &f.IO, Session: session(f)}
	c := &cobra.Command{
		Use:   "triage ID [--state STATE] [--award N --reason R] [--advisory] [--publish]",
		Short: "Change a report's state, award credits, publish it (the target's owner)",
		Long: `Triage is the maintainer's side of a report: only the owner of the module
(for the station: a hub admin) and the hub's admins triage. Everything one
command asks is done together or not at all.

--state moves the report on. From new: triaged, confirmed, duplicate, wontfix
or invalid; from triaged: confirmed, duplicate, wontfix or invalid; from
confirmed: fixed, duplicate or wontfix. A closed report (duplicate, wontfix,
invalid) may be reopened as triaged, and a fixed one set back to confirmed
when the fix did not hold. fixed needs --fixed-in VERSION (a published
version of the module, or a recorded station release); duplicate needs
--duplicate-of ID (another report of the same target). --comment is the note
that goes with the change, in the thread.

--severity (and --cvss) replaces the reporter's score with yours. --award N
--reason R gives the reporter N credits (1 to 1000; public, in their credit
history and the hall of fame): only on a confirmed or fixed report, never to
yourself. --advisory publishes an advisory for a confirmed or fixed report (or
updates the one it has), which stations running an affected version show.
--publish makes the report readable by everyone.

With --json: the report after the change, as show --json prints it.`,
		Example: `  station report triage R-7kq2m4xw3pna --state confirmed --comment "Reproduced on 1.2.0."
  station report triage R-7kq2m4xw3pna --award 5 --reason "clear reproduction"
  station report triage R-7kq2m4xw3pna --state fixed --fixed-in 1.3.1 --advisory --publish
  station report triage R-7kq2m4xw3pna --state duplicate --duplicate-of R-b3c4d5e6f7g2`,
		Args: cmdutil.ExactArgs(1, "ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.ID = args[0]
			if err := opts.check(cmd.Flags().Changed("award")); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return triageRun(cmd.Context(), opts)
		},
	}
	c.Flags().StringVar(&opts.State, "state", "", "the new state ("+strings.Join(hub.ReportStates()[1:], ", ")+")")
	c.Flags().StringVar(&opts.Comment, "comment", "", "a note on the change, for the thread")
	c.Flags().StringVar(&opts.FixedIn, "fixed-in", "", "with --state fixed: the version the fix is in")
	c.Flags().StringVar(&opts.DuplicateOf, "duplicate-of", "", "with --state duplicate: the report this one duplicates")
	c.Flags().StringVar(&opts.Severity.Level, "severity", "", "your score: low, medium, high or critical")
	c.Flags().StringVar(&opts.Severity.CVSS, "cvss", "", "with --severity: a CVSS 4.0 vector")
	c.Flags().Int64Var(&opts.Award, "award", 0, fmt.Sprintf("award the reporter this many credits (1 to %d; needs --reason)", hub.MaxCreditAward))
	c.Flags().StringVar(&opts.Reason, "reason", "", "with --award: what the credits are for (public)")
	c.Flags().BoolVar(&opts.Advisory, "advisory", false, "publish an advisory for the report (or update its advisory)")
	c.Flags().BoolVar(&opts.Publish, "publish", false, "make the report readable by everyone")
	cmdutil.AddJSONFlag(c, &opts.JSON)
	return c
}

// check validates what can be without the hub; awarded is whether --award
// was given (--award 0 is a mistake, not no award).
func (o *TriageOptions) check(awarded bool) error {
	if err := checkID("report", o.ID); err != nil {
		return err
	}
	if o.State != "" {
		if err := checkState(o.State); err != nil {
			return err
		}
		if o.State == hub.StateNew {
			return cmdutil.Usagef("--state new: a report is new only until it is first triaged; reopen a closed one with --state %s", hub.StateTriaged)
		}
	}
	switch {
	case o.FixedIn != "" && o.State != hub.StateFixed:
		return cmdutil.Usagef("--fixed-in goes with --state fixed: pass --state fixed --fixed-in %s", o.FixedIn)
	case o.State == hub.StateFixed && o.FixedIn == "":
		return cmdutil.Usagef("--state fixed needs --fixed-in VERSION: the module's published version (or the station release) the fix is in")
	case o.DuplicateOf != "" && o.State != hub.StateDuplicate:
		return cmdutil.Usagef("--duplicate-of goes with --state duplicate: pass --state duplicate --duplicate-of %s", o.DuplicateOf)
	case o.State == hub.StateDuplicate && o.DuplicateOf == "":
		return cmdutil.Usagef("--state duplicate needs --duplicate-of ID: the report of the same target this one duplicates")
	case o.DuplicateOf != "" && o.DuplicateOf == o.ID:
		return cmdutil.Usagef("--duplicate-of %s is this report: name the other one", o.ID)
	}
	if o.FixedIn != "" {
		v, err := version("--fixed-in", o.FixedIn)
		if err != nil {
			return err
		}
		o.FixedIn = v
	}
	if o.DuplicateOf != "" {
		if err := checkID("--duplicate-of", o.DuplicateOf); err != nil {
			return err
		}
	}
	if o.Severity.CVSS != "" && o.Severity.Level == "" {
		return cmdutil.Usagef("--cvss goes with --severity: pass the level (%s) beside the vector", strings.Join(hub.SeverityLevels(), ", "))
	}
	if o.Severity.Level != "" {
		if err := checkSeverity(o.Severity); err != nil {
			return err
		}
	}
	switch {
	case awarded && (o.Award < 1 || o.Award > hub.MaxCreditAward):
		return cmdutil.Usagef("--award %d: award 1 to %d credits", o.Award, hub.MaxCreditAward)
	case awarded && strings.TrimSpace(o.Reason) == "":
		return cmdutil.Usagef("--award %d needs --reason R: what the credits are for (it is public, in the reporter's credit history)", o.Award)
	case !awarded && o.Reason != "":
		return cmdutil.Usagef("--reason goes with --award N: the credits it explains")
	case len(o.Reason) > hub.MaxReasonBytes:
		return cmdutil.Usagef("--reason is longer than %d bytes: say it shorter (the thread has room, with --comment)", hub.MaxReasonBytes)
	case len(o.Comment) > hub.MaxCommentBytes:
		return cmdutil.Usagef("--comment is longer than %d bytes; put the detail in a comment: station report comment %s --body-file FILE", hub.MaxCommentBytes, o.ID)
	}
	var err error
	if o.Comment, err = checkText("--comment", "a comment", o.Comment, true); err != nil {
		return cmdutil.UsageError{Err: err}
	}
	if _, err := checkText("--reason", "an award's reason", o.Reason, false); err != nil {
		return cmdutil.UsageError{Err: err}
	}
	if o.State == "" && o.Severity.Level == "" && !awarded && !o.Advisory && !o.Publish {
		if o.Comment != "" {
			return cmdutil.Usagef("--comment is the note of a change, and nothing changes: pass --state, --severity, --award, --advisory or --publish with it, or comment with: station report comment %s --body TEXT", o.ID)
		}
		return cmdutil.Usagef("say what to change: --state STATE, --severity LEVEL, --award N --reason R, --advisory or --publish")
	}
	return nil
}

// request is the triage the options ask for.
func (o *TriageOptions) request() hub.TriageRequest {
	req := hub.TriageRequest{State: o.State, Comment: o.Comment, FixedIn: o.FixedIn, DuplicateOf: o.DuplicateOf,
		Advisory: o.Advisory, Publish: o.Publish}
	if o.Severity.Level != "" {
		s := o.Severity
		req.Severity = &s
	}
	if o.Award != 0 {
		req.Award = &hub.Award{Amount: o.Award, Reason: o.Reason}
	}
	return req
}

// TriageResult is the report after the triage; Asked, what the command
// asked for, says what to print (and is not in the JSON).
type TriageResult struct {
	hub.Report
	Asked hub.TriageRequest `json:"-"`
}

// Text implements cmdutil.Texter: the report's state now, and each thing
// the triage did. What the hub answered goes through TermText.
func (r TriageResult) Text(w io.Writer) error {
	id, st := cmdutil.TermText(r.ID), cmdutil.TermText(r.State)
	switch e, ok := lastChange(r.Thread); {
	case r.Asked.State != "" && ok && e.To == r.State:
		fmt.Fprintf(w, "%s: %s → %s\n", id, cmdutil.TermText(e.From), st)
	case r.Asked.State != "":
		fmt.Fprintf(w, "%s: now %s\n", id, st)
	default:
		fmt.Fprintf(w, "%s: still %s\n", id, st)
	}
	if r.FixedIn != "" && r.Asked.FixedIn != "" {
		fmt.Fprintf(w, "  fixed in %s\n", cmdutil.TermText(r.FixedIn))
	}
	if r.DuplicateOf != "" && r.Asked.DuplicateOf != "" {
		fmt.Fprintf(w, "  duplicate of %s\n", cmdutil.TermText(r.DuplicateOf))
	}
	if r.Asked.Severity != nil {
		fmt.Fprintf(w, "  severity now %s\n", severity(r.Severity))
	}
	if a := r.Asked.Award; a != nil {
		fmt.Fprintf(w, "  awarded %d credits to %s: %s (%d for this report in all)\n", a.Amount, cmdutil.TermText(r.Reporter), cmdutil.TermText(a.Reason), r.Credits)
	}
	if r.Asked.Advisory {
		if r.Advisory != "" {
			fmt.Fprintf(w, "  advisory %s published: stations running an affected version show it\n", cmdutil.TermText(r.Advisory))
		} else {
			fmt.Fprintln(w, "  the hub named no advisory: check with station report show "+id)
		}
	}
	if r.Asked.Publish {
		if r.PublishedAt != nil {
			fmt.Fprintf(w, "  published: everyone may read the report (since %s)\n", when(*r.PublishedAt))
		} else {
			fmt.Fprintln(w, "  the hub did not say the report is public: check with station report show "+id)
		}
	}
	return nil
}

// lastChange is the last state change of a thread.
func lastChange(thread []hub.ReportEvent) (hub.ReportEvent, bool) {
	for i := len(thread) - 1; i >= 0; i-- {
		if thread[i].Kind == hub.ReportState {
			return thread[i], true
		}
	}
	return hub.ReportEvent{}, false
}

func triageRun(ctx context.Context, opts *TriageOptions) error {
	l, err := opts.Session(ctx)
	if err != nil {
		return err
	}
	req := opts.request()
	r, err := l.Hub.Triage(ctx, opts.ID, req)
	if err != nil {
		return err
	}
	if err := cmdutil.Print(opts.IO.Out, opts.JSON, TriageResult{Report: r, Asked: req}); err != nil || opts.JSON {
		return err
	}
	id := cmdutil.TermText(r.ID)
	switch {
	case r.State == hub.StateConfirmed:
		fmt.Fprintf(opts.IO.Err, "once a fixed version is published: station report triage %s --state fixed --fixed-in VERSION --advisory\n", id)
	case r.State == hub.StateFixed && r.Advisory == "":
		fmt.Fprintf(opts.IO.Err, "publish an advisory, so that stations running an affected version warn: station report triage %s --advisory\n", id)
	case r.State == hub.StateFixed && r.PublishedAt == nil:
		fmt.Fprintf(opts.IO.Err, "the report is still private; to make it public: station report triage %s --publish\n", id)
	}
	return nil
}
