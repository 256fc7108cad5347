package sdk_test

import (
	"strings"
	"testing"

	"github.com/station-dev/station/sdk"
	"github.com/station-dev/station/sdk/abi"
)

func TestSecret(t *testing.T) {
	p := sdk.Secret("STRIPE_KEY")
	if p != "~station-secret~STRIPE_KEY~" {
		t.Fatalf("Secret = %q", p)
	}
	start, end, name, ok := abi.FindSecret("Bearer "+p+"!", 0)
	if !ok || name != "STRIPE_KEY" || start != 7 || end != 7+len(p) {
		t.Fatalf("FindSecret = %d %d %q %v", start, end, name, ok)
	}
	for _, bad := range []string{"", "stripe_key", "1KEY", "KEY-1", strings.Repeat("K", 65), "KEY~"} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Secret(%q) did not panic", bad)
				}
			}()
			sdk.Secret(bad)
		}()
	}
}

func TestFindSecretMalformed(t *testing.T) {
	// A prefix without a valid name and suffix is still found, as a
	// malformed placeholder: no spelling goes unseen by the gate.
	for _, s := range []string{"~station-secret~", "~station-secret~lower~", "~station-secret~" + strings.Repeat("A", 65) + "~", "x~station-secret~A"} {
		_, _, name, ok := abi.FindSecret(s, 0)
		if !ok || name != "" {
			t.Errorf("FindSecret(%q) = %q, %v; want a malformed placeholder", s, name, ok)
		}
	}
	if _, _, _, ok := abi.FindSecret("no placeholder ~station-secre~A~", 0); ok {
		t.Error("found a placeholder in text without one")
	}
}
