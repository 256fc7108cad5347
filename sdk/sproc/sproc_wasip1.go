//go:build wasip1

package sproc

import (
	"github.com/station-dev/station/sdk/abi"
	"github.com/station-dev/station/sdk/internal/hostcall"
)

func run(doc []byte) (abi.Status, []byte) { return hostcall.ProcessRun(doc) }
