package hubclient_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/hubclient"
)

// fakeStream serves /v1/events with the given body per connection attempt
// (then holds the connection open until the client leaves).
func fakeStream(t *testing.T, bodies ...string) (*httptest.Server, *atomic.Int64) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := int(n.Add(1)) - 1
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		if i < len(bodies) {
			fmt.Fprint(w, bodies[i])
		}
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func event(seq int64, kind string) string {
	return fmt.Sprintf("id: %d\nevent: %s\ndata: {\"seq\":%d,\"kind\":%q}\n\n", seq, kind, seq, kind)
}

// TestSubscribeSurvivesABadStream: a stream that goes silent, or sends an
// event whose id contradicts its data, is dropped and reconnected from the
// last good cursor; no event is handled twice.
func TestSubscribeSurvivesABadStream(t *testing.T) {
	srv, conns := fakeStream(t,
		event(1, "team.created")+": then silence\n\n",
		event(2, "team.lockfile")+"id: 9\ndata: {\"seq\":3,\"kind\":\"team.lockfile\"}\n\n",
		event(2, "team.lockfile")+event(3, "team.lockfile"),
	)
	c, err := hubclient.New(srv.URL, &http.Client{Transport: &http.Transport{}}, hubclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var got []int64
	var reasons []string
	var cursors []int64
	err = c.Subscribe(ctx, hubclient.SubscribeOptions{
		MinBackoff:   time.Millisecond,
		IdleTimeout:  time.Second, // only the first stream goes silent; a busy machine must not fake silence
		OnConnect:    func(c int64) { cursors = append(cursors, c) },
		OnDisconnect: func(err error) { reasons = append(reasons, err.Error()) },
	}, func(ev hub.Event) error {
		got = append(got, ev.Seq)
		if ev.Seq == 3 {
			cancel()
		}
		return nil
	})
	if err != context.Canceled {
		t.Errorf("Subscribe = %v, want context.Canceled", err)
	}
	if fmt.Sprint(got) != "[1 2 3]" {
		t.Errorf("handled %v, want [1 2 3] once each", got)
	}
	if fmt.Sprint(cursors) != "[0 1 2]" || conns.Load() != 3 {
		t.Errorf("connected from cursors %v (%d connections), want [0 1 2]", cursors, conns.Load())
	}
	if len(reasons) != 2 || !strings.Contains(reasons[0], "silent") || !strings.Contains(reasons[1], "does not match its seq") {
		t.Errorf("disconnect reasons = %q", reasons)
	}
}

// TestSubscribeStopsOnPermanentErrors: an answer retrying cannot fix ends
// the subscription with that error.
func TestSubscribeStopsOnPermanentErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(401)
		fmt.Fprint(w, `{"error":{"code":1100,"name":"unauthenticated","message":"the token is unknown or revoked"}}`)
	}))
	defer srv.Close()
	c, _ := hubclient.New(srv.URL, &http.Client{Transport: &http.Transport{}}, hubclient.Options{})
	err := c.Subscribe(context.Background(), hubclient.SubscribeOptions{MinBackoff: time.Millisecond}, func(hub.Event) error { return nil })
	if hub.CodeOf(err) != hub.CodeUnauthenticated {
		t.Errorf("Subscribe = %v, want unauthenticated", err)
	}
}

// The attacks below are hubs (httptest on 127.0.0.1) that break the event
// stream's bounds: an event that never ends, one huge event, an event left
// unfinished, and a stream of nothing but comments. Each must end the
// stream with a reason that names the bound, reconnect, and cost the
// station a bounded amount of memory, measured as the TotalAlloc delta of
// the whole run (hub fixture included).

// hostile serves /v1/events: connection i is served by serve[i] (the last
// one for any later connection), then held open until the client leaves.
func hostile(t *testing.T, serve ...func(w io.Writer, flush func(), done <-chan struct{})) *httptest.Server {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := min(int(n.Add(1))-1, len(serve)-1)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		f := w.(http.Flusher)
		serve[i](w, f.Flush, r.Context().Done())
		f.Flush()
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	return srv
}

// send writes s.
func send(s string) func(io.Writer, func(), <-chan struct{}) {
	return func(w io.Writer, flush func(), _ <-chan struct{}) { io.WriteString(w, s) }
}

// flood writes head, then chunk over and over until total bytes went out
// (total < 0: until the client leaves), then tail.
func flood(head, chunk string, total int, tail string) func(io.Writer, func(), <-chan struct{}) {
	return func(w io.Writer, flush func(), done <-chan struct{}) {
		io.WriteString(w, head)
		b := []byte(chunk)
		for sent := 0; total < 0 || sent < total; sent += len(b) {
			select {
			case <-done:
				return
			default:
			}
			if _, err := w.Write(b); err != nil {
				return
			}
		}
		io.WriteString(w, tail)
	}
}

