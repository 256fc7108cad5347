//go:build wasip1

package main

import (
	"fmt"
	"runtime"
	"unsafe"

	"github.com/station-dev/station/internal/probe"
	"github.com/station-dev/station/sdk/abi"
)

// The station's imports, declared a second time (the SDK has its own
// declarations) with plain integers, so any pointer and length can be passed.

//go:wasmimport station buf_len
func rawBufLen(h uint32) int32

//go:wasmimport station buf_read
func rawBufRead(h, ptr, n uint32) int32

//go:wasmimport station buf_free
func rawBufFree(h uint32)

//go:wasmimport station output_set
func rawOutputSet(ptr, n uint32) int32

//go:wasmimport station log
func rawLog(level, ptr, n uint32) int32

// rawImport calls one import with exactly nargs arguments. Imports without a
// result report ok false; an i64 result is packed.
type rawImport struct {
	nargs  int
	packed bool
	call   func(a []uint32) (v int64, ok bool)
}

var rawImports = map[string]rawImport{
	abi.ImportBufLen:  {1, false, func(a []uint32) (int64, bool) { return int64(rawBufLen(a[0])), true }},
	abi.ImportBufRead: {3, false, func(a []uint32) (int64, bool) { return int64(rawBufRead(a[0], a[1], a[2])), true }},
	abi.ImportBufFree: {1, false, func(a []uint32) (int64, bool) { rawBufFree(a[0]); return 0, false }},
	abi.ImportOutputSet: {2, false, func(a []uint32) (int64, bool) {
		return int64(rawOutputSet(a[0], a[1])), true
	}},
	abi.ImportLog: {3, false, func(a []uint32) (int64, bool) { return int64(rawLog(a[0], a[1], a[2])), true }},
}

func raw(a probe.Action, r *probe.Result) error {
	imp, ok := rawImports[a.Import]
	if !ok {
		return fmt.Errorf("raw: unknown import %q", a.Import)
	}
	if len(a.Args) != imp.nargs {
		return fmt.Errorf("raw: %s takes %d arguments, not %d", a.Import, imp.nargs, len(a.Args))
	}
	data := []byte(a.Data)
	var dataPtr uint32
	if len(data) > 0 {
		dataPtr = uint32(uintptr(unsafe.Pointer(&data[0])))
	}
	args := make([]uint32, len(a.Args))
	for i, v := range a.Args {
		switch v {
		case probe.DataPtr:
			args[i] = dataPtr
		case probe.DataLen:
			args[i] = uint32(len(data))
		default:
			args[i] = uint32(v)
		}
	}
	v, ok := imp.call(args)
	runtime.KeepAlive(data)
	if !ok {
		return nil
	}
	r.Value = &v
	if imp.packed {
		s, h := abi.Unpack(uint64(v))
		st := int32(s)
		r.ABIStatus, r.Handle = &st, &h
		if a.Read && h != 0 {
			b, err := readBuffer(h)
			if err != nil {
				return err
			}
			str := string(b)
			r.Buffer = &str
		}
	}
	return nil
}

// readBuffer reads and frees buffer h through the raw imports.
func readBuffer(h uint32) ([]byte, error) {
	n := rawBufLen(h)
	if n < 0 {
		return nil, fmt.Errorf("raw: buf_len(%d) = %d", h, n)
	}
	b := make([]byte, n+1) // never empty, so &b[0] is valid
	got := rawBufRead(h, uint32(uintptr(unsafe.Pointer(&b[0]))), uint32(n))
	runtime.KeepAlive(b)
	if got < 0 {
		return nil, fmt.Errorf("raw: buf_read(%d) = %d (%s)", h, got, abi.Status(-got))
	}
	return b[:got], nil
}

// anchor is a valid address from which trap computes an invalid one.
var anchor, sink byte

// trap loads from the last bytes of the 32-bit address space. The Go
// compiler checks only nil pointers; the WebAssembly engine traps on the
// out-of-bounds access, which no recover can catch.
func trap() error {
	p := unsafe.Pointer(&anchor)
	sink = *(*byte)(unsafe.Add(p, uintptr(0xFFFFFFF0)-uintptr(p)))
	return fmt.Errorf("trap: loaded %d from 0xFFFFFFF0 without a trap", sink)
}
