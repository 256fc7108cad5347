package experimental_test

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/sys"
)

// spinWasm is (module (func (export "spin") (loop (br 0)))): it never
// returns, and its only way back to Go is the loop header's check.
var spinWasm = []byte{
	0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
	0x01, 0x04, 0x01, 0x60, 0x00, 0x00, // type: () -> ()
	0x03, 0x02, 0x01, 0x00, // func 0: type 0
	0x07, 0x08, 0x01, 0x04, 's', 'p', 'i', 'n', 0x00, 0x00, // export "spin"
	0x0a, 0x09, 0x01, 0x07, 0x00, 0x03, 0x40, 0x0c, 0x00, 0x0b, 0x0b, // loop br 0 end end
}

func spin(t *testing.T, inline bool) (api.Module, api.Function) {
	t.Helper()
	if !platformHasCompiler() {
		t.Skip("no compiler on this platform")
	}
	ctx := context.Background()
	if inline {
		ctx = experimental.WithInlineTerminationCheck(ctx)
	}
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler().WithCloseOnContextDone(true))
	t.Cleanup(func() { rt.Close(context.Background()) })
	mod, err := rt.Instantiate(context.Background(), spinWasm)
	if err != nil {
		t.Fatal(err)
	}
	return mod, mod.ExportedFunction("spin")
}

func platformHasCompiler() bool {
	return runtime.GOARCH == "amd64" || runtime.GOARCH == "arm64"
}

func exitCode(t *testing.T, err error) uint32 {
	t.Helper()
	var ee *sys.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("the call returned %v, not a *sys.ExitError", err)
	}
	return ee.ExitCode()
}

// Terminate ends a call made with a context that is never done.
func TestTerminateStopsASpinningCall(t *testing.T) {
	for _, inline := range []bool{true, false} {
		mod, fn := spin(t, inline)
		time.AfterFunc(20*time.Millisecond, func() {
			if !experimental.Terminate(mod, sys.ExitCodeDeadlineExceeded) {
				t.Error("Terminate did not close the module")
			}
		})
		_, err := fn.Call(context.Background())
		if c := exitCode(t, err); c != sys.ExitCodeDeadlineExceeded {
			t.Fatalf("inline=%v: exit code %d, want %d", inline, c, sys.ExitCodeDeadlineExceeded)
		}
		if experimental.Terminate(mod, 1) {
			t.Fatal("a second Terminate reported that it closed the module")
		}
	}
}

// A done context still ends a call compiled with the inline check.
func TestInlineCheckHonoursTheContext(t *testing.T) {
	_, fn := spin(t, true)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := fn.Call(ctx)
	if c := exitCode(t, err); c != sys.ExitCodeDeadlineExceeded {
		t.Fatalf("exit code %d, want %d", c, sys.ExitCodeDeadlineExceeded)
	}
}

// A stop-the-world does not wait for a spinning guest compiled with the
// inline check, though nothing interrupts it: the runtime's stop request
// (the goroutine's poisoned stack guard) brings it back to Go. The garbage
// collection finishes while the guest spins, and it then goes on spinning
// until it is terminated.
func TestStopTheWorldDoesNotWaitForTheGuest(t *testing.T) {
	mod, fn := spin(t, true)
	var callDone atomic.Bool
	go func() {
		time.Sleep(20 * time.Millisecond) // the guest is spinning
		runtime.GC()
		if callDone.Load() {
			t.Error("the collection waited for the call to end")
		}
		experimental.Terminate(mod, sys.ExitCodeDeadlineExceeded)
	}()
	// Were the collection to wait for the guest, nothing would end the call:
	// the test binary's own timeout would be held up by the same
	// stop-the-world.
	_, err := fn.Call(context.Background())
	callDone.Store(true)
	if c := exitCode(t, err); c != sys.ExitCodeDeadlineExceeded {
		t.Fatalf("exit code %d, want %d", c, sys.ExitCodeDeadlineExceeded)
	}
}

// With one processor, a spinning guest compiled with the inline check
// still lets other goroutines run: the scheduler's time-slice preemption
// reaches it through the stack guard.
func TestSpinningGuestSharesTheProcessor(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	mod, fn := spin(t, true)
	ran := make(chan struct{})
	go func() {
		close(ran)
		experimental.Terminate(mod, sys.ExitCodeDeadlineExceeded)
	}()
	_, err := fn.Call(context.Background())
	select {
	case <-ran:
	default:
		t.Fatal("the call ended, but not because the other goroutine ran")
	}
	if c := exitCode(t, err); c != sys.ExitCodeDeadlineExceeded {
		t.Fatalf("exit code %d, want %d", c, sys.ExitCodeDeadlineExceeded)
	}
}

