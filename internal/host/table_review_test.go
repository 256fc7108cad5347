package host

import (
	"context"
	"runtime"
	"testing"
)

// wasmModule assembles a minimal module by hand: memory, a funcref table
// with no maximum, station_abi_1, and station_call whose body is body (the
// instructions only; the local declarations and end are added).
func wasmModule(body []byte) []byte {
	leb := func(v uint64) []byte {
		var b []byte
		for {
			c := byte(v & 0x7f)
			v >>= 7
			if v != 0 {
				c |= 0x80
			}
			b = append(b, c)
			if v == 0 {
				return b
			}
		}
	}
	section := func(id byte, content []byte) []byte {
		return append(append([]byte{id}, leb(uint64(len(content)))...), content...)
	}
	name := func(s string) []byte { return append(leb(uint64(len(s))), s...) }
	m := []byte{0x00, 'a', 's', 'm', 0x01, 0x00, 0x00, 0x00}
	m = append(m, section(1, []byte{2, 0x60, 0, 0, 0x60, 2, 0x7f, 0x7f, 1, 0x7f})...) // () -> (), (i32 i32) -> i32
	m = append(m, section(3, []byte{2, 0, 1})...)                                     // two functions
	m = append(m, section(4, []byte{1, 0x70, 0x00, 0})...)                            // funcref table, min 0, no max
	m = append(m, section(5, []byte{1, 0x00, 1})...)                                  // memory, min 1 page
	exp := []byte{3}
	exp = append(append(exp, name("memory")...), 0x02, 0)
	exp = append(append(exp, name("station_abi_1")...), 0x00, 0)
	exp = append(append(exp, name("station_call")...), 0x00, 1)
	m = append(m, section(7, exp)...)
	f1 := append(append([]byte{0}, body...), 0x41, 0, 0x0b) // ...; i32.const 0; end
	code := []byte{2, 2, 0, 0x0b}
	code = append(append(code, leb(uint64(len(f1)))...), f1...)
	m = append(m, section(10, code)...)
	return m
}

// REVIEW (fails): limits.memory bounds only linear memory
// (WithMemoryLimitPages). Tables are host memory too — wazero backs each
// element with a Go uintptr — and are bounded by nothing: the station enables
// CoreFeaturesV2 (reference types, so table.grow) and a table without a
// maximum may grow to 2^32-1 elements (32 GiB). Each table.grow is a single
// Go allocation inside the engine; a guest that asks for a few billion
// elements makes the Go runtime die with "fatal error: out of memory" (not
// recoverable: the whole station goes down) or gets the process OOM-killed.
// A table's declared minimum (up to 2^27 elements, 1 GiB) is likewise
// allocated at every instantiation, outside the memory limit.
//
// This test grows a table by 2^25 elements (256 MiB) in a module limited to
// 1 MiB of memory and checks how much host memory the warm instance pins.
//
// Fix: at load, refuse modules whose tables declare a minimum above a small
// cap or no maximum / a maximum above the cap (e.g. 64Ki elements — Go and
// Rust guests need a few thousand), or disable reference types
// (CoreFeaturesV2 &^ CoreFeatureReferenceTypes) if nothing needs table.grow;
// also count tables against the module's memory budget.
func TestReviewTableGrowOutsideMemoryLimit(t *testing.T) {
	// ref.null func; i32.const 1<<25; table.grow 0; drop
	body := []byte{0xd0, 0x70, 0x41, 0x80, 0x80, 0x80, 0x10, 0xfc, 0x0f, 0x00, 0x1a}
	h, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	if _, err := h.Load(context.Background(), reviewManifest(t, "test/tables", "memory: 1MiB"), wasmModule(body)); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err = h.Call(context.Background(), "test/tables", "run", nil)
	runtime.GC()
	runtime.ReadMemStats(&after)
	grew := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("call err=%v; host heap pinned by a module limited to 1 MiB: %d MiB", err, grew>>20)
	if err == nil && grew > 64<<20 {
		t.Fatalf("a module limited to 1 MiB of memory pinned %d MiB of host memory with table.grow", grew>>20)
	}
}
