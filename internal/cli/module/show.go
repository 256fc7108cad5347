package module

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/hubsync"
	"github.com/station-dev/station/internal/station"
	"github.com/station-dev/station/internal/store"
	"github.com/station-dev/station/internal/units"
)

// ShowOptions are what `station module show` was asked to do.
type ShowOptions struct {
	IO *cmdutil.IOStreams
	// Describe reads an installed module (hubsync.Describe).
	Describe func(ctx context.Context, id string) (*hubsync.ModuleInfo, error)
	ID       string
	JSON     bool
}

// NewCmdShow returns `station module show`.
func NewCmdShow(f *cmdutil.Factory, runF func(*ShowOptions) error) *cobra.Command {
	opts := &ShowOptions{IO: &f.IO, Describe: describer(f)}
	c := &cobra.Command{
		Use:   "show ID",
		Short: "Show an installed module: where it came from, permissions, digest, commands, limits",
		Long: `Show prints an installed module: its version, description and digest, when
it was installed and where from (the directory, as it was at install; or the
hub, with the publisher key that signed it and the team whose lockfile
installed it), its commands, the permissions you approved and the limits it
runs under.`,
		Example: "  station module show dave/stripe-invoicing\n  station module show --json dave/stripe-invoicing",
		Args:    cmdutil.ExactArgs(1, "ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.ID = args[0]
			if runF != nil {
				return runF(opts)
			}
			return showRun(cmd.Context(), opts)
		},
	}
	cmdutil.AddJSONFlag(c, &opts.JSON)
	return c
}

// Command is a module's command.
type Command struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

// ShowResult is an installed module.
type ShowResult struct {
	ID          string    `json:"id"`
	Version     string    `json:"version"`
	Description string    `json:"description"`
	Digest      string    `json:"digest"`
	InstalledAt time.Time `json:"installed_at"`
	Source      Source    `json:"source"`
	Commands    []Command `json:"commands"`
	// Permissions are those approved; ProgramConfinement what a program
	// the module starts gets on this machine.
	Permissions        *Permissions   `json:"permissions"`
	ProgramConfinement string         `json:"program_confinement,omitempty"`
	Limits             station.Limits `json:"limits"`

	approved station.Permissions
}

func newShowResult(in *hubsync.ModuleInfo) ShowResult {
	r := ShowResult{ID: in.Module.ID, Version: in.Module.Version, Description: in.Manifest.Description, Digest: in.Module.Digest,
		InstalledAt: in.Module.InstalledAt, Source: newSource(in.Origin), Commands: []Command{},
		Permissions: newPermissions(in.Approved), ProgramConfinement: in.Confinement, Limits: in.Limits, approved: in.Approved}
	for _, c := range in.Manifest.Commands {
		r.Commands = append(r.Commands, Command{Name: c.Name, Description: c.Description})
	}
	return r
}

// Text implements cmdutil.Texter. Everything but the digest, the time and
// the limits comes from the module's manifest or from a hub.
func (r ShowResult) Text(w io.Writer) error {
	fmt.Fprintf(w, "%s %s\n", cmdutil.TermText(r.ID), cmdutil.TermText(r.Version))
	if r.Description != "" {
		// The one place a description keeps its lines, each indented
		// under the module's.
		fmt.Fprintf(w, "  %s\n", cmdutil.TermBlock(r.Description, "  "))
	}
	fmt.Fprintf(w, "digest     %s\ninstalled  %s\nfrom       %s\n", cmdutil.TermText(r.Digest), r.InstalledAt.Local().Format(time.RFC3339), r.Source)
	fmt.Fprintln(w, "commands")
	for _, c := range r.Commands {
		fmt.Fprintf(w, "  %-20s %s\n", cmdutil.TermText(c.Name), cmdutil.TermText(c.Description))
	}
	fmt.Fprintln(w, "permissions (approved)")
	cmdutil.PrintPermissions(w, "  - ", "    ", r.approved.Describe(r.ProgramConfinement))
	printLimits(w, r.Limits)
	return nil
}

func showRun(ctx context.Context, opts *ShowOptions) error {
	in, err := opts.Describe(ctx, opts.ID)
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("show %s: %w", opts.ID, cmdutil.ErrNotInstalled)
	}
	if err != nil {
		return fmt.Errorf("show %s: %w", opts.ID, err)
	}
	return cmdutil.Print(opts.IO.Out, opts.JSON, newShowResult(in))
}

// printLimits writes the limits a module runs under.
func printLimits(w io.Writer, l station.Limits) {
	fmt.Fprintln(w, "limits")
	instance := "warm instances, reused"
	if l.FreshInstance {
		instance = "a fresh instance per call"
	}
	fmt.Fprintf(w, "  memory %s, timeout %s, %d calls at once, %s\n", units.Bytes(int64(l.MemoryBytes)), l.Timeout, l.Concurrency, instance)
	fmt.Fprintf(w, "  input %s, output %s, host-call request %s, HTTP response %s\n",
		units.Bytes(int64(l.MaxInputBytes)), units.Bytes(int64(l.MaxOutputBytes)), units.Bytes(int64(l.MaxRequestBytes)), units.Bytes(l.MaxResponseBytes))
	if f := l.Files; f != nil {
		fmt.Fprintf(w, "  files: quota %s (%s used), %d files and directories (%d used), %d open at once (%d per instance)\n",
			units.Bytes(f.QuotaBytes), units.Bytes(f.UsedBytes), f.Entries, f.UsedEntries, f.OpenFiles, f.OpenFilesPerInstance)
	}
	if l.ProgramOutputBytes > 0 {
		fmt.Fprintf(w, "  programs: %s of stdout and of stderr each\n", units.Bytes(l.ProgramOutputBytes))
	}
}
