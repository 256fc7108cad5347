package station_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/station-dev/station/hub"
)

// BenchmarkRunAdvisoryGate is a warm Station.Run of dave/hello, installed
// from a hub, with the advisory gate looking up what the station knows:
// nothing (none, the baseline), a thousand advisories of other modules
// (others), and one advisory below advisories.block that affects the
// version, so each call finds it and, having warned once, runs (affected).
// The gate is an in-memory lookup; the three should not differ beyond
// noise. BENCHMARKS.md has the numbers and the command.
func BenchmarkRunAdvisoryGate(b *testing.B) {
	for _, c := range []struct {
		name string
		advs func() []hub.OSV
	}{
		{"none", func() []hub.OSV { return nil }},
		{"others", func() []hub.OSV {
			out := make([]hub.OSV, 1000)
			for i := range out {
				out[i] = advisory(fmt.Sprintf("STATION-2026-%04d", i+1), hub.SeverityCritical, "0", "")
				out[i].Affected[0].Package.Name = fmt.Sprintf("dave/other-%d", i)
			}
			return out
		}},
		{"affected", func() []hub.OSV { return []hub.OSV{advisory("STATION-2026-0001", hub.SeverityHigh, "0", "1.0.1")} }},
	} {
		b.Run(c.name, func(b *testing.B) {
			e := newAdvEnv(b, "")
			if advs := c.advs(); len(advs) > 0 {
				e.put(b, e.hub, advs)
			}
			ctx := context.Background()
			in := []byte(`{"name":"Ada"}`)
			if _, err := e.st.Run(ctx, "dave/hello", "greet", in); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := e.st.Run(ctx, "dave/hello", "greet", in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
