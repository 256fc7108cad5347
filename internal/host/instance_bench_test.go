package host

import (
	"context"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/station-dev/station/internal/wasmbuild"
	"github.com/station-dev/station/manifest"
)

// BenchmarkInstanceMemory starts warm instances of examples/hello (a Go
// guest built with the SDK), keeps the first keepInstances of them, and
// reports the Go heap each kept one holds (MiB/instance: linear memory,
// wazero's module instance and call stack) and the size of its linear
// memory alone. ns/op is the cost of starting one instance, the Go
// runtime's start-up included. PERF.md's target is ≤ 5 MiB per warm
// Go-guest instance.
func BenchmarkInstanceMemory(b *testing.B) {
	ctx := context.Background()
	root, err := wasmbuild.RepoRoot()
	if err != nil {
		b.Fatal(err)
	}
	man, err := manifest.Load(filepath.Join(root, "examples", "hello"))
	if err != nil {
		b.Fatal(err)
	}
	h, err := New(Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close(ctx)
	m, err := h.Load(ctx, man, wasmbuild.ForTest(b, "examples/hello"))
	if err != nil {
		b.Fatal(err)
	}
	var insts []*instance
	defer func() {
		for _, inst := range insts {
			inst.close()
		}
	}()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for b.Loop() {
		inst, err := m.instantiate(ctx, time.Now().Add(time.Minute))
		if err != nil {
			b.Fatal(err)
		}
		if len(insts) == keepInstances {
			inst.close() // enough to measure; do not hold gigabytes
			continue
		}
		insts = append(insts, inst)
	}
	b.StopTimer()
	runtime.GC()
	runtime.ReadMemStats(&after)
	n := float64(len(insts))
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n/(1<<20), "MiB/instance")
	b.ReportMetric(float64(insts[0].mem.Size())/(1<<20), "MiB-linear/instance")
}

// keepInstances is how many instances BenchmarkInstanceMemory measures.
const keepInstances = 16
