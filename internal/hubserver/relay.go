package hubserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/station-dev/station/hub"
)

// The relay delivers the event log to connected stations.
//
// The log in the Store is the only source of truth. A handler that changes
// state appends its event in the same transaction and then calls notify;
// one goroutine (run) reads the log from where it left off, in sequence
// order, and fans each event out to the subscribers that may see it. A
// stream first replays the log from the client's cursor out of the Store,
// then forwards what the fan-out sends it, skipping what it already sent.
// So an event reaches a stream exactly once and in order, whether it was
// committed before the stream connected, during its replay, or after.
//
// A subscriber that does not keep up (its buffer of subscriberBuffer events
// is full) is dropped: its stream ends and the station reconnects from its
// cursor, catching up from the Store. Memory per stream stays bounded.
//
// What the fan-out hands each stream is one *frame shared by all of them:
// the event encoded once as a server-sent event. A stream's buffer then holds
// pointers (2 KiB), not events (64 KiB), and a publish costs one encoding,
// not one per stream.

const (
	// subscriberBuffer is how many events may wait for a slow stream.
	subscriberBuffer = 256
	// relayPage is how many events one Store read returns.
	relayPage = 256
)

type relay struct {
	store   Store
	log     *slog.Logger
	metrics *metrics
	wake    chan struct{}
	last    int64 // the last event fanned out; owned by run
	// fanned is last, for the metrics.
	fanned atomic.Int64

	mu   sync.Mutex
	subs map[*subscriber]struct{}
}

type subscriber struct {
	account string
	// ch receives the events account may see; the relay closes it when it
	// drops the subscriber.
	ch chan *frame
}

// frame is one event of the log as the streams send it.
type frame struct {
	seq  int64
	data []byte // the server-sent event (formatEvent); never changed once sent
}

func newRelay(st Store, log *slog.Logger, m *metrics, last int64) *relay {
	r := &relay{store: st, log: log, metrics: m, last: last, wake: make(chan struct{}, 1), subs: map[*subscriber]struct{}{}}
	r.fanned.Store(last)
	return r
}

// notify tells the relay that the log has grown. It never blocks.
func (r *relay) notify() {
	select {
	case r.wake <- struct{}{}:
	default: // a wake-up is already pending; it will read everything
	}
}

func (r *relay) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			r.mu.Lock()
			for s := range r.subs {
				delete(r.subs, s)
				close(s.ch)
			}
			r.mu.Unlock()
			return
		case <-r.wake:
		}
		if err := r.drain(ctx); err != nil && ctx.Err() == nil {
			r.metrics.relayErrors.inc(labels{})
			r.log.Error("relay: read the event log", "err", err)
			time.AfterFunc(time.Second, r.notify) // retry; streams can also reconnect
		}
	}
}

// drain fans out every event after r.last.
func (r *relay) drain(ctx context.Context) error {
	for {
		evs, err := r.store.EventsAfter(ctx, r.last, relayPage)
		if err != nil {
			return err
		}
		for _, ev := range evs {
			var audience map[string]bool
			if ev.Team != "" {
				members, err := r.store.Members(ctx, ev.Team)
				if err != nil {
					return err
				}
				audience = map[string]bool{}
				if ev.Kind == hub.EventMemberLeft || ev.Kind == hub.EventMemberRemoved {
					audience[ev.Account] = true // the one team event a non-member sees
				}
				for _, m := range members {
					audience[m] = true
				}
			}
			// Counted before the fan-out: a stream that has the event
			// finds it counted.
			r.last = ev.Seq
			r.fanned.Store(ev.Seq)
			r.metrics.relayEvents.inc(labels{})
			r.metrics.relayDelay.observe(labels{}, max(time.Since(ev.Time).Seconds(), 0))
			var b bytes.Buffer
			formatEvent(&b, ev)
			r.fanout(&frame{seq: ev.Seq, data: b.Bytes()}, audience)
		}
		if len(evs) < relayPage {
			return nil
		}
	}
}

