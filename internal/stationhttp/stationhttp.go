// Package stationhttp builds the HTTP clients the station uses for its own
// I/O: the LLM provider client, the marketplace client and the Teams relay
// client. These clients know nothing of modules. No module's allowlist, the
// operator's module-egress settings (resolve overrides, private-range grants)
// or any gate applies to them, and they share no transport, connection or TLS
// session with any module (see RATIONALE.md, "Why is a module's policy bound
// at link time?").
//
// IsLoopback is the one test of whether such a client's host is this
// machine, where plain HTTP is allowed: NewClient's clients never send a
// request for such a host through a proxy.
package stationhttp

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"
)

// Options configure a station client.
type Options struct {
	// Timeout bounds a whole request (default 60s).
	Timeout time.Duration
	// RootCAs are the roots to trust (nil: the system roots).
	RootCAs *x509.CertPool
	// UserAgent is sent with every request (default "station").
	UserAgent string
}

// NewClient returns a new client with its own transport.
func NewClient(o Options) *http.Client {
	if o.Timeout == 0 {
		o.Timeout = 60 * time.Second
	}
	if o.UserAgent == "" {
		o.UserAgent = "station"
	}
	t := &http.Transport{
		Proxy: direct(http.ProxyFromEnvironment), // station-level I/O honors the operator's proxy settings
		DialContext: (&net.Dialer{
			Timeout:   15 * time.Second,
			KeepAlive: 30 * time.Second,
		}).DialContext,
		TLSClientConfig:       &tls.Config{RootCAs: o.RootCAs, MinVersion: tls.VersionTLS12},
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          32,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	return &http.Client{Timeout: o.Timeout, Transport: &userAgent{ua: o.UserAgent, next: t}}
}

type userAgent struct {
	ua   string
	next http.RoundTripper
}

func (u *userAgent) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Header.Get("User-Agent") == "" {
		r = r.Clone(r.Context())
		r.Header.Set("User-Agent", u.ua)
	}
	return u.next.RoundTrip(r)
}

// IsLoopback reports whether host, a URL's host name (as url.URL.Hostname
// returns it; brackets around an IPv6 address are accepted too), is this
// machine: localhost in any case, with or without the final dot of a fully
// qualified name, or an address in 127.0.0.0/8 or ::1, also as an IPv4
// address mapped into IPv6 (::ffff:127.0.0.1). The unspecified addresses
// (0.0.0.0, ::) and names under localhost or that merely start with it are
// not: only the name localhost is taken for this machine without asking the
// resolver.
//
// The station's own clients use it to allow plain HTTP (and the LLM
// client, no API key) only to a server on this machine.
func IsLoopback(host string) bool {
	if len(host) >= 2 && host[0] == '[' && host[len(host)-1] == ']' {
		host = host[1 : len(host)-1]
	}
	if strings.EqualFold(strings.TrimSuffix(host, "."), "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}

// direct wraps a transport's proxy function so that a request for a
// loopback host (IsLoopback) is never proxied. Go's own proxy rules skip
// only the exact name "localhost" and loopback addresses, so a request for
// http://LOCALHOST:8080 or http://localhost.:8080, which a station client
// sends in plain HTTP because it stays on this machine, would otherwise go
// to HTTP_PROXY, unencrypted.
func direct(proxy func(*http.Request) (*url.URL, error)) func(*http.Request) (*url.URL, error) {
	return func(r *http.Request) (*url.URL, error) {
		if IsLoopback(r.URL.Hostname()) {
			return nil, nil
		}
		return proxy(r)
	}
}
