package host

import (
	"context"
	"sync"
	"sync/atomic"
)

// limiter caps the number of concurrent calls of one module. The fast path
// is one compare-and-swap on an atomic counter; only callers that find the
// module at its cap take the mutex, to queue. See RATIONALE.md, "Why is the
// instance pool sharded?".
type limiter struct {
	max   int64
	n     atomic.Int64
	nwait atomic.Int32

	mu      sync.Mutex
	waiters []chan struct{}
}

func newLimiter(max int) *limiter { return &limiter{max: int64(max)} }

func (l *limiter) tryAcquire() bool {
	for {
		n := l.n.Load()
		if n >= l.max {
			return false
		}
		if l.n.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// acquire takes a slot, waiting in FIFO order while the module is at its cap.
func (l *limiter) acquire(ctx context.Context) error {
	if l.tryAcquire() {
		return nil
	}
	for {
		ch := make(chan struct{}, 1)
		l.mu.Lock()
		l.waiters = append(l.waiters, ch)
		l.nwait.Add(1)
		l.mu.Unlock()
		// Re-check after registering: a release that ran before we were
		// queued has already freed a slot.
		if l.tryAcquire() {
			if !l.remove(ch) {
				l.wakeOne() // we were woken too; pass the wake-up on
			}
			return nil
		}
		select {
		case <-ch:
			if l.tryAcquire() {
				return nil
			}
		case <-ctx.Done():
			if !l.remove(ch) {
				l.wakeOne()
			}
			return ctx.Err()
		}
	}
}

func (l *limiter) release() {
	l.n.Add(-1)
	if l.nwait.Load() > 0 {
		l.wakeOne()
	}
}

func (l *limiter) wakeOne() {
	l.mu.Lock()
	if len(l.waiters) > 0 {
		ch := l.waiters[0]
		l.waiters[0] = nil
		l.waiters = l.waiters[1:]
		l.nwait.Add(-1)
		ch <- struct{}{}
	}
	l.mu.Unlock()
}

// remove takes ch out of the queue; it reports false when ch had already been
// woken (and so removed) by a release.
func (l *limiter) remove(ch chan struct{}) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, w := range l.waiters {
		if w == ch {
			l.waiters = append(l.waiters[:i], l.waiters[i+1:]...)
			l.nwait.Add(-1)
			return true
		}
	}
	return false
}
