//go:build !wasip1

package sllm

import (
	"context"
	"sync/atomic"

	"github.com/station-dev/station/sdk"
	"github.com/station-dev/station/sdk/abi"
)

// Completer answers completions in native builds; see SetNativeCompleter.
type Completer func(ctx context.Context, req Request) (*Response, error)

var native atomic.Pointer[Completer]

// SetNativeCompleter makes Complete call f outside the station, so a
// module's handlers can be tested natively with a fake LLM; nil restores the
// default, which fails every request. It exists only in native builds.
func SetNativeCompleter(f Completer) {
	if f == nil {
		native.Store(nil)
		return
	}
	native.Store(&f)
}

func complete(ctx context.Context, req Request) (*Response, error) {
	if f := native.Load(); f != nil {
		return (*f)(ctx, req)
	}
	return nil, &sdk.HostError{Status: abi.StatusUnavailable, Code: abi.StatusUnavailable.String(),
		Message: "sllm: the station's LLM is only available inside the station (GOOS=wasip1); tests can install a fake with SetNativeCompleter"}
}
