package module

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/hubclient"
	"github.com/station-dev/station/internal/hubsync"
	"github.com/station-dev/station/internal/station"
)

// Installer installs a module from a directory (*station.Station).
type Installer interface {
	Install(ctx context.Context, dir string, approve station.Approver) (*station.Plan, error)
}

// HubInstaller installs a module from the hub (*hubsync.Session).
type HubInstaller interface {
	Install(ctx context.Context, req hubsync.Request, approve hubsync.Approver) (hubsync.Result, error)
}

// InstallOptions are what `station module install` was asked to do.
type InstallOptions struct {
	// Overrides are --allow-advisory.
	Overrides cmdutil.Overrides
	IO        *cmdutil.IOStreams
	Station   func(context.Context) (Installer, error)
	Hub       func(context.Context) (HubInstaller, error)
	// HubApprover shows a hub install's plan and approves it, asks, or
	// refuses (Factory.HubApprover).
	HubApprover   func(yes bool, mode cmdutil.ApprovalMode, verb string) hubsync.Approver
	Confirm       func(question string) bool
	Reload        func(ctx context.Context, id string)
	StartProgress func(label string) *cmdutil.Progress
	IsDir         func(path string) bool

	Arg  string // DIR or OWNER/SLUG[@VERSION]
	Yes  bool
	JSON bool
}

// NewCmdInstall returns `station module install`.
func NewCmdInstall(f *cmdutil.Factory, runF func(*InstallOptions) error) *cobra.Command {
	opts := &InstallOptions{
		IO: &f.IO,
		Station: func(ctx context.Context) (Installer, error) {
			s, err := f.Open(ctx)
			if err != nil {
				return nil, err
			}
			return s, nil
		},
		HubApprover: f.HubApprover, Confirm: f.Confirm, Reload: f.ReloadInDaemon, StartProgress: f.StartProgress, IsDir: isDir,
	}
	opts.Hub = func(ctx context.Context) (HubInstaller, error) {
		s, err := f.HubSession(ctx)
		if err != nil {
			return nil, err
		}
		if err := opts.Overrides.Apply(s); err != nil {
			return nil, err
		}
		return s, nil
	}
	c := &cobra.Command{
		Use:   "install DIR | OWNER/SLUG[@VERSION]",
		Short: "Install a built module, or one from the hub, after showing what it may do",
		Long: `Install verifies the module's wasm against its manifest (it must compile,
speak the station ABI and import only what the manifest grants), shows the
permissions it asks for in plain words, and asks for approval. Use --yes in
scripts after reviewing the manifest. On a terminal it shows how long the
download and the compilation take; then it prints what it installed and in
how long.

An argument that is not a directory and reads OWNER/SLUG[@VERSION] installs
from the hub this station is logged in to (station hub login): the latest
version that is not yanked, or VERSION. With --yes the version must be named,
so that a directory missing from where you run the command never becomes an
approved install from the hub. The bundle's signature (by a key the
hub lists for OWNER) and digests are verified before anything is written, and
the publisher's key is pinned: a later version signed by another key asks you
first.

A module installed from a directory (or another hub) is replaced by the hub's
version with the same command: the plan says "REPLACES ID@VERSION, which was
not installed from HUB" and asks first (or --yes); from then on the module is
installed from the hub, and station module upgrade upgrades it.

Before a hub install, the station asks the hub for the module's security
advisories. One that affects the version is shown in the plan ("! IS
AFFECTED BY ADVISORY ...") and asked about; one at or above the
advisories.block severity of config.yaml (default critical) refuses the
install unless you pass --allow-advisory ID, which installs it, lets it run
and is recorded in the audit log. station advisories lists what affects the
installed modules.`,
		Example: `  station module install examples/hello
  station module install --yes examples/stripe-invoicing
  station module install dave/stripe-invoicing@1.4.0
  station module install --yes dave/stripe-invoicing@1.4.0   # in place of a directory install`,
		Args: cmdutil.ExactArgs(1, "DIR | OWNER/SLUG[@VERSION]"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Arg = args[0]
			if runF != nil {
				return runF(opts)
			}
			return installRun(cmd.Context(), opts)
		},
	}
	c.Flags().BoolVarP(&opts.Yes, "yes", "y", false, "approve without asking")
	cmdutil.AddAdvisoryFlag(c, &opts.Overrides)
	cmdutil.AddJSONFlag(c, &opts.JSON)
	return c
}

// InstallResult is what an install did.
type InstallResult struct {
	ID      string `json:"id"`
	Version string `json:"version"`
	// Changed is false when exactly this version was installed already.
	Changed     bool         `json:"changed"`
	Digest      string       `json:"digest,omitempty"`
	Permissions *Permissions `json:"permissions,omitempty"`
	// Replaced is the version the install replaced, if any.
	Replaced string `json:"replaced,omitempty"`
	Source   Source `json:"source"`
	// Hub and Key are those of Source, for a hub install (the names
	// scripts used before Source).
	Hub string `json:"hub,omitempty"`
	Key string `json:"key,omitempty"`
	// Took is how long the install took, the wait for an answer not
	// counted; DurationMS the same in milliseconds.
	Took       time.Duration `json:"-"`
	DurationMS int64         `json:"duration_ms"`
}

