package cli

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/station-dev/station/abi"
)

func (a *app) versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the station version, guest ABI and runtime",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			v := versionString()
			wz := "?"
			if bi, ok := debug.ReadBuildInfo(); ok {
				for _, d := range bi.Deps {
					if d.Path == "github.com/tetratelabs/wazero" {
						wz = d.Version
					}
				}
			}
			fmt.Fprintf(a.io.Out, "station %s\nguest ABI %d\nwazero %s\n", v, abi.Version, wz)
			return nil
		},
	}
}

// versionString is the station's module version, "(devel)" in a checkout.
func versionString() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}
