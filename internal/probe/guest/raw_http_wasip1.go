//go:build wasip1 && !probe_no_network

package main

import "github.com/station-dev/station/sdk/abi"

//go:wasmimport station http_request
func rawHTTPRequest(ptr, n uint32) uint64

func init() {
	rawImports[abi.ImportHTTPRequest] = rawImport{2, true, func(a []uint32) (int64, bool) {
		return int64(rawHTTPRequest(a[0], a[1])), true
	}}
}
