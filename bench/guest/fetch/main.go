// Command fetch is the suite's network module: get fetches a URL through
// the station's network gate with the SDK's *http.Client, the way a module
// author would write it, and returns the status and the body's length.
package main

import (
	"context"
	"fmt"
	"io"
	"net/http"

	"github.com/station-dev/station/sdk"
	"github.com/station-dev/station/sdk/shttp"
)

type getInput struct {
	URL string `json:"url"`
}

type getOutput struct {
	Status int `json:"status"`
	Bytes  int `json:"bytes"`
}

var client = shttp.Client()

func get(ctx context.Context, in getInput) (getOutput, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, in.URL, nil)
	if err != nil {
		return getOutput{}, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return getOutput{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return getOutput{}, fmt.Errorf("read body: %w", err)
	}
	return getOutput{Status: resp.StatusCode, Bytes: len(b)}, nil
}

func init() { sdk.Handle("get", get) }

func main() {}