// fanout sends f to every subscriber in audience (everyone when nil).
func (r *relay) fanout(f *frame, audience map[string]bool) {
	var sent, dropped uint64
	r.mu.Lock()
	for s := range r.subs {
		if audience != nil && !audience[s.account] {
			continue
		}
		select {
		case s.ch <- f:
			sent++
		default:
			delete(r.subs, s)
			close(s.ch)
			dropped++
			r.log.Warn("relay: dropped a stream that did not keep up; the station will reconnect", "account", s.account)
		}
	}
	r.mu.Unlock()
	r.metrics.relayDelivers.add(labels{}, sent)
	if dropped > 0 {
		r.metrics.relayDropped.add(labels{}, dropped)
	}
}

// subscribers returns how many streams are subscribed.
func (r *relay) subscribers() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.subs)
}

func (r *relay) subscribe(account string) *subscriber {
	s := &subscriber{account: account, ch: make(chan *frame, subscriberBuffer)}
	r.mu.Lock()
	r.subs[s] = struct{}{}
	r.mu.Unlock()
	return s
}

func (r *relay) unsubscribe(s *subscriber) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.subs[s]; ok {
		delete(r.subs, s)
		close(s.ch)
	}
}

// parseCursor reads a cursor: a sequence number, 0 for the beginning.
func parseCursor(v string) (int64, error) {
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, hub.Errorf(hub.CodeBadRequest, "cursor %q: want a non-negative integer, the seq of the last event received", clip(v))
	}
	return n, nil
}

// position reads the cursor and the end of the log, refusing a cursor
// beyond it.
func (s *Server) position(c *call, v string) (cursor, last int64, err error) {
	if cursor, err = parseCursor(v); err != nil {
		return 0, 0, err
	}
	if last, err = s.store.LastSeq(c.ctx); err != nil {
		return 0, 0, err
	}
	if cursor > last {
		return 0, 0, hub.Errorf(hub.CodeCursorAhead, "cursor %d is past the end of this hub's event log (%d): the hub was restored or replaced; sync again from 0", cursor, last)
	}
	return cursor, last, nil
}

func (s *Server) sync(c *call) error {
	q := c.r.URL.Query()
	cursor, last, err := s.position(c, q.Get("cursor"))
	if err != nil {
		return err
	}
	limit, err := intParam(q.Get("limit"), "limit", 500, 1, 1000)
	if err != nil {
		return err
	}
	evs, err := s.store.EventsFor(c.ctx, c.account, cursor, last, limit)
	if err != nil {
		return err
	}
	resp := hub.SyncResponse{Events: evs, Cursor: last}
	if len(evs) == limit {
		resp.Cursor, resp.More = evs[len(evs)-1].Seq, true
	}
	s.reply(c, http.StatusOK, resp)
	return nil
}

