package audit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/station-dev/station/internal/fixture"
	"github.com/station-dev/station/internal/sandbox"
	"github.com/station-dev/station/internal/store"
)

func openStore(t testing.TB) *store.Store {
	t.Helper()
	s, err := store.Open(filepath.Join(t.TempDir(), "station.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// fakeStore is an appender whose behaviour a test controls.
type fakeStore struct {
	mu      sync.Mutex
	got     []sandbox.Decision
	calls   int
	failN   int           // fail this many calls first
	gate    chan struct{} // if set, each call waits for a value (or close)
	entered chan struct{} // if set, gets a value when a call starts (never blocks)
}

func (f *fakeStore) AppendAudit(_ context.Context, ds []sandbox.Decision) error {
	select {
	case f.entered <- struct{}{}:
	default:
	}
	if f.gate != nil {
		<-f.gate
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.calls <= f.failN {
		return errors.New("disk on fire")
	}
	f.got = append(f.got, ds...)
	return nil
}

func (f *fakeStore) stored() []sandbox.Decision {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]sandbox.Decision(nil), f.got...)
}

func testLogger() (*slog.Logger, *fixture.SyncBuffer) {
	buf := &fixture.SyncBuffer{}
	return slog.New(slog.NewTextHandler(buf, nil)), buf
}

func decision(module string, i int) sandbox.Decision {
	return sandbox.Decision{
		Time:       time.Unix(1_700_000_000, int64(i)).UTC(),
		Module:     module,
		Command:    "cmd-" + module,
		Capability: sandbox.Network,
		Target:     fmt.Sprintf("%s-%d.example:443", module, i),
		Allowed:    i%7 != 0,
		Reason:     "reason of " + module,
	}
}

// TestConcurrentRecord records from many goroutines at once into a real
// store and checks that every decision is stored exactly once, attributed
// to the goroutine's module, in each goroutine's recording order. (Each
// module stays within its rate limit: no decision is summarized.)
func TestConcurrentRecord(t *testing.T) {
	s := openStore(t)
	w := NewWriter(s, slog.New(slog.DiscardHandler), nil)
	const goroutines, each = 16, RecordsPerWindow
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			module := fmt.Sprintf("owner/m%d", g)
			for i := range each {
				w.Record(decision(module, i))
			}
		}()
	}
	wg.Wait()
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	recs, err := s.Audit(context.Background(), store.AuditFilter{Limit: goroutines * each * 2})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(recs), goroutines*each; got != want {
		t.Fatalf("stored %d decisions, want %d", got, want)
	}
	next := map[string]int{}
	for _, r := range recs {
		i := next[r.Module]
		if want := decision(r.Module, i); r.Decision != want {
			t.Fatalf("record %d of %s = %+v, want %+v", i, r.Module, r.Decision, want)
		}
		next[r.Module] = i + 1
	}
	if len(next) != goroutines {
		t.Errorf("records of %d modules, want %d", len(next), goroutines)
	}
}

func TestFlush(t *testing.T) {
	s := openStore(t)
	w := NewWriter(s, nil, nil)
	defer w.Close(context.Background())
	ctx := context.Background()
	const each = RecordsPerWindow / 3 // within the rate limit
	for round := 1; round <= 3; round++ {
		for i := range each {
			w.Record(decision("owner/m", i))
		}
		if err := w.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		recs, err := s.Audit(ctx, store.AuditFilter{Limit: 10000})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := len(recs), each*round; got != want {
			t.Errorf("after flush %d: %d decisions stored, want %d", round, got, want)
		}
	}
	if err := w.Flush(ctx); err != nil {
		t.Errorf("Flush with nothing pending = %v", err)
	}
}

func TestZeroTimeIsStamped(t *testing.T) {
	f := &fakeStore{}
	w := newWriter(f, nil, nil)
	before := time.Now()
	w.Record(sandbox.Decision{Module: "owner/m"})
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := f.stored()
	if len(got) != 1 || got[0].Time.Before(before) {
		t.Errorf("stored %+v, want one decision stamped at or after %v", got, before)
	}
}

