//go:build wasip1

package sllm

import (
	"context"

	"github.com/station-dev/station/sdk/internal/hostcall"
)

func complete(_ context.Context, req Request) (*Response, error) {
	doc, err := encode(req)
	if err != nil {
		return nil, err
	}
	return decode(hostcall.LLMComplete(doc))
}
