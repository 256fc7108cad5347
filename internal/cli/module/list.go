package module

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/station"
	"github.com/station-dev/station/internal/store"
)

// ListOptions are what `station module list` was asked to do.
type ListOptions struct {
	IO *cmdutil.IOStreams
	// Modules returns the installed modules (store.Store.Modules).
	Modules func(context.Context) ([]store.Module, error)
	JSON    bool
}

// NewCmdList returns `station module list`.
func NewCmdList(f *cmdutil.Factory, runF func(*ListOptions) error) *cobra.Command {
	opts := &ListOptions{IO: &f.IO, Modules: func(ctx context.Context) ([]store.Module, error) {
		s, err := f.Open(ctx)
		if err != nil {
			return nil, err
		}
		return s.Store.Modules(ctx)
	}}
	c := &cobra.Command{
		Use:   "list",
		Short: "List installed modules",
		Long: `List prints the installed modules: id, version, digest and the hosts each may
connect to. station module show ID says more about one, and where it came
from.`,
		Example: "  station module list\n  station module list --json",
		Args:    cmdutil.ExactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return listRun(cmd.Context(), opts)
		},
	}
	cmdutil.AddJSONFlag(c, &opts.JSON)
	return c
}

// ListedModule is one installed module.
type ListedModule struct {
	ID          string    `json:"id"`
	Version     string    `json:"version"`
	Digest      string    `json:"digest"`
	InstalledAt time.Time `json:"installed_at"`
	// Permissions are those approved; null when the stored approval
	// cannot be read.
	Permissions *Permissions `json:"permissions"`
}

// ListResult is the installed modules, by id.
type ListResult []ListedModule

// Text implements cmdutil.Texter.
func (r ListResult) Text(w io.Writer) error {
	tw := cmdutil.NewTable(w)
	fmt.Fprintln(tw, "ID\tVERSION\tDIGEST\tNETWORK")
	for _, m := range r {
		netw := "(the stored approval is unreadable)"
		if m.Permissions != nil {
			netw = strings.Join(m.Permissions.Network, ", ")
		}
		if netw == "" {
			netw = "(none)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", cmdutil.TermText(m.ID), cmdutil.TermText(m.Version), cmdutil.TermText(shortDigest(m.Digest)), cmdutil.TermText(netw))
	}
	return tw.Flush()
}

func listRun(ctx context.Context, opts *ListOptions) error {
	mods, err := opts.Modules(ctx)
	if err != nil {
		return err
	}
	out := make(ListResult, 0, len(mods))
	for _, m := range mods {
		lm := ListedModule{ID: m.ID, Version: m.Version, Digest: m.Digest, InstalledAt: m.InstalledAt}
		var p station.Permissions
		if json.Unmarshal(m.Approved, &p) == nil {
			lm.Permissions = newPermissions(p)
		} // else: null; the station refuses to run it (station module show says why)
		out = append(out, lm)
	}
	if len(out) == 0 && !opts.JSON {
		fmt.Fprintln(opts.IO.Err, "no modules installed (station module install DIR)")
		return nil
	}
	return cmdutil.Print(opts.IO.Out, opts.JSON, out)
}
