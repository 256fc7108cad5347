package demo_test

import (
	"os"
	"testing"

	"github.com/station-dev/station/internal/cli"
	"github.com/station-dev/station/internal/demo"
)

// TestMain runs the station CLI instead of the tests when demo.AsStation
// is set: TestRun runs the commands Try prints with a copy of this binary.
func TestMain(m *testing.M) {
	if os.Getenv(demo.AsStation) == "1" {
		os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}
