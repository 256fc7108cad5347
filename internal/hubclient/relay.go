package hubclient

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/station-dev/station/hub"
)

// SubscribeOptions configure a relay subscription.
type SubscribeOptions struct {
	// Cursor is the seq of the last event already handled (0: from the
	// beginning of the log).
	Cursor int64
	// OnConnect is called each time a stream is established, with the
	// cursor it resumes from. From then on, every event the hub commits
	// reaches the handler.
	OnConnect func(cursor int64)
	// OnDisconnect is called when a stream ends with the reason, before the
	// client waits to reconnect.
	OnDisconnect func(err error)
	// MinBackoff and MaxBackoff bound the wait before a reconnect
	// (defaults 500 ms and 30 s); it doubles after each failed attempt,
	// with jitter, and resets once a stream is established — unless the
	// station dropped that stream for breaking the bounds below.
	MinBackoff, MaxBackoff time.Duration
	// IdleTimeout ends a stream on which nothing (not even the hub's
	// keep-alive comment) arrived for this long (default 60 s).
	IdleTimeout time.Duration
	// EventTimeout ends a stream on which an event was begun and not
	// completed within this long (default 30 s): the hub writes each event
	// at once.
	EventTimeout time.Duration
}

// The bounds of the event stream (docs/hub-client.md, "What the station
// accepts from the relay"; RATIONALE.md, "Why these bounds on the relay's
// event stream?"). Every one of them ends the stream with a reason that
// names it; the client then reconnects with backoff from the last event it
// handled.
const (
	// MaxEventBytes bounds one event: all of its lines together, field
	// names and line ends included. A hub's events are a few hundred bytes
	// (a yank reason, the longest field, is at most 1 KiB).
	MaxEventBytes = 1 << 20
	// MaxNoiseBytes bounds what may arrive in a minute (noiseWindow)
	// between two events that is not an event: comments and blocks without
	// data. The hub's keep-alive (": ping" every 15 s) is 32 bytes a
	// minute; a quiet stream stays open for as long as it comes.
	MaxNoiseBytes = 64 << 10
	noiseWindow   = time.Minute
	// readBuffer is what the reader holds of a line at a time: longer
	// lines are taken in pieces, counted against the bounds as they come.
	readBuffer = 64 << 10
)

var (
	errIdle       = errors.New("idle")
	errUnfinished = errors.New("unfinished event")
)

// ErrReconnect is (wrapped by) the error a stream ends with when the hub
// asked the station to reconnect: it is draining — shutting down, its
// streams moving to the other hub processes behind the same URL. Subscribe
// reconnects at once (within the wait the hub asked for), not with
// backoff; OnDisconnect gets it, so a caller may log it as routine.
var ErrReconnect = errors.New("the hub asked the station to reconnect: it is shutting down")

// A hub's request to reconnect (docs/hub-protocol.md, "What ends a
// stream"): a data-less server-sent event named sseReconnect, with a retry
// field that says after how many milliseconds.
const (
	sseReconnect = "reconnect"
	// maxReconnectWait bounds the wait a hub may ask for.
	maxReconnectWait = 5 * time.Second
	// promptEvery is how often a request to reconnect is honoured at once.
	// One that comes sooner after the last is taken for a broken stream
	// (backoff): a hub that keeps asking cannot make the station reconnect
	// in a loop.
	promptEvery = 10 * time.Second
)

// reconnectError is a stream that ended with a request to reconnect.
type reconnectError struct {
	// retry is the stream's reconnection time (its last retry field), or
	// -1 when it had none.
	retry time.Duration
}

func (e *reconnectError) Error() string { return ErrReconnect.Error() }
func (e *reconnectError) Unwrap() error { return ErrReconnect }

// wait returns how long to wait before reconnecting: what the hub asked
// for, at most maxReconnectWait, or a random part of a second.
func (e *reconnectError) wait() time.Duration {
	if e.retry < 0 {
		return rand.N(time.Second)
	}
	return min(e.retry, maxReconnectWait)
}

// badStreamError is a stream the station dropped because the hub broke the
// protocol or its bounds; such a stream does not reset the backoff.
type badStreamError struct{ msg string }

func (e *badStreamError) Error() string { return e.msg }

func badStream(format string, args ...any) error {
	return &badStreamError{msg: fmt.Sprintf(format, args...)}
}

// HandlerError is returned by Subscribe when the handler failed.
type HandlerError struct {
	Event hub.Event
	Err   error
}

