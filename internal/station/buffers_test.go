package station_test

import (
	"bytes"
	"net/http"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/station-dev/station/internal/probe"
)

// Regression test (found in review): host-side buffers are bounded in number (64 per call) but
// not in bytes. Each http_request result is a host buffer holding the
// response JSON — up to 16 MiB of body, ~22 MiB once base64-encoded — and it
// stays live until the guest reads or frees it or the call ends. A guest that
// does not read its results makes the station hold up to 64 x 22 MiB ≈ 1.4 GiB
// per call, times the module's concurrency (default 8; a manifest may ask
// for up to 1024 and the station sets no operator maximum for concurrency),
// whatever the module's memory limit. The response server is one the module
// itself is allowed to reach, i.e. typically its author's.
//
// Fix: account the bytes of live buffers per call (and per module) against a
// budget, e.g. the module's memory limit, and refuse to create a buffer over
// it (StatusTooLarge with handle 0); wire an operator max for concurrency.
func TestHostBuffersBoundedPerCall(t *testing.T) {
	// Not in parallel: it measures the heap of the whole process.
	e := newEnv(t, envOpts{})
	big := bytes.Repeat([]byte("x"), 16<<20-1024)
	var peak atomic.Uint64
	e.stripeMux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) { w.Write(big) })
	e.stripeMux.HandleFunc("/measure", func(w http.ResponseWriter, r *http.Request) {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		peak.Store(ms.HeapAlloc)
	})
	e.install(moduleSpec{id: "test/hoarder", allow: []string{"api.stripe.com"}, limits: "memory: 32MiB"}, probe.Wasm(t))

	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)

	const n = 12
	req := func(path string) probe.Action {
		return probe.RawData("http_request", `{"method":"GET","url":"https://api.stripe.com`+path+`"}`, probe.DataPtr, probe.DataLen)
	}
	var actions []probe.Action
	for i := 0; i < n; i++ {
		actions = append(actions, req("/big")) // result buffer never read
	}
	actions = append(actions, req("/measure"))
	res := e.mustProbe("test/hoarder", actions...)
	refused := 0
	for i, r := range res[:n] {
		switch {
		case r.ABIStatus == nil:
			t.Fatalf("request %d: %+v", i, r)
		case *r.ABIStatus == 0 && r.Handle != nil && *r.Handle != 0:
		case *r.ABIStatus == 4 && r.Handle != nil && *r.Handle == 0: // too_large: read or free earlier results first
			refused++
		default:
			t.Fatalf("request %d: status %d handle %v", i, *r.ABIStatus, r.Handle)
		}
	}
	if refused == 0 {
		t.Errorf("all %d unread 16 MiB results were kept; want the later ones refused", n)
	}
	held := int64(peak.Load()) - int64(base.HeapAlloc)
	t.Logf("module memory limit 32 MiB; host heap held for it during the call: %d MiB", held>>20)
	// The module's own linear memory (32 MiB) plus its buffer budget (its
	// memory limit, at least 24 MiB) plus slack for the gate's in-flight
	// response and GC timing: bounded by what was granted. Without the
	// budget the twelve unread ~22 MiB results alone hold over 260 MiB.
	if held > 160<<20 {
		t.Fatalf("the station held %d MiB of host memory for a module limited to 32 MiB", held>>20)
	}
}
