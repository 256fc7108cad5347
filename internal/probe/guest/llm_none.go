//go:build !probe_llm

package main

import (
	"context"
	"errors"

	"github.com/station-dev/station/internal/probe"
)

func doLLM(context.Context, probe.Action, *probe.Result) error {
	return errors.New("this probe was built without llm (build tag " + probe.LLMTag + ")")
}
