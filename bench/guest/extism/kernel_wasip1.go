//go:build wasip1

package main

// Extism's kernel imports, as the Extism Go PDK declares them.

//go:wasmimport extism:host/env input_length
func inputLength() uint64

//go:wasmimport extism:host/env input_load_u64
func inputLoadU64(off uint64) uint64

//go:wasmimport extism:host/env input_load_u8
func inputLoadU8(off uint64) uint32

//go:wasmimport extism:host/env alloc
func alloc(n uint64) uint64

//go:wasmimport extism:host/env store_u64
func storeU64(off uint64, v uint64)

//go:wasmimport extism:host/env store_u8
func storeU8(off uint64, v uint32)

//go:wasmimport extism:host/env output_set
func outputSet(off, n uint64)

//go:wasmimport extism:host/env error_set
func errorSet(off uint64)
