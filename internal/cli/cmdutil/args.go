package cmdutil

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// ExactArgs requires n positional arguments, named in the usage error.
func ExactArgs(n int, names ...string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			if n == 0 {
				return Usagef("%s takes no arguments (got %q)", cmd.CommandPath(), strings.Join(args, " "))
			}
			return Usagef("%s needs %d argument(s): %s (got %d)", cmd.CommandPath(), n, strings.Join(names, " "), len(args))
		}
		return nil
	}
}

// MaxArgs allows at most n positional arguments, named in the usage error.
func MaxArgs(n int, names string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) > n {
			return Usagef("%s takes at most %d argument(s): %s (got %d: %q)", cmd.CommandPath(), n, names, len(args), strings.Join(args, " "))
		}
		return nil
	}
}

// MinArgs requires at least n positional arguments, named in the usage
// error.
func MinArgs(n int, names string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < n {
			return Usagef("%s needs at least %d argument(s): %s (got %d)", cmd.CommandPath(), n, names, len(args))
		}
		return nil
	}
}

// Group makes c a command group: run alone it prints its help; with an
// argument that is none of its subcommands it is a usage error that says
// which ones are close, so that `station module frobnicate` never exits 0.
func Group(c *cobra.Command) *cobra.Command {
	if c.SuggestionsMinimumDistance <= 0 {
		c.SuggestionsMinimumDistance = 2 // cobra's default for the root, which SuggestionsFor alone does not apply
	}
	c.Args = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return nil
		}
		msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
		if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
			msg += "; did you mean " + strings.Join(quoteAll(s), " or ") + "?"
		} else {
			var names []string
			for _, sub := range cmd.Commands() {
				if sub.IsAvailableCommand() {
					names = append(names, sub.Name())
				}
			}
			msg += "; its commands are " + strings.Join(names, ", ")
		}
		return UsageError{fmt.Errorf("%s", msg)}
	}
	c.RunE = func(cmd *cobra.Command, args []string) error { return cmd.Help() }
	return c
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}

// StationFlags adds the flags of commands that use a station home
// (--home, --no-daemon) to c and its subcommands. Commands that never open
// one (they run a hub, or build a module from a directory) do not list
// them.
func StationFlags(c *cobra.Command, f *Factory) {
	HomeFlag(c, f)
	c.PersistentFlags().BoolVar(&f.NoDaemon, "no-daemon", false, "run in this process even if a station daemon (station serve) is running")
}

// HomeFlag adds --home alone to c and its subcommands: for station serve,
// which is the daemon --no-daemon would skip.
func HomeFlag(c *cobra.Command, f *Factory) {
	c.PersistentFlags().StringVar(&f.Home, "home", "", "station home directory (default $STATION_HOME or ~/.station)")
}
