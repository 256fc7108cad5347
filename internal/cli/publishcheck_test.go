package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/station-dev/station/internal/cli"
	"github.com/station-dev/station/internal/hubserver/hubtest"
	"github.com/station-dev/station/internal/probe"
)

// checkDir writes a module directory: manifest and wasm.
func checkDir(t *testing.T, manifest string, wasm []byte) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "module.yaml"), []byte(manifest), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "module.wasm"), wasm, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

type dryRun struct {
	Module     string `json:"module"`
	Version    string `json:"version"`
	OK         bool   `json:"ok"`
	WasmSize   int64  `json:"wasm_size"`
	WasmDigest string `json:"wasm_digest"`
	Problems   []struct {
		Kind    string `json:"kind"`
		Message string `json:"message"`
	} `json:"problems"`
}

// TestPublishDryRun: `station module publish --dry-run` runs the hub's
// check with no hub login and no key: the example passes; a module that
// imports what its manifest does not grant, lacks station_call, speaks
// another ABI, is not wasm or is cut short is refused with every problem
// named, for a person and with --json, and exit code 1.
func TestPublishDryRun(t *testing.T) {
	home := t.TempDir() // never logged in, no signing key
	hello := moduleAs(t, "hello", "dave/hello", "1.0.0")
	r := station(t, home, "", "module", "publish", "--dry-run", hello).want(t, 0)
	if !strings.Contains(r.out, "dave/hello@1.0.0 passes the publish check") || !strings.Contains(r.out, "nothing was uploaded") {
		t.Errorf("dry run of the example: %s", r.out)
	}
	r = station(t, home, "", "module", "publish", "--dry-run", "--json", hello).want(t, 0)
	var ok dryRun
	if err := json.Unmarshal([]byte(r.out), &ok); err != nil || !ok.OK || ok.Module != "dave/hello" || len(ok.Problems) != 0 || ok.WasmSize == 0 {
		t.Errorf("dry run --json of the example: %v %s", err, r.out)
	}

	man := string(hubtest.Manifest("dave/x", "1.0.0"))
	mod := hubtest.Module
	type spec = hubtest.WasmSpec
	valid := hubtest.Wasm("x")
	tests := []struct {
		name     string
		manifest string
		wasm     []byte
		kinds    []string
		want     []string
	}{
		{"process_run without subprocess", man, mod(spec{Imports: []string{"station.process_run"}}), []string{"imports"},
			[]string{"module imports station.process_run, which its manifest does not grant (add requires.subprocess)"}},
		{"llm_complete without llm", man, mod(spec{Imports: []string{"station.llm_complete"}}), []string{"imports"},
			[]string{"module imports station.llm_complete, which its manifest does not grant (add requires.llm)"}},
		{"every problem", man, mod(spec{Marker: "station_abi_2", NoCall: true, Imports: []string{"station.process_run"}}), []string{"abi", "abi", "imports"},
			[]string{"module speaks guest ABI station_abi_2; stations speak station_abi_1", "module does not export station_call", "station.process_run, which its manifest does not grant"}},
		{"station_call of another type", man, mod(spec{CallI64: true}), []string{"abi"}, []string{"station_call has the signature (i64) -> i32; it must be (i32, i32) -> i32"}},
		{"not wasm", man, []byte("#!/bin/sh\n"), []string{"wasm"}, []string{"the wasm: not a WebAssembly module"}},
		{"truncated", man, valid[:len(valid)-9], []string{"wasm"}, []string{"the wasm: malformed module at offset"}},
		{"a manifest that does not validate", strings.Replace(man, "version: \"1.0.0\"", "version: one", 1) + "requires: {network: {allow: ['*']}}\n", valid,
			[]string{"manifest", "manifest"}, []string{"version", "requires.network.allow"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := checkDir(t, tt.manifest, tt.wasm)
			r := station(t, home, "", "module", "publish", "--dry-run", dir).want(t, cli.ExitError)
			if !strings.Contains(r.out, "would be refused by the hub and by every station") || !strings.Contains(r.err, "listed above") {
				t.Errorf("dry run: stdout %s\nstderr %s", r.out, r.err)
			}
			for _, w := range tt.want {
				if !strings.Contains(r.out, w) {
					t.Errorf("dry run does not say %q:\n%s", w, r.out)
				}
			}
			r = station(t, home, "", "module", "publish", "--dry-run", "--json", dir).want(t, cli.ExitError)
			var got dryRun
			if err := json.Unmarshal([]byte(r.out), &got); err != nil {
				t.Fatalf("--json: %v\n%s", err, r.out)
			}
			if got.OK || len(got.Problems) != len(tt.want) {
				t.Fatalf("--json = %s, want %d problems", r.out, len(tt.want))
			}
			for i, p := range got.Problems {
				if p.Kind != tt.kinds[i] || !strings.Contains(p.Message, tt.want[i]) {
					t.Errorf("problem %d = %+v, want kind %s and %q", i, p, tt.kinds[i], tt.want[i])
				}
			}
		})
	}
}

