//go:build wasip1

package hostcall

import (
	"runtime"
	"unsafe"

	"github.com/station-dev/station/sdk/abi"
)

//go:wasmimport station buf_len
func bufLen(h uint32) int32

//go:wasmimport station buf_read
func bufRead(h uint32, ptr unsafe.Pointer, n uint32) int32

//go:wasmimport station buf_free
func bufFree(h uint32)

//go:wasmimport station output_set
func outputSet(ptr unsafe.Pointer, n uint32) int32

//go:wasmimport station log
func logLine(level int32, ptr unsafe.Pointer, n uint32) int32

//go:wasmimport station http_request
func httpRequest(ptr unsafe.Pointer, n uint32) uint64

// ptr returns the address of b's first byte, or nil for an empty b: the
// station never dereferences the pointer of a zero-length range.
func ptr(b []byte) unsafe.Pointer {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Pointer(&b[0])
}

// status turns the i32 result of an import (a count or 0 on success, a
// negated Status on failure) into a Status.
func status(r int32) abi.Status {
	if r < 0 {
		return abi.Status(-r)
	}
	return abi.StatusOK
}

// ReadBuffer copies buffer h into a new slice and frees it. Handle 0 is the
// empty buffer. A handle that is not live yields StatusInvalid.
func ReadBuffer(h uint32) ([]byte, abi.Status) { return ReadBufferInto(h, nil) }

// ReadBufferInto is ReadBuffer into dst's spare capacity when the buffer
// fits there (one host call instead of two), else into a new slice. The
// result aliases dst only in the first case.
func ReadBufferInto(h uint32, dst []byte) ([]byte, abi.Status) {
	if h == 0 {
		return dst[:0], abi.StatusOK
	}
	if c := cap(dst); c > 0 {
		dst = dst[:c]
		r := bufRead(h, ptr(dst), uint32(c))
		runtime.KeepAlive(dst)
		if r >= 0 {
			return dst[:r], abi.StatusOK
		}
		if abi.Status(-r) != abi.StatusTooLarge {
			bufFree(h)
			return nil, status(r)
		}
	}
	n := bufLen(h)
	if n < 0 {
		return nil, abi.StatusInvalid
	}
	if n == 0 {
		bufFree(h)
		return dst[:0], abi.StatusOK
	}
	b := make([]byte, n)
	r := bufRead(h, ptr(b), uint32(n))
	runtime.KeepAlive(b)
	if r < 0 {
		bufFree(h)
		return nil, status(r)
	}
	return b[:r], abi.StatusOK
}

// FreeBuffer frees buffer h; 0 and unknown handles are ignored.
func FreeBuffer(h uint32) {
	if h != 0 {
		bufFree(h)
	}
}

// SetOutput sets the result of the current call.
func SetOutput(b []byte) abi.Status {
	r := outputSet(ptr(b), uint32(len(b)))
	runtime.KeepAlive(b)
	return status(r)
}

// Log writes one line to the station's module log at an abi.Log* level.
func Log(level int32, line []byte) abi.Status {
	r := logLine(level, ptr(line), uint32(len(line)))
	runtime.KeepAlive(line)
	return status(r)
}

// HTTPRequest performs the abi.HTTPRequest document doc. On StatusOK the
// returned bytes are an abi.HTTPResponse document; otherwise they are an
// abi.Error document, or nil when the station returned no buffer.
func HTTPRequest(doc []byte) (abi.Status, []byte) {
	r := httpRequest(ptr(doc), uint32(len(doc)))
	runtime.KeepAlive(doc)
	return answer(r)
}

// answer reads the buffer of a packed host call result.
func answer(r uint64) (abi.Status, []byte) {
	s, h := abi.Unpack(r)
	b, rs := ReadBuffer(h)
	if rs != abi.StatusOK {
		if s == abi.StatusOK {
			s = rs
		}
		return s, nil
	}
	return s, b
}

//go:wasmimport station process_run
func processRun(ptr unsafe.Pointer, n uint32) uint64

// ProcessRun runs the abi.ProcessRequest document doc. On StatusOK the
// returned bytes are an abi.ProcessResponse document; otherwise they are an
// abi.Error document, or nil. The import exists only in modules whose
// manifest grants subprocess; the Go linker keeps it only in modules that
// call this function.
func ProcessRun(doc []byte) (abi.Status, []byte) {
	r := processRun(ptr(doc), uint32(len(doc)))
	runtime.KeepAlive(doc)
	return answer(r)
}

//go:wasmimport station llm_complete
func llmComplete(ptr unsafe.Pointer, n uint32) uint64

// LLMComplete asks the station's LLM for the abi.LLMRequest document doc.
// On StatusOK the returned bytes are an abi.LLMResponse document; otherwise
// they are an abi.Error document, or nil. The import exists only in modules
// whose manifest grants llm; the Go linker keeps it only in modules that
// call this function.
func LLMComplete(doc []byte) (abi.Status, []byte) {
	r := llmComplete(ptr(doc), uint32(len(doc)))
	runtime.KeepAlive(doc)
	return answer(r)
}
