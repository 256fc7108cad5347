package hostcall

import (
	"testing"

	"github.com/station-dev/station/sdk/abi"
)

func TestParseError(t *testing.T) {
	tests := []struct {
		status abi.Status
		doc    string
		want   abi.Error
	}{
		{abi.StatusDenied, `{"code":"denied","capability":"network","target":"x:443","reason":"r","message":"m"}`,
			abi.Error{Code: "denied", Capability: "network", Target: "x:443", Reason: "r", Message: "m"}},
		{abi.StatusFault, `{"message":"m"}`, abi.Error{Code: "fault", Message: "m"}},
		{abi.StatusTimeout, ``, abi.Error{Code: "timeout", Message: "station: host call failed: timeout"}},
		{abi.StatusInvalid, `{"code":"invalid"}`, abi.Error{Code: "invalid", Message: "station: host call failed: invalid"}},
		{abi.Status(99), `{`, abi.Error{Code: "unknown", Message: "station: host call failed: unknown"}},
	}
	for _, tt := range tests {
		if got := ParseError(tt.status, []byte(tt.doc)); got != tt.want {
			t.Errorf("ParseError(%d, %q) = %+v, want %+v", tt.status, tt.doc, got, tt.want)
		}
	}
}
