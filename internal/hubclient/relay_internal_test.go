package hubclient

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

type sseEvent struct{ id, data string }

// reference parses a stream the plain way — split into lines, then fields —
// holding it all in memory: what readEvents must deliver, whatever the
// size of its buffer (and so however lines are cut into pieces).
func reference(in []byte) []sseEvent {
	var out []sseEvent
	lines := strings.Split(string(in), "\n")
	lines = lines[:len(lines)-1] // the last piece has no line end: dropped, with its event
	var id, data string
	hasData := false
	for _, l := range lines {
		l = strings.TrimSuffix(l, "\r")
		switch {
		case l == "":
			if hasData {
				out = append(out, sseEvent{id, data})
			}
			id, data, hasData = "", "", false
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
			}
		}
	}
	return out
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
	if ref := reference(in); fmt.Sprint(ref) != fmt.Sprint(want) {
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
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) > MaxNoiseBytes/2 {
			return // the bounds are tested on their own
		}
		want := reference(in)
		got, err := read(t, in, 16)
		if err != nil {
			t.Fatalf("readEvents: %v", err)
		}
		if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", want) {
			t.Errorf("readEvents(%q)\n got %q\nwant %q", in, got, want)
		}
	})
}
