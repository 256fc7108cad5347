// Command hello is the smallest Station module: one command, greet, and no
// permissions. Build it with
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o module.wasm .
package main

import (
	"context"
	"errors"
	"strings"

	"github.com/station-dev/station/sdk"
)

// GreetInput is the input of greet.
type GreetInput struct {
	Name string `json:"name"`
}

// GreetOutput is the result of greet.
type GreetOutput struct {
	Greeting string `json:"greeting"`
}

func greet(ctx context.Context, in GreetInput) (GreetOutput, error) {
	name := strings.TrimSpace(in.Name)
	if name == "" {
		return GreetOutput{}, errors.New("name is required")
	}
	return GreetOutput{Greeting: "Hello, " + name + "!"}, nil
}

func init() { sdk.Handle("greet", greet) }

func main() {}
