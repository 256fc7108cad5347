//go:build !wasip1

package main

// Outside wasip1 the plug-in only has to compile (go vet ./... in bench/).

func inputLength() uint64 { panic("extism kernel: only inside an Extism host") }

func inputLoadU64(off uint64) uint64 { panic("extism kernel: only inside an Extism host") }

func inputLoadU8(off uint64) uint32 { panic("extism kernel: only inside an Extism host") }

func alloc(n uint64) uint64 { panic("extism kernel: only inside an Extism host") }

func storeU64(off uint64, v uint64) { panic("extism kernel: only inside an Extism host") }

func storeU8(off uint64, v uint32) { panic("extism kernel: only inside an Extism host") }

func outputSet(off, n uint64) { panic("extism kernel: only inside an Extism host") }

func errorSet(off uint64) { panic("extism kernel: only inside an Extism host") }