// TestBackpressure checks that Record blocks when the queue is full, instead
// of dropping, and resumes when the store catches up.
func TestBackpressure(t *testing.T) {
	f := &fakeStore{gate: make(chan struct{}), entered: make(chan struct{}, 1)}
	w := newWriter(f, nil, nil)
	w.Record(decision("owner/m", 0))
	<-f.entered // the loop holds decision 0 inside the store
	for i := 1; i <= maxPending; i++ {
		w.Record(decision("owner/m", i)) // fills the queue; must not block
	}
	returned := make(chan struct{})
	go func() {
		w.Record(decision("owner/m", maxPending+1))
		close(returned)
	}()
	fixture.Eventuallyf(t, 10*time.Second, func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.blocked == 1
	}, "Record to block on the full queue")
	select {
	case <-returned:
		t.Fatal("Record returned while the queue was full")
	default:
	}
	close(f.gate) // the store catches up
	<-returned
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := f.stored()
	if len(got) != maxPending+2 {
		t.Fatalf("stored %d decisions, want %d", len(got), maxPending+2)
	}
	for i, d := range got {
		if d.Target != decision("owner/m", i).Target {
			t.Fatalf("decision %d = %s, out of order", i, d.Target)
		}
	}
}

func TestBatchesAreBounded(t *testing.T) {
	f := &fakeStore{gate: make(chan struct{}), entered: make(chan struct{}, 1)}
	sizes := &batchSizes{appender: f}
	w := newWriter(sizes, nil, nil)
	w.Record(decision("owner/m", 0))
	<-f.entered
	for i := 1; i <= 3*maxBatch; i++ {
		w.Record(decision("owner/m", i))
	}
	close(f.gate)
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, n := range sizes.get() {
		if n > maxBatch {
			t.Errorf("a batch of %d decisions, want at most %d", n, maxBatch)
		}
	}
	if got, want := len(f.stored()), 3*maxBatch+1; got != want {
		t.Errorf("stored %d, want %d", got, want)
	}
}

type batchSizes struct {
	appender
	mu    sync.Mutex
	sizes []int
}

func (b *batchSizes) AppendAudit(ctx context.Context, ds []sandbox.Decision) error {
	b.mu.Lock()
	b.sizes = append(b.sizes, len(ds))
	b.mu.Unlock()
	return b.appender.AppendAudit(ctx, ds)
}

func (b *batchSizes) get() []int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]int(nil), b.sizes...)
}

// TestStoreFailure checks that decisions the store refuses are retried,
// then logged, and that Flush reports the loss once.
func TestStoreFailure(t *testing.T) {
	f := &fakeStore{failN: 1 << 30, gate: make(chan struct{}), entered: make(chan struct{}, 1)}
	log, buf := testLogger()
	w := newWriter(f, log, nil)
	w.retryDelays = []time.Duration{0, 0}
	// Hold the first store call so that the batches are deterministic:
	// decision 0 alone, then decisions 1 and 2 together.
	w.Record(decision("owner/m", 0))
	<-f.entered
	for i := 1; i < 3; i++ {
		w.Record(decision("owner/m", i))
	}
	close(f.gate)
	err := w.Flush(context.Background())
	if err == nil || !strings.Contains(err.Error(), "3 decisions not stored") || !strings.Contains(err.Error(), "disk on fire") {
		t.Fatalf("Flush = %v, want a storage error counting 3 decisions", err)
	}
	f.mu.Lock()
	calls := f.calls
	f.mu.Unlock()
	if calls != 6 {
		t.Errorf("store called %d times, want 6 (2 batches, each 1 try + 2 retries)", calls)
	}
	out := buf.String()
	for i := range 3 {
		if want := decision("owner/m", i).Target; !strings.Contains(out, want) {
			t.Errorf("log does not name the lost decision %s:\n%s", want, out)
		}
	}
	if err := w.Flush(context.Background()); err != nil {
		t.Errorf("second Flush = %v, want nil (the loss was reported once)", err)
	}
	if err := w.Close(context.Background()); err != nil {
		t.Errorf("Close = %v", err)
	}
}

