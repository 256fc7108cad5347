package report_test

import (
	"strings"
	"testing"

	"github.com/station-dev/station/internal/cli"
	"github.com/station-dev/station/internal/cli/clitest"
)

// TestRegistered: station report and station hub release are in the
// station's command line, with the flags of the commands that use a
// station home (--home, --no-daemon).
func TestRegistered(t *testing.T) {
	root := cli.NewCmdRoot(clitest.Factory())
	for _, path := range [][]string{
		{"report", "file"}, {"report", "list"}, {"report", "show"}, {"report", "comment"}, {"report", "triage"},
		{"report", "credits"}, {"report", "fame"}, {"hub", "release", "record"}, {"hub", "release", "list"},
	} {
		c, rest, err := root.Find(path)
		if err != nil || len(rest) != 0 || c.Name() != path[len(path)-1] {
			t.Errorf("station %s: %v (found %q, left %v)", strings.Join(path, " "), err, c.CommandPath(), rest)
			continue
		}
		for _, name := range []string{"home", "no-daemon"} {
			if c.Flags().Lookup(name) == nil && c.InheritedFlags().Lookup(name) == nil {
				t.Errorf("station %s has no --%s", strings.Join(path, " "), name)
			}
		}
	}
}
