// Package stationhttp builds the HTTP clients the station uses for its own
// I/O: the LLM provider client, the marketplace client and the Teams relay
// client. These clients know nothing of modules. No module's allowlist, the
// operator's module-egress settings (resolve overrides, private-range grants)
// or any gate applies to them, and they share no transport, connection or TLS
// session with any module (see RATIONALE.md, "Why is a module's policy bound
// at link time?").
package stationhttp

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
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
		Proxy: http.ProxyFromEnvironment, // station-level I/O honors the operator's proxy settings
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