func TestRetrySucceeds(t *testing.T) {
	f := &fakeStore{failN: 2}
	w := newWriter(f, slog.New(slog.DiscardHandler), nil)
	w.retryDelays = []time.Duration{0, 0, 0}
	w.Record(decision("owner/m", 1))
	if err := w.Close(context.Background()); err != nil {
		t.Fatalf("Close = %v, want nil after a successful retry", err)
	}
	if got := len(f.stored()); got != 1 {
		t.Errorf("stored %d, want 1", got)
	}
}

func TestRecordAfterClose(t *testing.T) {
	f := &fakeStore{}
	log, buf := testLogger()
	w := newWriter(f, log, nil)
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	w.Record(decision("owner/late", 1))
	if got := len(f.stored()); got != 0 {
		t.Errorf("stored %d decisions after Close", got)
	}
	if out := buf.String(); !strings.Contains(out, "owner/late") || !strings.Contains(out, "not stored") {
		t.Errorf("a decision recorded after Close was dropped silently; log:\n%s", out)
	}
	if err := w.Close(context.Background()); err != nil {
		t.Errorf("second Close = %v", err)
	}
	if err := w.Flush(context.Background()); err != nil {
		t.Errorf("Flush after Close = %v", err)
	}
}

func TestFlushAndCloseHonourContext(t *testing.T) {
	f := &fakeStore{gate: make(chan struct{}), entered: make(chan struct{}, 1)}
	w := newWriter(f, nil, nil)
	w.Record(decision("owner/m", 0))
	<-f.entered
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := w.Flush(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Flush(cancelled) = %v, want context.Canceled", err)
	}
	if err := w.Close(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Close(cancelled) = %v, want context.Canceled", err)
	}
	close(f.gate)
	if err := w.Close(context.Background()); err != nil {
		t.Errorf("Close = %v", err)
	}
	if got := len(f.stored()); got != 1 {
		t.Errorf("stored %d, want 1", got)
	}
}

// TestCloseWhileRecording closes the writer while goroutines still record:
// every decision is either stored or logged, none vanishes.
func TestCloseWhileRecording(t *testing.T) {
	f := &fakeStore{}
	log, buf := testLogger()
	w := newWriter(f, log, nil)
	const goroutines, each = 8, 500
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				w.Record(decision(fmt.Sprintf("owner/m%d", g), i))
			}
		}()
	}
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	stored := len(f.stored())
	logged := strings.Count(buf.String(), "after the audit writer was closed")
	if stored+logged != goroutines*each {
		t.Errorf("stored %d + logged %d = %d, want %d", stored, logged, stored+logged, goroutines*each)
	}
}

// BenchmarkRecord measures the cost a gate pays per decision: Record into a
// store that keeps up.
func BenchmarkRecord(b *testing.B) {
	w := newWriter(nopStore{}, nil, nil)
	defer w.Close(context.Background())
	d := decision("owner/m", 1)
	b.ReportAllocs()
	for b.Loop() {
		w.Record(d)
	}
}

// BenchmarkRecordParallel is BenchmarkRecord with every CPU recording.
func BenchmarkRecordParallel(b *testing.B) {
	w := newWriter(nopStore{}, nil, nil)
	defer w.Close(context.Background())
	d := decision("owner/m", 1)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			w.Record(d)
		}
	})
}

// BenchmarkRecordStore records into a real SQLite store and includes the
// final flush: the sustained throughput of the audit log.
func BenchmarkRecordStore(b *testing.B) {
	w := NewWriter(openStore(b), nil, nil)
	d := decision("owner/m", 1)
	for b.Loop() {
		w.Record(d)
	}
	if err := w.Close(context.Background()); err != nil {
		b.Fatal(err)
	}
}

type nopStore struct{}

func (nopStore) AppendAudit(context.Context, []sandbox.Decision) error { return nil }
