//go:build !wasip1

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/station-dev/station/sdk"
	"github.com/station-dev/station/sdk/abi"
	"github.com/station-dev/station/sdk/shttp"
)

// fakeAPIs answers as Stripe and Groq would, and as the station does for a
// host outside the allowlist. Nothing leaves the process.
type fakeAPIs struct{ t *testing.T }

func (f fakeAPIs) RoundTrip(req *http.Request) (*http.Response, error) {
	reply := func(status int, body string) (*http.Response, error) {
		return &http.Response{
			StatusCode: status, Status: fmt.Sprintf("%d %s", status, http.StatusText(status)), Request: req,
			Header: http.Header{"Content-Type": {"application/json"}},
			Body:   io.NopCloser(strings.NewReader(body)),
		}, nil
	}
	var body []byte
	if req.Body != nil {
		body, _ = io.ReadAll(req.Body)
	}
	switch req.URL.Host {
	case "api.stripe.com":
		// The module writes the placeholder; the station puts the value in.
		if req.Header.Get("Authorization") != "Bearer "+abi.SecretPlaceholder("STRIPE_KEY") {
			return reply(401, `{"error":{"message":"Invalid API Key provided"}}`)
		}
		form, _ := url.ParseQuery(string(body))
		if req.URL.Path != "/v1/invoices" || form.Get("customer") != "cus_42" {
			f.t.Errorf("stripe got %s %s %q", req.Method, req.URL.Path, body)
		}
		return reply(200, `{"id":"in_1","object":"invoice","status":"draft","amount_due":1200,"currency":"eur"}`)
	case "api.groq.com":
		var chat struct {
			Model    string        `json:"model"`
			Messages []chatMessage `json:"messages"`
		}
		if req.Header.Get("Authorization") != "Bearer "+abi.SecretPlaceholder("GROQ_KEY") {
			return reply(401, `{"error":{"message":"Invalid API Key"}}`)
		}
		if err := json.Unmarshal(body, &chat); err != nil || len(chat.Messages) != 2 || chat.Messages[1].Content != "Invoice in_1: 12 EUR." {
			f.t.Errorf("groq got %q (%v)", body, err)
		}
		return reply(200, `{"choices":[{"message":{"role":"assistant","content":" One invoice of 12 EUR. "}}]}`)
	}
	return nil, &sdk.HostError{Status: abi.StatusDenied, Code: "denied", Capability: "network", Target: req.URL.Host + ":443",
		Reason: "is not in its allowlist", Message: `sandbox violation: module dave/stripe-invoicing: network: "` + req.URL.Host + `:443" is not in its allowlist`}
}

func TestCommands(t *testing.T) {
	shttp.SetNativeTransport(fakeAPIs{t})
	t.Cleanup(func() { shttp.SetNativeTransport(nil) })
	tests := []struct {
		command, input, want, wantErr string
		denied                        bool
	}{
		{command: "create-invoice", input: `{"customer":"cus_42"}`,
			want: `{"id":"in_1","status":"draft","amount_due":1200,"currency":"eur"}`},
		{command: "create-invoice", input: `{}`, wantErr: "customer is required"},
		{command: "summarize", input: `{"text":"Invoice in_1: 12 EUR."}`, want: `{"summary":"One invoice of 12 EUR."}`},
		{command: "fetch", input: `{"url":"https://api.stripe.com/v1/invoices/in_1"}`,
			want: `{"status":401,"url":"https://api.stripe.com/v1/invoices/in_1","bytes":48}`},
		{command: "fetch", input: `{"url":"https://evil.example/"}`, denied: true,
			wantErr: `the station refused the request (this module may only reach api.stripe.com and api.groq.com): sandbox violation: module dave/stripe-invoicing: network: "evil.example:443" is not in its allowlist`},
	}
	for _, tt := range tests {
		t.Run(tt.command, func(t *testing.T) {
			got, err := sdk.Invoke(context.Background(), tt.command, []byte(tt.input))
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("%s(%s) error = %v\nwant %s", tt.command, tt.input, err, tt.wantErr)
				}
				var he *sdk.HostError
				if denied := errors.As(err, &he) && he.Denied(); denied != tt.denied {
					t.Errorf("%s(%s): denied = %v, want %v", tt.command, tt.input, denied, tt.denied)
				}
				return
			}
			if err != nil || string(got) != tt.want {
				t.Fatalf("%s(%s) = %s, %v\nwant %s", tt.command, tt.input, got, err, tt.want)
			}
		})
	}
}
