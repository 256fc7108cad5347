package host_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/station-dev/station/internal/host"
	"github.com/station-dev/station/internal/probe"
	"github.com/station-dev/station/internal/sandbox"
)

// Regression test (found in review): Host.Close waits only for the modules in the table. A
// module that Load or Unload retired earlier and that still has a call in
// flight is not waited for, so Close returns while that call still runs —
// Station.Close then closes the audit writer and the store, and the
// decisions the call makes afterwards are dropped ("recorded after the audit
// writer was closed; not stored"); its runtime is closed after the host's
// compilation cache.
//
// Fix: keep every not-yet-closed Module (including retiring ones) in a set
// owned by the Host and wait for all their done channels in Close.
func TestCloseWaitsForRetiredModules(t *testing.T) {
	var closed atomic.Bool
	var late atomic.Int64
	h := newHost(t, host.Options{Recorder: sandbox.RecorderFunc(func(d sandbox.Decision) {
		if closed.Load() {
			late.Add(1)
		}
	})})
	man := parse(t, probeNoNet)
	wasm := probe.Wasm(t)
	if _, err := h.Load(context.Background(), man, wasm); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		h.Call(context.Background(), "test/probe", probe.Command,
			probe.Run(probe.Sleep(time.Second), probe.HTTP("GET", "https://evil.example/")))
	}()
	time.Sleep(300 * time.Millisecond)                                 // the call is sleeping in the old module
	if _, err := h.Load(context.Background(), man, wasm); err != nil { // upgrade: the old module retires
		t.Fatal(err)
	}
	if err := h.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	closed.Store(true)
	wg.Wait()
	if n := late.Load(); n > 0 {
		t.Fatalf("Host.Close returned while a call of a retired module was still running; %d decisions were made after Close", n)
	}
}
