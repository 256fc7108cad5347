package hubclient

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
	// with jitter, and resets once a stream is established.
	MinBackoff, MaxBackoff time.Duration
	// IdleTimeout ends a stream on which nothing (not even the hub's
	// keep-alive comment) arrived for this long (default 60 s).
	IdleTimeout time.Duration
}

var errIdle = errors.New("idle")

// maxEventLine bounds one line of the event stream.
const maxEventLine = 1 << 20

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
	cursor := o.Cursor
	backoff := o.MinBackoff
	for {
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
		if connected {
			backoff = o.MinBackoff
		}
		wait := backoff/2 + rand.N(backoff/2+1)
		var re *hub.Error
		if errors.As(err, &re) && re.RetryAfter > 0 {
			wait = max(wait, time.Duration(re.RetryAfter)*time.Second)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		backoff = min(2*backoff, o.MaxBackoff)
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
	// heartbeat.
	idle := time.AfterFunc(o.IdleTimeout, func() { cancel(errIdle) })
	defer idle.Stop()

	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 4096), maxEventLine)
	var id, data string
	var hasData bool
	for sc.Scan() {
		idle.Reset(o.IdleTimeout)
		line := sc.Text()
		if line == "" { // end of an event
			if hasData {
				if err := dispatch(id, data, cursor, fn); err != nil {
					return true, err
				}
			}
			id, data, hasData = "", "", false
			continue
		}
		if strings.HasPrefix(line, ":") {
			continue // a comment: keep-alive
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "id":
			id = value
		case "data":
			if hasData {
				data += "\n"
			}
			data += value
			hasData = true
		}
		// "event" names the kind, which the data carries too; "retry" is
		// the hub's suggestion, which the backoff settings override.
	}
	if errors.Is(context.Cause(ctx), errIdle) {
		return true, fmt.Errorf("the hub's event stream was silent for %s", o.IdleTimeout)
	}
	if err := sc.Err(); err != nil {
		return true, fmt.Errorf("read the hub's event stream: %w", err)
	}
	return true, errors.New("the hub ended the event stream")
}

// dispatch decodes one event, hands it to fn and moves the cursor past it.
func dispatch(id, data string, cursor *int64, fn func(hub.Event) error) error {
	var ev hub.Event
	if err := json.Unmarshal([]byte(data), &ev); err != nil {
		return fmt.Errorf("decode event %s: %w", id, err)
	}
	if id != strconv.FormatInt(ev.Seq, 10) {
		return fmt.Errorf("event id %q does not match its seq %d", id, ev.Seq)
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