// fanWasm is a recursion that fans out and has no loop:
//
//	(func (export "fan") (param i32)
//	  (if (local.get 0) (then
//	    (call 0 (i32.sub (local.get 0) (i32.const 1)))
//	    (call 0 (i32.sub (local.get 0) (i32.const 1))))))
//
// fan(60) makes 2^60 calls and never reaches a loop header.
var fanWasm = []byte{
	0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
	0x01, 0x05, 0x01, 0x60, 0x01, 0x7f, 0x00, // type: (i32) -> ()
	0x03, 0x02, 0x01, 0x00,
	0x07, 0x07, 0x01, 0x03, 'f', 'a', 'n', 0x00, 0x00,
	0x0a, 0x17, 0x01, 0x15, 0x00,
	0x20, 0x00, 0x04, 0x40,
	0x20, 0x00, 0x41, 0x01, 0x6b, 0x10, 0x00,
	0x20, 0x00, 0x41, 0x01, 0x6b, 0x10, 0x00,
	0x0b, 0x0b,
}

// The function-entry check stops code that has no loop: a recursion that
// fans out ends with Terminate, and a stop-the-world does not wait for it.
func TestTerminateStopsARecursionWithoutLoops(t *testing.T) {
	if !platformHasCompiler() {
		t.Skip("no compiler on this platform")
	}
	ctx := experimental.WithInlineTerminationCheck(context.Background())
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler().WithCloseOnContextDone(true))
	defer rt.Close(ctx)
	mod, err := rt.Instantiate(ctx, fanWasm)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(20 * time.Millisecond)
		runtime.GC()
		experimental.Terminate(mod, sys.ExitCodeDeadlineExceeded)
	}()
	_, err = mod.ExportedFunction("fan").Call(context.Background(), 60)
	if c := exitCode(t, err); c != sys.ExitCodeDeadlineExceeded {
		t.Fatalf("exit code %d, want %d", c, sys.ExitCodeDeadlineExceeded)
	}
}

// A guest loop that a host function calls back into, while the guest's
// own call waits in that host function, stops with Terminate too.
func TestTerminateStopsALoopInAHostCallback(t *testing.T) {
	if !platformHasCompiler() {
		t.Skip("no compiler on this platform")
	}
	ctx := experimental.WithInlineTerminationCheck(context.Background())
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler().WithCloseOnContextDone(true))
	defer rt.Close(ctx)
	var guest api.Module
	_, err := rt.NewHostModuleBuilder("env").NewFunctionBuilder().
		WithFunc(func(ctx context.Context) {
			_, err := guest.ExportedFunction("spin").Call(ctx) // the callback loops
			panic(err)                                         // unwind the outer call with the callback's error
		}).Export("callback").Instantiate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// (module (import "env" "callback" (func))
	//   (func (export "run") (call 0))
	//   (func (export "spin") (loop (br 0))))
	cb := []byte{
		0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
		0x01, 0x04, 0x01, 0x60, 0x00, 0x00,
		0x02, 0x10, 0x01, 0x03, 'e', 'n', 'v', 0x08, 'c', 'a', 'l', 'l', 'b', 'a', 'c', 'k', 0x00, 0x00,
		0x03, 0x03, 0x02, 0x00, 0x00,
		0x07, 0x0e, 0x02, 0x03, 'r', 'u', 'n', 0x00, 0x01, 0x04, 's', 'p', 'i', 'n', 0x00, 0x02,
		0x0a, 0x0e, 0x02, 0x04, 0x00, 0x10, 0x00, 0x0b, 0x07, 0x00, 0x03, 0x40, 0x0c, 0x00, 0x0b, 0x0b,
	}
	guest, err = rt.Instantiate(ctx, cb)
	if err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(20*time.Millisecond, func() { experimental.Terminate(guest, sys.ExitCodeDeadlineExceeded) })
	_, err = guest.ExportedFunction("run").Call(context.Background())
	if c := exitCode(t, err); c != sys.ExitCodeDeadlineExceeded {
		t.Fatalf("exit code %d, want %d", c, sys.ExitCodeDeadlineExceeded)
	}
}

// Terminate on a module that is not running: its next call fails at its
// first check, a function's entry, with the exit code Terminate gave, and
// runs no guest code. The module is not the one it was: a second Terminate
// reports so.
func TestTerminateIdleModule(t *testing.T) {
	if !platformHasCompiler() {
		t.Skip("no compiler on this platform")
	}
	ctx := experimental.WithInlineTerminationCheck(context.Background())
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler().WithCloseOnContextDone(true))
	defer rt.Close(ctx)
	mod, err := rt.Instantiate(ctx, fanWasm)
	if err != nil {
		t.Fatal(err)
	}
	fan := mod.ExportedFunction("fan")
	if _, err := fan.Call(context.Background(), 3); err != nil {
		t.Fatal(err)
	}
	if !experimental.Terminate(mod, sys.ExitCodeDeadlineExceeded) {
		t.Fatal("Terminate did not close the idle module")
	}
	_, err = fan.Call(context.Background(), 60)
	if c := exitCode(t, err); c != sys.ExitCodeDeadlineExceeded {
		t.Fatalf("exit code %d, want %d", c, sys.ExitCodeDeadlineExceeded)
	}
	if experimental.Terminate(mod, 1) {
		t.Fatal("a second Terminate reported that it closed the module")
	}
}
