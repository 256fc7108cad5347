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

// FileOptions are what `station report file` was asked to do.
type FileOptions struct {
	IO      *cmdutil.IOStreams
	Session func(context.Context) (*Login, error)
	Target  string // --target
	// Versions is --versions, FROM or FROM..TO; Introduced and
	// LastAffected are what it says.
	Versions                 string
	Introduced, LastAffected string
	Title                    string       // --title
	Body                     textFlag     // --body, --body-file
	Reproduction             string       // --reproduction-file
	Severity                 hub.Severity // --severity, --cvss
	CWE                      string       // --cwe
	JSON                     bool
}

// NewCmdFile returns `station report file`.
func NewCmdFile(f *cmdutil.Factory, runF func(*FileOptions) error) *cobra.Command {
	opts := &FileOptions{IO: &f.IO, Session: session(f)}
	c := &cobra.Command{
		Use:   "file --target OWNER/SLUG|station --title TITLE --severity LEVEL (--body TEXT | --body-file FILE)",
		Short: "File a security report against a module or the station",
		Long: `File sends a security report to the hub this station is logged in to. The
report is private until it is published: only you, the owner of the module
(for --target station, the station itself: the hub's admins) and the hub's
admins read it. The owner triages it; follow it with 'station report show ID'
and add to it with 'station report comment ID'.

The body says what is wrong and what an attacker gains (Markdown is shown as
it is written); --reproduction-file carries a script, a log or a proof of
concept. --body-file - and --reproduction-file - read standard input (one of
them). The body may be at most 64 KiB, the reproduction 256 KiB, both UTF-8
text (CRLF line ends are read as LF); anything else is refused here, before
anything is sent.

--versions says which versions are affected: FROM (that version and every
later one) or FROM..TO (FROM to TO, both included); without it, every version.
--severity is low, medium, high or critical; a CVSS 4.0 vector (--cvss) and a
CWE id (--cwe CWE-200) may go beside it.

The report's id is printed on standard output. With --json: the report as the
hub stored it, {"id", "target", "introduced", "last_affected", "title", "body",
"cwe", "severity": {"level", "cvss"}, "reproduction", "state", "reporter",
"credits", "created_at", "updated_at", ...}.`,
		Example: `  station report file --target alice/hello --versions 1.2.0..1.3.1 --severity high \
      --title "greet writes the API token to the log" --body-file report.md --reproduction-file repro.sh
  station report file --target station --severity critical --cwe CWE-22 \
      --title "a module writes outside its glob" --body-file - < report.md`,
		Args: cmdutil.ExactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.check(); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return fileRun(cmd.Context(), opts)
		},
	}
	c.Flags().StringVar(&opts.Target, "target", "", "the module (OWNER/SLUG), or station for the station itself")
	c.Flags().StringVar(&opts.Versions, "versions", "", "the affected versions: FROM, or FROM..TO (default: every version)")
	c.Flags().StringVar(&opts.Title, "title", "", "a one-line summary (at most 200 bytes)")
	c.Flags().StringVar(&opts.Body.Text, "body", "", "what is wrong, what an attacker gains (Markdown)")
	c.Flags().StringVar(&opts.Body.File, "body-file", "", "read the body from this file (- for standard input)")
	c.Flags().StringVar(&opts.Reproduction, "reproduction-file", "", "a script, log or proof of concept (- for standard input)")
	c.Flags().StringVar(&opts.Severity.Level, "severity", "", "low, medium, high or critical")
	c.Flags().StringVar(&opts.Severity.CVSS, "cvss", "", "a CVSS 4.0 vector (CVSS:4.0/AV:N/...)")
	c.Flags().StringVar(&opts.CWE, "cwe", "", "the weakness, as a CWE id (CWE-200)")
	cmdutil.AddJSONFlag(c, &opts.JSON)
	return c
}

