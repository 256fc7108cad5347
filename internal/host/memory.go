package host

import (
	"fmt"

	"github.com/tetratelabs/wazero/experimental"

	"github.com/station-dev/station/internal/sandbox"
	"github.com/station-dev/station/internal/units"
)

// The memory limit of a module (limits.memory) is enforced here, by the
// allocator of each instance's linear memory, rather than by wazero's
// WithMemoryLimitPages: wazero refuses a memory.grow past its maximum
// without telling anyone, and the guest's only answer is to trap — a Go
// guest's runtime aborts with "unreachable" — so the caller would learn
// nothing of why. The allocator sees every grow the guest asks for (the
// runtime's own maximum is the 4 GiB a 32-bit module can address), refuses
// one past the limit exactly as wazero would (memory.grow returns -1), and
// remembers it, so that the call's error can say that the module ran out of
// memory, with the limit and the manifest key that raises it.

// linearMemory is one instance's linear memory, allocated by the host. It
// grows like wazero's own (a Go slice, zeroed as it grows) within limit.
type linearMemory struct {
	buf   []byte
	limit uint64 // bytes: the module's limits.memory
	// refused is the size of the first grow past limit since reset
	// (0: none). A guest runs on one goroutine at a time and the call reads
	// it after the guest returned, so it needs no lock.
	refused uint64
}

// Reallocate implements experimental.LinearMemory.
func (l *linearMemory) Reallocate(size uint64) []byte {
	if size > l.limit {
		if l.refused == 0 {
			l.refused = size
		}
		return nil // memory.grow returns -1
	}
	if size <= uint64(cap(l.buf)) {
		l.buf = l.buf[:size]
		return l.buf
	}
	// Grow the capacity geometrically, as append would, but never past the
	// limit: append's growth could hold up to twice the limit in host
	// memory for a module that is allowed only the limit.
	buf := make([]byte, size, min(max(size, 2*uint64(cap(l.buf))), l.limit))
	copy(buf, l.buf)
	l.buf = buf
	return l.buf
}

// Free implements experimental.LinearMemory. The buffer is Go memory: it
// goes when the instance does.
func (l *linearMemory) Free() {}

// reset forgets a refused grow: what happened before a call is not its.
func (l *linearMemory) reset() {
	if l != nil {
		l.refused = 0
	}
}

// allocator makes the linear memory of one instance of a module with the
// memory limit limit, and keeps it in *out.
func allocator(limit uint64, out **linearMemory) experimental.MemoryAllocator {
	return experimental.MemoryAllocatorFunc(func(capacity, _ uint64) experimental.LinearMemory {
		l := &linearMemory{buf: make([]byte, 0, min(capacity, limit)), limit: limit}
		*out = l
		return l
	})
}

// memoryLimit is the module's memory limit in bytes, in whole pages.
func (m *Module) memoryLimit() uint64 { return (m.limits.MemoryBytes + 65535) / 65536 * 65536 }

// wasmPages is the most pages a 32-bit module's memory can have (4 GiB):
// the runtime's own limit, so that every grow within it reaches the
// allocator.
const wasmPages = 65536

// outOfMemory returns the refusal of a grow of inst's memory past the
// module's limit since the memory was last reset, or nil: recorded in the
// audit log (once per call) like every refusal over a limit.
func (m *Module) outOfMemory(inst *instance, call *sandbox.Call) *sandbox.LimitError {
	mem := inst.memory
	if mem == nil || mem.refused == 0 {
		return nil
	}
	limit := m.memoryLimit()
	e := sandbox.Exceed(m.id, sandbox.Host, "memory.grow",
		fmt.Sprintf("growing its memory to %d bytes exceeds its limit of %d", mem.refused, limit), int64(limit), nil)
	e.Bytes = true
	if mx := m.h.opts.MaxLimits.MemoryBytes; mx == 0 || limit < mx {
		e.Key, e.KeyIn = "limits.memory", sandbox.InManifest
	} else {
		e.Key, e.KeyIn = "limits.max_memory", sandbox.InConfig // the manifest is at the operator's maximum
	}
	mem.reset()
	m.rec.Record(e.Decision(call))
	return e
}

// oomText is the message of a call or a start that trapped after its memory
// could not grow past the limit: what happened, the limit, and what raises
// it. trap is the trap as describeTrap words it.
func (m *Module) oomText(e *sandbox.LimitError, trap string) string {
	how := "raise limits.memory in the module's manifest"
	if mx := m.h.opts.MaxLimits.MemoryBytes; mx > 0 {
		how += fmt.Sprintf(" (at most %s, the operator's limits.max_memory in config.yaml)", units.Bytes(int64(mx)))
	}
	if e.KeyIn == sandbox.InConfig {
		how = "its limits.memory is the operator's maximum: the operator can raise limits.max_memory in config.yaml, and the module's manifest then limits.memory"
	}
	return fmt.Sprintf("ran out of memory: it needed more than its limit of %s, then %s; %s",
		units.Bytes(int64(m.memoryLimit())), trap, how)
}