// spaces is a data line of 64 KiB of JSON white space.
var spaces = "data: " + strings.Repeat(" ", 64<<10-7) + "\n"

type attackRun struct {
	mu       sync.Mutex
	reasons  []string
	handled  []int64
	connects []time.Time
	drops    []time.Time
	alloc    uint64 // bytes the process allocated during the run
	err      error
}

// attack subscribes to srv until until says so (checked after every
// callback) or 15 s pass, and measures what the process allocated.
func attack(t *testing.T, srv *httptest.Server, o hubclient.SubscribeOptions, until func(*attackRun) bool) *attackRun {
	t.Helper()
	c, err := hubclient.New(srv.URL, &http.Client{Transport: &http.Transport{}}, hubclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	r := &attackRun{}
	check := func() {
		if until(r) {
			cancel()
		}
	}
	if o.MinBackoff == 0 {
		o.MinBackoff = time.Millisecond
	}
	o.OnConnect = func(int64) {
		r.mu.Lock()
		r.connects = append(r.connects, time.Now())
		r.mu.Unlock()
		check()
	}
	o.OnDisconnect = func(err error) {
		r.mu.Lock()
		r.drops = append(r.drops, time.Now())
		r.reasons = append(r.reasons, err.Error())
		r.mu.Unlock()
		check()
	}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	r.err = c.Subscribe(ctx, o, func(ev hub.Event) error {
		r.mu.Lock()
		r.handled = append(r.handled, ev.Seq)
		r.mu.Unlock()
		check()
		return nil
	})
	runtime.ReadMemStats(&after)
	r.alloc = after.TotalAlloc - before.TotalAlloc
	t.Logf("allocated %.1f MiB; disconnects: %q; handled %v", float64(r.alloc)/(1<<20), r.reasons, r.handled)
	if ctx.Err() == context.DeadlineExceeded {
		t.Errorf("the subscription was still going after 15 s")
	}
	return r
}

// handledOne stops the run once an event was handled.
func handledOne(r *attackRun) bool { return len(r.handled) > 0 }

// maxAttackAlloc is what a run against a hostile hub may allocate: the
// event bound (1 MiB) and the read buffer (64 KiB), with room for the HTTP
// machinery, the fixture and the test — far below what the hubs offer.
const maxAttackAlloc = 8 << 20

// TestSubscribeBoundsANeverEndingEvent: a hub that sends data lines of one
// event and never ends it (32 MiB here; 400 MiB allocated 160 GiB before
// the bound) is dropped once the event passes 1 MiB, and the station
// reconnects and goes on.
func TestSubscribeBoundsANeverEndingEvent(t *testing.T) {
	srv := hostile(t,
		flood("id: 1\nevent: team.created\ndata: {\"seq\":1,\n", spaces, 32<<20, ""),
		send(event(1, "team.created")),
	)
	r := attack(t, srv, hubclient.SubscribeOptions{}, handledOne)
	if len(r.reasons) != 1 || !strings.Contains(r.reasons[0], "event larger than 1 MiB") {
		t.Errorf("disconnect reasons = %q, want one that names the 1 MiB event bound", r.reasons)
	}
	if fmt.Sprint(r.handled) != "[1]" || len(r.connects) != 2 {
		t.Errorf("handled %v over %d connections, want [1] after a reconnect", r.handled, len(r.connects))
	}
	if r.alloc > maxAttackAlloc {
		t.Errorf("the station allocated %d MiB for a never-ending event, want at most %d MiB", r.alloc>>20, maxAttackAlloc>>20)
	}
}

// TestSubscribeRefusesOneHugeEvent: a complete, well-formed event of 16 MiB
// (white space between its JSON tokens, over 256 data lines) is never
// handled: the stream is dropped at 1 MiB.
func TestSubscribeRefusesOneHugeEvent(t *testing.T) {
	srv := hostile(t,
		flood("id: 7\nevent: team.created\ndata: {\"seq\":7,\"kind\":\"team.created\",\"team\":\"acme\"\n", spaces, 16<<20, "data: }\n\n"),
		send(event(1, "team.created")),
	)
	r := attack(t, srv, hubclient.SubscribeOptions{}, handledOne)
	if fmt.Sprint(r.handled) != "[1]" {
		t.Errorf("handled %v, want only [1] (the huge event 7 refused)", r.handled)
	}
	if len(r.reasons) != 1 || !strings.Contains(r.reasons[0], "event larger than 1 MiB") {
		t.Errorf("disconnect reasons = %q, want one that names the 1 MiB event bound", r.reasons)
	}
	if r.alloc > maxAttackAlloc {
		t.Errorf("the station allocated %d MiB for a 16 MiB event, want at most %d MiB", r.alloc>>20, maxAttackAlloc>>20)
	}
}

// TestSubscribeBoundsAnUnfinishedEvent: a hub that keeps an event open with
// a data line now and then (never silent, never large) is dropped when the
// event is not complete within EventTimeout.
func TestSubscribeBoundsAnUnfinishedEvent(t *testing.T) {
	trickle := func(w io.Writer, flush func(), done <-chan struct{}) {
		io.WriteString(w, "id: 1\nevent: team.created\ndata: {\"seq\":1,\n")
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			flush()
			select {
			case <-done:
				return
			case <-tick.C:
			}
			if _, err := io.WriteString(w, "data: \n"); err != nil {
				return
			}
		}
	}
	srv := hostile(t, trickle, send(event(1, "team.created")))
	start := time.Now()
	r := attack(t, srv, hubclient.SubscribeOptions{EventTimeout: 300 * time.Millisecond, IdleTimeout: 10 * time.Second}, handledOne)
	if len(r.reasons) != 1 || !strings.Contains(r.reasons[0], "left an event unfinished for 300ms") {
		t.Errorf("disconnect reasons = %q, want one that names the event time bound", r.reasons)
	}
	if fmt.Sprint(r.handled) != "[1]" {
		t.Errorf("handled %v, want [1] after a reconnect", r.handled)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %s to give up on an unfinished event", d)
	}
}

