//go:build !wasip1

package main

import (
	"errors"

	"github.com/station-dev/station/internal/probe"
)

// openat needs WASI's path_open.
func openat(probe.Action) error { return errors.New("openat: only in the wasm build") }
