package attack_test

import (
	"testing"

	"github.com/station-dev/station/internal/probe"
)

// The DNS counter every case checks is live: an allowed name that is not in
// the resolve map does reach the resolver (once), and a refused one does not.
func TestDNSCounterIsLive(t *testing.T) {
	w := newWorld(t, true)
	before := w.dns.n.Load()
	res, err := w.run(modWild, probe.HTTP("GET", "https://unlisted.stripe.com/"), probe.HTTP("GET", "https://unlisted.example/"))
	if err != nil {
		t.Fatal(err)
	}
	if res[0].OK || res[0].Error == nil || res[0].Error.Code != "failed" {
		t.Errorf("allowed, unresolvable name: got %+v, want a failed lookup", res[0])
	}
	if res[1].OK || res[1].Error == nil || res[1].Error.Code != "denied" {
		t.Errorf("refused name: got %+v, want a denial", res[1])
	}
	if got := w.dns.n.Load() - before; got != 1 {
		t.Errorf("DNS lookups: got %d, want exactly 1 (the allowed name only)", got)
	}
}
