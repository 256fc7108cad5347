package host

import (
	"context"
	"testing"

	"github.com/station-dev/station/internal/wasmbuild"
	"github.com/station-dev/station/manifest"
)

// expandHome trusts Options.HomeDir (os.UserHomeDir, i.e. $HOME verbatim).
// With HOME=/ — common for daemons and containers run as a user without a
// home — "~/etc/**" passes manifest validation (the home branch only checks
// ~/.ssh and the like) and expands to /etc/**, which the manifest check for
// absolute globs ("inside the system directory /etc") would have refused.
// The operator's approval prompt shows "~/etc/**", not the host path.
func TestHomeSlashExpandsIntoSystemDirs(t *testing.T) {
	wasm := buildReviewGuest(t, guestSource(nil, `
//go:wasmexport station_call
func call(cmd, in int32) int32 { return 0 }
`))
	src := "id: test/home\nversion: \"1.0.0\"\nwasm: module.wasm\ncommands: [{name: run}]\n" +
		"requires: {network: {allow: []}, subprocess: false, filesystem_writes: [\"~/etc/**\"]}\n"
	m, err := manifest.Parse("module.yaml", []byte(src))
	if err != nil {
		t.Fatalf("manifest refused (fixed at validation?): %v", err)
	}
	if _, err := manifest.Parse("module.yaml", []byte(
		"id: test/home\nversion: \"1.0.0\"\nwasm: module.wasm\ncommands: [{name: run}]\n"+
			"requires: {network: {allow: []}, subprocess: false, filesystem_writes: [\"/etc/**\"]}\n")); err == nil {
		t.Fatal("expected /etc/** to be refused by manifest validation")
	}
	h, err := New(Options{HomeDir: "/", Cache: wasmbuild.CacheForTest()})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	mod, err := h.Load(context.Background(), m, wasm)
	if err == nil {
		t.Errorf("with HomeDir=/, ~/etc/** was linked as %s: /etc is mounted writable for the module", mod.fs)
	}
}
