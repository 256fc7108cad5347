package bench

import (
	"bytes"
	"context"
	"testing"
	"time"
)

// TestPaths runs every path the benchmarks time once and checks its result,
// so that a broken path fails here instead of timing an error.
func TestPaths(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		call func(t *testing.T) ([]byte, error)
	}{
		{"native", func(t *testing.T) ([]byte, error) { return sdkInvoke(ctx) }},
		{"wazero-raw", func(t *testing.T) ([]byte, error) {
			h, fn := rawGuest(t, true)
			var stack [2]uint64
			return callRaw(ctx, h, fn, []byte("greet"), &stack)
		}},
		{"station", func(t *testing.T) ([]byte, error) { return sharedStation(t).Run(ctx, greetID, "greet", in) }},
		{"station-rawjson", func(t *testing.T) ([]byte, error) { return sharedStation(t).Run(ctx, greetID, "greet-raw", in) }},
		{"station-fresh", func(t *testing.T) ([]byte, error) { return sharedStation(t).Run(ctx, freshID, "greet", in) }},
		{"station-run-process", func(t *testing.T) ([]byte, error) { return stationRun(t)() }},
		{"daemon", func(t *testing.T) ([]byte, error) { return startDaemon(t).Run(ctx, greetID, "greet", in, "") }},
		{"extism", func(t *testing.T) ([]byte, error) {
			_, out, err := extismPlugin(t, 30*time.Second).CallWithContext(ctx, "greet", in)
			return out, err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := tt.call(t)
			if err != nil || !bytes.Equal(out, want) {
				t.Fatalf("got %s, %v; want %s", out, err, want)
			}
		})
	}
	t.Run("fetch", func(t *testing.T) {
		out, err := sharedStation(t).Run(ctx, fetchID, "get", []byte(`{"url":"`+fetchURL+`"}`))
		if got, want := string(out), `{"status":200,"bytes":50}`; err != nil || got != want {
			t.Fatalf("got %s, %v; want %s", got, err, want)
		}
	})
}
