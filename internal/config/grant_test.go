package config

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// network.grant holds allowlist entries in the manifest's grammar; an entry
// the grammar refuses is an error naming it (no grant allows "*").
func TestNetworkGrant(t *testing.T) {
	c, err := Parse(FileName, []byte("network:\n  grant: [\"*.amazonaws.com\", \"http://*.x.herokuapp.com:8080\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.Network.Grant, []string{"*.amazonaws.com", "http://*.x.herokuapp.com:8080"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Grant = %q, want %q", got, want)
	}
	for _, entry := range []string{"*", "*.com", "*.github.io", "*.run.app", "https://x.example/path", ""} {
		_, err := Parse(FileName, []byte("network:\n  grant: [\""+entry+"\"]\n"))
		var e *Error
		if !errors.As(err, &e) || e.Field != "network.grant" || e.Entry != entry || strings.Contains(e.Msg, "allow entry") {
			t.Errorf("grant %q: %v, want an error naming the entry", entry, err)
		}
	}
}