func (e *HandlerError) Error() string {
	return fmt.Sprintf("handle event %d (%s): %v", e.Event.Seq, e.Event.Kind, e.Err)
}

func (e *HandlerError) Unwrap() error { return e.Err }

// Subscribe follows the hub's event stream and calls fn with each event
// the account may see, in order, exactly once per event that fn accepted:
// after fn returns nil for an event, the cursor moves past it, and a
// reconnect resumes after it (Last-Event-ID). Subscribe reconnects with
// backoff when a stream breaks, and returns only when ctx ends (ctx.Err()),
// when fn returns an error (*HandlerError; the event is not consumed), or
// on an error retrying cannot fix: an invalid token, a protocol the hub
// does not speak, or a cursor past the hub's log (hub.CodeCursorAhead:
// the hub was restored; resynchronise from 0).
func (c *Client) Subscribe(ctx context.Context, o SubscribeOptions, fn func(hub.Event) error) error {
	if o.MinBackoff <= 0 {
		o.MinBackoff = 500 * time.Millisecond
	}
	if o.MaxBackoff < o.MinBackoff {
		o.MaxBackoff = max(30*time.Second, o.MinBackoff)
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = 60 * time.Second
	}
	if o.EventTimeout <= 0 {
		o.EventTimeout = 30 * time.Second
	}
	cursor := o.Cursor
	backoff := o.MinBackoff
	var prompted time.Time // when a request to reconnect was last honoured at once
	for {
		from, started := cursor, time.Now()
		connected, err := c.stream(ctx, &cursor, o, fn)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var he *HandlerError
		if errors.As(err, &he) || permanent(err) {
			return err
		}
		if o.OnDisconnect != nil {
			o.OnDisconnect(err)
		}
		var rc *reconnectError
		asked := errors.As(err, &rc)
		prompt := asked && (prompted.IsZero() || time.Since(prompted) >= promptEvery)
		// A stream that served (delivered an event, or stayed up a
		// while) starts the backoff afresh. One that ended at once does
		// not — whether it broke, was malformed or asked for a reconnect
		// too soon — so a hub that ends every stream at once is retried
		// ever more slowly, never in a loop.
		var bad *badStreamError
		served := cursor != from || time.Since(started) >= promptEvery
		if connected && served && !errors.As(err, &bad) && (!asked || prompt) {
			backoff = o.MinBackoff
		}
		wait := backoff/2 + rand.N(backoff/2+1)
		var re *hub.Error
		if errors.As(err, &re) && re.RetryAfter > 0 {
			wait = max(wait, time.Duration(re.RetryAfter)*time.Second)
		}
		if prompt {
			// The hub drains: its stream moves to another hub process
			// behind the same URL. That is no failure to back off from.
			wait, prompted = rc.wait(), time.Now()
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		if !prompt {
			backoff = min(2*backoff, o.MaxBackoff)
		}
	}
}

// permanent reports an error that a reconnect would only repeat.
func permanent(err error) bool {
	switch hub.CodeOf(err) {
	case hub.CodeUnauthenticated, hub.CodeProtocolUnsupported, hub.CodeCursorAhead, hub.CodeBadRequest, hub.CodeNoEndpoint:
		return true
	}
	return false
}

// stream runs one connection: it reports whether the stream was
// established, and why it ended.
func (c *Client) stream(ctx context.Context, cursor *int64, o SubscribeOptions, fn func(hub.Event) error) (bool, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	req, err := c.request(ctx, http.MethodGet, "/events", nil, nil)
	if err != nil {
		return false, err
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Last-Event-ID", strconv.FormatInt(*cursor, 10))
	resp, err := c.streams.Do(req)
	if err != nil {
		return false, fmt.Errorf("connect to the hub's event stream: %w", unwrapURLError(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false, answerError(resp)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		return false, fmt.Errorf("the hub's event stream has content type %q", ct)
	}
	if o.OnConnect != nil {
		o.OnConnect(*cursor)
	}
	// The watchdog ends a stream that went silent (a dead connection that
	// TCP has not noticed): the hub sends a comment at least every
	// heartbeat. Any bytes arriving count, even within a line.
	idle := time.AfterFunc(o.IdleTimeout, func() { cancel(errIdle) })
	defer idle.Stop()
	// The event timer runs from an event's first line to its end.
	unfinished := time.AfterFunc(o.EventTimeout, func() { cancel(errUnfinished) })
	unfinished.Stop()
	defer unfinished.Stop()

	err = readEvents(&activityReader{r: resp.Body, active: func() { idle.Reset(o.IdleTimeout) }}, readBuffer, func(begun bool) {
		if begun {
			unfinished.Reset(o.EventTimeout)
		} else {
			unfinished.Stop()
		}
	}, func(id string, data []byte) error {
		// Applying an event may take a while (a download, a compile):
		// the hub's silence meanwhile is the station's doing.
		idle.Stop()
		defer idle.Reset(o.IdleTimeout)
		return dispatch(id, data, cursor, fn)
	})
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, errIdle):
		return true, fmt.Errorf("the hub's event stream was silent for %s", o.IdleTimeout)
	case errors.Is(cause, errUnfinished):
		return true, badStream("the hub's event stream left an event unfinished for %s", o.EventTimeout)
	}
	if err != nil {
		return true, err
	}
	return true, errors.New("the hub ended the event stream")
}

// activityReader calls active each time bytes arrive.
type activityReader struct {
	r      io.Reader
	active func()
}

func (a *activityReader) Read(p []byte) (int, error) {
	n, err := a.r.Read(p)
	if n > 0 {
		a.active()
	}
	return n, err
}

// readEvents reads server-sent events from r until it ends or fails, and
// hands each event that has data to dispatch: its id and its data lines
// joined with "\n". It holds at most bufSize bytes of a line and
// MaxEventBytes of an event, in time linear in what it reads, and refuses
// (with a *badStreamError) an event larger than MaxEventBytes and more than
// MaxNoiseBytes of comments and data-less blocks in a minute between two
// events.
// event(true) is called when an event begins, event(false) when it ends.
// An event left incomplete when the stream ends is dropped, as the SSE
// specification says. A read error is returned as it is, io.EOF as nil.
// A data-less event named sseReconnect ends the reading with a
// *reconnectError that carries the stream's reconnection time (its last
// valid retry field).
func readEvents(r io.Reader, bufSize int, event func(begun bool), dispatch func(id string, data []byte) error) error {
	br := bufio.NewReaderSize(r, bufSize)
	var (
		id, data []byte
		name     []byte // the event field, up to a byte more than sseReconnect
		hasData  bool
		begun    bool // a field line of the current event was read
		size     int  // bytes of the current event's lines
		noise    int  // bytes of comments and data-less blocks since the last event or in this window
		// The line being read: its kind and, for a continued value,
		// where it goes.
		midLine bool
		kind    byte // 'c' comment, 'd' data, 'i' id, 'e' event, 'r' retry, 'x' a field the station ignores
		cr      bool // the last piece of the line ended in "\r"
		// reconnection is the stream's reconnection time, -1 until a
		// retry field sets it; retry is the one being read.
		reconnection time.Duration = -1
		retry        retryField
	)
	// Noise is counted since the last event, in windows of a minute.
	noiseSince := time.Now()
	addNoise := func(n int) (tooMuch bool) {
		if now := time.Now(); now.Sub(noiseSince) >= noiseWindow {
			noise, noiseSince = 0, now
		}
		noise += n
		return noise > MaxNoiseBytes
	}
	for {
		chunk, err := br.ReadSlice('\n')
		whole := err == nil // chunk ends the line
		if err != nil && err != bufio.ErrBufferFull {
			if err == io.EOF {
				return nil
			}
			return fmt.Errorf("read the hub's event stream: %w", err)
		}
		n := len(chunk)
		value := chunk
		if whole {
			value = bytes.TrimSuffix(value[:len(value)-1], []byte("\r"))
		}
		if !midLine {
			switch {
			case whole && len(value) == 0: // a blank line ends the event
				if begun {
					event(false)
				}
				if hasData {
					if err := dispatch(string(id), data); err != nil {
						return err
					}
					noise, noiseSince = 0, time.Now()
				} else if string(name) == sseReconnect {
					return &reconnectError{retry: reconnection}
				} else if addNoise(size + n) {
					return noisy()
				}
				id, data, name, hasData, begun, size = id[:0], data[:0], name[:0], false, false, 0
				if cap(data) > readBuffer {
					data = nil // an unusually large event: do not keep its buffer
				}
				continue
			case value[0] == ':':
				kind = 'c'
			default:
				field, rest, colon := bytes.Cut(value, []byte(":"))
				rest = bytes.TrimPrefix(rest, []byte(" "))
				if !colon && !whole {
					field, rest = nil, nil // a field name longer than the buffer: no field the station knows
				}
				switch string(field) {
				case "data":
					kind = 'd'
					if hasData {
						data = append(grow(data, 1), '\n')
					}
					hasData = true
				case "id":
					kind = 'i'
					id = id[:0]
				case "event":
					// The kind, which the data carries too; only a
					// data-less sseReconnect means something of its own.
					kind = 'e'
					name = name[:0]
				case "retry":
					// The hub's reconnection time, which only a request
					// to reconnect uses: the backoff settings decide when
					// a broken stream is retried.
					kind = 'r'
					retry = retryField{}
				default:
					kind = 'x'
				}
				value = rest
				if !begun {
					begun = true
					event(true)
				}
			}
		}
		if kind == 'c' {
			if addNoise(n) {
				return noisy()
			}
		} else {
			size += n
			if size > MaxEventBytes {
				return badStream("the hub's event stream sent an event larger than 1 MiB (%d bytes), which this station refuses", MaxEventBytes)
			}
			// A "\r\n" split between two pieces leaves the "\r" in the
			// value: it belongs to the line end.
			strip := whole && midLine && cr && n == 1
			switch kind {
			case 'd':
				data = append(grow(data, len(value)), value...)
				if strip {
					data = data[:len(data)-1]
				}
			case 'i':
				id = append(id, value...)
				if strip {
					id = id[:len(id)-1]
				}
			case 'e':
				// A longer name is not sseReconnect, whatever its rest;
				// a "\r" kept in the one byte more is the line end's.
				name = append(name, value[:min(len(value), max(0, len(sseReconnect)+1-len(name)))]...)
				if strip && len(name) > 0 && name[len(name)-1] == '\r' {
					name = name[:len(name)-1]
				}
			case 'r':
				retry.add(value, whole, strip)
				if d, ok := retry.value(); whole && ok {
					reconnection = d
				}
			}
		}
		cr = n > 0 && chunk[n-1] == '\r'
		midLine = !whole
	}
}

// retryField reads the value of a retry field as it comes, in pieces,
// without holding it: milliseconds in ASCII digits (a value with anything
// else is ignored, as the SSE specification says).
type retryField struct {
	ms     int64 // the value, saturated at maxRetryMS
	digits int
	bad    bool // a byte that is not a digit
	cr     bool // the last piece ended in "\r", which may be the line end's
}

// maxRetryMS saturates a retry value: anything above is more than
// maxReconnectWait anyway.
const maxRetryMS = 1 << 40

// add takes the next piece of the value; whole: it ends the line; strip:
// it is the "\n" of a "\r\n" cut between two pieces.
func (f *retryField) add(v []byte, whole, strip bool) {
	if f.cr && !strip {
		f.bad = true // the "\r" was the value's, not the line end's
	}
	f.cr = false
	if !whole && len(v) > 0 && v[len(v)-1] == '\r' {
		v, f.cr = v[:len(v)-1], true
	}
	for _, c := range v {
		if c < '0' || c > '9' {
			f.bad = true
			return
		}
		f.digits++
		f.ms = min(f.ms*10+int64(c-'0'), maxRetryMS)
	}
}

// value returns the reconnection time the field sets, if it sets one.
func (f *retryField) value() (time.Duration, bool) {
	if f.bad || f.digits == 0 {
		return 0, false
	}
	return time.Duration(f.ms) * time.Millisecond, true
}

// grow returns b with room for n more bytes, doubling its capacity (append
// grows large slices by a quarter, which for a 1 MiB event allocates 5 MiB
// along the way; doubling, up to MaxEventBytes, allocates 2).
func grow(b []byte, n int) []byte {
	if len(b)+n <= cap(b) {
		return b
	}
	nb := make([]byte, len(b), max(min(2*cap(b), MaxEventBytes), len(b)+n, 512))
	copy(nb, b)
	return nb
}

func noisy() error {
	return badStream("the hub's event stream sent more than 64 KiB of comments and empty events in a minute without an event (%d bytes), which this station refuses", MaxNoiseBytes)
}

// dispatch decodes one event, hands it to fn and moves the cursor past it.
func dispatch(id string, data []byte, cursor *int64, fn func(hub.Event) error) error {
	var ev hub.Event
	if err := json.Unmarshal(data, &ev); err != nil {
		return badStream("decode event %.40q: %v", id, err)
	}
	if id != strconv.FormatInt(ev.Seq, 10) {
		return badStream("event id %.40q does not match its seq %d", id, ev.Seq)
	}
	if ev.Seq <= *cursor {
		return nil // already handled (a replay after a reconnect)
	}
	if err := fn(ev); err != nil {
		return &HandlerError{Event: ev, Err: err}
	}
	*cursor = ev.Seq
	return nil
}
