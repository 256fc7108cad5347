package cmdutil

import (
	"bytes"
	"strings"
	"testing"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/hubsync"
	"github.com/station-dev/station/internal/station"
	"github.com/station-dev/station/manifest"
)

// TestHubPlanEscapesTheHubsText: a yank reason comes from the hub as it
// stores it; a hostile hub's could carry terminal escapes that move the
// cursor up and clear the lines above the approval prompt — the ones saying
// what the version asks for beyond the approval. It is printed escaped.
func TestHubPlanEscapesTheHubsText(t *testing.T) {
	man, err := manifest.Parse("module.yaml", []byte("id: dave/x\nversion: \"1.1.0\"\nwasm: module.wasm\ncommands: [{name: run}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	p := hubsync.Plan{
		Plan:    station.Plan{Manifest: man, Permissions: station.PermissionsOf(man)},
		Hub:     "https://hub.example",
		Version: hub.Version{Module: "dave/x", Version: "1.1.0", Yanked: true, YankReason: "broken\x1b[3A\x1b[J\r\n  It asks for nothing new."},
	}
	var buf bytes.Buffer
	PrintHubPlan(&buf, p)
	if out := buf.String(); strings.ContainsAny(out, "\x1b\r") || strings.Contains(out, "\n  It asks for nothing new.") {
		t.Errorf("the hub's text reached the terminal as it is:\n%q", out)
	}
}
