package host_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/station-dev/station/internal/host"
	"github.com/station-dev/station/internal/probe"
)

// Regression test (found in review): Module.call does m.inflight.Add(1) *after* Host.Call has read the
// module from the table, while retire may already be in inflight.Wait (or
// past it). Upgrading (Load with the same id) while calls are in flight
// therefore (a) lets a call start on a module that is being, or has been,
// closed — the call fails although nothing was wrong with it — and (b) is a
// WaitGroup misuse that can panic the retire goroutine ("WaitGroup is reused
// before previous Wait has returned"), taking the whole station down.
//
// Expected: every call either runs on the old module or on the new one and
// succeeds.
func TestUpgradeUnderLoad(t *testing.T) {
	h := newHost(t, host.Options{})
	man := parse(t, probeNoNet)
	wasm := probe.Wasm(t, probe.NoNetworkTag)
	if _, err := h.Load(context.Background(), man, wasm); err != nil {
		t.Fatal(err)
	}
	in := probe.Run()
	var stop atomic.Bool
	var failed atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				if _, err := h.Call(context.Background(), "test/probe", probe.Command, in); err != nil {
					if !errors.Is(err, host.ErrUnknownModule) {
						failed.Add(1)
						firstErr.CompareAndSwap(nil, err.Error())
					}
				}
			}
		}()
	}
	deadline := time.Now().Add(5 * time.Second)
	loads := 0
	for time.Now().Before(deadline) && failed.Load() == 0 {
		if _, err := h.Load(context.Background(), man, wasm); err != nil {
			t.Fatal(err)
		}
		loads++
	}
	stop.Store(true)
	wg.Wait()
	if n := failed.Load(); n > 0 {
		t.Fatalf("%d calls failed during %d upgrades; first: %v", n, loads, firstErr.Load())
	}
	t.Logf("%d upgrades, no failed call", loads)
}
