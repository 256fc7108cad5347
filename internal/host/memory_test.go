package host_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/station-dev/station/internal/fixture"
	"github.com/station-dev/station/internal/host"
	"github.com/station-dev/station/internal/probe"
	"github.com/station-dev/station/internal/sandbox"
	"github.com/station-dev/station/internal/wasmgen"
	"github.com/station-dev/station/sdk/abi"
)

// oomWant is what the error of a call that ran out of memory under a 64 MiB
// limit says: that it ran out of memory, the limit, and the manifest key
// that raises it.
const oomWant = "module test/probe: run: ran out of memory: it needed more than its limit of 64 MiB, then trapped: wasm error: unreachable; raise limits.memory in the module's manifest"

// A guest that allocates until its memory cannot grow fails with an error
// that says it ran out of memory, with the limit and limits.memory — not
// only "unreachable" — stays a crash, records the refusal, and the module
// works again on a fresh instance.
func TestOutOfMemorySaysSo(t *testing.T) {
	rec := &fixture.Recorder{}
	h := newHost(t, host.Options{Recorder: rec})
	if _, err := h.Load(context.Background(), parse(t, probeNoNet+"limits: {memory: 64MiB}\n"), probe.Wasm(t, probe.NoNetworkTag)); err != nil {
		t.Fatal(err)
	}
	var grow []probe.Action
	for range 16 { // 128 MiB in steps of 8: allocates until it fails
		grow = append(grow, probe.Alloc(8<<20, true))
	}
	before := rec.Len()
	_, err := h.Call(context.Background(), "test/probe", probe.Command, probe.Run(grow...))
	var ce *host.CallError
	if !errors.As(err, &ce) {
		t.Fatalf("allocating 128 MiB under a 64 MiB limit: %v, want a *host.CallError", err)
	}
	if ce.Kind != host.KindCrash {
		t.Errorf("kind %s, want %s", ce.Kind, host.KindCrash)
	}
	if got := err.Error(); !strings.HasPrefix(got, oomWant) || !strings.HasSuffix(got, "; the instance was discarded") {
		t.Errorf("error\n got %q\nwant %q...", got, oomWant)
	}
	if l := ce.Limit; l == nil || l.Target != "memory.grow" || l.Limit != 64<<20 || !l.Bytes || l.Key != "limits.memory" || l.KeyIn != sandbox.InManifest {
		t.Errorf("limit %+v, want memory.grow at 64 MiB raised by limits.memory in the manifest", ce.Limit)
	}
	var refusals []sandbox.Decision
	for _, d := range rec.Since(before) {
		if d.Capability == sandbox.Host && d.Target == "memory.grow" {
			refusals = append(refusals, d)
		}
	}
	if len(refusals) != 1 || refusals[0].Allowed || refusals[0].Command != probe.Command ||
		!strings.HasSuffix(refusals[0].Reason, fmt.Sprintf("exceeds its limit of %d", 64<<20)) {
		t.Errorf("recorded %+v, want one refusal of memory.grow naming the limit", refusals)
	}
	// A fresh instance: the module works, and what the failed call did
	// is not the next call's.
	if res := runProbe(t, h, context.Background(), "test/probe", probe.Alloc(8<<20, false)); !res[0].OK {
		t.Errorf("the module after running out of memory: %+v", res[0])
	}
	// A trap that does not follow a refused grow is not out of memory.
	_, err = h.Call(context.Background(), "test/probe", probe.Command, probe.Run(probe.Alloc(16<<20, true), probe.Trap()))
	if err == nil || strings.Contains(err.Error(), "memory") && strings.Contains(err.Error(), "ran out") {
		t.Errorf("a trap within the limit: %v, want a trap that is not out of memory", err)
	}
}

