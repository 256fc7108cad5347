package advisories

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/cli/cmdutil"
)

// Publisher is what publish and withdraw ask of the hub
// (*hubclient.Client of the station's login).
type Publisher interface {
	PublishAdvisory(ctx context.Context, req hub.AdvisoryRequest) (hub.OSV, error)
	WithdrawAdvisory(ctx context.Context, id, reason string) (hub.OSV, error)
}

// publisher opens the station's hub login and returns its client.
func publisher(f *cmdutil.Factory) func(context.Context) (Publisher, error) {
	return func(ctx context.Context) (Publisher, error) {
		s, err := f.HubSession(ctx)
		if err != nil {
			return nil, err
		}
		return s.Client, nil
	}
}

// maxDetailsBytes bounds --details-file: the hub's bound on a report body.
const maxDetailsBytes = hub.MaxReportBodyBytes

// PublishOptions are what `station advisories publish` was asked to do.
type PublishOptions struct {
	IO  *cmdutil.IOStreams
	Hub func(context.Context) (Publisher, error)
	// Request is the advisory, less Details, which is read from
	// DetailsFile ("-": standard input).
	Request     hub.AdvisoryRequest
	DetailsFile string
	JSON        bool
}

// NewCmdPublish returns `station advisories publish`.
func NewCmdPublish(f *cmdutil.Factory, runF func(*PublishOptions) error) *cobra.Command {
	opts := &PublishOptions{IO: &f.IO, Hub: publisher(f)}
	var r hub.Range
	c := &cobra.Command{
		Use:   "publish --target MODULE --introduced V [--fixed V | --last-affected V] --summary S --details-file F --severity LEVEL",
		Short: "Publish an advisory against your module (hub admins: against the station)",
		Long: `Publish writes an advisory directly, without a report: for the owner of the
module (--target OWNER/SLUG), or for a hub admin against the station itself
(--target station). The hub assigns its id (STATION-YEAR-NUMBER) and serves it
in the OSV format; every station that follows the hub applies it at once: at
or above their advisories.block, the affected versions stop running there.

The affected versions are --introduced (0: from the first) up to --fixed
(that version is not affected) or up to and including --last-affected.
--severity is low, medium, high or critical, and is what stations act on; a
CVSS 4.0 vector (--cvss) and a CWE id (--cwe) may be given beside it. The
details are Markdown, from a file (- for standard input). Publish the fixed
version first: the hub checks that it exists.`,
		Example: `  station advisories publish --target dave/stripe-invoicing --introduced 1.2.0 --fixed 1.4.1 \
      --severity high --summary "export writes invoices to a world-readable file" --details-file advisory.md
  station advisories publish --target station --introduced 0 --last-affected 0.72.0 --severity critical \
      --summary "..." --details-file - --cwe CWE-22 < details.md`,
		Args: cmdutil.ExactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			q := &opts.Request
			switch {
			case q.Target == "":
				return cmdutil.Usagef("--target is required: the module (OWNER/SLUG) or %q", hub.Product)
			case q.Target != hub.Product && hub.CheckModuleID(q.Target) != "":
				return cmdutil.Usagef("--target %q is neither a module id (OWNER/SLUG) nor %q: the module id %s", q.Target, hub.Product, hub.CheckModuleID(q.Target))
			case r.Introduced == "":
				return cmdutil.Usagef("--introduced is required: the first affected version (0 for every version up to --fixed or --last-affected)")
			case r.Introduced != "0" && hub.CheckVersion(r.Introduced) != "":
				return cmdutil.Usagef("--introduced %q %s", r.Introduced, hub.CheckVersion(r.Introduced))
			case r.Fixed != "" && r.LastAffected != "":
				return cmdutil.Usagef("--fixed and --last-affected exclude each other: give the first version that is not affected, or the last that is")
			case r.Fixed != "" && hub.CheckVersion(r.Fixed) != "":
				return cmdutil.Usagef("--fixed %q %s", r.Fixed, hub.CheckVersion(r.Fixed))
			case r.LastAffected != "" && hub.CheckVersion(r.LastAffected) != "":
				return cmdutil.Usagef("--last-affected %q %s", r.LastAffected, hub.CheckVersion(r.LastAffected))
			case strings.TrimSpace(q.Summary) == "":
				return cmdutil.Usagef("--summary is required: one line that says what the flaw lets someone do")
			case opts.DetailsFile == "":
				return cmdutil.Usagef("--details-file is required: the advisory's details (Markdown; - for standard input)")
			}
			if msg := q.Severity.Check(); msg != "" {
				return cmdutil.Usagef("--severity/--cvss: %s", msg)
			}
			if msg := hub.CheckCWE(q.CWE); msg != "" {
				return cmdutil.Usagef("--cwe: %s", msg)
			}
			q.Ranges = []hub.Range{r}
			if runF != nil {
				return runF(opts)
			}
			return publishRun(cmd.Context(), opts)
		},
	}
	fl := c.Flags()
	fl.StringVar(&opts.Request.Target, "target", "", "the module (OWNER/SLUG), or station")
	fl.StringVar(&r.Introduced, "introduced", "", "the first affected version (0: every version before --fixed)")
	fl.StringVar(&r.Fixed, "fixed", "", "the first version that is not affected (published on the hub)")
	fl.StringVar(&r.LastAffected, "last-affected", "", "the last affected version, when no fixed one is published")
	fl.StringVar(&opts.Request.Summary, "summary", "", "one line: what the flaw lets someone do")
	fl.StringVar(&opts.DetailsFile, "details-file", "", "the details, Markdown (- for standard input)")
	fl.StringVar(&opts.Request.Severity.Level, "severity", "", "low, medium, high or critical")
	fl.StringVar(&opts.Request.Severity.CVSS, "cvss", "", "a CVSS 4.0 vector, beside the level")
	fl.StringVar(&opts.Request.CWE, "cwe", "", "a CWE id, e.g. CWE-200")
	cmdutil.AddJSONFlag(c, &opts.JSON)
	return c
}