// TestSubscribeBoundsComments: comments, and blocks without data, are
// what the hub's keep-alive looks like; a stream of nothing else — a flood
// of short comments, one endless comment line, a flood of empty events —
// cannot hold the station (or its memory) without delivering an event: it
// is dropped after 64 KiB of them in a minute. (The hub's own pings, 32
// bytes a minute, keep a quiet stream open.)
func TestSubscribeBoundsComments(t *testing.T) {
	srv := hostile(t,
		flood(": connected\n\n", strings.Repeat(": ping\n\n", 8<<10), -1, ""),
		flood(":", strings.Repeat("x", 64<<10), 32<<20, ""),
		flood("", strings.Repeat("retry: 2000\n\n", 4<<10), -1, ""),
		send(": ping\n\n"+event(1, "team.created")),
	)
	r := attack(t, srv, hubclient.SubscribeOptions{}, handledOne)
	if len(r.reasons) != 3 {
		t.Fatalf("disconnect reasons = %q, want three", r.reasons)
	}
	for _, reason := range r.reasons {
		if !strings.Contains(reason, "64 KiB of comments and empty events in a minute without an event") {
			t.Errorf("disconnect reason %q does not name the comment bound", reason)
		}
	}
	if fmt.Sprint(r.handled) != "[1]" {
		t.Errorf("handled %v, want [1] after the reconnects", r.handled)
	}
	if r.alloc > maxAttackAlloc {
		t.Errorf("the station allocated %d MiB for comments, want at most %d MiB", r.alloc>>20, maxAttackAlloc>>20)
	}
}

// TestSubscribeBacksOffFromABadHub: a stream the station dropped for
// breaking a bound does not reset the backoff, so a hub that always
// misbehaves is reconnected to less and less often (up to MaxBackoff), not
// every MinBackoff.
func TestSubscribeBacksOffFromABadHub(t *testing.T) {
	srv := hostile(t, flood("id: 1\ndata: {\n", spaces, 32<<20, ""))
	r := attack(t, srv, hubclient.SubscribeOptions{MinBackoff: 20 * time.Millisecond, MaxBackoff: 640 * time.Millisecond},
		func(r *attackRun) bool { return len(r.connects) >= 6 })
	if len(r.connects) < 6 || len(r.drops) < 5 {
		t.Fatalf("%d connections, %d drops", len(r.connects), len(r.drops))
	}
	// The waits are drawn from [b/2, b], b doubling from 20 ms: the fifth
	// is at least 160 ms.
	if wait := r.connects[5].Sub(r.drops[4]); wait < 160*time.Millisecond {
		t.Errorf("waited %s before the sixth connection to a hub that broke the bounds five times, want at least 160ms", wait)
	}
}

