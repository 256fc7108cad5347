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
