//go:build wasip1 && probe_llm

package main

import "github.com/station-dev/station/sdk/abi"

//go:wasmimport station llm_complete
func rawLLMComplete(ptr, n uint32) uint64

func init() {
	rawImports[abi.ImportLLMComplete] = rawImport{2, true, func(a []uint32) (int64, bool) {
		return int64(rawLLMComplete(a[0], a[1])), true
	}}
}
