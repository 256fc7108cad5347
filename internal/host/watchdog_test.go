package host

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"

	"github.com/station-dev/station/internal/wasmgen"
)

// Regression test (found in review): a caller's cancellation that ran late
// — after its call had returned and the instance's next call was armed —
// terminated that next call. With one processor the late goroutine runs
// exactly then. A cancellation now names the arming it was registered for.
func TestWatchdogLateCancellationEndsNothingElse(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	mod, err := rt.Instantiate(ctx, wasmgen.Module([]wasmgen.Func{{Body: []byte{0x01}}}))
	if err != nil {
		t.Fatal(err)
	}
	var w watchdog
	far := time.Now().Add(time.Hour)
	for i := range 200 {
		cctx, cancel := context.WithCancel(ctx)
		if err := w.arm(mod, cctx, far); err != nil {
			t.Fatal(err)
		}
		cancel() // as the call returns
		w.disarm()
		if err := w.arm(mod, ctx, far); err != nil { // the instance's next call
			t.Fatal(err)
		}
		time.Sleep(50 * time.Microsecond) // the cancellation's goroutine runs now
		if reason := w.disarm(); reason != nil || mod.IsClosed() {
			t.Fatalf("round %d: the next call was ended (%v)", i, reason)
		}
	}
}

// A deadline ends the armed call, and only it.
func TestWatchdogDeadline(t *testing.T) {
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	mod, err := rt.Instantiate(ctx, wasmgen.Module([]wasmgen.Func{{Body: []byte{0x01}}}))
	if err != nil {
		t.Fatal(err)
	}
	var w watchdog
	if err := w.arm(mod, ctx, time.Now().Add(10*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if reason := w.disarm(); reason != context.DeadlineExceeded || !mod.IsClosed() {
		t.Fatalf("after the deadline: reason %v, closed %v", reason, mod.IsClosed())
	}
}
