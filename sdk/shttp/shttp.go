// Package shttp gives a Station module an *http.Client whose requests go
// through the station's network gate (the http_request import, docs/abi.md).
// The gate checks each request, and each redirect hop, against the module's
// manifest; a refused request fails with a *sdk.HostError whose Denied
// method reports true:
//
//	resp, err := shttp.Client().Get("https://api.stripe.com/v1/charges")
//	var he *sdk.HostError
//	if errors.As(err, &he) && he.Denied() {
//		return fmt.Errorf("the station refused the request: %w", err)
//	}
//
// The station performs the whole exchange before http_request returns:
// request and response bodies are buffered, not streamed.
//
// Outside the station (any GOOS but wasip1) Transport fails every request
// unless a test installed a transport with SetNativeTransport.
package shttp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/station-dev/station/sdk"
	"github.com/station-dev/station/sdk/abi"
	"github.com/station-dev/station/sdk/internal/hostcall"
)

// MaxRequestBody is the largest request body Transport sends. The station
// also bounds the whole request document (16 MiB by default), and the body
// travels in it base64-encoded, so the largest body the station accepts by
// default is about 12 MiB.
const MaxRequestBody = 16 << 20

// Client returns an *http.Client that sends its requests through the
// station. It does not follow redirects: the station follows them itself,
// re-checking each hop, and a 3xx response reaches the module only when the
// station hands it back unfollowed.
func Client() *http.Client {
	return &http.Client{
		Transport:     &Transport{},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// Transport is an http.RoundTripper that performs each request through the
// station's http_request import. The zero value is ready to use.
type Transport struct{}

// encodeRequest reads req's body (closing it) and builds the abi.HTTPRequest
// document for it.
func encodeRequest(req *http.Request) ([]byte, error) {
	if req.Body != nil {
		defer req.Body.Close()
	}
	if req.URL == nil {
		return nil, errors.New("shttp: request has no URL")
	}
	doc := abi.HTTPRequest{Method: req.Method, URL: req.URL.String(), Headers: req.Header}
	if doc.Method == "" {
		doc.Method = http.MethodGet
	}
	if req.Host != "" && req.Host != req.URL.Host {
		// The station decides about Host headers; pass the module's wish on
		// rather than dropping it silently.
		doc.Headers = req.Header.Clone()
		if doc.Headers == nil {
			doc.Headers = make(http.Header)
		}
		doc.Headers["Host"] = []string{req.Host}
	}
	if req.Body != nil && req.Body != http.NoBody {
		body, err := io.ReadAll(io.LimitReader(req.Body, MaxRequestBody+1))
		if err != nil {
			return nil, fmt.Errorf("shttp: read the request body: %w", err)
		}
		if len(body) > MaxRequestBody {
			return nil, fmt.Errorf("shttp: the request body exceeds %d bytes", MaxRequestBody)
		}
		doc.Body = body
	}
	if b, ok := appendRequest(nil, &doc); ok {
		return b, nil
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("shttp: encode the request: %w", err)
	}
	return b, nil
}

// decodeResponse turns the station's answer to req (status s, document doc)
// into a response or a *sdk.HostError.
func decodeResponse(req *http.Request, s abi.Status, doc []byte) (*http.Response, error) {
	if s != abi.StatusOK {
		e := hostcall.ParseError(s, doc)
		return nil, &sdk.HostError{Status: s, Code: e.Code, Capability: e.Capability, Target: e.Target, Reason: e.Reason, Message: e.Message}
	}
	var r abi.HTTPResponse
	if !parseResponse(doc, &r) {
		r = abi.HTTPResponse{}
		if err := json.Unmarshal(doc, &r); err != nil {
			return nil, fmt.Errorf("shttp: decode the station's response: %w", err)
		}
	}
	if r.Status < 100 || r.Status > 999 {
		return nil, fmt.Errorf("shttp: the station returned status %d", r.Status)
	}
	resp := &http.Response{
		Status:        fmt.Sprintf("%d %s", r.Status, http.StatusText(r.Status)),
		StatusCode:    r.Status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        http.Header(r.Headers),
		Body:          http.NoBody,
		ContentLength: int64(len(r.Body)),
		Request:       req,
	}
	resp.Status = strings.TrimSpace(resp.Status)
	if resp.Header == nil {
		resp.Header = make(http.Header)
	}
	if len(r.Body) > 0 {
		resp.Body = io.NopCloser(bytes.NewReader(r.Body))
	}
	if r.URL != "" && r.URL != req.URL.String() {
		// The station followed redirects: like http.Client, point
		// resp.Request at the request for the final URL.
		if u, err := url.Parse(r.URL); err == nil {
			final := req.Clone(req.Context())
			final.URL, final.Host, final.Body = u, u.Host, http.NoBody
			resp.Request = final
		}
	}
	return resp, nil
}
