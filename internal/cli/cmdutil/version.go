package cmdutil

import "runtime/debug"

// Version is the station's module version, "(devel)" in a checkout: what
// station version prints and the daemon reports.
func Version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}
