package host

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// The runaway guests of issue 20: each must stop by its deadline, however it
// spins, with guest code compiled with the inline termination check and the
// watchdog (not a goroutine per call) ending the call. The bound asserted is
// generous (the deadline plus a second, for -race and a loaded machine); the
// overrun is logged.

const runawayTimeout = 500 * time.Millisecond

// spinSource is a guest whose command never returns.
const spinSource = `
var sink int

//go:wasmexport station_call
func call(cmd, in int32) int32 {
	for i := 0; ; i++ {
		sink += i
	}
}
`

// loadRunaway loads the guest body as id with the runaway deadline.
func loadRunaway(t *testing.T, id, body string) (*Host, error) {
	t.Helper()
	return loadGuest(t, id, body, "timeout: 500ms")
}

// loadGuest loads the guest body as id with limits on a host of its own.
func loadGuest(t *testing.T, id, body, limits string) (*Host, error) {
	t.Helper()
	wasm := buildReviewGuest(t, guestSource(nil, body))
	h, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close(context.Background()) })
	_, err = h.Load(context.Background(), reviewManifest(t, id, limits), wasm)
	return h, err
}

// callStops calls run on id and fails unless the call ends as a timeout by
// the deadline plus a second.
func callStops(t *testing.T, h *Host, id string) {
	t.Helper()
	start := time.Now()
	_, err := h.Call(context.Background(), id, "run", nil)
	took := time.Since(start)
	var ce *CallError
	if !errors.As(err, &ce) || ce.Kind != KindTimeout {
		t.Fatalf("the runaway call returned %v, want a timeout", err)
	}
	if took > runawayTimeout+time.Second {
		t.Fatalf("the runaway call took %s; its deadline is %s", took, runawayTimeout)
	}
	t.Logf("stopped %s after its deadline", took-runawayTimeout)
}

func TestRunawayLoopStops(t *testing.T) {
	h, err := loadRunaway(t, "test/loop", spinSource)
	if err != nil {
		t.Fatal(err)
	}
	callStops(t, h, "test/loop")
	callStops(t, h, "test/loop") // a fresh instance, and the watchdog re-armed
}

// A recursion that fans out: each level calls two more, 2^60 calls.
func TestRunawayRecursionStops(t *testing.T) {
	h, err := loadRunaway(t, "test/fan", `
var sink int

func fan(n int) {
	if n > 0 {
		sink++
		fan(n - 1)
		fan(n - 1)
	}
}

//go:wasmexport station_call
func call(cmd, in int32) int32 {
	fan(60)
	return 0
}
`)
	if err != nil {
		t.Fatal(err)
	}
	callStops(t, h, "test/fan")
}

// A loop in the start function (a Go init): Load fails by the deadline.
func TestRunawayStartFunctionStops(t *testing.T) {
	start := time.Now()
	_, err := loadRunaway(t, "test/init-loop", `
var sink int

func init() {
	for i := 0; ; i++ {
		sink += i
	}
}

//go:wasmexport station_call
func call(cmd, in int32) int32 { return 0 }
`)
	if err == nil || !strings.Contains(err.Error(), "did not finish within") {
		t.Fatalf("Load of a module whose start function loops: got %v, want a start timeout", err)
	}
	if took := time.Since(start); took > runawayTimeout+time.Minute {
		t.Fatalf("Load took %s (the build included)", took)
	}
}

// A goroutine a call leaves spinning takes over the instance's next call,
// which still ends by its deadline.
func TestRunawayGoroutineLeftByACallStops(t *testing.T) {
	h, err := loadRunaway(t, "test/spinner", `
var started bool
var sink int

//go:wasmexport station_call
func call(cmd, in int32) int32 {
	if !started {
		started = true
		go func() {
			for i := 0; ; i++ {
				sink += i
			}
		}()
		return 0
	}
	for i := 0; i < 1000; i++ {
		runtimeGosched()
	}
	return 0
}

func runtimeGosched() { ch := make(chan int, 1); ch <- 1; go func() { <-ch }() }
`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Call(context.Background(), "test/spinner", "run", nil); err != nil {
		t.Fatalf("the first call (which starts the spinner): %v", err)
	}
	start := time.Now()
	_, err = h.Call(context.Background(), "test/spinner", "run", nil)
	if took := time.Since(start); took > runawayTimeout+time.Second {
		t.Fatalf("the next call took %s; its deadline is %s (%v)", took, runawayTimeout, err)
	}
}

// While a guest spins, the station's garbage collections (a stop-the-world)
// and its other goroutines are not held up: the Go runtime's stop request
// reaches the guest's code through the goroutine's stack guard. Were it to
// wait, nothing would end the call: the watchdog's timer stops with the rest
// of the world, and the test hangs until go test's -timeout kills it (which
// is what it did with the check of the stack guard taken out).
func TestGarbageCollectionDoesNotWaitForASpinningGuest(t *testing.T) {
	h, err := loadGuest(t, "test/gc", spinSource, "timeout: 5s")
	if err != nil {
		t.Fatal(err)
	}
	var callDone atomic.Bool
	gcDone := make(chan bool, 1)
	go func() {
		time.Sleep(200 * time.Millisecond) // the guest is spinning
		for range 3 {
			runtime.GC()
		}
		gcDone <- callDone.Load()
	}()
	_, err = h.Call(context.Background(), "test/gc", "run", nil)
	callDone.Store(true)
	var ce *CallError
	if !errors.As(err, &ce) || ce.Kind != KindTimeout {
		t.Fatalf("the spinning call returned %v, want a timeout", err)
	}
	if late := <-gcDone; late {
		t.Fatal("the garbage collections waited for the spinning guest's call to end")
	}
}

// A caller that gives up ends its call at once, as a cancellation, not at
// the deadline.
func TestRunawayCallEndsWhenTheCallerGivesUp(t *testing.T) {
	h, err := loadGuest(t, "test/cancel", spinSource, "timeout: 30s")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	_, err = h.Call(ctx, "test/cancel", "run", nil)
	var ce *CallError
	if !errors.As(err, &ce) || ce.Kind != KindTimeout || ce.Msg != "canceled" {
		t.Fatalf("the cancelled call returned %v, want canceled", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("the cancelled call took %s", took)
	}
	// A context that is done already: the guest does not run at all.
	_, err = h.Call(ctx, "test/cancel", "run", nil)
	if !errors.As(err, &ce) || ce.Kind != KindTimeout && ce.Kind != KindBusy || !strings.Contains(ce.Msg, "cancel") {
		t.Fatalf("a call with a cancelled context returned %v", err)
	}
}