// TestPublishChecksBeforeUpload: `station module publish` of a module
// whose wasm imports what its manifest does not grant is refused on the
// publisher's machine with the import named, and nothing reaches the hub
// — which would refuse it too, with the same words.
func TestPublishChecksBeforeUpload(t *testing.T) {
	h, hubLog := startHub(t)
	tr := &transcript{}
	home := t.TempDir()
	login(t, tr, h, home, h.Account(t, "dave"))
	tr.add(station(t, home, "", "hub", "key", "create")).want(t, 0)
	man := string(hubtest.Manifest("dave/x", "1.0.0"))
	dir := checkDir(t, man, hubtest.Module(hubtest.WasmSpec{Imports: []string{"station.process_run"}}))
	r := tr.add(station(t, home, "", "module", "publish", dir)).want(t, cli.ExitError)
	for _, w := range []string{"module dave/x would not install on a station: module imports station.process_run, which its manifest does not grant (add requires.subprocess)", "nothing was uploaded"} {
		if !strings.Contains(r.err, w) {
			t.Errorf("publish stderr does not say %q:\n%s", w, r.err)
		}
	}
	if strings.Contains(hubLog.String(), "POST /v1/modules") || strings.Contains(hubLog.String(), "module published") {
		t.Errorf("the module reached the hub:\n%s", hubLog.String())
	}
	if _, err := h.Client(t, "").Module(t.Context(), "dave/x"); err == nil {
		t.Error("dave/x is on the hub")
	}
	// Granted, the same binary is published.
	granted := strings.Replace(man, "commands:", "requires:\n  subprocess: true\ncommands:", 1)
	os.WriteFile(filepath.Join(dir, "module.yaml"), []byte(granted), 0o600)
	tr.add(station(t, home, "", "module", "publish", dir)).want(t, 0)
	if _, err := h.Client(t, "").Module(t.Context(), "dave/x"); err != nil {
		t.Errorf("dave/x after its publish: %v", err)
	}
}

// TestPublishCheckSamples: `module publish --check` makes tests.yaml's
// calls in learn mode and refuses a module whose calls reach a host its
// manifest does not declare, naming the host; the same module with the
// host declared passes.
func TestPublishCheckSamples(t *testing.T) {
	home := t.TempDir()
	calls := "tests:\n  - command: run\n    input: " + string(probe.Run(probe.HTTP("GET", "https://undeclared.example/x"))) + "\n"
	write := func(allow string) string {
		dir := checkDir(t, "id: dave/sneaky\nversion: \"1.0.0\"\ndescription: reaches a host\nwasm: module.wasm\ncommands:\n  - name: run\n"+
			"requires:\n  network:\n    allow: ["+allow+"]\n", probe.Wasm(t))
		os.WriteFile(filepath.Join(dir, "tests.yaml"), []byte(calls), 0o600)
		return dir
	}
	sneaky := write("api.example.com")
	// Without --check the module passes: the hub's check cannot see it.
	station(t, home, "", "module", "publish", "--dry-run", sneaky).want(t, 0)
	r := station(t, home, "", "module", "publish", "--dry-run", "--check", "--json", sneaky).want(t, cli.ExitError)
	var got dryRun
	if err := json.Unmarshal([]byte(r.out), &got); err != nil || got.OK || len(got.Problems) != 1 || got.Problems[0].Kind != "samples" ||
		!strings.Contains(got.Problems[0].Message, "network undeclared.example") {
		t.Fatalf("--check: %v %s", err, r.out)
	}
	// A real publish with --check is refused before it needs a hub.
	r = station(t, home, "", "module", "publish", "--check", sneaky).want(t, cli.ExitError)
	if !strings.Contains(r.out, "undeclared.example") {
		t.Errorf("publish --check:\n%s%s", r.out, r.err)
	}
	station(t, home, "", "module", "publish", "--dry-run", "--check", write("api.example.com, undeclared.example")).want(t, 0)
	// No tests.yaml: --check has nothing to run, and says so.
	os.Remove(filepath.Join(sneaky, "tests.yaml"))
	if r := station(t, home, "", "module", "publish", "--dry-run", "--check", sneaky).want(t, cli.ExitUsage); !strings.Contains(r.err, "tests.yaml") {
		t.Errorf("no tests.yaml: %s", r.err)
	}
}

// TestPublishDryRunUnhandledCommand: a Go module says which commands it
// handles (station_describe); a command module.yaml declares that it does
// not handle is a problem of the dry run and of a real publish, found on
// the publisher's machine.
func TestPublishDryRunUnhandledCommand(t *testing.T) {
	home := t.TempDir()
	dir := moduleAs(t, "hello", "dave/hello", "1.0.0")
	raw, _ := os.ReadFile(filepath.Join(dir, "module.yaml"))
	man := strings.Replace(string(raw), "commands:\n", "commands:\n  - name: farewell\n    description: declared, never written\n", 1)
	os.WriteFile(filepath.Join(dir, "module.yaml"), []byte(man), 0o600)
	r := station(t, home, "", "module", "publish", "--dry-run", "--json", dir).want(t, cli.ExitError)
	var got dryRun
	if err := json.Unmarshal([]byte(r.out), &got); err != nil || len(got.Problems) != 1 || got.Problems[0].Kind != "commands" ||
		!strings.Contains(got.Problems[0].Message, "declares command farewell, which the module does not handle (it handles greet)") {
		t.Fatalf("dry run: %v %s", err, r.out)
	}
}
