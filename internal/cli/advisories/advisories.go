// Package advisories is `station advisories`: what the security advisories
// of the hub say about the modules installed here and about the station
// itself (in the manner of govulncheck and cargo audit), and the commands
// that act on them — show one, allow a version despite one, and, for module
// owners and hub admins, publish and withdraw one. Each command is a file:
// its options, its constructor (with a run hook for tests of its flags) and
// its run function, which calls one station or hubsync method and prints a
// typed result as text or, with --json, as JSON.
package advisories

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/hubsync"
	"github.com/station-dev/station/internal/sandbox"
	"github.com/station-dev/station/internal/station"
)

// CheckOptions are what `station advisories` was asked to do.
type CheckOptions struct {
	IO *cmdutil.IOStreams
	// Open opens the station (the Factory's).
	Open func(context.Context) (*station.Station, error)
	// Session opens the station's hub login (hubsync.Open); it returns
	// hubsync.ErrNotLoggedIn when there is none.
	Session func(context.Context, *station.Station) (*hubsync.Session, error)
	// Version is the station's own version (cmdutil.Version).
	Version string
	// Reload tells a running daemon that module id changed in the store
	// (the Factory's ReloadInDaemon): after the hub brought advisories or
	// yanks, each affected module is reloaded, so that a daemon whose relay
	// missed them refuses a blocked version from its next call, as the
	// table says.
	Reload func(ctx context.Context, id string)
	// Offline is --offline: use what the station stored, ask no hub.
	Offline bool
	JSON    bool
	// Now is the clock the age of stored advisories is told by (nil:
	// time.Now).
	Now func() time.Time
}

// NewCmdAdvisories returns `station advisories` with its subcommands. Run
// alone it checks the station (CheckOptions).
func NewCmdAdvisories(f *cmdutil.Factory) *cobra.Command {
	c := newCmdCheck(f, nil)
	c.AddCommand(NewCmdShow(f, nil), NewCmdAllow(f, nil), NewCmdPublish(f, nil), NewCmdWithdraw(f, nil))
	return c
}

// newCmdCheck returns `station advisories` without its subcommands.
func newCmdCheck(f *cmdutil.Factory, runF func(*CheckOptions) error) *cobra.Command {
	opts := &CheckOptions{IO: &f.IO, Open: f.Open, Version: cmdutil.Version(), Reload: f.ReloadInDaemon,
		Session: func(ctx context.Context, st *station.Station) (*hubsync.Session, error) {
			return hubsync.Open(ctx, st, f.FileLogger(st.Home))
		}}
	c := &cobra.Command{
		Use:   "advisories",
		Short: "List the security advisories and yanks that affect the modules installed here, and the station",
		Long: `Advisories checks every installed module version, and the station itself,
against the security advisories (OSV records) and yanks of the hub each module
was installed from. It first reads what the hub published since the last time
(when this station is logged in; --offline skips it, and a hub that cannot be
reached is said on stderr, with how old the stored advisories are), then lists
one line per advisory or yank: module, version, advisory, severity, the version
that fixes it, and its status:

  BLOCKED  at or above advisories.block (config.yaml; default critical), not
           allowed: the version does not run, and install and upgrade refuse it
  allowed  the operator allowed this version (station advisories allow)
  warn     below advisories.block: it runs, with a warning
  yanked   its hub yanked the version: it runs, with a warning

A module installed from a directory is never matched: advisories apply to
the bytes their hub served. The station's own version is matched only when it
is a release; a build from a checkout or a commit is "unknown".

Exit codes: 0 when nothing the station knows affects what is installed, 3
when an advisory or a yank does (a script's gate, like govulncheck's), 1 when
the check itself failed, 2 for a usage error.

With --json: {"hub", "synced_at", "refreshed", "refresh_error", "affected",
"modules": [{"module", "version", "origin", "hub", "status", "note", "yanked",
"yank_reason", "advisories": [{"id", "aliases", "summary", "severity",
"fixed_in", "hub", "allowed", "allow_reason", "status"}]}], "station": {...}}.`,
		Example: `  station advisories
  station advisories --offline --json
  station advisories show STATION-2026-0007
  station advisories allow STATION-2026-0007 dave/stripe-invoicing@1.4.0 --reason "we never call the export command"`,
	}
	// A word that is none of the subcommands is a usage error (Group); no
	// word at all is the check.
	cmdutil.Group(c)
	c.RunE = func(cmd *cobra.Command, args []string) error {
		if runF != nil {
			return runF(opts)
		}
		return checkRun(cmd.Context(), opts)
	}
	c.Flags().BoolVar(&opts.Offline, "offline", false, "use the advisories this station stored; do not ask the hub")
	cmdutil.AddJSONFlag(c, &opts.JSON)
	return c
}

