// Command station is the suite's station module: greet (sdk.Handle, JSON in
// and out) and greet-raw (sdk.HandleRaw, the same result without the SDK's
// JSON decoding and encoding, to show what the guest's JSON costs), and the
// compute kernels as commands of their own names.
package main

import (
	"bytes"
	"context"
	"errors"

	"github.com/station-dev/station/bench/greet"
	"github.com/station-dev/station/bench/kernels"
	"github.com/station-dev/station/sdk"
)

func init() {
	sdk.Handle("greet", func(ctx context.Context, in greet.Input) (greet.Output, error) {
		return greet.Greet(in)
	})
	sdk.HandleRaw("greet-raw", greetRaw)
	// The compute kernels (bench/kernels), for the suite's Kernel benchmark.
	for _, name := range kernels.Names {
		sdk.HandleRaw(name, func(ctx context.Context, in []byte) ([]byte, error) {
			sum, _ := kernels.Run(name)
			return kernels.Result(sum), nil
		})
	}
}

// greetRaw answers {"name":"X"} with {"greeting":"Hello, X!"} by slicing:
// enough for the suite's fixed input, not a JSON parser.
func greetRaw(ctx context.Context, in []byte) ([]byte, error) {
	const pre = `{"name":"`
	if !bytes.HasPrefix(in, []byte(pre)) || !bytes.HasSuffix(in, []byte(`"}`)) {
		return nil, errors.New("greet-raw: want {\"name\":\"...\"}")
	}
	name := in[len(pre) : len(in)-2]
	out := make([]byte, 0, len(name)+27)
	out = append(out, `{"greeting":"Hello, `...)
	out = append(out, name...)
	return append(out, `!"}`...), nil
}

func main() {}
