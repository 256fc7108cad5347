package host

import (
	"bytes"
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/station-dev/station/internal/wasmbuild"
)

// Regression test (found in review): the stdout/stderr writer runs inside a
// host function, where the call's deadline cannot stop it; it used to copy the
// whole remaining buffer for every newline (quadratic: one 1 MiB write of
// newlines took over a minute). It now scans in place and stops emitting at
// the call's log budget. With a 10s deadline, a 1 MiB write must complete
// within the call: if the work were quadratic again the call would fail with
// a timeout (no wall-clock assertion).
func TestStdoutWriterIsLinear(t *testing.T) {
	wasm := buildReviewGuest(t, guestSource([]string{"os", "bytes"}, `
//go:wasmexport station_call
func call(cmd, in int32) int32 {
	os.Stdout.Write(bytes.Repeat([]byte{'\n'}, 1<<20))
	return 0
}
`))
	h, err := New(Options{Cache: wasmbuild.CacheForTest()})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	if _, err := h.Load(context.Background(), reviewManifest(t, "test/newlines", "timeout: 10s"), wasm); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Call(context.Background(), "test/newlines", "run", nil); err != nil {
		t.Fatalf("one 1 MiB write of newlines to stdout: %v", err)
	}
}

// The writer's own bounds: a partial line is capped at MaxLogLine, the tail at
// maxTail, and lines beyond the call's budget are not emitted.
func TestTailWriterBounds(t *testing.T) {
	var st callState
	var emitted int
	w := &tailWriter{st: &st, log: slog.New(countHandler{&emitted})}
	w.Write(bytes.Repeat([]byte("x"), 3*MaxLogLine+5))
	if len(w.buf) > MaxLogLine || len(w.last) > maxTail {
		t.Fatalf("partial line %d bytes (max %d), tail %d bytes (max %d)", len(w.buf), MaxLogLine, len(w.last), maxTail)
	}
	w.Write(bytes.Repeat([]byte("a\n"), 2*MaxLogLinesPerCall))
	if emitted > MaxLogLinesPerCall {
		t.Fatalf("emitted %d lines, want at most %d", emitted, MaxLogLinesPerCall)
	}
}

type countHandler struct{ n *int }

func (h countHandler) Enabled(context.Context, slog.Level) bool  { return true }
func (h countHandler) Handle(context.Context, slog.Record) error { *h.n++; return nil }
func (h countHandler) WithAttrs([]slog.Attr) slog.Handler        { return h }
func (h countHandler) WithGroup(string) slog.Handler             { return h }

// Issue 12, defect 4: a guest's stdout line longer than MaxLogLine, written
// with its newline in one write, used to lose everything past MaxLogLine
// without a trace; and escaping a line of control bytes cut it to MaxLogLine.
// The module log now holds every byte (within the call's budget).
func TestTailWriterKeepsLongLines(t *testing.T) {
	cases := []struct {
		name  string
		write []byte
		want  string // the texts of the records, concatenated
	}{
		{"long line", append(bytes.Repeat([]byte("x"), 2*MaxLogLine+10), '\n'), strings.Repeat("x", 2*MaxLogLine+10)},
		{"after a partial line", append(bytes.Repeat([]byte("y"), MaxLogLine+1), '\n'), strings.Repeat("y", MaxLogLine+1)},
		{"control bytes", append(bytes.Repeat([]byte{1}, MaxLogLine), '\n'), strings.Repeat(`\x01`, MaxLogLine)},
	}
	for _, c := range cases {
		var st callState
		var records []string
		w := &tailWriter{st: &st, log: slog.New(recordsHandler{&records})}
		w.Write(c.write)
		if got := strings.Join(records, ""); got != c.want {
			t.Errorf("%s: the log holds %d bytes, want %d", c.name, len(got), len(c.want))
		}
	}
}

// Where the records break: at a newline, and at MaxLogLine bytes for a line
// that is longer, whether it arrives in one write or in several.
func TestTailWriterRecords(t *testing.T) {
	x := func(n int) string { return strings.Repeat("x", n) }
	cases := []struct {
		name   string
		writes []string
		want   []string // the records' texts
	}{
		{"lines", []string{"a\nb\n"}, []string{"a", "b"}},
		{"a line in two writes", []string{"ab", "c\nd"}, []string{"abc"}},
		{"exactly the limit", []string{x(MaxLogLine) + "\n"}, []string{x(MaxLogLine)}},
		{"one byte over", []string{x(MaxLogLine+1) + "\n"}, []string{x(MaxLogLine), "x"}},
		{"the limit, then its newline", []string{x(MaxLogLine), "\n"}, []string{x(MaxLogLine)}},
		{"the limit, then more", []string{x(MaxLogLine), "y\n"}, []string{x(MaxLogLine), "y"}},
		{"unterminated", []string{x(2*MaxLogLine + 1)}, []string{x(MaxLogLine), x(MaxLogLine)}},
		{"empty lines", []string{"\n\n"}, []string{"", ""}},
	}
	for _, c := range cases {
		var st callState
		var got []string
		w := &tailWriter{st: &st, log: slog.New(recordsHandler{&got})}
		for _, s := range c.writes {
			if n, err := w.Write([]byte(s)); n != len(s) || err != nil {
				t.Fatalf("%s: Write = %d, %v", c.name, n, err)
			}
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: %d records of lengths %v, want %v", c.name, len(got), lens(got), lens(c.want))
		}
	}
}

func lens(ss []string) []int {
	var n []int
	for _, s := range ss {
		n = append(n, len(s))
	}
	return n
}

type recordsHandler struct{ texts *[]string }

func (h recordsHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h recordsHandler) Handle(_ context.Context, r slog.Record) error {
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "text" {
			*h.texts = append(*h.texts, a.Value.String())
		}
		return true
	})
	return nil
}
func (h recordsHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h recordsHandler) WithGroup(string) slog.Handler      { return h }
