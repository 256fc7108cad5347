package cli

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/station-dev/station/abi"
	"github.com/station-dev/station/internal/cli/cmdutil"
)

func (a *app) versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the station version, guest ABI and runtime (also: station --version)",
		Args:  cmdutil.ExactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, err := fmt.Fprint(a.IO.Out, versionText())
			return err
		},
	}
}

// versionText is what `station version` and `station --version` print.
func versionText() string {
	wz := "?"
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "github.com/tetratelabs/wazero" {
				wz = d.Version
			}
		}
	}
	return fmt.Sprintf("station %s\nguest ABI %d\nwazero %s\n", versionString(), abi.Version, wz)
}

// versionString is the station's module version, "(devel)" in a checkout.
func versionString() string { return cmdutil.Version() }
