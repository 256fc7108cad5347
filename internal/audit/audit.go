// Package audit writes sandbox decisions to the station's store without
// slowing down the gates that make them.
//
// A Writer is the sandbox.Recorder the station hands to every gate. Record
// appends the decision to an in-memory queue and returns; one background
// goroutine stores the queue in batches (group commit: whatever accumulated
// while the previous batch was written goes in the next one, at most
// maxBatch decisions per transaction). Nothing is dropped: when the queue is
// full Record blocks until there is room (backpressure), and a batch the
// store refuses is retried, then written to the station log with an error
// that the next Flush or Close returns.
//
// Each module's decisions are rate-limited (ratelimit.go): at most
// MaxPerWindow records of a module in any Window; past its allowance,
// decisions are counted and stored as summary rows with exact counts
// (sandbox.Decision.Folded), so a module cannot flood the log while the log
// still accounts for everything.
package audit

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/station-dev/station/internal/sandbox"
	"github.com/station-dev/station/internal/store"
)

const (
	// maxBatch is the most decisions stored in one transaction, so that a
	// backlog does not hold the database's write lock for long.
	maxBatch = 256
	// maxPending is the queue length at which Record starts to block.
	maxPending = 8192
)

// retryDelays are the pauses before the second and later attempts to store
// a batch.
var retryDelays = []time.Duration{10 * time.Millisecond, 100 * time.Millisecond, time.Second}

// appender is the part of *store.Store the writer uses.
type appender interface {
	AppendAudit(ctx context.Context, decisions []sandbox.Decision) error
}

// Writer records sandbox decisions asynchronously. It implements
// sandbox.Recorder and is safe for concurrent use.
type Writer struct {
	store       appender
	rate        *rateLimiter // nil: every decision is stored one by one
	log         *slog.Logger
	retryDelays []time.Duration

	wake     chan struct{} // capacity 1: "pending may be non-empty, or closing"
	done     chan struct{} // closed when the loop has stored everything and exited
	stopTick chan struct{} // closed by Close: the ticker stops
	tickDone chan struct{} // closed when the ticker has stopped

	mu       sync.Mutex
	space    sync.Cond          // broadcast when pending is emptied; uses mu
	pending  []sandbox.Decision // recorded, not yet taken by the loop
	spare    []sandbox.Decision // the loop's previous batch, for reuse
	blocked  int                // Record calls waiting for room
	recorded uint64             // decisions accepted by Record
	stored   uint64             // decisions the loop has finished (stored or failed)
	waiters  []waiter           // Flush calls waiting for stored to reach a target
	failed   error              // the first storage failure not yet returned by Flush or Close
	lost     int                // decisions not stored since then
	closing  bool

	closeOnce sync.Once
}

type waiter struct {
	target uint64
	done   chan struct{}
}

// NewWriter returns a Writer that stores decisions in s, rate-limited per
// module, and starts its background goroutines; Close stops them. Failures
// to store are logged to logger (slog.Default() if nil). now is the rate
// limit's clock (nil: time.Now); a test that floods the log passes a still
// one, so that what is summarized does not depend on how fast the machine
// is.
func NewWriter(s *store.Store, logger *slog.Logger, now func() time.Time) *Writer {
	if now == nil {
		now = time.Now
	}
	return newWriter(s, logger, newRateLimiter(defaultLimits, now))
}

// newWriter returns a writer that stores in s, rate-limited by rate (nil:
// every decision is stored one by one).
func newWriter(s appender, logger *slog.Logger, rate *rateLimiter) *Writer {
	if logger == nil {
		logger = slog.Default()
	}
	w := &Writer{
		store:       s,
		rate:        rate,
		log:         logger,
		retryDelays: retryDelays,
		wake:        make(chan struct{}, 1),
		done:        make(chan struct{}),
		stopTick:    make(chan struct{}),
		tickDone:    make(chan struct{}),
		pending:     make([]sandbox.Decision, 0, maxBatch),
	}
	w.space.L = &w.mu
	go w.run()
	if rate != nil {
		go w.tick(tickEvery)
	} else {
		close(w.tickDone)
	}
	return w
}

// tick stores the rate limit's summaries as they fall due, until Close.
func (w *Writer) tick(every time.Duration) {
	defer close(w.tickDone)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			for _, s := range w.rate.due() {
				w.enqueue(s)
			}
		case <-w.stopTick:
			return
		}
	}
}

// Record queues d for storage, or counts it in a summary to come if its
// module is over its rate. It returns as soon as d is queued; it blocks
// only while the queue is full. A decision without a time is stamped with
// the current time. Once Close has begun, Record logs d as an error instead
// of storing it.
func (w *Writer) Record(d sandbox.Decision) {
	if d.Time.IsZero() {
		d.Time = time.Now()
	}
	if w.rate != nil {
		a, summaries := w.rate.admit(d)
		if a == refused {
			w.late(d)
			return
		}
		for _, s := range summaries {
			w.enqueue(s)
		}
		if a == stored {
			w.enqueue(d)
		}
		if a == stored || len(summaries) > 0 {
			w.rate.done(d.Module)
		}
		return
	}
	w.enqueue(d)
}

// late logs d, recorded after the writer was closed.
func (w *Writer) late(d sandbox.Decision) {
	w.log.Error("audit: decision recorded after the audit writer was closed; not stored", decisionAttrs(d)...)
}

