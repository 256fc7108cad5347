package hubserver

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"
)

type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func TestLimiterRefills(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1000, 0)}
	l := newLimiter(2, 3, clk.now) // 2 per second, burst 3
	for i := range 3 {
		if ok, _ := l.allow(context.Background(), "a"); !ok {
			t.Fatalf("request %d refused within the burst", i)
		}
	}
	ok, wait := l.allow(context.Background(), "a")
	if ok || wait != 500*time.Millisecond {
		t.Errorf("4th request: ok %v, wait %v; want refused, 500ms", ok, wait)
	}
	if ok, _ := l.allow(context.Background(), "b"); !ok {
		t.Error("another key shares a's bucket")
	}
	clk.t = clk.t.Add(500 * time.Millisecond)
	if ok, _ := l.allow(context.Background(), "a"); !ok {
		t.Error("refused after a token refilled")
	}
	clk.t = clk.t.Add(time.Hour)
	for i := range 3 {
		if ok, _ := l.allow(context.Background(), "a"); !ok {
			t.Errorf("request %d after an hour refused: the bucket must refill to the burst, not beyond", i)
		}
	}
	if ok, _ := l.allow(context.Background(), "a"); ok {
		t.Error("the bucket refilled beyond its burst")
	}
}

// A refused request takes nothing: however often a client retries too
// early, it waits only for the token it lacks.
func TestLimiterRefusalTakesNothing(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1000, 0)}
	l := newLimiter(1, 1, clk.now)
	if ok, _ := l.allow(context.Background(), "a"); !ok {
		t.Fatal("the first request was refused")
	}
	for i := range 5 {
		clk.t = clk.t.Add(100 * time.Millisecond)
		want := time.Duration(9-i) * 100 * time.Millisecond
		if ok, wait := l.allow(context.Background(), "a"); ok || (wait-want).Abs() > time.Microsecond {
			t.Errorf("retry %d: ok %v, wait %v; want refused, %v", i, ok, wait, want)
		}
	}
	clk.t = clk.t.Add(500 * time.Millisecond)
	if ok, wait := l.allow(context.Background(), "a"); !ok {
		t.Errorf("refused a second after the last token (wait %v): the refusals took tokens", wait)
	}
}

func TestLimiterBoundsItsTable(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1000, 0)}
	l := newLimiter(1, 2, clk.now)
	l.maxKeys = 3
	for _, k := range []string{"a", "b", "c"} {
		l.allow(context.Background(), k)
	}
	if ok, _ := l.allow(context.Background(), "d"); ok {
		t.Error("a new key was admitted to a full table of busy buckets")
	}
	clk.t = clk.t.Add(2 * time.Minute) // every bucket is full again: swept
	if ok, _ := l.allow(context.Background(), "d"); !ok {
		t.Error("a new key was refused after idle buckets could be swept")
	}
	if len(l.buckets) != 1 {
		t.Errorf("%d buckets after the sweep, want 1", len(l.buckets))
	}
}

func TestClientKey(t *testing.T) {
	tests := []struct{ in, want string }{
		{"192.0.2.7:5000", "addr:192.0.2.7"},
		{"[::ffff:192.0.2.7]:5000", "addr:192.0.2.7"},
		{"[2001:db8:1:2:3:4:5:6]:5000", "addr:2001:db8:1:2::/64"},
		{"[2001:db8:1:2:ffff::1]:1", "addr:2001:db8:1:2::/64"},
		{"@", "addr:@"},
	}
	for _, tt := range tests {
		if got := clientKey(tt.in); got != tt.want {
			t.Errorf("clientKey(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestRelayDropsSlowSubscribers: a subscriber whose buffer is full is
// dropped (its channel closed) instead of holding memory or the fan-out;
// others still receive.
func TestRelayDropsSlowSubscribers(t *testing.T) {
	r := newRelay(nil, slog.New(slog.DiscardHandler), newMetrics(), 0)
	slow := r.subscribe("dave")
	fast := r.subscribe("erin")
	for i := range subscriberBuffer + 1 {
		r.fanout(&frame{seq: int64(i + 1)}, nil)
		<-fast.ch
	}
	n := 0
	for range slow.ch {
		n++
	}
	if n != subscriberBuffer {
		t.Errorf("slow subscriber got %d events before its channel closed, want %d", n, subscriberBuffer)
	}
	if _, ok := r.subs[fast]; !ok {
		t.Error("the fast subscriber was dropped")
	}
	r.unsubscribe(slow) // after a drop: no double close
	r.unsubscribe(fast)
	r.unsubscribe(fast)

	// Team events go only to the audience.
	a, b := r.subscribe("dave"), r.subscribe("mallory")
	r.fanout(&frame{seq: 1, data: []byte("event: team")}, map[string]bool{"dave": true})
	select {
	case <-b.ch:
		t.Error("a team event reached a non-member")
	default:
	}
	if f := <-a.ch; string(f.data) != "event: team" {
		t.Errorf("member got %q", f.data)
	}
}

func TestRelayStopsWithItsContext(t *testing.T) {
	r := newRelay(nil, slog.New(slog.DiscardHandler), newMetrics(), 0)
	s := r.subscribe("dave")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.run(ctx); close(done) }()
	cancel()
	<-done
	if _, ok := <-s.ch; ok {
		t.Error("a subscriber's channel is open after the relay stopped")
	}
}

type failingShared struct{ calls int }

func (f *failingShared) TakeToken(context.Context, string, float64, int, time.Time) (bool, time.Duration, error) {
	f.calls++
	return false, 0, errors.New("connection refused")
}

// TestLimiterFallsBackToItsOwnBuckets: when the shared buckets fail, the
// node's own decide — still limiting — and each such decision is counted.
func TestLimiterFallsBackToItsOwnBuckets(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1000, 0)}
	l := newLimiter(1, 2, clk.now)
	l.log = slog.New(slog.DiscardHandler)
	f := &failingShared{}
	l.shared = f
	fell := 0
	l.fellBack = func() { fell++ }
	for i := range 2 {
		if ok, _ := l.allow(context.Background(), "a"); !ok {
			t.Fatalf("request %d refused within the burst while the shared buckets fail", i)
		}
	}
	if ok, _ := l.allow(context.Background(), "a"); ok {
		t.Error("past the burst the node's own bucket let a request through")
	}
	if f.calls != 2 || fell != 2 {
		t.Errorf("shared asked %d times, fallbacks counted %d; want 2 and 2 (the refusal never reached the database)", f.calls, fell)
	}
}