// CheckResult is what `station advisories` prints.
type CheckResult struct {
	// Hub is the hub the station is logged in to ("" if none); SyncedAt
	// when its advisories were last stored (absent: never).
	Hub      string    `json:"hub,omitempty"`
	SyncedAt time.Time `json:"synced_at,omitzero"`
	// Refreshed is set when the advisories were read from the hub just
	// now; RefreshError says why they could not be.
	Refreshed    bool   `json:"refreshed"`
	RefreshError string `json:"refresh_error,omitempty"`
	// Affected is set when an advisory or a yank affects an installed
	// module version or the station: the exit code is then 3.
	Affected bool              `json:"affected"`
	Modules  []hubsync.Finding `json:"modules"`
	Station  hubsync.Finding   `json:"station"`
}

// AffectedError is the outcome of a check that found installed versions
// affected: exit code 3, as for a sandbox denial (it wraps one of
// capability advisory).
type AffectedError struct {
	// Versions is how many installed versions (the station's counted) are
	// affected; Blocked how many of them do not run.
	Versions, Blocked int
}

func (e *AffectedError) Error() string {
	s := fmt.Sprintf("%d installed version(s) affected by advisories or yanked", e.Versions)
	if e.Blocked > 0 {
		s += fmt.Sprintf(", %d of them blocked from running", e.Blocked)
	}
	return s + " (listed above)"
}

// Unwrap makes the outcome a denial for the exit code (3).
func (e *AffectedError) Unwrap() error {
	return &sandbox.Violation{Module: hub.Product, Capability: sandbox.Advisory, Target: "installed modules", Reason: e.Error()}
}

func checkRun(ctx context.Context, opts *CheckOptions) error {
	st, err := opts.Open(ctx)
	if err != nil {
		return err
	}
	res := &CheckResult{}
	brought := false // the hub brought advisories or yanks just now
	if !opts.Offline {
		sess, err := opts.Session(ctx, st)
		switch {
		case errors.Is(err, hubsync.ErrNotLoggedIn):
			fmt.Fprintln(opts.IO.Err, "station: not logged in to a hub: listing the advisories this station stored (station hub login --url URL reads a hub's)")
		case err != nil:
			return err
		default:
			sync, err := sess.SyncAdvisories(ctx)
			if err != nil {
				res.RefreshError = err.Error()
			} else {
				res.Refreshed, brought = true, sync.Advisories+sync.Yanks > 0
				for _, s := range sync.Skipped {
					fmt.Fprintf(opts.IO.Err, "station: warning: the hub sent a record this station cannot use and it was left out: %s\n", cmdutil.TermText(s))
				}
			}
		}
	}
	found, err := hubsync.CheckAdvisories(ctx, st, opts.Version)
	if err != nil {
		return err
	}
	res.Hub, res.SyncedAt, res.Modules, res.Station, res.Affected = found.Hub, found.SyncedAt, found.Modules, found.Station, found.Affected()
	if brought {
		for _, f := range res.Modules {
			if f.Affected() {
				opts.Reload(ctx, f.Module)
			}
		}
	}
	if res.RefreshError != "" {
		now := time.Now
		if opts.Now != nil {
			now = opts.Now
		}
		age := "it has never read them"
		if !res.SyncedAt.IsZero() {
			age = fmt.Sprintf("they were read %s ago, at %s", cmdutil.Round(now().Sub(res.SyncedAt)), res.SyncedAt.Local().Format(time.RFC3339))
		}
		fmt.Fprintf(opts.IO.Err, "station: warning: could not read the advisories of %s: %s\n  listing what this station stored: %s\n",
			cmdutil.TermText(res.Hub), cmdutil.TermBlock(res.RefreshError, "  "), age)
	}
	if err := cmdutil.Print(opts.IO.Out, opts.JSON, res); err != nil {
		return err
	}
	if !res.Affected {
		return nil
	}
	e := &AffectedError{}
	for _, f := range append(append([]hubsync.Finding{}, res.Modules...), res.Station) {
		if f.Affected() {
			e.Versions++
		}
		if f.Status == hubsync.StatusBlocked {
			e.Blocked++
		}
	}
	return e
}

