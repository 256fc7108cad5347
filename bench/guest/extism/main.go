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
	"github.com/station-dev/station/bench/kernels"
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

// The compute kernels (bench/kernels), one export each.

//go:wasmexport sha256
func sha256Export() int32 { return kernel("sha256") }

//go:wasmexport json
func jsonExport() int32 { return kernel("json") }

//go:wasmexport sort
func sortExport() int32 { return kernel("sort") }

//go:wasmexport loop
func loopExport() int32 { return kernel("loop") }

func kernel(name string) int32 {
	sum, _ := kernels.Run(name)
	b := kernels.Result(sum)
	outputSet(store(b), uint64(len(b)))
	return 0
}

func main() {}