// Text implements cmdutil.Texter.
func (r InstallResult) Text(w io.Writer) error {
	ref := cmdutil.TermText(r.ID) + "@" + cmdutil.TermText(r.Version)
	if !r.Changed {
		_, err := fmt.Fprintf(w, "%s is already installed\n", ref)
		return err
	}
	from := ""
	if r.Source.Kind == hubsync.FromHub {
		from = " from " + cmdutil.TermText(r.Source.Hub)
	}
	replaced := ""
	if r.Replaced != "" {
		replaced = ", replacing " + cmdutil.TermText(r.Replaced)
	}
	_, err := fmt.Fprintf(w, "installed %s (%s)%s in %s%s\n", ref, r.Digest, from, r.Took, replaced)
	return err
}

func installRun(ctx context.Context, opts *InstallOptions) error {
	if refMaybe(opts.Arg, opts.IsDir) {
		if opts.Yes && !strings.Contains(opts.Arg, "@") {
			// A mistyped or missing directory (examples/hello run from the
			// wrong folder) must not become an approved install of
			// whatever the hub has under that name.
			return cmdutil.Usagef("%s is not a directory here; to install it from the hub without a prompt, name the version (%s@VERSION; station module search lists them)", opts.Arg, opts.Arg)
		}
		return installFromHub(ctx, opts)
	}
	s, err := opts.Station(ctx)
	if err != nil {
		return err
	}
	w := &work{start: opts.StartProgress}
	w.begin("checking %s", opts.Arg)
	plan, err := s.Install(ctx, opts.Arg, func(p station.Plan) (bool, error) {
		w.pause()
		cmdutil.PrintPlan(opts.IO.Err, p)
		ok, err := cmdutil.Ask(opts.Yes, opts.IO.IsTerminal, opts.Confirm, "Install?",
			"install "+cmdutil.TermText(p.Manifest.ID)+" needs approval: review the permissions above and rerun with --yes")
		if ok {
			w.begin("installing %s@%s", p.Manifest.ID, p.Manifest.Version)
		}
		return ok, err
	})
	took := w.done()
	if err != nil {
		return err
	}
	opts.Reload(ctx, plan.Manifest.ID)
	dir, err := filepath.Abs(opts.Arg)
	if err != nil {
		dir = opts.Arg
	}
	r := InstallResult{ID: plan.Manifest.ID, Version: plan.Manifest.Version, Changed: true, Digest: plan.Digest,
		Permissions: newPermissions(plan.Permissions), Source: Source{Kind: hubsync.FromDirectory, Dir: dir}, Took: took}
	if plan.Replaces != nil {
		r.Replaced = plan.Replaces.Version
	}
	r.DurationMS = took.Milliseconds()
	return cmdutil.Print(opts.IO.Out, opts.JSON, r)
}

// installFromHub is `station module install OWNER/SLUG[@VERSION]`: one
// hubsync install, which asks (a direct install always shows what the
// module may do).
func installFromHub(ctx context.Context, opts *InstallOptions) error {
	id, version, err := hubclient.ParseRef(opts.Arg)
	if err != nil {
		return cmdutil.UsageError{Err: err}
	}
	sess, err := opts.Hub(ctx)
	if errors.Is(err, hubsync.ErrNotLoggedIn) {
		// Most likely a directory that is not where the command ran
		// (examples/hello reads as OWNER/SLUG too): say both.
		return fmt.Errorf("install %s: no such directory, and to install it from a hub as OWNER/SLUG: %w", opts.Arg, err)
	}
	if err != nil {
		return err
	}
	approve := opts.HubApprover(opts.Yes, cmdutil.AskOrUsage, "install")
	w := &work{start: opts.StartProgress}
	w.begin("downloading and checking %s", opts.Arg)
	res, err := sess.Install(ctx, hubsync.Request{ID: id, Version: version, Ask: true}, func(p hubsync.Plan) (bool, error) {
		w.pause()
		ok, err := approve(p)
		if ok && err == nil {
			w.begin("installing %s@%s", p.Version.Module, p.Version.Version)
		}
		return ok, err
	})
	took := w.done()
	if err != nil {
		return err
	}
	r := InstallResult{ID: res.ID, Version: res.Version, Changed: res.Changed, Took: took}
	if p := res.Plan; res.Changed && p != nil {
		opts.Reload(ctx, id)
		r.Digest, r.Permissions = p.Digest, newPermissions(p.Permissions)
		r.Source = Source{Kind: hubsync.FromHub, Hub: p.Hub, KeyID: p.Key.ID.String(), Team: p.Team}
		r.Hub, r.Key = p.Hub, p.Key.ID.String()
		if p.Plan.Replaces != nil {
			r.Replaced = p.Plan.Replaces.Version
		}
	} else {
		r.Source = Source{Kind: hubsync.FromHub}
	}
	r.DurationMS = took.Milliseconds()
	return cmdutil.Print(opts.IO.Out, opts.JSON, r)
}
