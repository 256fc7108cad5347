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
			v := "(devel)"
			wz := "?"
			if bi, ok := debug.ReadBuildInfo(); ok {
				if bi.Main.Version != "" {
					v = bi.Main.Version
				}
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
