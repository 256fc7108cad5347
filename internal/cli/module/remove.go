package module

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/hubsync"
	"github.com/station-dev/station/internal/store"
	"github.com/station-dev/station/internal/units"
)

// RemoveOptions are what `station module remove` was asked to do.
type RemoveOptions struct {
	IO *cmdutil.IOStreams
	// Describe reads the module first, to say what goes (hubsync.Describe);
	// Remove removes it (hubsync.Remove).
	Describe func(ctx context.Context, id string) (*hubsync.ModuleInfo, error)
	Remove   func(ctx context.Context, id string) error
	Confirm  func(question string) bool
	Reload   func(ctx context.Context, id string)

	ID   string
	Yes  bool
	JSON bool
}

// NewCmdRemove returns `station module remove`.
func NewCmdRemove(f *cmdutil.Factory, runF func(*RemoveOptions) error) *cobra.Command {
	opts := &RemoveOptions{IO: &f.IO, Describe: describer(f), Confirm: f.Confirm, Reload: f.ReloadInDaemon,
		Remove: func(ctx context.Context, id string) error {
			s, err := f.Open(ctx)
			if err != nil {
				return err
			}
			return hubsync.Remove(ctx, s, id)
		}}
	c := &cobra.Command{
		Use:   "remove ID",
		Short: "Uninstall a module",
		Long: `Remove uninstalls module ID: its wasm, its manifest, the permissions you
approved for it and the record of where it came from go. Its audit log stays,
and so do the files it wrote, which still count against its quota if you
install it again.

On a terminal it says what goes and asks first; --yes removes without asking,
and is required where there is no terminal (a script).`,
		Example: "  station module remove dave/stripe-invoicing\n  station module remove --yes dave/stripe-invoicing",
		Args:    cmdutil.ExactArgs(1, "ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.ID = args[0]
			if runF != nil {
				return runF(opts)
			}
			return removeRun(cmd.Context(), opts)
		},
	}
	c.Flags().BoolVarP(&opts.Yes, "yes", "y", false, "remove without asking")
	cmdutil.AddJSONFlag(c, &opts.JSON)
	return c
}

// RemoveResult is what a remove removed, and what it left.
type RemoveResult struct {
	ID      string `json:"id"`
	Version string `json:"version"`
	Source  Source `json:"source"`
	// KeptFileBytes and KeptFileEntries are what the files the module
	// wrote take: they stay, counted against its quota.
	KeptFileBytes   int64 `json:"kept_file_bytes"`
	KeptFileEntries int64 `json:"kept_file_entries"`
}

// Text implements cmdutil.Texter.
func (r RemoveResult) Text(w io.Writer) error {
	_, err := fmt.Fprintf(w, "removed %s %s; %s stay\n", cmdutil.TermText(r.ID), cmdutil.TermText(r.Version), r.kept())
	return err
}

// kept says what stays.
func (r RemoveResult) kept() string {
	if r.KeptFileEntries == 0 && r.KeptFileBytes == 0 {
		return "its audit log and any files it wrote"
	}
	return fmt.Sprintf("its audit log and the files it wrote (%d files and directories, %s)", r.KeptFileEntries, units.Bytes(r.KeptFileBytes))
}

func removeRun(ctx context.Context, opts *RemoveOptions) error {
	in, err := opts.Describe(ctx, opts.ID)
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("remove %s: %w", opts.ID, cmdutil.ErrNotInstalled)
	}
	if err != nil {
		return fmt.Errorf("remove %s: %w", opts.ID, err)
	}
	r := RemoveResult{ID: in.Module.ID, Version: in.Module.Version, Source: newSource(in.Origin), KeptFileBytes: in.Usage.Bytes, KeptFileEntries: in.Usage.Entries}
	ok, err := cmdutil.Ask(opts.Yes, opts.IO.IsTerminal, func(question string) bool {
		w := opts.IO.Err
		fmt.Fprintf(w, "%s %s, installed from %s\n", cmdutil.TermText(r.ID), cmdutil.TermText(r.Version), r.Source)
		fmt.Fprintln(w, "  goes:  its wasm and manifest, the permissions you approved, where it came from")
		fmt.Fprintf(w, "  stays: %s (they count against its quota if you install it again)\n", r.kept())
		return opts.Confirm(question)
	}, fmt.Sprintf("Remove %s?", cmdutil.TermText(r.ID)), "remove "+cmdutil.TermText(opts.ID)+" needs confirmation: rerun with --yes")
	if err != nil {
		return err
	}
	if !ok {
		return cmdutil.ErrDeclined
	}
	if err := opts.Remove(ctx, opts.ID); err != nil {
		return err
	}
	opts.Reload(ctx, opts.ID)
	return cmdutil.Print(opts.IO.Out, opts.JSON, r)
}
