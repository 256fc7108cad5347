package advisories

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/station"
	"github.com/station-dev/station/internal/store"
)

// AllowOptions are what `station advisories allow` was asked to do.
type AllowOptions struct {
	IO   *cmdutil.IOStreams
	Open func(context.Context) (*station.Station, error)
	// Reload tells a running daemon that the module's allowances changed.
	Reload func(ctx context.Context, id string)
	ID     string
	// Module and Version are MODULE@VERSION.
	Module, Version string
	Reason          string
	// Revoke withdraws the allowance instead (--revoke).
	Revoke bool
	JSON   bool
	// Now is the time the allowance is recorded at (nil: time.Now).
	Now func() time.Time
}

// NewCmdAllow returns `station advisories allow`.
func NewCmdAllow(f *cmdutil.Factory, runF func(*AllowOptions) error) *cobra.Command {
	opts := &AllowOptions{IO: &f.IO, Open: f.Open, Reload: f.ReloadInDaemon}
	c := &cobra.Command{
		Use:   "allow ID MODULE@VERSION (--reason TEXT | --revoke)",
		Short: "Let one module version run (and install) although an advisory affects it",
		Long: `Allow records that you judged advisory ID harmless for MODULE at exactly
VERSION on this station (a flaw in a command you never call, a setting you do
not use): that version then installs and runs although the advisory is at or
above advisories.block, with a warning once per process. The allowance is in
the audit log, with your reason, and holds for that version only: an upgrade
to another affected version is refused again.

The advisory must be one this station knows (station advisories reads them
from the hub) and must affect that version. A running daemon (station serve)
applies the allowance on the module's next call. --revoke withdraws it (also
audited): the advisory decides again from the next call.`,
		Example: `  station advisories allow STATION-2026-0007 dave/stripe-invoicing@1.4.0 --reason "we never call the export command"
  station advisories allow STATION-2026-0007 dave/stripe-invoicing@1.4.0 --revoke`,
		Args: cmdutil.ExactArgs(2, "ID", "MODULE@VERSION"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.ID = args[0]
			if !hub.ValidAdvisoryID(opts.ID) {
				return cmdutil.Usagef("%q is not an advisory id (%s-YEAR-NUMBER, as station advisories lists them)", opts.ID, hub.AdvisoryPrefix)
			}
			var err error
			if opts.Module, opts.Version, err = parseRef(args[1]); err != nil {
				return err
			}
			if opts.Revoke {
				if opts.Reason != "" {
					return cmdutil.Usagef("--revoke takes no --reason")
				}
				if runF != nil {
					return runF(opts)
				}
				return revokeRun(cmd.Context(), opts)
			}
			if strings.TrimSpace(opts.Reason) == "" {
				return cmdutil.Usagef("--reason is required: say why the flaw cannot matter on this station (it is kept with the allowance and in the audit log)")
			}
			if len(opts.Reason) > store.MaxAllowReason {
				return cmdutil.Usagef("--reason is %d bytes; at most %d", len(opts.Reason), store.MaxAllowReason)
			}
			if runF != nil {
				return runF(opts)
			}
			return allowRun(cmd.Context(), opts)
		},
	}
	c.Flags().StringVar(&opts.Reason, "reason", "", "why the flaw cannot matter here (required)")
	c.Flags().BoolVar(&opts.Revoke, "revoke", false, "withdraw the allowance")
	cmdutil.AddJSONFlag(c, &opts.JSON)
	return c
}

// parseRef parses MODULE@VERSION, both required.
func parseRef(ref string) (module, version string, err error) {
	module, version, ok := strings.Cut(ref, "@")
	if !ok || version == "" {
		return "", "", cmdutil.Usagef("%q is not MODULE@VERSION (e.g. dave/stripe-invoicing@1.4.0): an allowance is for one version", ref)
	}
	if msg := hub.CheckModuleID(module); msg != "" {
		return "", "", cmdutil.Usagef("%q: the module id %s", ref, msg)
	}
	if msg := hub.CheckVersion(version); msg != "" {
		return "", "", cmdutil.Usagef("%q: the version %s", ref, msg)
	}
	return module, version, nil
}

// clock is opts.Now, or time.Now.
func (opts *AllowOptions) clock() func() time.Time {
	if opts.Now != nil {
		return opts.Now
	}
	return time.Now
}

// AllowResult is a recorded allowance.
type AllowResult struct {
	Advisory string    `json:"advisory"`
	Module   string    `json:"module"`
	Version  string    `json:"version"`
	Severity string    `json:"severity"`
	Summary  string    `json:"summary"`
	Reason   string    `json:"reason"`
	Hub      string    `json:"hub"`
	At       time.Time `json:"allowed_at"`
}

// Text implements cmdutil.Texter; the summary came from a hub.
func (r AllowResult) Text(w io.Writer) error {
	t := cmdutil.TermText
	fmt.Fprintf(w, "allowed %s (%s: %s) for %s@%s: it runs, with a warning once per process; other versions are not allowed\n",
		t(r.Advisory), t(cmp.Or(r.Severity, "unknown severity")), t(r.Summary), t(r.Module), t(r.Version))
	return nil
}

func allowRun(ctx context.Context, opts *AllowOptions) error {
	st, err := opts.Open(ctx)
	if err != nil {
		return err
	}
	now := opts.clock()
	m, err := st.AllowAdvisory(ctx, opts.ID, opts.Module, opts.Version, opts.Reason, now())
	if err != nil {
		return err
	}
	opts.Reload(ctx, opts.Module)
	return cmdutil.Print(opts.IO.Out, opts.JSON, AllowResult{Advisory: m.ID, Module: opts.Module, Version: opts.Version, Severity: m.Severity,
		Summary: m.Summary, Reason: opts.Reason, Hub: m.Hub, At: m.Allowed.AllowedAt})
}

// RevokeResult is a withdrawn allowance.
type RevokeResult struct {
	Advisory string `json:"advisory"`
	Module   string `json:"module"`
	Version  string `json:"version"`
	Revoked  bool   `json:"revoked"`
}

// Text implements cmdutil.Texter.
func (r RevokeResult) Text(w io.Writer) error {
	fmt.Fprintf(w, "withdrew the allowance of %s for %s@%s: the advisory decides again from its next call\n", r.Advisory, r.Module, r.Version)
	return nil
}

func revokeRun(ctx context.Context, opts *AllowOptions) error {
	st, err := opts.Open(ctx)
	if err != nil {
		return err
	}
	now := opts.clock()
	if err := st.RevokeAdvisory(ctx, opts.ID, opts.Module, opts.Version, now()); err != nil {
		return err
	}
	opts.Reload(ctx, opts.Module)
	return cmdutil.Print(opts.IO.Out, opts.JSON, RevokeResult{Advisory: opts.ID, Module: opts.Module, Version: opts.Version, Revoked: true})
}
