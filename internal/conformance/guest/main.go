// Command guest is the Go build of the conformance module: the commands of
// examples/c/hello and examples/rust/hello, written with the Go SDK, so that
// the conformance test can require the same results and the same sandbox
// decisions from all three.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/station-dev/station/sdk"
	"github.com/station-dev/station/sdk/shttp"
)

// object decodes a command's input as the C and Rust examples do: a JSON
// object with no fields but the command's.
func object(input []byte, fields ...string) (map[string]any, error) {
	var m map[string]any
	if err := json.Unmarshal(input, &m); err != nil || m == nil {
		if err == nil {
			err = errors.New("not an object")
		}
		return nil, fmt.Errorf("invalid input: %v", err)
	}
	for k := range m {
		if !slices.Contains(fields, k) {
			return nil, fmt.Errorf("invalid input: unknown field %q", k)
		}
	}
	return m, nil
}

func greet(ctx context.Context, input []byte) ([]byte, error) {
	in, err := object(input, "name")
	if err != nil {
		return nil, err
	}
	name, _ := in["name"].(string)
	name = strings.Trim(name, " \t\n\r\f\v")
	if name == "" {
		return nil, errors.New("name is required")
	}
	return json.Marshal(map[string]string{"greeting": "Hello, " + name + "!"})
}

func fetch(ctx context.Context, input []byte) ([]byte, error) {
	in, err := object(input, "url")
	if err != nil {
		return nil, err
	}
	url, _ := in["url"].(string)
	if url == "" {
		return nil, errors.New("url is required")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := shttp.Client().Do(req)
	if he := (*sdk.HostError)(nil); errors.As(err, &he) {
		return nil, errors.New(he.Message) // the station's message, as the C and Rust examples give it
	} else if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	return json.Marshal(struct {
		Status int    `json:"status"`
		Body   string `json:"body"`
	}{resp.StatusCode, string(body)})
}

func init() {
	sdk.HandleRaw("greet", greet)
	sdk.HandleRaw("fetch", fetch)
}

func main() {}