// readDetails reads the details file (- for stdin), bounded and UTF-8.
func readDetails(in io.Reader, file string) (string, error) {
	var r io.Reader = in
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return "", fmt.Errorf("--details-file: %w", err)
		}
		defer f.Close()
		r = f
	}
	b, err := io.ReadAll(io.LimitReader(r, maxDetailsBytes+1))
	if err != nil {
		return "", fmt.Errorf("--details-file: %w", err)
	}
	switch {
	case len(b) > maxDetailsBytes:
		return "", fmt.Errorf("--details-file: the details are larger than %d bytes, the most the hub accepts", maxDetailsBytes)
	case !utf8.Valid(b):
		return "", fmt.Errorf("--details-file: %s is not UTF-8 text", file)
	case strings.TrimSpace(string(b)) == "":
		return "", fmt.Errorf("--details-file: %s is empty; the details say what is affected, how, and what to do", file)
	}
	return strings.ReplaceAll(string(b), "\r\n", "\n"), nil
}

// PublishResult is the advisory the hub published: in JSON, its OSV
// record.
type PublishResult struct{ hub.OSV }

// Text implements cmdutil.Texter.
func (r PublishResult) Text(w io.Writer) error {
	t := cmdutil.TermText
	level := r.Level()
	if level == "" {
		level = "unknown severity"
	}
	fmt.Fprintf(w, "published %s (%s): %s\nstations following the hub apply it now; station advisories show %s prints it\n", t(r.ID), t(level), t(r.Summary), t(r.ID))
	return nil
}

func publishRun(ctx context.Context, opts *PublishOptions) error {
	details, err := readDetails(opts.IO.In, opts.DetailsFile)
	if err != nil {
		return err
	}
	req := opts.Request
	req.Details = details
	c, err := opts.Hub(ctx)
	if err != nil {
		return err
	}
	a, err := c.PublishAdvisory(ctx, req)
	if err != nil {
		return err
	}
	return cmdutil.Print(opts.IO.Out, opts.JSON, PublishResult{a})
}

// WithdrawOptions are what `station advisories withdraw` was asked to do.
type WithdrawOptions struct {
	IO     *cmdutil.IOStreams
	Hub    func(context.Context) (Publisher, error)
	ID     string
	Reason string
	JSON   bool
}

// NewCmdWithdraw returns `station advisories withdraw`.
func NewCmdWithdraw(f *cmdutil.Factory, runF func(*WithdrawOptions) error) *cobra.Command {
	opts := &WithdrawOptions{IO: &f.IO, Hub: publisher(f)}
	c := &cobra.Command{
		Use:   "withdraw ID --reason TEXT",
		Short: "Withdraw an advisory that was wrong (its target's owner, or a hub admin)",
		Long: `Withdraw marks advisory ID withdrawn on the hub: it stays readable, with the
time it was withdrawn, and stations stop applying it as soon as they read the
feed (a daemon following the hub at once). Withdraw an advisory that was
published in error; a flaw that was fixed keeps its advisory, with the fixed
version.`,
		Example: `  station advisories withdraw STATION-2026-0007 --reason "the export command never wrote the file; the report was mistaken"`,
		Args:    cmdutil.ExactArgs(1, "ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.ID = args[0]
			switch {
			case !hub.ValidAdvisoryID(opts.ID):
				return cmdutil.Usagef("%q is not an advisory id (%s-YEAR-NUMBER)", opts.ID, hub.AdvisoryPrefix)
			case strings.TrimSpace(opts.Reason) == "":
				return cmdutil.Usagef("--reason is required: stations and readers see why it was withdrawn")
			case len(opts.Reason) > hub.MaxReasonBytes:
				return cmdutil.Usagef("--reason is %d bytes; at most %d", len(opts.Reason), hub.MaxReasonBytes)
			}
			if runF != nil {
				return runF(opts)
			}
			return withdrawRun(cmd.Context(), opts)
		},
	}
	c.Flags().StringVar(&opts.Reason, "reason", "", "why it is withdrawn (required)")
	cmdutil.AddJSONFlag(c, &opts.JSON)
	return c
}

// WithdrawResult is the withdrawn advisory: in JSON, its OSV record.
type WithdrawResult struct{ hub.OSV }

// Text implements cmdutil.Texter.
func (r WithdrawResult) Text(w io.Writer) error {
	fmt.Fprintf(w, "withdrew %s: stations stop applying it when they next read the hub's advisories\n", cmdutil.TermText(r.ID))
	return nil
}

func withdrawRun(ctx context.Context, opts *WithdrawOptions) error {
	c, err := opts.Hub(ctx)
	if err != nil {
		return err
	}
	a, err := c.WithdrawAdvisory(ctx, opts.ID, opts.Reason)
	if err != nil {
		return err
	}
	return cmdutil.Print(opts.IO.Out, opts.JSON, WithdrawResult{a})
}
