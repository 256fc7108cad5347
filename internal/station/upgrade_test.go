package station_test

import (
	"testing"

	"github.com/station-dev/station/internal/probe"
)

// Reinstalling a loaded module with fewer permissions takes effect on the
// next call, in the same station process.
func TestUpgradeToFewerPermissionsTakesEffect(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	wasm := probe.Wasm(t)
	e.install(moduleSpec{id: stripeMod, allow: []string{"api.stripe.com", "api.groq.com"}}, wasm)
	wantOK(t, "before the upgrade", e.mustProbe(stripeMod, probe.HTTP("GET", "https://api.groq.com/"))[0])

	e.install(moduleSpec{id: stripeMod, allow: []string{"api.stripe.com"}}, wasm)
	res := e.mustProbe(stripeMod, probe.HTTP("GET", "https://api.groq.com/"), probe.HTTP("GET", "https://api.stripe.com/"))
	wantDenied(t, "after the upgrade", res[0], stripeMod, "api.groq.com")
	wantOK(t, "still granted", res[1])
}

// Arguments over their limit are refused before the host reads or allocates
// anything: the guest gets too_large, the call goes on, the station is fine.
func TestOversizedHostArgumentsRefusedBeforeAllocation(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	e.install(moduleSpec{id: stripeMod, allow: []string{"api.stripe.com"}}, probe.Wasm(t))
	res := e.mustProbe(stripeMod,
		probe.Raw("http_request", 16, 0x7fffffff), // 2 GiB "document"
		probe.Raw("log", 1, 16, 0x7fffffff),
		probe.HTTP("GET", "https://api.stripe.com/"),
	)
	if res[0].ABIStatus == nil || *res[0].ABIStatus != 4 {
		t.Errorf("http_request with a 2 GiB length: got %+v, want status too_large (4)", res[0])
	}
	if res[1].Value == nil || *res[1].Value != -4 {
		t.Errorf("log with a 2 GiB length: got %+v, want -4 (too_large)", res[1])
	}
	wantOK(t, "afterwards", res[2])
}
