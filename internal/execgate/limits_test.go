package execgate

import (
	"errors"
	"strings"
	"testing"

	"github.com/station-dev/station/internal/sandbox"
	"github.com/station-dev/station/internal/units"
	"github.com/station-dev/station/sdk/abi"
)

// A request over one of the gate's byte limits says the limit for people
// too; the limits are the station's own, so no key is named.
func TestByteLimitsAreReadable(t *testing.T) {
	g := systemGate(t, &recorder{}, []string{"true"}, Options{})
	for _, c := range []struct {
		name string
		req  *abi.ProcessRequest
		want string
	}{
		{"stdin", &abi.ProcessRequest{Argv: []string{"true"}, Stdin: make([]byte, MaxStdin+1)}, "; the limit is 1 MiB"},
		{"arguments", &abi.ProcessRequest{Argv: []string{"true", strings.Repeat("x", MaxArgBytes)}}, "; the limit is " + units.Bytes(MaxArgBytes)},
	} {
		_, err := g.Run(callCtx(t), c.req)
		var le *sandbox.LimitError
		if !errors.As(err, &le) || !le.Bytes || le.Key != "" || !strings.HasSuffix(err.Error(), c.want) {
			t.Errorf("%s: %v (%+v), want a limit in bytes ending %q", c.name, err, le, c.want)
		}
	}
}
