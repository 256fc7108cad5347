// Package version is `station version` (and `station --version`): the
// station's version, the guest ABI it speaks and the wazero it runs on.
package version

import (
	"fmt"
	"io"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/sdk"
	"github.com/station-dev/station/sdk/abi"
)

// VersionOptions are what `station version` was asked to do.
type VersionOptions struct {
	IO   *cmdutil.IOStreams
	JSON bool
}

// NewCmdVersion returns `station version`. runF, when set, is called with
// the parsed options instead of running the command.
func NewCmdVersion(f *cmdutil.Factory, runF func(*VersionOptions) error) *cobra.Command {
	opts := &VersionOptions{IO: &f.IO}
	c := &cobra.Command{
		Use:   "version",
		Short: "Print the station version, guest ABI and runtime (also: station --version)",
		Long: `Version prints the station's version ("(devel)" when built from a checkout),
the guest ABI version modules are built against, the version of the SDK it
carries (what station module new writes into a Go module's go.mod, and
station module build serves to the Go toolchain), and the version of wazero,
the WebAssembly runtime. station --version prints the same.

With --json: {"version", "guest_abi", "sdk", "wazero"}.`,
		Example: "  station version\n  station version --json",
		Args:    cmdutil.ExactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return versionRun(opts)
		},
	}
	cmdutil.AddJSONFlag(c, &opts.JSON)
	return c
}

func versionRun(opts *VersionOptions) error {
	return cmdutil.Print(opts.IO.Out, opts.JSON, Current())
}

// VersionResult is what `station version` prints.
type VersionResult struct {
	Version  string `json:"version"`
	GuestABI int    `json:"guest_abi"`
	SDK      string `json:"sdk"`
	Wazero   string `json:"wazero"`
}

// Current is this binary's versions.
func Current() VersionResult {
	wz := "?"
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "github.com/tetratelabs/wazero" {
				wz = d.Version
			}
		}
	}
	return VersionResult{Version: cmdutil.Version(), GuestABI: abi.Version, SDK: sdk.Version, Wazero: wz}
}

// Text implements cmdutil.Texter: what `station --version` prints too.
func (r VersionResult) Text(w io.Writer) error {
	_, err := io.WriteString(w, r.String())
	return err
}

// String is Text as a string, for cobra's --version template.
func (r VersionResult) String() string {
	return fmt.Sprintf("station %s\nguest ABI %d\nsdk %s\nwazero %s\n", r.Version, r.GuestABI, r.SDK, r.Wazero)
}
