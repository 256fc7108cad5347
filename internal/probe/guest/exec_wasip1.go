//go:build wasip1 && probe_extra_import

package main

// exec is an import the station does not offer (ABI 1 has no subprocess
// import): a module that declares it must fail to instantiate, cleanly.
//
//go:wasmimport station exec
func rawExec(ptr, n uint32) uint64

func init() {
	rawImports["exec"] = rawImport{2, true, func(a []uint32) (int64, bool) { return int64(rawExec(a[0], a[1])), true }}
}