// TestSubscribeSlowHandler: the time the handler takes (a download, a
// compile) is not the hub's silence nor an unfinished event: the stream
// stays up.
func TestSubscribeSlowHandler(t *testing.T) {
	srv := hostile(t, func(w io.Writer, flush func(), done <-chan struct{}) {
		io.WriteString(w, event(1, "team.lockfile"))
		flush()
		select {
		case <-done:
		case <-time.After(300 * time.Millisecond): // while the station handles event 1
		}
		io.WriteString(w, event(2, "team.lockfile"))
	})
	r := attack(t, srv, hubclient.SubscribeOptions{IdleTimeout: 200 * time.Millisecond, EventTimeout: 200 * time.Millisecond},
		func(r *attackRun) bool {
			if len(r.handled) == 1 {
				time.Sleep(600 * time.Millisecond) // the handler at work, after the hub sent event 1
			}
			return len(r.handled) == 2 || len(r.reasons) > 0
		})
	if fmt.Sprint(r.handled) != "[1 2]" || len(r.reasons) != 0 {
		t.Errorf("handled %v, disconnects %q; want [1 2] on one stream", r.handled, r.reasons)
	}
}

// TestSubscribeReconnectsWhenAsked: a hub that drains asks the station to
// reconnect; the station ends the stream itself (the hub need not close
// it), reconnects after the retry the hub asked for — not its backoff —
// from its cursor, and says why to OnDisconnect. A hub that asks again
// soon after is taken for a broken one: the backoff applies, so no hub can
// make a station reconnect in a loop.
func TestSubscribeReconnectsWhenAsked(t *testing.T) {
	bodies := []string{
		"retry: 2000\n\n" + event(1, "team.created") + ": bye\nevent: reconnect\nretry: 50\n\n",
		"event: reconnect\nretry: 0\n\n",
		event(2, "team.lockfile"),
	}
	type conn struct {
		at          time.Time
		lastEventID string
	}
	var mu sync.Mutex
	var conns []conn
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		i := len(conns)
		conns = append(conns, conn{time.Now(), r.Header.Get("Last-Event-ID")})
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		if i < len(bodies) {
			fmt.Fprint(w, bodies[i])
		}
		w.(http.Flusher).Flush()
		<-r.Context().Done() // the station ends the stream
	}))
	t.Cleanup(srv.Close)
	c, err := hubclient.New(srv.URL, &http.Client{Transport: &http.Transport{}}, hubclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var got []int64
	var reasons []error
	err = c.Subscribe(ctx, hubclient.SubscribeOptions{
		MinBackoff:   time.Second,
		OnDisconnect: func(err error) { reasons = append(reasons, err) },
	}, func(ev hub.Event) error {
		got = append(got, ev.Seq)
		if ev.Seq == 2 {
			cancel()
		}
		return nil
	})
	if err != context.Canceled {
		t.Fatalf("Subscribe = %v", err)
	}
	if fmt.Sprint(got) != "[1 2]" {
		t.Errorf("handled %v, want [1 2]", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(conns) != 3 {
		t.Fatalf("%d connections, want 3", len(conns))
	}
	for i, want := range []string{"0", "1", "1"} {
		if conns[i].lastEventID != want {
			t.Errorf("connection %d: Last-Event-ID %q, want %q", i, conns[i].lastEventID, want)
		}
	}
	if d := conns[1].at.Sub(conns[0].at); d > 400*time.Millisecond {
		t.Errorf("reconnected %s after the first request, want about its 50 ms (not the 1 s backoff)", d)
	}
	if d := conns[2].at.Sub(conns[1].at); d < 500*time.Millisecond {
		t.Errorf("reconnected %s after a second request soon after the first, want the backoff (0.5 s or more)", d)
	}
	for i, r := range reasons[:2] {
		if !errors.Is(r, hubclient.ErrReconnect) {
			t.Errorf("disconnect %d: %v, want ErrReconnect", i, r)
		}
	}
}

// TestSubscribeIsNoLoopForAHubThatAlwaysAsksToReconnect: a hub (hostile,
// or a draining node the balancer keeps choosing) that answers every
// stream with a reconnect request at once is followed promptly once, then
// with a backoff that grows: over 3 seconds a handful of connections, not
// one every half second.
func TestSubscribeIsNoLoopForAHubThatAlwaysAsksToReconnect(t *testing.T) {
	var conns atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conns.Add(1)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		fmt.Fprint(w, "event: reconnect\nretry: 0\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	c, err := hubclient.New(srv.URL, &http.Client{Transport: &http.Transport{}}, hubclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	err = c.Subscribe(ctx, hubclient.SubscribeOptions{MinBackoff: 200 * time.Millisecond}, func(hub.Event) error { return nil })
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Subscribe = %v", err)
	}
	// Prompt once, then waits of 0.1–0.2, 0.2–0.4, 0.4–0.8, 0.8–1.6 s:
	// at most 6 connections in 3 s. Resetting the backoff on each (the
	// loop) would make 10 or more.
	if n := conns.Load(); n > 6 {
		t.Errorf("%d connections in 3 s to a hub that asks to reconnect at once each time, want the backoff to grow (at most 6)", n)
	}
}
