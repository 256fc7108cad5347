package shttp

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/station-dev/station/sdk"
	"github.com/station-dev/station/sdk/abi"
)

func TestEncodeRequest(t *testing.T) {
	tests := []struct {
		name string
		req  func() *http.Request
		want string
	}{
		{"get", func() *http.Request {
			r, _ := http.NewRequest("GET", "https://api.example/v1?q=1", nil)
			return r
		}, `{"method":"GET","url":"https://api.example/v1?q=1"}`},
		{"post with headers", func() *http.Request {
			r, _ := http.NewRequest("POST", "https://api.example/", strings.NewReader("hi"))
			r.Header.Set("Authorization", "Bearer k")
			return r
		}, `{"method":"POST","url":"https://api.example/","headers":{"Authorization":["Bearer k"]},"body":"aGk="}`},
		{"host differs", func() *http.Request {
			r, _ := http.NewRequest("GET", "https://api.example/", http.NoBody)
			r.Host = "other.example"
			return r
		}, `{"method":"GET","url":"https://api.example/","headers":{"Host":["other.example"]}}`},
		{"no method", func() *http.Request {
			return &http.Request{URL: &url.URL{Scheme: "https", Host: "a.example", Path: "/"}}
		}, `{"method":"GET","url":"https://a.example/"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := encodeRequest(tt.req())
			if err != nil || string(got) != tt.want {
				t.Errorf("encodeRequest = %s, %v\nwant %s", got, err, tt.want)
			}
		})
	}
}

func TestEncodeRequestBodyLimit(t *testing.T) {
	r, _ := http.NewRequest("POST", "https://api.example/", io.LimitReader(zeros{}, MaxRequestBody+1))
	if _, err := encodeRequest(r); err == nil || !strings.Contains(err.Error(), "exceeds") {
		t.Errorf("encodeRequest of a too large body: error %v", err)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

func TestDecodeResponse(t *testing.T) {
	req, _ := http.NewRequest("GET", "https://api.example/start", nil)
	doc, _ := json.Marshal(abi.HTTPResponse{Status: 404, Headers: map[string][]string{"Content-Type": {"text/plain"}}, Body: []byte("nope"), URL: "https://api.example/final"})
	resp, err := decodeResponse(req, abi.StatusOK, doc)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 404 || resp.Status != "404 Not Found" || string(body) != "nope" || resp.ContentLength != 4 ||
		resp.Header.Get("Content-Type") != "text/plain" || resp.Request.URL.String() != "https://api.example/final" || resp.ProtoMajor != 1 {
		t.Errorf("decodeResponse = %+v, body %q", resp, body)
	}

	resp, err = decodeResponse(req, abi.StatusOK, []byte(`{"status":204,"url":"https://api.example/start"}`))
	if err != nil || resp.Body != http.NoBody || resp.Header == nil || resp.Request != req {
		t.Errorf("decodeResponse of an empty answer = %+v, %v", resp, err)
	}

	for _, bad := range []string{`{"status":42,"url":"x"}`, `[]`, ``} {
		if _, err := decodeResponse(req, abi.StatusOK, []byte(bad)); err == nil {
			t.Errorf("decodeResponse(%q): no error", bad)
		}
	}
}

func TestDecodeError(t *testing.T) {
	tests := []struct {
		status abi.Status
		doc    string
		want   sdk.HostError
	}{
		{abi.StatusDenied, `{"code":"denied","capability":"network","target":"evil.example:443","reason":"is not in its allowlist","message":"sandbox violation"}`,
			sdk.HostError{Status: abi.StatusDenied, Code: "denied", Capability: "network", Target: "evil.example:443", Reason: "is not in its allowlist", Message: "sandbox violation"}},
		{abi.StatusUnavailable, ``, sdk.HostError{Status: abi.StatusUnavailable, Code: "unavailable", Message: "station: host call failed: unavailable"}},
		{abi.StatusFailed, `garbage`, sdk.HostError{Status: abi.StatusFailed, Code: "failed", Message: "station: host call failed: failed"}},
	}
	req, _ := http.NewRequest("GET", "https://api.example/", nil)
	for _, tt := range tests {
		_, err := decodeResponse(req, tt.status, []byte(tt.doc))
		var he *sdk.HostError
		if !errors.As(err, &he) || *he != tt.want {
			t.Errorf("decodeResponse(%s, %q) error = %#v, want %#v", tt.status, tt.doc, err, tt.want)
		}
	}
}