// statusWord is a status as the table shows it: BLOCKED stands out.
func statusWord(s string) string {
	if s == hubsync.StatusBlocked {
		return "BLOCKED"
	}
	return s
}

// Text prints one line per advisory or yank against an installed version,
// then what each advisory is and what to do. Everything in it but the
// statuses came from a hub.
func (r *CheckResult) Text(w io.Writer) error {
	t := cmdutil.TermText
	all := append(append([]hubsync.Finding{}, r.Modules...), r.Station)
	var blocked []string
	summaries := map[string]string{}
	var order []string
	tw := cmdutil.NewTable(w)
	rows := 0
	for _, f := range all {
		if !f.Affected() {
			continue
		}
		if rows == 0 {
			fmt.Fprintln(tw, "MODULE\tVERSION\tADVISORY\tSEVERITY\tFIXED IN\tSTATUS")
		}
		for _, a := range f.Advisories {
			rows++
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", t(f.Module), t(f.Version), t(a.ID), t(cmp.Or(a.Severity, "unknown")), t(cmp.Or(a.FixedIn, "-")), statusWord(a.Status))
			if _, ok := summaries[a.ID]; !ok {
				summaries[a.ID] = a.Summary
				order = append(order, a.ID)
			}
			if a.Status == hubsync.StatusBlocked {
				blocked = append(blocked, fmt.Sprintf("%s %s@%s", a.ID, f.Module, f.Version))
			}
		}
		if f.Yanked {
			rows++
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", t(f.Module), t(f.Version), "-", "-", "-", hubsync.StatusYanked)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if rows > 0 {
		fmt.Fprintln(w)
	}
	for _, id := range order {
		fmt.Fprintf(w, "%s: %s\n", t(id), t(summaries[id]))
	}
	for _, f := range all {
		if f.Yanked {
			fmt.Fprintf(w, "%s@%s is yanked on %s: %s\n", t(f.Module), t(f.Version), t(f.Hub), t(cmp.Or(f.YankReason, "no reason given")))
		}
	}
	if len(blocked) > 0 {
		fmt.Fprintln(w, "\nBLOCKED versions do not run. Upgrade each (station module upgrade MODULE), or, if the flaw cannot matter here, allow it:")
		for _, b := range blocked {
			fmt.Fprintf(w, "  station advisories allow %s --reason TEXT\n", t(b))
		}
	}
	if rows == 0 {
		fmt.Fprintf(w, "no installed module version is affected by an advisory or yanked (%d module(s) checked", len(r.Modules))
		if r.Hub != "" && !r.SyncedAt.IsZero() {
			fmt.Fprintf(w, "; advisories of %s read at %s", t(r.Hub), r.SyncedAt.Local().Format(time.RFC3339))
		}
		fmt.Fprintln(w, ")")
	}
	if r.Station.Status == hubsync.StatusUnknown {
		fmt.Fprintln(w, t(r.Station.Note))
	}
	if r.Station.Affected() {
		fmt.Fprintln(w, "an advisory affects this station itself: install a release that fixes it")
	}
	var local []string
	for _, f := range r.Modules {
		if f.Origin != hubsync.FromHub {
			local = append(local, t(f.Module))
		}
	}
	if len(local) > 0 {
		fmt.Fprintf(w, "not checked (installed from a directory, which no advisory applies to): %s\n", strings.Join(local, ", "))
	}
	return nil
}
