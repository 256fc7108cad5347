//go:build wasip1

package shttp

import (
	"net/http"

	"github.com/station-dev/station/sdk/internal/hostcall"
)

// RoundTrip performs req through the station. A refusal or failure reported
// by the station is a *sdk.HostError.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	doc, err := encodeRequest(req)
	if err != nil {
		return nil, err
	}
	if err := req.Context().Err(); err != nil {
		return nil, err
	}
	s, answer := hostcall.HTTPRequest(doc)
	return decodeResponse(req, s, answer)
}
