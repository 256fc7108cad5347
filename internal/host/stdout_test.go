package host

import (
	"bytes"
	"context"
	"log/slog"
	"testing"
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
	h, err := New(Options{})
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
