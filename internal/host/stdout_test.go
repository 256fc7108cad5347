package host

import (
	"context"
	"testing"
	"time"
)

// Regression test (found in review): tailWriter.Write (module.go) runs inside the guest's
// fd_write, i.e. inside a host function, where the call's deadline cannot
// stop it. For every newline it does strings.IndexByte(string(w.buf), '\n'),
// converting (copying) the whole remaining buffer each time: quadratic in the
// size of one write. A guest that writes a few MiB of newlines to stdout in
// one fd_write keeps a station goroutine busy for minutes (and holds its
// concurrency slot) regardless of limits.timeout. It also appends the whole
// write to w.buf and w.last before any limit applies, so a guest can make the
// host copy up to its memory size several times per write.
//
// Fix: scan p in place with bytes.IndexByte, never convert w.buf to a string
// to search it; keep at most MaxLogLine of a partial line (drop or emit the
// rest), copy only the last maxTail bytes of p into w.last, stop processing
// once maxLinesPerCall lines have been emitted, and check the call's context.
func TestStdoutWriterIsLinear(t *testing.T) {
	wasm := buildReviewGuest(t, guestSource([]string{"os", "bytes"}, `
//go:wasmexport station_call
func call(cmd, in int32) int32 {
	os.Stdout.Write(bytes.Repeat([]byte{'\n'}, 256<<10))
	return 0
}
`))
	h, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	if _, err := h.Load(context.Background(), reviewManifest(t, "test/newlines", "timeout: 1s"), wasm); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = h.Call(context.Background(), "test/newlines", "run", nil)
	took := time.Since(start)
	// 256 KiB of newlines; the time grows with the square of the size (1 MiB: over a minute here).
	t.Logf("one 256 KiB write of newlines: err=%v after %s", err, took.Round(time.Millisecond))
	if took > 2*time.Second {
		t.Fatalf("a call with a 1s deadline ran for %s writing 256 KiB to stdout", took.Round(time.Millisecond))
	}
}
