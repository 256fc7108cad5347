package host_test

import (
	"context"
	"testing"

	"github.com/station-dev/station/internal/host"
	"github.com/station-dev/station/internal/wasmbuild"
)

// BenchmarkCallHello is the warm dispatch of a trivial JSON command through
// Host.Call: deadline, pool, buffers, JSON in the guest.
func BenchmarkCallHello(b *testing.B) {
	h := newHost(b, host.Options{})
	if _, err := h.Load(context.Background(), helloManifest(b), wasmbuild.ForTest(b, "examples/hello")); err != nil {
		b.Fatal(err)
	}
	in := []byte(`{"name":"Ada"}`)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := h.Call(ctx, "station/hello", "greet", in); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCallHelloFiles is BenchmarkCallHello for a module with a write
// grant: a mounted view, and the per-call accounting of its open files and
// usage (which must add next to nothing to a call that touches no file).
func BenchmarkCallHelloFiles(b *testing.B) {
	h := newHost(b, host.Options{})
	m := helloManifest(b)
	m.Requires.FilesystemWrites = []string{b.TempDir() + "/**"}
	if _, err := h.Load(context.Background(), m, wasmbuild.ForTest(b, "examples/hello")); err != nil {
		b.Fatal(err)
	}
	in := []byte(`{"name":"Ada"}`)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := h.Call(ctx, "station/hello", "greet", in); err != nil {
			b.Fatal(err)
		}
	}
}
