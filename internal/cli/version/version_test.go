package version

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/station-dev/station/internal/cli/clitest"
	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/sdk"
	"github.com/station-dev/station/sdk/abi"
)

// TestVersion: the text is what station --version prints, and --json the
// same versions under snake_case keys.
func TestVersion(t *testing.T) {
	var got *VersionOptions
	if err := clitest.Parse(NewCmdVersion(clitest.Factory(), func(o *VersionOptions) error { got = o; return nil }), "--json"); err != nil || got == nil || !got.JSON {
		t.Fatalf("version --json: %v, options %+v", err, got)
	}
	if err := clitest.Parse(NewCmdVersion(clitest.Factory(), nil), "extra"); cmdutil.ExitCode(err) != cmdutil.ExitUsage {
		t.Errorf("version extra: %v, want a usage error", err)
	}

	var out bytes.Buffer
	if err := versionRun(&VersionOptions{IO: &cmdutil.IOStreams{Out: &out}}); err != nil {
		t.Fatal(err)
	}
	if text := out.String(); text != Current().String() || !strings.HasPrefix(text, "station ") || !strings.Contains(text, "\nguest ABI 1\nsdk v1.") {
		t.Errorf("version text = %q", text)
	}
	out.Reset()
	if err := versionRun(&VersionOptions{IO: &cmdutil.IOStreams{Out: &out}, JSON: true}); err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(out.Bytes(), &v); err != nil || v["version"] != Current().Version || v["guest_abi"] != float64(abi.Version) || v["wazero"] == "" || v["sdk"] != sdk.Version || len(v) != 4 {
		t.Errorf("version --json = %s (%v)", out.String(), err)
	}
}
