package report

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/cli/cmdutil"
)

// CommentOptions are what `station report comment` was asked to do.
type CommentOptions struct {
	IO         *cmdutil.IOStreams
	Session    func(context.Context) (*Login, error)
	ID         string
	Body       textFlag // --body, --body-file
	VerifiedIn string   // --verified-in
	JSON       bool
}

// NewCmdComment returns `station report comment`.
func NewCmdComment(f *cmdutil.Factory, runF func(*CommentOptions) error) *cobra.Command {
	opts := &CommentOptions{IO: &f.IO, Session: session(f)}
	c := &cobra.Command{
		Use:   "comment ID (--body TEXT | --body-file FILE)",
		Short: "Add a comment to a report's thread",
		Long: `Comment adds to a report's thread: the reporter answering the owner's
questions, the owner asking them, more detail. Only the reporter and the
target's maintainers (its owner, the hub's admins) comment; everyone who may
read the report reads it (until the report is published: they alone; then
everyone).

--verified-in VERSION says the comment is about checking the report again on
that version (the flaw is still there, or it is gone): the version must exist
on the hub (a module's published version, or a recorded station release). A
comment may be at most 64 KiB; --body-file - reads standard input.

With --json: the report with its thread, as show --json prints it.`,
		Example: `  station report comment R-7kq2m4xw3pna --body "It also happens with --input @file."
  station report comment R-7kq2m4xw3pna --verified-in 1.3.0 --body "Still there on 1.3.0."
  station report comment R-7kq2m4xw3pna --body-file - < answer.md`,
		Args: cmdutil.ExactArgs(1, "ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.ID = args[0]
			if err := checkID("report", opts.ID); err != nil {
				return err
			}
			if err := opts.Body.check("body", true); err != nil {
				return err
			}
			if opts.VerifiedIn != "" {
				v, err := version("--verified-in", opts.VerifiedIn)
				if err != nil {
					return err
				}
				opts.VerifiedIn = v
			}
			if runF != nil {
				return runF(opts)
			}
			return commentRun(cmd.Context(), opts)
		},
	}
	c.Flags().StringVar(&opts.Body.Text, "body", "", "the comment (Markdown)")
	c.Flags().StringVar(&opts.Body.File, "body-file", "", "read the comment from this file (- for standard input)")
	c.Flags().StringVar(&opts.VerifiedIn, "verified-in", "", "the version you checked the report on again")
	cmdutil.AddJSONFlag(c, &opts.JSON)
	return c
}

// CommentResult is the report after the comment.
type CommentResult hub.Report

// Text implements cmdutil.Texter: what was added, and where to read the
// thread.
func (r CommentResult) Text(w io.Writer) error {
	id := cmdutil.TermText(r.ID)
	did := "commented on"
	if n := len(r.Thread); n > 0 && r.Thread[n-1].Kind == hub.ReportComment && r.Thread[n-1].VerifiedIn != "" {
		did = "verified on " + cmdutil.TermText(r.Thread[n-1].VerifiedIn) + ":"
	}
	_, err := fmt.Fprintf(w, "%s report %s (%s, %s); the thread: station report show %s\n", did, id, cmdutil.TermText(r.Target), cmdutil.TermText(r.State), id)
	return err
}

func commentRun(ctx context.Context, opts *CommentOptions) error {
	body, err := opts.Body.read(opts.IO.In, "body", "a comment", hub.MaxCommentBytes)
	if err != nil {
		return err
	}
	l, err := opts.Session(ctx)
	if err != nil {
		return err
	}
	r, err := l.Hub.Comment(ctx, opts.ID, hub.CommentRequest{Body: body, VerifiedIn: opts.VerifiedIn})
	if err != nil {
		return err
	}
	return cmdutil.Print(opts.IO.Out, opts.JSON, CommentResult(r))
}
