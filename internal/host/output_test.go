package host

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/station-dev/station/internal/wasmbuild"
)

// Regression test (found in review): on CallOK the host returns whatever bytes the guest last
// passed to output_set, unchecked, although the ABI says it is a JSON
// document. Worse, when output_set is refused as too large, outputSet
// (imports.go) *stores its own error text as the call's output*; a guest
// that ignores the -too_large status and returns CallOK makes the failure
// look like a successful call whose result is that text. The CLI prints a
// non-JSON result verbatim (json.Indent fails), so a module can also write raw
// terminal escape sequences to the operator's terminal.
//
// Fix: on CallOK require json.Valid(output) (else a crash/protocol error
// naming the module, instance discarded); on -too_large leave st.output
// alone and record st.outputErr so that a later CallOK is turned into a
// failure.
func TestOutputMustBeJSONAndNotRefused(t *testing.T) {
	wasm := buildReviewGuest(t, guestSource(nil, `
var msg = []byte("\x1b]0;owned\x07\x1b[2J station: module verified by the hub\n")

//go:wasmexport station_call
func call(cmd, in int32) int32 {
	if in == 0 {
		outputSet(unsafe.Pointer(&msg[0]), 0xffffffff) // refused: too large
		return 0
	}
	outputSet(unsafe.Pointer(&msg[0]), uint32(len(msg)))
	return 0
}
`))
	h, err := New(Options{Cache: wasmbuild.CacheForTest()})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	if _, err := h.Load(context.Background(), reviewManifest(t, "test/output", ""), wasm); err != nil {
		t.Fatal(err)
	}
	out, err := h.Call(context.Background(), "test/output", "run", nil)
	if err == nil {
		t.Errorf("output_set refused as too large, guest returned CallOK: call succeeded with output %q", out)
	}
	out, err = h.Call(context.Background(), "test/output", "run", []byte(`{}`))
	if err == nil && !json.Valid(out) {
		t.Errorf("guest returned CallOK with a non-JSON output: call succeeded with output %q", out)
	}
}
