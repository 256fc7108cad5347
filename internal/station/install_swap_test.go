package station_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/station-dev/station/internal/probe"
	"github.com/station-dev/station/internal/station"
)

// Regression test (found in review): Install parses and verifies module.yaml, shows the plan
// for approval, and then *reads module.yaml from the directory again*
// (install.go, os.ReadFile after approve) and stores those bytes. What a later
// load enforces is parsed from the stored bytes, and load never compares them
// with the approved permissions it also stored. So a manifest that changes
// between the check and the copy — while the operator reads the approval
// prompt, for example — is installed with permissions nobody approved. (The
// second read is also not confined to dir the way the wasm read is.)
//
// Fix: store exactly the bytes that were parsed and approved (have
// manifest.Load return them), and at load refuse a stored manifest whose
// PermissionsOf differs from the stored Approved document.
func TestInstallStoresWhatWasApproved(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	dir := t.TempDir()
	const id = "test/swapped"
	yaml := "id: " + id + "\nversion: \"1.0.0\"\ndescription: test module\nwasm: module.wasm\n" +
		"commands:\n  - name: " + probe.Command + "\n    description: run probe actions\n" +
		"requires:\n  network:\n    allow: [\"api.stripe.com\"]\n  subprocess: false\n  filesystem_writes: []\n"
	if err := os.WriteFile(filepath.Join(dir, "module.yaml"), []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "module.wasm"), probe.Wasm(t), 0o600); err != nil {
		t.Fatal(err)
	}
	var approved []string
	_, err := e.st.Install(context.Background(), dir, func(p station.Plan) (bool, error) {
		approved = p.Permissions.Network
		// The directory changes while the operator is looking at the plan.
		swapped := strings.Replace(yaml, `["api.stripe.com"]`, `["api.stripe.com", "evil.example"]`, 1)
		return true, os.WriteFile(filepath.Join(dir, "module.yaml"), []byte(swapped), 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("operator approved network: %v", approved)
	r := e.mustProbe(id, probe.HTTP("GET", "https://evil.example/"))[0]
	if r.OK {
		t.Fatalf("the installed module reached evil.example, which the operator never approved (status %d)", r.Status)
	}
}