// enqueue queues d, blocking while the queue is full.
func (w *Writer) enqueue(d sandbox.Decision) {
	w.mu.Lock()
	if w.closing {
		w.mu.Unlock()
		w.late(d)
		return
	}
	for len(w.pending) >= maxPending {
		w.blocked++
		w.space.Wait()
		w.blocked--
	}
	w.pending = append(w.pending, d)
	w.recorded++
	first := len(w.pending) == 1
	w.mu.Unlock()
	if first {
		w.signal()
	}
}

// signal wakes the loop without blocking.
func (w *Writer) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// Flush waits until every decision recorded before the call has been
// handed to the store, and with them the summaries of what the rate limit
// has counted, as far as each module's summary rows of the last Window
// allow (counts beyond them are stored when a row is free, or at Close). It
// returns an error if storing any decision failed since the last Flush or
// Close that returned an error, or ctx's error if it ends first.
func (w *Writer) Flush(ctx context.Context) error {
	w.flushSummaries()
	w.mu.Lock()
	target := w.recorded
	if w.stored >= target {
		err := w.takeFailed()
		w.mu.Unlock()
		return err
	}
	wt := waiter{target: target, done: make(chan struct{})}
	w.waiters = append(w.waiters, wt)
	w.mu.Unlock()
	select {
	case <-wt.done:
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.takeFailed()
	case <-ctx.Done():
		return fmt.Errorf("flush audit log: %w", ctx.Err())
	}
}

// Close stores everything recorded so far, the summaries of every count the
// rate limit holds included, and stops the writer. Decisions recorded once
// Close has begun are logged, not stored. If ctx ends first, Close returns
// its error and the writer finishes storing in the background.
func (w *Writer) Close(ctx context.Context) error {
	w.closeOnce.Do(func() { go w.shutdown() })
	select {
	case <-w.done:
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.takeFailed()
	case <-ctx.Done():
		return fmt.Errorf("close audit log: %w", ctx.Err())
	}
}

// shutdown stops the ticker, queues the rate limit's final summaries (after
// which Record refuses, so no count is left behind), waits for the Record
// calls admitted before them to queue what they were given, and lets the
// loop end once the queue is stored.
func (w *Writer) shutdown() {
	if w.rate != nil {
		close(w.stopTick)
		<-w.tickDone
		for _, s := range w.rate.final() {
			w.enqueue(s)
		}
		for !w.rate.settled() {
			time.Sleep(time.Millisecond)
		}
	}
	w.mu.Lock()
	w.closing = true
	w.mu.Unlock()
	w.signal()
}

// flushSummaries queues the summaries of decisions the rate limit holds, as
// far as the modules' summary rows allow.
func (w *Writer) flushSummaries() {
	if w.rate == nil {
		return
	}
	for _, s := range w.rate.flush() {
		w.enqueue(s)
	}
}

// takeFailed returns and clears the pending storage failure. w.mu is held.
func (w *Writer) takeFailed() error {
	if w.failed == nil {
		return nil
	}
	err := fmt.Errorf("audit: %d decisions not stored (they are in the station log): %w", w.lost, w.failed)
	w.failed, w.lost = nil, 0
	return err
}

// run is the writer's goroutine: it takes whatever is pending and stores it,
// until closing with nothing left to store.
func (w *Writer) run() {
	defer close(w.done)
	for {
		w.mu.Lock()
		for len(w.pending) == 0 && !(w.closing && w.blocked == 0) {
			w.mu.Unlock()
			<-w.wake
			w.mu.Lock()
		}
		if len(w.pending) == 0 {
			w.mu.Unlock()
			return
		}
		batch := w.pending
		w.pending, w.spare = w.spare[:0], nil
		if w.blocked > 0 {
			w.space.Broadcast()
		}
		w.mu.Unlock()

		for i := 0; i < len(batch); i += maxBatch {
			chunk := batch[i:min(i+maxBatch, len(batch))]
			err := w.store1(chunk)
			w.mu.Lock()
			w.stored += uint64(len(chunk))
			if err != nil {
				if w.failed == nil {
					w.failed = err
				}
				w.lost += len(chunk)
			}
			w.notify()
			w.mu.Unlock()
		}

		clear(batch) // release the strings
		w.mu.Lock()
		w.spare = batch[:0]
		w.mu.Unlock()
	}
}

// notify releases the Flush calls whose decisions are all stored. w.mu is
// held.
func (w *Writer) notify() {
	kept := w.waiters[:0]
	for _, wt := range w.waiters {
		if wt.target <= w.stored {
			close(wt.done)
		} else {
			kept = append(kept, wt)
		}
	}
	clear(w.waiters[len(kept):])
	w.waiters = kept
}

// store1 stores one chunk, retrying after the configured delays. If every
// attempt fails, each decision is written to the log so that none is lost
// silently.
func (w *Writer) store1(chunk []sandbox.Decision) error {
	var err error
	for attempt := 0; ; attempt++ {
		if err = w.store.AppendAudit(context.Background(), chunk); err == nil {
			return nil
		}
		if attempt >= len(w.retryDelays) {
			break
		}
		w.log.Warn("audit: storing decisions failed; retrying", "decisions", len(chunk), "err", err)
		time.Sleep(w.retryDelays[attempt])
	}
	w.log.Error("audit: storing decisions failed; writing them to the log instead", "decisions", len(chunk), "err", err)
	for _, d := range chunk {
		w.log.Error("audit: decision not stored", decisionAttrs(d)...)
	}
	return err
}

func decisionAttrs(d sandbox.Decision) []any {
	return []any{
		"time", d.Time, "module", d.Module, "command", d.Command, "capability", string(d.Capability),
		"target", d.Target, "allowed", d.Allowed, "reason", d.Reason, "trace", d.Trace, "folded", d.Folded,
	}
}
