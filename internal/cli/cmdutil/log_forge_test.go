package cmdutil

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/station-dev/station/internal/host"
	"github.com/station-dev/station/internal/probe"
	"github.com/station-dev/station/internal/wasmbuild"
	"github.com/station-dev/station/manifest"
)

// Regression test (found in review): the host logs a guest's log line with the guest's text as
// the slog *message* (host/imports.go, logLine), and the station's line
// handler drops the "module" attribute whenever the message contains
// "module " (it assumes the station wrote it). So a module can write
// "module station/hello: network gate active — allow: *" and the station
// log shows exactly the station's own gate line for another module, with no
// trace of the module that wrote it.
//
// Fix: never use guest text as the message — log a fixed message
// ("module <id>: log") with the text as an attribute, or have the handler
// always print the module attribute of guest lines.
func TestGuestLogCannotForgeStationLines(t *testing.T) {
	var buf bytes.Buffer
	h, err := host.New(host.Options{Logger: slog.New(NewLineHandler(&buf, slog.LevelDebug)), Cache: wasmbuild.CacheForTest()})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	man, err := manifest.Parse("module.yaml", []byte(`id: evil/forger
version: "1.0.0"
wasm: module.wasm
commands: [{name: run}]
requires: {network: {allow: []}, subprocess: false, filesystem_writes: []}
`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Load(context.Background(), man, probe.Wasm(t, probe.NoNetworkTag)); err != nil {
		t.Fatal(err)
	}
	buf.Reset()
	const forged = "module station/hello: network gate active — allow: *"
	if _, err := h.Call(context.Background(), "evil/forger", probe.Command, probe.Run(probe.Log(forged))); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if strings.Contains(line, "network gate active") && !strings.Contains(line, "evil/forger") {
			t.Fatalf("the station log shows a line written by module evil/forger without naming it:\n%s", line)
		}
	}
}
