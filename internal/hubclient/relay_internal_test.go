package hubclient

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

type sseEvent struct{ id, data string }

// reference parses a stream the plain way — split into lines, then fields —
// holding it all in memory: what readEvents must deliver, whatever the
// size of its buffer (and so however lines are cut into pieces). A
// data-less reconnect event ends it, with the stream's reconnection time
// (-1 when no retry field set one).
func reference(in []byte) (out []sseEvent, reconnect *reconnectError) {
	lines := strings.Split(string(in), "\n")
	lines = lines[:len(lines)-1] // the last piece has no line end: dropped, with its event
	var id, data, name string
	hasData := false
	var retry time.Duration = -1
	for _, l := range lines {
		l = strings.TrimSuffix(l, "\r")
		switch {
		case l == "":
			if hasData {
				out = append(out, sseEvent{id, data})
			} else if name == "reconnect" {
				return out, &reconnectError{retry: retry}
			}
			id, data, name, hasData = "", "", "", false
		case strings.HasPrefix(l, ":"):
		default:
			f, v, _ := strings.Cut(l, ":")
			v = strings.TrimPrefix(v, " ")
			switch f {
			case "data":
				if hasData {
					data += "\n"
				}
				data += v
				hasData = true
			case "id":
				id = v
			case "event":
				name = v
			case "retry":
				if v != "" && strings.Trim(v, "0123456789") == "" {
					n, err := strconv.ParseInt(v, 10, 64)
					if err != nil || n > maxRetryMS {
						n = maxRetryMS
					}
					retry = time.Duration(n) * time.Millisecond
				}
			}
		}
	}
	return out, nil
}

func read(t testing.TB, in []byte, bufSize int) ([]sseEvent, error) {
	var got []sseEvent
	open := false
	err := readEvents(bytes.NewReader(in), bufSize, func(begun bool) {
		if begun == open {
			t.Fatalf("event(%v) called twice", begun)
		}
		open = begun
	}, func(id string, data []byte) error {
		got = append(got, sseEvent{id, string(data)})
		return nil
	})
	return got, err
}

// TestReadEventsInPieces: lines longer than the buffer, and a "\r\n" cut
// between two pieces, read as they would whole.
func TestReadEventsInPieces(t *testing.T) {
	long := strings.Repeat("x", 3*readBuffer)
	// "data: " and 65529 bytes of value put the "\r" last in the first
	// 64 KiB piece of the line, and its "\n" alone in the next.
	cut := strings.Repeat("y", readBuffer-len("data: ")-1)
	in := []byte("retry: 2000\n: connected\n\n" +
		"id: 1\r\nevent: team.created\r\ndata: " + long + "\r\ndata: " + cut + "\r\n\r\n" +
		"id: 2\ndata\n\n" +
		"id: 3\n: a comment inside\ndata:no space\ndata:  two spaces\n\n" +
		"id: 4\nid: 5\n\n" +
		"id: 6\ndata: never ended")
	want := []sseEvent{{"1", long + "\n" + cut}, {"2", ""}, {"3", "no space\n two spaces"}}
	if ref, _ := reference(in); fmt.Sprint(ref) != fmt.Sprint(want) {
		t.Fatalf("the reference is wrong: %.200v", ref)
	}
	got, err := read(t, in, readBuffer)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("got %d events, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("event %d: id %q, data of %d bytes ending %q; want id %q, %d bytes ending %q", i, got[i].id,
				len(got[i].data), got[i].data[max(0, len(got[i].data)-4):], want[i].id, len(want[i].data), want[i].data[max(0, len(want[i].data)-4):])
		}
	}
}

