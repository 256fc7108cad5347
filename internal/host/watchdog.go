package host

import (
	"context"
	"sync"
	"time"

	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/sys"
)

// watchdog ends an instance's call that outlives its deadline or whose
// caller gives up: one timer per instance, made at its first call and then
// only re-armed and stopped, which terminates the module when it fires
// (experimental.Terminate: the guest's code, compiled with the inline
// termination check, returns a *sys.ExitError at its next loop header).
// Arming and disarming allocate nothing; a caller whose context can be
// cancelled costs one context.AfterFunc registration more.
//
// The guest itself runs with a context that is never done (guestContext),
// so wazero starts no goroutine per call to watch one (RATIONALE.md, "Why a
// patched wazero?").
type watchdog struct {
	mod   api.Module // the instance's, set once it is instantiated
	timer *time.Timer

	mu       sync.Mutex
	deadline time.Time // of the armed call; zero while disarmed
	// armed counts armings; a caller's cancellation names the arming it
	// was registered for, so one that runs late ends nothing else.
	armed uint64
	// reason is why the watchdog ended the armed call:
	// context.DeadlineExceeded at the deadline, or the caller's ctx.Err().
	reason     error
	stopParent func() bool
}

// arm watches a call that must end by deadline, or when parent is done.
// It fails without arming if parent is done already.
func (w *watchdog) arm(parent context.Context, deadline time.Time) error {
	if err := parent.Err(); err != nil {
		return err
	}
	w.mu.Lock()
	w.deadline, w.reason = deadline, nil
	w.armed++
	armed := w.armed
	w.mu.Unlock()
	d := time.Until(deadline)
	if w.timer == nil {
		w.timer = time.AfterFunc(d, w.fire)
	} else {
		w.timer.Reset(d)
	}
	if parent.Done() != nil {
		w.stopParent = context.AfterFunc(parent, func() { w.cancel(armed, parent.Err()) })
	}
	return nil
}

// disarm ends the watch of the call that arm started, and reports why the
// watchdog ended it (nil if it did not).
func (w *watchdog) disarm() error {
	w.timer.Stop()
	if w.stopParent != nil {
		w.stopParent()
		w.stopParent = nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.deadline = time.Time{}
	return w.reason
}

// fire is the timer's function. A firing left over from an earlier arming
// (Reset does not wait for one) finds the call disarmed, or the deadline
// of the call armed since still ahead, and does nothing: the look and the
// termination are one critical section, which disarm and arm wait for.
func (w *watchdog) fire() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.deadline.IsZero() && !time.Now().Before(w.deadline) {
		w.end(context.DeadlineExceeded)
	}
}

// cancel ends the call of arming armed, if it is still the armed one,
// because its caller gave up.
func (w *watchdog) cancel(armed uint64, reason error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.armed == armed && !w.deadline.IsZero() {
		w.end(reason)
	}
}

// end terminates the armed call for reason; w.mu is held.
func (w *watchdog) end(reason error) {
	if w.reason != nil {
		return
	}
	w.reason = reason
	code := uint32(sys.ExitCodeDeadlineExceeded)
	if reason == context.Canceled {
		code = sys.ExitCodeContextCanceled
	}
	experimental.Terminate(w.mod, code)
}

// guestContext is the context an instance's guest code runs with: the
// call's values and the instance itself (instanceFrom, which every host
// function asks first, finds it without walking the chain), never done (so
// wazero does not watch it: the watchdog does). Host functions that wait
// take the call's deadline from callState.context instead. It lives in the
// instance: a call allocates none.
type guestContext struct {
	context.Context
	inst *instance
}

func (g *guestContext) Value(key any) any {
	if _, ok := key.(instKey); ok {
		return g.inst
	}
	return g.Context.Value(key)
}

func (guestContext) Deadline() (time.Time, bool) { return time.Time{}, false }
func (guestContext) Done() <-chan struct{}       { return nil }
func (guestContext) Err() error                  { return nil }