// events streams the event log as server-sent events: a replay from the
// cursor (the Last-Event-ID header, or the cursor query parameter), then
// live events, with a keep-alive comment every heartbeat. The stream ends
// when the client goes away, the hub shuts down, or the stream falls too far
// behind.
//
// On HTTP/1.1 the stream takes the connection from net/http once its
// request is checked (Hijack), answers it itself (close-delimited, no
// chunking) and, after the replay, leaves the live part to a goroutine of
// its own while the handler returns: net/http's buffers of the connection
// (10 KiB), its background reader and the handler's deep stack are freed,
// and an open stream costs the hub a few KiB (BENCHMARKS.md, "The hub at
// scale"). A connection that cannot be taken (HTTP/2) streams through the
// ResponseWriter as before.
func (s *Server) events(c *call) error {
	v := c.r.Header.Get("Last-Event-ID")
	if v == "" {
		v = c.r.URL.Query().Get("cursor")
	}
	st, err := s.openStream(c)
	if err != nil {
		return err
	}
	// From here the stream's context ends when its token is revoked.
	c.ctx = st.ctx
	// Subscribe before reading the end of the log: every event after it is
	// then either in the replay or on the channel.
	sub := s.relay.subscribe(c.account)
	// cleanup ends the stream when events returns — unless the stream's
	// live part was handed to a goroutine of its own, which then does.
	cleanup := func() {
		s.relay.unsubscribe(sub)
		s.closeStream(st)
	}
	defer func() {
		if cleanup != nil {
			cleanup()
		}
	}()
	cursor, last, err := s.position(c, v)
	if errors.Is(context.Cause(c.ctx), errTokenRevoked) {
		return hub.Errorf(hub.CodeUnauthenticated, "the token was revoked: log in again with `station hub login`")
	}
	if err != nil {
		return err
	}

	out, err := s.startStream(c, st)
	if err != nil {
		return nil // the client went away
	}
	unsubscribe := cleanup
	cleanup = func() { out.close(); unsubscribe() }
	// The client reconnects after 2 s if the stream breaks.
	fmt.Fprintf(&out.buf, "retry: 2000\n: connected, cursor %d\n\n", cursor)
	if err := out.flush(); err != nil {
		return nil
	}
	for {
		evs, err := s.store.EventsFor(c.ctx, c.account, cursor, last, relayPage)
		if err != nil && c.ctx.Err() != nil {
			return nil // the client went away, or the token was revoked, during the replay
		}
		if err != nil {
			return err
		}
		for _, ev := range evs {
			formatEvent(&out.buf, ev)
			cursor = ev.Seq
		}
		if len(evs) > 0 {
			if err := out.flush(); err != nil {
				return nil
			}
		}
		if len(evs) < relayPage {
			break
		}
	}
	sent := last // every event up to last was examined by the replay
	if out.conn == nil {
		s.forward(out, st, sub, sent)
		return nil
	}
	end := cleanup
	cleanup = nil
	go func() {
		defer end()
		s.forward(out, st, sub, sent)
	}()
	return nil
}

// sseOut is where a stream writes: the connection it took from net/http, or
// (when it could not) the ResponseWriter.
type sseOut struct {
	buf   bytes.Buffer
	conn  net.Conn                 // nil: through w
	w     http.ResponseWriter      // when conn is nil
	rc    *http.ResponseController // of w
	close func()                   // ends the stream's connection (or nothing)
}

// sseWriteTimeout bounds each write: a client that stops reading is dropped.
const sseWriteTimeout = 30 * time.Second

// flush sends what is in buf.
func (o *sseOut) flush() error {
	if o.conn != nil {
		_ = o.conn.SetWriteDeadline(time.Now().Add(sseWriteTimeout))
		_, err := o.conn.Write(o.buf.Bytes())
		o.buf.Reset()
		return err
	}
	_ = o.rc.SetWriteDeadline(time.Now().Add(sseWriteTimeout))
	if _, err := o.w.Write(o.buf.Bytes()); err != nil {
		return err
	}
	o.buf.Reset()
	return o.rc.Flush()
}

// errClientGone ends a stream whose client closed its connection (or sent
// something: a stream's client sends nothing after its request).
var errClientGone = errors.New("the client closed the stream")

// startStream answers c's request with the stream's headers. On HTTP/1.x it
// takes the connection from net/http and watches it for the client closing
// it; otherwise it writes through the ResponseWriter, whose request context
// ends when the client goes.
func (s *Server) startStream(c *call, st *stream) (*sseOut, error) {
	h := c.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // a buffering proxy would hold events back
	rc := http.NewResponseController(c.w)
	if c.r.ProtoMajor == 1 {
		conn, _, err := rc.Hijack()
		switch {
		case err == nil:
			// What the client sent after its request (in the reader
			// net/http hands back) is ignored: it sends nothing more.
			c.w.status = http.StatusOK // for the log and the metrics
			out := &sseOut{conn: conn, close: s.detach(st, conn)}
			h.Set("Connection", "close") // the body ends when the connection does
			out.buf.WriteString("HTTP/1.1 200 OK\r\n")
			h.Write(&out.buf)
			out.buf.WriteString("\r\n")
			go func() {
				var b [1]byte
				conn.Read(b[:]) // returns when the client closes, sends, or the stream's end closes conn
				st.end(errClientGone)
			}()
			return out, nil
		case !errors.Is(err, http.ErrNotSupported):
			return nil, err
		}
	}
	stop := context.AfterFunc(c.r.Context(), func() { st.end(errClientGone) })
	c.w.WriteHeader(http.StatusOK)
	return &sseOut{w: c.w, rc: rc, close: func() { stop() }}, nil
}