// FuzzReadEvents: with a 16-byte buffer (bufio's smallest), so that most
// lines come in pieces, readEvents delivers what the whole-line reference
// does.
func FuzzReadEvents(f *testing.F) {
	for _, s := range []string{
		"id: 1\ndata: {}\n\n",
		"id: 1\r\ndata: a\r\ndata: b\r\n\r\n",
		": ping\n\nretry: 2000\n\n",
		"id: 12345678901234567890\ndata: 0123456789abcdef0123456789\r\n\n",
		"data:x\r\r\n\n",
		"field-name-longer-than-the-buffer: data\ndata: y\n\n",
		"retry: 2000\n: connected\n\nid: 1\ndata: {}\n\n: bye\nevent: reconnect\nretry: 734\n\n",
		"event: reconnect\r\n\r\nid: 1\ndata: {}\n\n",
		"retry: 12345678901234567890\nevent: reconnect\ndata: x\n\nevent: reconnectx\n\nevent: reconnect\n\n",
		"retry: 1\rx\nretry: 99\r\nretry: 3 \nevent: reconnect\n\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) > MaxNoiseBytes/2 {
			return // the bounds are tested on their own
		}
		want, wantReconnect := reference(in)
		got, err := read(t, in, 16)
		var rc *reconnectError
		switch {
		case errors.As(err, &rc):
			if wantReconnect == nil || rc.retry != wantReconnect.retry {
				t.Errorf("readEvents(%q) asks to reconnect after %v; the reference: %+v", in, rc.retry, wantReconnect)
			}
		case err != nil:
			t.Fatalf("readEvents: %v", err)
		case wantReconnect != nil:
			t.Errorf("readEvents(%q) did not ask to reconnect; the reference does after %v", in, wantReconnect.retry)
		}
		if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", want) {
			t.Errorf("readEvents(%q)\n got %q\nwant %q", in, got, want)
		}
	})
}

// TestReadEventsReconnect: a data-less reconnect event ends the reading with
// the stream's reconnection time — the last valid retry field, whatever
// event it came in — and the events before it are delivered; a reconnect
// event with data is an event like any other.
func TestReadEventsReconnect(t *testing.T) {
	for _, tt := range []struct {
		in     string
		events int
		retry  time.Duration // -1: none; 0: no request to reconnect
	}{
		{"retry: 2000\n: connected\n\nid: 1\ndata: {}\n\n: bye\nevent: reconnect\nretry: 734\n\nid: 2\ndata: {}\n\n", 1, 734 * time.Millisecond},
		{"retry: 2000\n\nevent: reconnect\n\n", 0, 2 * time.Second},
		{"event: reconnect\r\n\r\n", 0, -1},
		{"retry: 1x\nevent: reconnect\nretry: -5\n\n", 0, -1},
		{"retry: 99999999999999999999\nevent: reconnect\n\n", 0, maxRetryMS * time.Millisecond},
		{"event: reconnect\ndata: {}\n\n", 1, 0},
		{"event: reconnected\n\nevent: Reconnect\n\n", 0, 0},
	} {
		var rc *reconnectError
		got, err := read(t, []byte(tt.in), readBuffer)
		if len(got) != tt.events {
			t.Errorf("%q: %d events, want %d", tt.in, len(got), tt.events)
		}
		switch {
		case errors.As(err, &rc):
			if tt.retry == 0 || rc.retry != tt.retry {
				t.Errorf("%q: asks to reconnect after %v, want %v", tt.in, rc.retry, tt.retry)
			}
			if !errors.Is(err, ErrReconnect) {
				t.Errorf("%q: %v is not ErrReconnect", tt.in, err)
			}
		case err != nil:
			t.Errorf("%q: %v", tt.in, err)
		case tt.retry != 0:
			t.Errorf("%q: no request to reconnect", tt.in)
		}
	}
	// The wait is what the hub asked for, bounded.
	for _, tt := range []struct{ retry, min, max time.Duration }{
		{734 * time.Millisecond, 734 * time.Millisecond, 734 * time.Millisecond},
		{time.Hour, maxReconnectWait, maxReconnectWait},
		{-1, 0, time.Second},
	} {
		if w := (&reconnectError{retry: tt.retry}).wait(); w < tt.min || w > tt.max {
			t.Errorf("retry %v: wait %v, want %v to %v", tt.retry, w, tt.min, tt.max)
		}
	}
}
