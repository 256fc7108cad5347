//go:build !probe_no_network

package main

import (
	"context"
	"io"
	"net/http"
	"strings"

	"github.com/station-dev/station/internal/probe"
	"github.com/station-dev/station/sdk/shttp"
)

func doHTTP(ctx context.Context, a probe.Action, r *probe.Result) error {
	var body io.Reader
	if a.Body != "" {
		body = strings.NewReader(a.Body)
	}
	req, err := http.NewRequestWithContext(ctx, a.Method, a.URL, body)
	if err != nil {
		return err
	}
	for k, v := range a.Headers {
		req.Header[k] = v
	}
	resp, err := shttp.Client().Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	r.Status, r.Headers, r.BodyLen, r.URL = resp.StatusCode, resp.Header, len(b), resp.Request.URL.String()
	r.Body = string(b[:min(len(b), probe.MaxBody)])
	return nil
}
