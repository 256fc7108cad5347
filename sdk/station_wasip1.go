//go:build wasip1

package sdk

import (
	"context"
	"errors"
	"fmt"

	"github.com/station-dev/station/abi"
	"github.com/station-dev/station/sdk/internal/hostcall"
)

// stationABI1 declares ABI version 1 (abi.ExportVersionPrefix + "1").
//
//go:wasmexport station_abi_1
func stationABI1() {}

// stationCall is abi.ExportCall: it reads the command name and the input
// from their buffers, runs the command and sets the call's output.
//
//go:wasmexport station_call
func stationCall(command, input int32) int32 {
	name, s := hostcall.ReadBuffer(uint32(command))
	if s != abi.StatusOK {
		hostcall.FreeBuffer(uint32(input))
		return fail(fmt.Sprintf("sdk: read the command name: %s", s))
	}
	in, s := hostcall.ReadBuffer(uint32(input))
	if s != abi.StatusOK {
		return fail(fmt.Sprintf("sdk: read the input of command %q: %s", name, s))
	}
	out, err := dispatch(context.Background(), string(name), in)
	if err != nil {
		fail(err.Error())
		if errors.Is(err, ErrUnknownCommand) {
			return abi.CallUnknownCommand
		}
		return abi.CallFailed
	}
	if len(out) == 0 {
		return abi.CallOK
	}
	if s := hostcall.SetOutput(out); s != abi.StatusOK {
		return fail(fmt.Sprintf("sdk: command %q: set a result of %d bytes: %s", name, len(out), s))
	}
	return abi.CallOK
}

// fail sets msg as the call's output and returns abi.CallFailed.
func fail(msg string) int32 {
	hostcall.SetOutput([]byte(msg))
	return abi.CallFailed
}

func writeLog(level int32, line []byte) { hostcall.Log(level, line) }
