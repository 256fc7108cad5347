// Package module is `station module`: build, install, list, show, remove,
// publish, search and upgrade modules. Each command is a file: its options,
// its constructor (with a run hook for tests of its flags) and its run
// function, which calls one service (station, hubsync) and prints a typed
// result as text or, with --json, as JSON.
package module

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/hubsync"
)

// NewCmdModule returns `station module` with its subcommands.
func NewCmdModule(f *cmdutil.Factory) *cobra.Command {
	c := &cobra.Command{
		Use:   "module",
		Short: "Build, install, inspect and remove modules",
		Long: `Module builds modules from a directory, installs them (from a directory or
from the hub this station is logged in to) after showing what they may do,
lists and shows what is installed and where it came from, removes modules,
and publishes, searches and upgrades modules on the hub.`,
		Example: `  station module build examples/hello
  station module install examples/hello
  station module show station/hello
  station module install dave/stripe-invoicing@1.4.0
  station module upgrade`,
	}
	// build and schema never open a station home: they do not list its
	// flags.
	onStation := []*cobra.Command{NewCmdInstall(f, nil), NewCmdList(f, nil), NewCmdShow(f, nil), NewCmdRemove(f, nil),
		NewCmdPublish(f, nil), NewCmdSearch(f, nil), NewCmdUpgrade(f, nil)}
	for _, sub := range onStation {
		cmdutil.StationFlags(sub, f)
	}
	c.AddCommand(NewCmdNew(f, nil), NewCmdBuild(f, nil), NewCmdTest(f, nil), NewCmdSchema(f, nil))
	c.AddCommand(NewCmdLearn(f, nil))
	c.AddCommand(onStation...)
	return cmdutil.Group(c)
}

// describer is what show and remove read of an installed module, from the
// station of the Factory.
func describer(f *cmdutil.Factory) func(ctx context.Context, id string) (*hubsync.ModuleInfo, error) {
	return func(ctx context.Context, id string) (*hubsync.ModuleInfo, error) {
		s, err := f.Open(ctx)
		if err != nil {
			return nil, err
		}
		return hubsync.Describe(ctx, s, id)
	}
}
