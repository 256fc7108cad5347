//go:build !wasip1

package main

import (
	"errors"

	"github.com/station-dev/station/internal/probe"
)

func raw(probe.Action, *probe.Result) error {
	return errors.New("raw: the station's imports exist only in the wasip1 build")
}

func trap() error { return errors.New("trap: only in the wasip1 build") }
