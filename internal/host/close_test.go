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

// Regression test (found in review): Host.Close used to wait only for the
// modules in its table, so a module retired by an upgrade that still had a
// call in flight could make decisions after Close returned — after the
// station had closed the audit log. Close now waits for every module.
func TestCloseWaitsForRetiredModules(t *testing.T) {
	var closed atomic.Bool
	var late atomic.Int64
	first := make(chan struct{})
	var once sync.Once
	h := newHost(t, host.Options{Recorder: sandbox.RecorderFunc(func(d sandbox.Decision) {
		once.Do(func() { close(first) })
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
		h.Call(context.Background(), "test/probe", probe.Command, probe.Run(
			probe.HTTP("GET", "https://evil.example/first"), // a decision: the call is running
			probe.Sleep(500*time.Millisecond),
			probe.HTTP("GET", "https://evil.example/second")))
	}()
	<-first
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
