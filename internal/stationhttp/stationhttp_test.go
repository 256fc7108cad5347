package stationhttp

import (
	"net/http"
	"net/url"
	"testing"
)

func TestIsLoopback(t *testing.T) {
	tests := []struct {
		host string
		want bool
	}{
		{"localhost", true},
		{"LOCALHOST.", true}, // host names are case-insensitive; the final dot makes it fully qualified
		{"LocalHost", true},
		{"localhost..", false},
		{"127.0.0.1", true},
		{"127.8.9.10", true}, // all of 127.0.0.0/8
		{"::1", true},
		{"[::1]", true},
		{"::ffff:127.0.0.1", true}, // IPv4-mapped: the same address
		{"[::ffff:127.0.0.1]", true},
		{"0.0.0.0", false}, // unspecified, not loopback
		{"::", false},
		{"localhost.example.com", false},
		{"foo.localhost", false},
		{"localhost:8080", false}, // a host name, not host:port
		{"127.1", false},          // not a dotted quad: the resolver decides what it is
		{"128.0.0.1", false},
		{"::2", false},
		{"[::1", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := IsLoopback(tt.host); got != tt.want {
			t.Errorf("IsLoopback(%q) = %v, want %v", tt.host, got, tt.want)
		}
	}
}

// TestNoProxyForLoopback: a station client sends plain HTTP to a loopback
// host, so the request must not go to a proxy, whatever spelling of
// localhost Go's own proxy rules do not know.
func TestNoProxyForLoopback(t *testing.T) {
	proxy, _ := url.Parse("http://proxy.example:3128")
	p := direct(func(*http.Request) (*url.URL, error) { return proxy, nil })
	for _, tt := range []struct {
		url     string
		proxied bool
	}{
		{"http://LOCALHOST:8080/v1", false},
		{"http://localhost.:8080/v1", false},
		{"http://[::ffff:127.0.0.1]:8080/", false},
		{"https://api.example.com/", true},
		{"http://localhost.example.com/", true},
	} {
		u, err := url.Parse(tt.url)
		if err != nil {
			t.Fatal(err)
		}
		got, err := p(&http.Request{URL: u})
		if err != nil || (got != nil) != tt.proxied {
			t.Errorf("proxy for %s = %v, %v; want proxied %v", tt.url, got, err, tt.proxied)
		}
	}
}
