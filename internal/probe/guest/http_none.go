//go:build probe_no_network

package main

import (
	"context"
	"errors"

	"github.com/station-dev/station/internal/probe"
)

func doHTTP(context.Context, probe.Action, *probe.Result) error {
	return errors.New("http: this probe was built with probe_no_network")
}
