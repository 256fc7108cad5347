// Command extism is the suite's Extism plug-in: the same greet function as
// the station module, behind Extism's ABI. The Extism Go PDK is not served by
// the module proxy here, so the plug-in declares Extism's kernel imports
// itself and moves bytes the way the PDK does (8 bytes per host call, then
// single bytes).
package main

import (
	"encoding/json"
	"unsafe"

	"github.com/station-dev/station/bench/greet"
)

func input() []byte {
	n := inputLength()
	b := make([]byte, n)
	var i uint64
	for ; i+8 <= n; i += 8 {
		*(*uint64)(unsafe.Pointer(&b[i])) = inputLoadU64(i)
	}
	for ; i < n; i++ {
		b[i] = byte(inputLoadU8(i))
	}
	return b
}

// store copies b into a new block of Extism memory and returns its offset.
func store(b []byte) uint64 {
	n := uint64(len(b))
	off := alloc(n)
	var i uint64
	for ; i+8 <= n; i += 8 {
		storeU64(off+i, *(*uint64)(unsafe.Pointer(&b[i])))
	}
	for ; i < n; i++ {
		storeU8(off+i, uint32(b[i]))
	}
	return off
}

func fail(err error) int32 {
	errorSet(store([]byte(err.Error())))
	return 1
}

//go:wasmexport greet
func greetExport() int32 {
	var in greet.Input
	if err := json.Unmarshal(input(), &in); err != nil {
		return fail(err)
	}
	out, err := greet.Greet(in)
	if err != nil {
		return fail(err)
	}
	b, err := json.Marshal(out)
	if err != nil {
		return fail(err)
	}
	outputSet(store(b), uint64(len(b)))
	return 0
}

func main() {}
