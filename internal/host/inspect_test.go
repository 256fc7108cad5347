package host_test

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/station-dev/station/internal/host"
	"github.com/station-dev/station/internal/hubserver/hubtest"
	"github.com/station-dev/station/internal/wasmbuild"
	"github.com/station-dev/station/manifest"
)

func inspectManifest(t testing.TB, requires string) *manifest.Manifest {
	t.Helper()
	src := "id: dave/x\nversion: \"1.0.0\"\nwasm: module.wasm\ncommands: [{name: run}]\n"
	if requires != "" {
		src += requires + "\n"
	}
	m, err := manifest.Parse("module.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

type inspectCase struct {
	name     string
	requires string // module.yaml lines after commands
	wasm     []byte
	lim      host.InstallLimits
	want     []string // a substring of each problem, in order; none: it passes
}

func inspectCases() []inspectCase {
	mod := hubtest.Module
	type spec = hubtest.WasmSpec
	valid := hubtest.Wasm("seed")
	return []inspectCase{
		{name: "valid", wasm: valid},
		{name: "valid with every always-offered import", wasm: mod(spec{Imports: []string{"station.buf_len", "station.buf_read", "station.buf_free", "station.output_set", "station.log", "station.http_request", "station.log"}})},
		{name: "wasi", wasm: mod(spec{Imports: []string{"wasi_snapshot_preview1.sched_yield"}})},
		{name: "process_run granted", requires: "requires: {subprocess: true}", wasm: mod(spec{Imports: []string{"station.process_run"}})},
		{name: "llm_complete granted", requires: "requires: {llm: true}", wasm: mod(spec{Imports: []string{"station.llm_complete"}})},
		{name: "a larger memory granted", requires: "limits: {memory: 512MiB}", wasm: mod(spec{MemoryPages: 4096})},

		{name: "process_run not granted", wasm: mod(spec{Imports: []string{"station.process_run"}}),
			want: []string{"module imports station.process_run, which its manifest does not grant (add requires.subprocess)"}},
		{name: "llm_complete not granted", wasm: mod(spec{Imports: []string{"station.llm_complete", "station.llm_complete"}}),
			want: []string{"module imports station.llm_complete, which its manifest does not grant (add requires.llm)"}},
		{name: "an import no station has", wasm: mod(spec{Imports: []string{"station.exec"}}),
			want: []string{"module imports station.exec, which no station offers (the station imports are buf_free, buf_len,"}},
		{name: "an import of another module", wasm: mod(spec{Imports: []string{"env.abort"}}),
			want: []string{"module imports env.abort; only station and wasi_snapshot_preview1 imports exist"}},
		{name: "a station import with another signature", wasm: retype(mod(spec{Imports: []string{"station.buf_len"}}), "buf_len"),
			want: []string{"module imports station.buf_len as () -> (); the station's is (i32) -> i32"}},
		{name: "a wasi import with another signature", wasm: mod(spec{Imports: []string{"wasi_snapshot_preview1.fd_write"}}),
			want: []string{"module imports wasi_snapshot_preview1.fd_write as () -> (); WASI's is (i32, i32, i32, i32) -> i32"}},
		{name: "a wasi function that does not exist", wasm: mod(spec{Imports: []string{"wasi_snapshot_preview1.sock_open"}}),
			want: []string{"module imports wasi_snapshot_preview1.sock_open, which the station's WASI does not provide"}},
		{name: "no station_call", wasm: mod(spec{NoCall: true}),
			want: []string{"module does not export station_call"}},
		{name: "station_call of another signature", wasm: mod(spec{CallI64: true}),
			want: []string{"station_call has the signature (i64) -> i32; it must be (i32, i32) -> i32"}},
		{name: "no ABI marker", wasm: mod(spec{Marker: "-"}),
			want: []string{"module does not export station_abi_1: build it with the station SDK"}},
		{name: "another ABI version", wasm: mod(spec{Marker: "station_abi_2"}),
			want: []string{"module speaks guest ABI station_abi_2; stations speak station_abi_1"}},
		{name: "no memory export", wasm: mod(spec{NoMemory: true}),
			want: []string{`module does not export its memory as "memory"`}},
		{name: "memory over the default limit", wasm: mod(spec{MemoryPages: 4096}),
			want: []string{"module's memory starts at 256 MiB, more than its limit of 128 MiB (raise limits.memory"}},
		{name: "every problem at once", wasm: mod(spec{NoCall: true, Marker: "station_abi_2", Imports: []string{"station.process_run", "station.llm_complete", "env.f"}}),
			want: []string{"speaks guest ABI station_abi_2", "does not export station_call", "station.process_run, which its manifest does not grant", "station.llm_complete, which its manifest does not grant", "module imports env.f;"}},

		{name: "not wasm", wasm: []byte("#!/bin/sh\nrm -rf /\n"), want: []string{"the wasm: not a WebAssembly module"}},
		{name: "empty", wasm: nil, want: []string{"the wasm: not a WebAssembly module"}},
		{name: "only the magic number", wasm: []byte("\x00asm\x01\x00\x00\x00"), want: []string{"module does not export station_abi_1", "module does not export station_call", "module does not export its memory"}},
		{name: "truncated", wasm: valid[:len(valid)/2], want: []string{"the wasm: malformed module at offset"}},
		{name: "a component", wasm: append([]byte("\x00asm\x0d\x00\x01\x00"), valid[8:]...), want: []string{"a component is not a module"}},
		{name: "over the size limit", wasm: mod(spec{Pad: 4 << 10}), lim: host.InstallLimits{ModuleBytes: 4 << 10},
			want: []string{"limit exceeded: module dave/x: install: the module's binary is 4"}},
		{name: "does not validate", wasm: invalidBody(valid), want: []string{"the wasm does not compile:"}},
	}
}

// retype gives the function import name the type () -> ().
func retype(wasm []byte, name string) []byte {
	b := bytes.Clone(wasm)
	i := bytes.Index(b, append([]byte{byte(len(name))}, name...))
	if i < 0 {
		panic("no import " + name)
	}
	b[i+1+len(name)+1] = 0 // after the name: the kind (function), then the type index
	return b
}

// invalidBody is valid with station_call's i32.const 0 replaced by a
// nop, so the function returns nothing where it must return an i32.
func invalidBody(valid []byte) []byte {
	b := bytes.Clone(valid)
	i := bytes.Index(b, []byte{0, 0x41, 0, 0x0b})
	if i < 0 {
		panic("no station_call body")
	}
	b[i+1], b[i+2] = 0x01, 0x01 // nop; nop
	return b
}

func TestInspect(t *testing.T) {
	ctx := context.Background()
	for _, tt := range inspectCases() {
		t.Run(tt.name, func(t *testing.T) {
			err := host.Inspect(ctx, inspectManifest(t, tt.requires), tt.wasm, host.InspectOptions{Limits: tt.lim})
			checkProblems(t, err, tt.want)
		})
	}
}

func checkProblems(t *testing.T, err error, want []string) {
	t.Helper()
	if len(want) == 0 {
		if err != nil {
			t.Fatalf("Inspect = %v, want no problem", err)
		}
		return
	}
	var ie *host.InspectError
	if !errors.As(err, &ie) {
		t.Fatalf("Inspect = %v, want an *InspectError", err)
	}
	if len(ie.Problems) != len(want) {
		t.Fatalf("Inspect found %d problems, want %d:\n%v", len(ie.Problems), len(want), err)
	}
	for i, w := range want {
		if !strings.Contains(ie.Problems[i].Message, w) {
			t.Errorf("problem %d = %q, want it to contain %q", i, ie.Problems[i].Message, w)
		}
		if !strings.Contains(err.Error(), ie.Problems[i].Message) {
			t.Errorf("Error() = %q leaves out problem %d", err, i)
		}
	}
	if !strings.HasPrefix(err.Error(), "module dave/x would not install on a station") {
		t.Errorf("Error() = %q does not name the module", err)
	}
}

// TestInspectAgreesWithInstall: a module Inspect passes is one a station
// installs, and one it refuses is one a station refuses — the same
// binaries, through Host.Check, which is install's check.
func TestInspectAgreesWithInstall(t *testing.T) {
	ctx := context.Background()
	h, err := host.New(host.Options{Cache: wasmbuild.CacheForTest(), Install: host.InstallLimits{ModuleBytes: 4 << 10}})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(ctx)
	for _, tt := range inspectCases() {
		if strings.Contains(tt.requires, "subprocess") {
			continue // subprocess needs its programs resolved on the station
		}
		t.Run(tt.name, func(t *testing.T) {
			m := inspectManifest(t, tt.requires)
			lim := tt.lim
			if lim.ModuleBytes == 0 {
				lim.ModuleBytes = 4 << 10
			}
			ierr := host.Inspect(ctx, m, tt.wasm, host.InspectOptions{Limits: lim})
			cerr := h.Check(ctx, m, tt.wasm, host.Grants{})
			if (ierr == nil) != (cerr == nil) {
				t.Errorf("Inspect = %v; the station's install check = %v", ierr, cerr)
			}
		})
	}
}

// TestInspectRealModule: the example module, as `station module build`
// makes it, passes; and a deadline shorter than its compilation is a
// refusal that names install.compile_timeout, not a hang.
func TestInspectRealModule(t *testing.T) {
	if testing.Short() {
		t.Skip("builds examples/hello")
	}
	ctx := context.Background()
	wasm := wasmbuild.ForTest(t, "examples/hello")
	m, err := manifest.Load("../../examples/hello")
	if err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	if err := host.Inspect(ctx, m, wasm, host.InspectOptions{}); err != nil {
		t.Fatalf("Inspect(examples/hello) = %v", err)
	}
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	t.Logf("inspecting examples/hello (%d bytes) took %s and allocated %.1f MiB", len(wasm), took, float64(after.TotalAlloc-before.TotalAlloc)/(1<<20))
	small := hubtest.Wasm("x")
	start = time.Now()
	if err := host.Inspect(ctx, inspectManifest(t, ""), small, host.InspectOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Logf("inspecting a minimal module (%d bytes) took %s", len(small), time.Since(start))
	err = host.Inspect(ctx, m, wasm, host.InspectOptions{Limits: host.InstallLimits{CompileTimeout: time.Microsecond}})
	if err == nil || !strings.Contains(err.Error(), "install.compile_timeout") {
		t.Errorf("Inspect with a 1µs compile timeout = %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := host.Inspect(cctx, m, wasm, host.InspectOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("Inspect with an ended context = %v, want context.Canceled", err)
	}
}

// TestSkeleton: a module's skeleton drops its custom sections' contents,
// and Inspect says of the skeleton exactly what it says of the binary —
// for valid, padded, truncated and corrupted binaries, written whole or a
// few bytes at a time.
func TestSkeleton(t *testing.T) {
	ctx := context.Background()
	m := inspectManifest(t, "")
	padded := hubtest.Module(hubtest.WasmSpec{Seed: "s", Pad: 1 << 20})
	sk := skeleton(padded, len(padded))
	if len(sk) > 200 {
		t.Errorf("the skeleton of a module with 1 MiB of custom sections is %d bytes", len(sk))
	}
	if err := host.Inspect(ctx, m, sk, host.InspectOptions{Size: int64(len(padded))}); err != nil {
		t.Errorf("Inspect(skeleton of a padded valid module) = %v", err)
	}
	if err := host.Inspect(ctx, m, sk, host.InspectOptions{Size: int64(len(padded)), Limits: host.InstallLimits{ModuleBytes: 1 << 20}}); err == nil ||
		!strings.Contains(err.Error(), "the module's binary is 1048") {
		t.Errorf("the skeleton of a module over the size limit: %v", err)
	}

	same := func(t *testing.T, wasm []byte) {
		t.Helper()
		want := host.Inspect(ctx, m, wasm, host.InspectOptions{})
		for _, chunk := range []int{len(wasm) + 1, 1, 3, 7} {
			sk := skeleton(wasm, chunk)
			got := host.Inspect(ctx, m, sk, host.InspectOptions{Size: int64(len(wasm))})
			if (got == nil) != (want == nil) || got != nil && !strings.Contains(got.Error(), strings.SplitN(want.Error(), "offset", 2)[0]) {
				t.Fatalf("chunks of %d: Inspect(skeleton of %d bytes %.64x…) = %v; Inspect(binary) = %v", chunk, len(wasm), wasm, got, want)
			}
		}
	}
	small := hubtest.Module(hubtest.WasmSpec{Seed: "seed", Pad: 40})
	for _, wasm := range [][]byte{padded, small, hubtest.Wasm("x"), invalidBody(small)} {
		same(t, wasm)
	}
	for n := range len(small) {
		same(t, small[:n])
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		b := bytes.Clone(small)
		for range 1 + r.IntN(3) {
			b[r.IntN(len(b))] = byte(r.IntN(256))
		}
		same(t, b)
	}
	// A custom section whose length runs past the end of the binary.
	cut := append(bytes.Clone(small[:len(small)-20]), 0, 0x80, 0x80, 0x04, 3, 'a', 'b', 'c', 1, 2)
	same(t, cut)
}

func skeleton(wasm []byte, chunk int) []byte {
	var s host.Skeleton
	for len(wasm) > 0 {
		k := min(chunk, len(wasm))
		s.Write(wasm[:k])
		wasm = wasm[k:]
	}
	return s.Bytes()
}

// BenchmarkInspect measures the publish check: a minimal module and the
// example Go module.
func BenchmarkInspect(b *testing.B) {
	ctx := context.Background()
	m := inspectManifest(b, "")
	b.Run("minimal", func(b *testing.B) {
		wasm := hubtest.Wasm("seed")
		for b.Loop() {
			if err := host.Inspect(ctx, m, wasm, host.InspectOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("examples-hello", func(b *testing.B) {
		wasm := wasmbuild.ForTest(b, "examples/hello")
		hm, err := manifest.Load("../../examples/hello")
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(int64(len(wasm)))
		b.ReportAllocs()
		for b.Loop() {
			if err := host.Inspect(ctx, hm, wasm, host.InspectOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestStationImports: the names a module imports from the station module,
// read by the install check's parser; a module it refuses is an error.
func TestStationImports(t *testing.T) {
	got, err := host.StationImports(hubtest.Module(hubtest.WasmSpec{Imports: []string{"station.process_run", "station.llm_complete"}}))
	if err != nil || !slices.Equal(got, []string{"process_run", "llm_complete"}) {
		t.Fatalf("StationImports = %q, %v", got, err)
	}
	if _, err := host.StationImports([]byte("\x00asm\x01\x00\x00\x00\x02\xff")); err == nil {
		t.Error("a truncated import section was read")
	}
}
