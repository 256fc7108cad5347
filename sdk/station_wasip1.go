//go:build wasip1

package sdk

import (
	"context"
	"errors"
	"fmt"
	"unsafe"

	"github.com/station-dev/station/sdk/abi"
	"github.com/station-dev/station/sdk/internal/hostcall"
)

// stationABI1 declares ABI version 1 (abi.ExportVersionPrefix + "1").
//
//go:wasmexport station_abi_1
func stationABI1() {}

// described holds the document stationDescribe returned, where the
// builder reads it (Go's heap does not move).
var described []byte

// stationDescribe is the optional station_describe export (docs/abi.md):
// `station module build` calls it, once, to write the commands' JSON
// Schemas into module.yaml; the station never calls it at install or run.
// It returns where Describe's document is in memory: its address in the
// high 32 bits, its length in the low 32.
//
//go:wasmexport station_describe
func stationDescribe() uint64 {
	described = Describe()
	return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(described))))<<32 | uint64(len(described))
}

// Buffers reused from call to call (calls on an instance never overlap):
// every allocation in a guest is expensive inside the station (see
// fastjson.go), and a trivial command should need none of its own. A buffer
// that grew past maxScratch is dropped after the call, so one large call
// does not pin memory.
var (
	nameBuf    = make([]byte, 0, 64)
	inScratch  []byte // the input of typed commands, which only decode it
	outScratch []byte // the result of typed commands
)

const maxScratch = 64 << 10

// last is the command the previous call ran: a module's calls mostly repeat
// one command, and comparing one name is cheaper than hashing it.
var last *handler

// stationCall is abi.ExportCall: it reads the command name and the input
// from their buffers, runs the command and sets the call's output.
//
//go:wasmexport station_call
func stationCall(command, input int32) int32 {
	name, s := hostcall.ReadBufferInto(uint32(command), nameBuf)
	if s != abi.StatusOK {
		hostcall.FreeBuffer(uint32(input))
		return fail(fmt.Sprintf("sdk: read the command name: %s", s))
	}
	c := last
	if c == nil || string(name) != c.name {
		c = lookup(name)
		last = c
	}
	if c == nil {
		hostcall.FreeBuffer(uint32(input))
		fail(unknownCommand(string(name)).Error())
		return abi.CallUnknownCommand
	}
	var in []byte
	if c.raw {
		in, s = hostcall.ReadBuffer(uint32(input)) // the handler owns it
	} else {
		in, s = hostcall.ReadBufferInto(uint32(input), inScratch)
		inScratch = keep(in)
	}
	if s != abi.StatusOK {
		return fail(fmt.Sprintf("sdk: read the input of command %q: %s", c.name, s))
	}
	out, err := c.call(context.Background(), in, outScratch)
	if err != nil {
		fail(err.Error())
		if errors.Is(err, ErrUnknownCommand) {
			return abi.CallUnknownCommand
		}
		return abi.CallFailed
	}
	if !c.raw {
		outScratch = keep(out) // the SDK's own encoding, not the handler's
	}
	if len(out) == 0 {
		return abi.CallOK
	}
	if s := hostcall.SetOutput(out); s != abi.StatusOK {
		return fail(fmt.Sprintf("sdk: command %q: set a result of %d bytes: %s", c.name, len(out), s))
	}
	return abi.CallOK
}

// lookup returns the command registered as name, or nil. (The conversion
// in the index expression does not allocate.)
func lookup(name []byte) *handler {
	if cur := registry.commands.Load(); cur != nil {
		return (*cur)[string(name)]
	}
	return nil
}

// keep returns b emptied for reuse, or nil if it is too large to keep.
func keep(b []byte) []byte {
	if cap(b) > maxScratch {
		return nil
	}
	return b[:0]
}

// fail sets msg as the call's output and returns abi.CallFailed.
func fail(msg string) int32 {
	hostcall.SetOutput([]byte(msg))
	return abi.CallFailed
}

func writeLog(level int32, line []byte) { hostcall.Log(level, line) }