// forward sends what the fan-out sends sub after sent, and heartbeats,
// until the stream ends.
func (s *Server) forward(out *sseOut, st *stream, sub *subscriber, sent int64) {
	heartbeat := time.NewTicker(s.heartbeat)
	defer heartbeat.Stop()
	for {
		select {
		case f, ok := <-sub.ch:
			if !ok {
				return // dropped (too slow) or shutting down: the client reconnects
			}
			if f.seq <= sent {
				continue
			}
			out.buf.Write(f.data)
			sent = f.seq
			// Send what else is already waiting in one write.
			for more := true; more; {
				select {
				case f, ok := <-sub.ch:
					if !ok {
						more = false
						break
					}
					if f.seq > sent {
						out.buf.Write(f.data)
						sent = f.seq
					}
				default:
					more = false
				}
			}
			if err := out.flush(); err != nil {
				return
			}
		case <-heartbeat.C:
			out.buf.WriteString(": ping\n\n")
			if err := out.flush(); err != nil {
				return
			}
		case <-st.ctx.Done():
			if errors.Is(context.Cause(st.ctx), errTokenRevoked) {
				out.buf.WriteString(": the token was revoked\n\n")
				out.flush()
			}
			return
		case <-s.reconnect:
			// The hub drains: the station reconnects to the same URL,
			// which the load balancer now routes to another hub process,
			// from the last event it received. Each stream waits a random
			// part of a second, so that the streams of a hub do not land
			// on the others all at once.
			fmt.Fprintf(&out.buf, ": this hub is shutting down; reconnect\nevent: %s\nretry: %d\n\n", sseReconnect, rand.N(reconnectSpread.Milliseconds()))
			out.flush()
			s.metrics.reconnected.inc(labels{})
			return
		case <-s.stop.Done():
			return
		}
	}
}

const (
	// sseReconnect is the name of the server-sent event that tells a
	// station to reconnect (docs/hub-protocol.md, "What ends a stream"). It
	// carries no data, so a client that does not know it takes it for a
	// comment; no kind of the event log is a word without a dot.
	sseReconnect = "reconnect"
	// reconnectSpread is the window over which the streams of a draining
	// hub reconnect.
	reconnectSpread = time.Second
)

// formatEvent writes ev as one server-sent event: its seq as the id, its
// kind as the event name, its JSON as the data (one line: JSON has no raw
// newlines).
func formatEvent(b *bytes.Buffer, ev hub.Event) {
	data, _ := json.Marshal(ev)
	fmt.Fprintf(b, "id: %d\nevent: %s\ndata: %s\n\n", ev.Seq, ev.Kind, data)
}

// A stream is only as good as its token: revoking the token ends it
// (RATIONALE.md, "Why does a stream end when its token is revoked, and why
// check every 2 seconds as well?"). The relay narrows what it sends as
// memberships change (it reads them per event); the token is checked here.

// errTokenRevoked is the cause a stream's context ends with when its token
// is gone.
var errTokenRevoked = errors.New("the token was revoked")

// stream is an open event stream.
type stream struct {
	account string
	token   Token
	// ctx has the request's values but outlives its handler; end ends it
	// (the client went, the token was revoked, the stream closed).
	ctx context.Context
	end context.CancelCauseFunc

	conn net.Conn // the connection the stream took from net/http, or nil; under Server.streamsMu
}

