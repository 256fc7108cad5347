package host

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/station-dev/station/internal/wasmgen"
)

// Regression test (found in review): a caller's cancellation that ran late
// — after its call had returned and the instance's next call was armed —
// terminated that next call. With one processor the late goroutine runs
// exactly then. A cancellation now names the arming it was registered for.
func TestWatchdogLateCancellationEndsNothingElse(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	ctx := context.Background()
	w := watchdog{mod: idleModule(t)}
	far := time.Now().Add(time.Hour)
	for i := range 200 {
		cctx, cancel := context.WithCancel(ctx)
		if err := w.arm(cctx, far); err != nil {
			t.Fatal(err)
		}
		cancel() // as the call returns
		w.disarm()
		if err := w.arm(ctx, far); err != nil { // the instance's next call
			t.Fatal(err)
		}
		time.Sleep(50 * time.Microsecond) // the cancellation's goroutine runs now
		if reason := w.disarm(); reason != nil || w.mod.IsClosed() {
			t.Fatalf("round %d: the next call was ended (%v)", i, reason)
		}
	}
}

// A deadline ends the armed call, and only it.
func TestWatchdogDeadline(t *testing.T) {
	ctx := context.Background()
	w := watchdog{mod: idleModule(t)}
	if err := w.arm(ctx, time.Now().Add(10*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if reason := w.disarm(); reason != context.DeadlineExceeded || !w.mod.IsClosed() {
		t.Fatalf("after the deadline: reason %v, closed %v", reason, w.mod.IsClosed())
	}
}

// idleModule is a module that never runs, for the watchdog to terminate.
func idleModule(t *testing.T) api.Module {
	t.Helper()
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	t.Cleanup(func() { rt.Close(ctx) })
	mod, err := rt.Instantiate(ctx, wasmgen.Module([]wasmgen.Func{{Body: []byte{0x01}}}))
	if err != nil {
		t.Fatal(err)
	}
	return mod
}
