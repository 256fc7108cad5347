//go:build !wasip1

package shttp

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/station-dev/station/sdk"
	"github.com/station-dev/station/sdk/abi"
)

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestClientNative(t *testing.T) {
	if _, err := Client().Get("https://api.example/"); err == nil || !strings.Contains(err.Error(), "only available inside the station") {
		t.Errorf("Get without a native transport: error %v", err)
	}

	denied := &sdk.HostError{Status: abi.StatusDenied, Message: "sandbox violation"}
	SetNativeTransport(roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if r.URL.Host == "evil.example" {
			return nil, denied
		}
		return &http.Response{StatusCode: 302, Header: http.Header{"Location": {"https://evil.example/"}}, Body: http.NoBody, Request: r}, nil
	}))
	t.Cleanup(func() { SetNativeTransport(nil) })

	resp, err := Client().Get("https://api.example/")
	if err != nil || resp.StatusCode != 302 {
		t.Fatalf("Get = %v, %v; want the 302 itself (the client must not follow redirects)", resp, err)
	}
	_, err = Client().Do((&http.Request{Method: "GET", URL: &url.URL{Scheme: "https", Host: "evil.example"}}).WithContext(context.Background()))
	var he *sdk.HostError
	var ue *url.Error
	if !errors.As(err, &ue) || !errors.As(err, &he) || he != denied || !he.Denied() {
		t.Errorf("Do(evil) error = %#v, want a *url.Error around the HostError", err)
	}
}
