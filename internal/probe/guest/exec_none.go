//go:build !probe_exec

package main

import (
	"context"
	"errors"

	"github.com/station-dev/station/internal/probe"
)

func doExec(context.Context, probe.Action, *probe.Result) error {
	return errors.New("this probe was built without exec (build tag " + probe.ExecTag + ")")
}
