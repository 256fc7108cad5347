//go:build !wasip1

package probe

import (
	"testing"

	"github.com/station-dev/station/internal/wasmbuild"
)

// Wasm builds the probe (with the given build tags, e.g. NoNetworkTag) for a
// test and returns the module's bytes; see wasmbuild.ForTest.
func Wasm(t testing.TB, tags ...string) []byte {
	t.Helper()
	return wasmbuild.ForTest(t, GuestDir, tags...)
}
