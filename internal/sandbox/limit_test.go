package sandbox

import "testing"

// A refusal over a limit says the limit in a form people read and, where a
// setting raises it, which key in which file; one without either renders as
// it always did.
func TestLimitErrorNamesTheLimitAndItsKey(t *testing.T) {
	tests := []struct {
		name string
		e    LimitError
		want string
	}{
		{"manifest key", LimitError{Module: "dave/x", Capability: Host, Target: "output_set", Reason: "the module's result of 4096 bytes exceeds the limit of 1024", Limit: 1024, Bytes: true, Key: "limits.max_output", KeyIn: InManifest},
			`limit exceeded: module dave/x: host: "output_set" the module's result of 4096 bytes exceeds the limit of 1024; the limit is 1 KiB (raise it with limits.max_output in the module's manifest)`},
		{"config key", LimitError{Module: "dave/x", Capability: Filesystem, Target: "/data/f", Reason: "would exceed its limit of 5 open files over all its instances", Limit: 5, Key: "filesystem.open_files", KeyIn: InConfig},
			`limit exceeded: module dave/x: filesystem: "/data/f" would exceed its limit of 5 open files over all its instances (the operator can raise it with filesystem.open_files in config.yaml)`},
		{"fixed, in bytes", LimitError{Module: "dave/x", Capability: Network, Target: "https://a.example/", Reason: "request body of 16777217 bytes exceeds the limit of 16777216 bytes", Limit: 16 << 20, Bytes: true},
			`limit exceeded: module dave/x: network: "https://a.example/" request body of 16777217 bytes exceeds the limit of 16777216 bytes; the limit is 16 MiB`},
		{"neither", LimitError{Module: "dave/x", Capability: Network, Target: "https://a.example/", Reason: "stopped after 10 redirects, the limit of one request", Limit: 10},
			`limit exceeded: module dave/x: network: "https://a.example/" stopped after 10 redirects, the limit of one request`},
	}
	for _, tt := range tests {
		if got := tt.e.Error(); got != tt.want {
			t.Errorf("%s:\n got %s\nwant %s", tt.name, got, tt.want)
		}
	}
}