// detach records that st took conn from net/http, so that Close and the
// drain wait for it (Shutdown does not), and returns the function that
// closes conn and ends that.
func (s *Server) detach(st *stream, conn net.Conn) (release func()) {
	s.streamsMu.Lock()
	st.conn = conn
	if s.detached++; s.detached == 1 {
		s.detachedIdle = make(chan struct{})
	}
	s.streamsMu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			conn.Close()
			s.streamsMu.Lock()
			st.conn = nil
			if s.detached--; s.detached == 0 {
				close(s.detachedIdle)
			}
			s.streamsMu.Unlock()
		})
	}
}

// waitDetached waits until no stream holds a connection of its own, or ctx
// ends first (false).
func (s *Server) waitDetached(ctx context.Context) bool {
	s.streamsMu.Lock()
	n, idle := s.detached, s.detachedIdle
	s.streamsMu.Unlock()
	if n == 0 {
		return true
	}
	select {
	case <-idle:
		return true
	case <-ctx.Done():
		return false
	}
}

// cutStreams closes the connection of every open stream that took one: a
// stream blocked writing to a client that does not read ends at once.
func (s *Server) cutStreams() {
	s.streamsMu.Lock()
	defer s.streamsMu.Unlock()
	for st := range s.live {
		if st.conn != nil {
			st.conn.Close()
		}
	}
}

// retryNodeStreams is the Retry-After, in seconds, of a stream refused
// because its node holds Options.NodeStreams.
const retryNodeStreams = 2

// openStream registers c's stream, unless its account holds MaxStreams
// (too_many_streams) or the node holds NodeStreams (unavailable).
func (s *Server) openStream(c *call) (*stream, error) {
	s.streamsMu.Lock()
	defer s.streamsMu.Unlock()
	if s.streams[c.account] >= s.limits.MaxStreams {
		return nil, hub.Errorf(hub.CodeTooManyStreams, "account %q already has %d event streams open, the most this hub allows", c.account, s.limits.MaxStreams)
	}
	if s.nodeStreams > 0 && len(s.live) >= s.nodeStreams {
		s.metrics.nodeStreamsRefused.inc(labels{})
		e := hub.Errorf(hub.CodeUnavailable, "this hub process holds the most event streams it takes (%d): retry in %d s (behind a load balancer, another process may take it)", s.nodeStreams, retryNodeStreams)
		e.RetryAfter = retryNodeStreams
		return nil, e
	}
	s.streams[c.account]++
	st := &stream{account: c.account, token: c.token}
	st.ctx, st.end = context.WithCancelCause(context.WithoutCancel(c.ctx))
	s.live[st] = struct{}{}
	return st, nil
}

func (s *Server) closeStream(st *stream) {
	s.streamsMu.Lock()
	defer s.streamsMu.Unlock()
	st.end(nil)
	delete(s.live, st)
	if s.streams[st.account]--; s.streams[st.account] <= 0 {
		delete(s.streams, st.account)
	}
}

// endStreams ends every open stream match selects, with cause.
func (s *Server) endStreams(match func(*stream) bool, cause error) {
	s.streamsMu.Lock()
	defer s.streamsMu.Unlock()
	for st := range s.live {
		if match(st) {
			st.end(cause)
		}
	}
}

// recheckTokens looks up, every s.recheck until ctx ends, the token of each
// open stream (each token once), and ends the streams of a token that is
// gone — revoked by the operator or another hub process, or its account
// deleted. A failed lookup ends nothing: the next round tries again.
func (s *Server) recheckTokens(ctx context.Context) {
	t := time.NewTicker(s.recheck)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s.streamsMu.Lock()
		tokens := map[[32]byte]bool{}
		for st := range s.live {
			tokens[st.token.Hash] = true
		}
		s.streamsMu.Unlock()
		for hash := range tokens {
			_, err := s.store.TokenByHash(ctx, hash)
			switch {
			case errors.Is(err, ErrNotFound):
				s.endStreams(func(st *stream) bool { return st.token.Hash == hash }, errTokenRevoked)
				s.log.Info("ended the event streams of a revoked token")
			case err != nil && ctx.Err() == nil:
				s.log.Warn("re-check the tokens of event streams", "err", err)
			}
		}
	}
}
