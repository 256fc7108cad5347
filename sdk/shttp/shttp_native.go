//go:build !wasip1

package shttp

import (
	"errors"
	"net/http"
	"sync/atomic"
)

var native atomic.Pointer[http.RoundTripper]

// SetNativeTransport makes Transport delegate to rt outside the station, so
// a module's handlers can be tested natively against a fake server; nil
// restores the default, which fails every request. It exists only in native
// builds. Note that Client does not follow redirects (the station does), so
// rt should answer as the station would, after redirects.
func SetNativeTransport(rt http.RoundTripper) {
	if rt == nil {
		native.Store(nil)
		return
	}
	native.Store(&rt)
}

// RoundTrip delegates to the transport installed by SetNativeTransport, or
// fails: the station's network exists only inside the station.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if rt := native.Load(); rt != nil {
		return (*rt).RoundTrip(req)
	}
	if req.Body != nil {
		req.Body.Close()
	}
	return nil, errors.New("shttp: the station's network is only available inside the station (GOOS=wasip1); tests can install a transport with SetNativeTransport")
}