// check validates the flags and reads --versions.
func (o *FileOptions) check() error {
	if o.Target == "" {
		return cmdutil.Usagef("--target is required: the module (OWNER/SLUG), or %s for the station itself", hub.Product)
	}
	if err := checkTarget(o.Target); err != nil {
		return err
	}
	if strings.TrimSpace(o.Title) == "" {
		return cmdutil.Usagef("--title is required: a one-line summary of the flaw")
	}
	if len(o.Title) > hub.MaxTitleBytes || strings.ContainsAny(o.Title, "\r\n") {
		return cmdutil.Usagef("--title must be one line of at most %d bytes (got %d); the detail goes in the body", hub.MaxTitleBytes, len(o.Title))
	}
	if _, err := checkText("--title", "a title", o.Title, false); err != nil {
		return cmdutil.UsageError{Err: err}
	}
	if err := o.Body.check("body", true); err != nil {
		return err
	}
	if o.Body.File == "-" && o.Reproduction == "-" {
		return cmdutil.Usagef("--body-file and --reproduction-file cannot both read standard input: name a file for one of them")
	}
	if o.Severity.Level == "" {
		return cmdutil.Usagef("--severity is required: %s", strings.Join(hub.SeverityLevels(), ", "))
	}
	if err := checkSeverity(o.Severity); err != nil {
		return err
	}
	if msg := hub.CheckCWE(o.CWE); msg != "" {
		return cmdutil.Usagef("--cwe: %s", msg)
	}
	o.Introduced, o.LastAffected = "", ""
	if o.Versions == "" {
		return nil
	}
	from, to, ranged := strings.Cut(o.Versions, "..")
	if from == "" {
		return cmdutil.Usagef("--versions %q: start with the first affected version, FROM or FROM..TO", o.Versions)
	}
	var err error
	if o.Introduced, err = version("--versions", from); err != nil {
		return err
	}
	if !ranged {
		return nil
	}
	if o.LastAffected, err = version("--versions", to); err != nil {
		return err
	}
	if hub.CompareVersions(o.Introduced, o.LastAffected) > 0 {
		return cmdutil.Usagef("--versions %q: %s comes after %s; write FROM..TO", o.Versions, o.Introduced, o.LastAffected)
	}
	return nil
}

// FileResult is the report filed, as the hub stored it.
type FileResult hub.Report

// Text implements cmdutil.Texter: the id alone, so that a script can keep
// it. The hub made it.
func (r FileResult) Text(w io.Writer) error {
	_, err := fmt.Fprintln(w, cmdutil.TermText(r.ID))
	return err
}

func fileRun(ctx context.Context, opts *FileOptions) error {
	// The files are read, and their bounds checked, before anything is
	// sent or even the login opened.
	body, err := opts.Body.read(opts.IO.In, "body", "a report's body", hub.MaxReportBodyBytes)
	if err != nil {
		return err
	}
	var repro string
	if opts.Reproduction != "" {
		if repro, err = readText(opts.IO.In, "--reproduction-file", opts.Reproduction, "a report's reproduction", hub.MaxReproductionBytes); err != nil {
			return err
		}
	}
	l, err := opts.Session(ctx)
	if err != nil {
		return err
	}
	r, err := l.Hub.FileReport(ctx, hub.FileReportRequest{
		Target: opts.Target, Introduced: opts.Introduced, LastAffected: opts.LastAffected,
		Title: opts.Title, Body: body, CWE: opts.CWE, Severity: opts.Severity, Reproduction: repro,
	})
	if err != nil {
		return err
	}
	if !opts.JSON {
		id := cmdutil.TermText(r.ID)
		fmt.Fprintf(opts.IO.Err, "filed report %s against %s (%s, %s): it is private to %s until it is published\n",
			id, cmdutil.TermText(r.Target), severity(r.Severity), versions(r), audience(r.Target, "you"))
		fmt.Fprintf(opts.IO.Err, "the owner triages it; follow it with: station report show %s; add to it with: station report comment %s --body-file FILE\n", id, id)
	}
	return cmdutil.Print(opts.IO.Out, opts.JSON, FileResult(r))
}
