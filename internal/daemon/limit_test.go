package daemon

import (
	"encoding/json"
	"testing"

	"github.com/station-dev/station/internal/sandbox"
)

// A body over the daemon's limit says the limit for people and in bytes,
// that no setting raises it, and how to pass a larger input.
func TestTooLargeSaysWhatToDo(t *testing.T) {
	const want = "request body over the daemon's limit of 16 MiB (16777216 bytes), which no setting raises; run the command with --no-daemon to pass a larger input (up to the module's limits.max_input)"
	if got := tooLarge(MaxRequestBytes); got != want {
		t.Errorf("too_large message\n got %s\nwant %s", got, want)
	}
}

// A limit crosses the wire with the key that raises it, so that the CLI
// renders a call's error the same through the daemon as in process.
func TestLimitCrossesTheWireWithItsKey(t *testing.T) {
	le := &sandbox.LimitError{Module: "dave/x", Capability: sandbox.Host, Target: "output_set", Reason: "the module's result of 4096 bytes exceeds the limit of 1024",
		Limit: 1024, Bytes: true, Key: "limits.max_output", KeyIn: sandbox.InManifest}
	b, err := json.Marshal(apiLimit(le))
	if err != nil {
		t.Fatal(err)
	}
	var back APILimit
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if got := back.err(); *got != *le || got.Error() != le.Error() {
		t.Errorf("after the wire %+v (%s), want %+v", got, b, le)
	}
}
