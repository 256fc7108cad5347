package host

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"

	"github.com/station-dev/station/internal/wasmbuild"
)

type countingHandler struct{ n *atomic.Int64 }

func (h countingHandler) Enabled(context.Context, slog.Level) bool  { return true }
func (h countingHandler) Handle(context.Context, slog.Record) error { h.n.Add(1); return nil }
func (h countingHandler) WithAttrs([]slog.Attr) slog.Handler        { return h }
func (h countingHandler) WithGroup(string) slog.Handler             { return h }

// Regression test (found in review): guest stdout/stderr is capped at maxLinesPerCall (200)
// lines per call, but the log import has no per-call (or per-second) cap: a
// guest that calls log in a loop until its deadline writes one station-log
// record per host call, at info level and above straight into
// $STATION_HOME/station.log (rotated only when the CLI starts, never by a
// long-running station). With limits.timeout up to the operator maximum this
// is gigabytes of log per call.
//
// Fix: apply the same per-call line budget to the log import (count it in
// callState; after the budget, drop lines and log one "N lines dropped"
// record at the end of the call).
func TestLogImportBudgetPerCall(t *testing.T) {
	wasm := buildReviewGuest(t, guestSource(nil, `
//go:wasmimport station log
func logLine(level int32, ptr unsafe.Pointer, n uint32) int32

var line = []byte("spam spam spam spam spam spam spam spam spam spam spam spam")

//go:wasmexport station_call
func call(cmd, in int32) int32 {
	for i := 0; i < 100000; i++ {
		logLine(2, unsafe.Pointer(&line[0]), uint32(len(line)))
	}
	return 0
}
`))
	var n atomic.Int64
	h, err := New(Options{Logger: slog.New(countingHandler{&n}), Cache: wasmbuild.CacheForTest()})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	if _, err := h.Load(context.Background(), reviewManifest(t, "test/logflood", ""), wasm); err != nil {
		t.Fatal(err)
	}
	n.Store(0)
	if _, err := h.Call(context.Background(), "test/logflood", "run", nil); err != nil {
		t.Fatal(err)
	}
	t.Logf("log records from one call: %d", n.Load())
	if n.Load() > MaxLogLinesPerCall+1 { // the budget, plus one line saying how many were dropped
		t.Fatalf("one call wrote %d records to the station log (stdout is capped at %d lines per call)", n.Load(), MaxLogLinesPerCall)
	}
}