// At the operator's maximum, the error says that the operator raises it.
func TestOutOfMemoryAtTheOperatorMaximum(t *testing.T) {
	h := newHost(t, host.Options{MaxLimits: host.Limits{MemoryBytes: 64 << 20}})
	if _, err := h.Load(context.Background(), parse(t, probeNoNet+"limits: {memory: 64MiB}\n"), probe.Wasm(t, probe.NoNetworkTag)); err != nil {
		t.Fatal(err)
	}
	_, err := h.Call(context.Background(), "test/probe", probe.Command, probe.Run(probe.Alloc(1<<30, true)))
	var ce *host.CallError
	if !errors.As(err, &ce) || ce.Limit == nil || ce.Limit.Key != "limits.max_memory" || ce.Limit.KeyIn != sandbox.InConfig {
		t.Fatalf("out of memory at the operator's maximum: %v (limit %+v)", err, ce)
	}
	const want = "ran out of memory: it needed more than its limit of 64 MiB, then trapped: wasm error: unreachable; its limits.memory is the operator's maximum: the operator can raise limits.max_memory in config.yaml"
	if !strings.Contains(err.Error(), want) {
		t.Errorf("error\n got %q\nwant it to contain %q", err, want)
	}
}

// growModule is a module of the station's ABI whose memory starts at min
// pages and whose station_call runs body (and then traps with unreachable).
func growModule(min uint64, body []byte) []byte {
	m := wasmgen.Header()
	m = append(m, wasmgen.Section(1, []byte{2, 0x60, 0, 0, 0x60, 2, 0x7f, 0x7f, 1, 0x7f})...) // () -> (), (i32, i32) -> i32
	m = append(m, wasmgen.Section(3, []byte{2, 0, 1})...)
	m = append(m, wasmgen.Section(5, append([]byte{1, 0x00}, wasmgen.LEB(min)...))...)
	exports := []byte{3}
	exports = append(append(exports, wasmgen.Name(abi.ExportVersionPrefix+"1")...), 0, 0)
	exports = append(append(exports, wasmgen.Name(abi.ExportCall)...), 0, 1)
	exports = append(append(exports, wasmgen.Name(abi.ExportMemory)...), 2, 0)
	m = append(m, wasmgen.Section(7, exports)...)
	call := append(append([]byte{0}, body...), 0x00, 0x0b) // no locals, body, unreachable, end
	code := []byte{2, 2, 0, 0x0b}
	code = append(append(code, wasmgen.LEB(uint64(len(call)))...), call...)
	return append(m, wasmgen.Section(10, code)...)
}

// memory.grow by n pages, its result dropped.
func growBy(n byte) []byte { return []byte{0x41, n, 0x40, 0x00, 0x1a} }

const growManifest = `id: test/grow
version: "1.0.0"
wasm: module.wasm
commands: [{name: run}]
limits: {memory: 1MiB}
`

// The classification is the allocator's, not the trap's text: a trap after
// a memory.grow refused at the limit is out of memory; the same trap after
// a grow within the limit, or with no grow, is not. A memory that starts
// over the limit is refused at load.
func TestOutOfMemoryIsTheRefusedGrow(t *testing.T) {
	h := newHost(t, host.Options{})
	for _, tt := range []struct {
		name string
		body []byte
		oom  bool
	}{
		{"grow past the limit", growBy(32), true}, // 1 + 32 pages > 16
		{"grow within the limit", growBy(15), false},
		{"no grow", nil, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := h.Load(context.Background(), parse(t, growManifest), growModule(1, tt.body)); err != nil {
				t.Fatal(err)
			}
			_, err := h.Call(context.Background(), "test/grow", "run", nil)
			var ce *host.CallError
			if !errors.As(err, &ce) || ce.Kind != host.KindCrash {
				t.Fatalf("call: %v, want a crash", err)
			}
			const want = "module test/grow: run: ran out of memory: it needed more than its limit of 1 MiB, then trapped: wasm error: unreachable; raise limits.memory in the module's manifest; the instance was discarded"
			if got := err.Error(); tt.oom && got != want {
				t.Errorf("error\n got %q\nwant %q", got, want)
			} else if !tt.oom && (strings.Contains(got, "ran out of memory") || ce.Limit != nil) {
				t.Errorf("error %q (limit %+v), want a trap that is not out of memory", got, ce.Limit)
			}
		})
	}
	_, err := h.Load(context.Background(), parse(t, growManifest), growModule(32, nil))
	if want := "module's memory starts at 2 MiB, more than its limit of 1 MiB (raise limits.memory in the module's manifest)"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("load of a memory over the limit: %v, want %q", err, want)
	}
}
