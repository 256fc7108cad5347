package host

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/station-dev/station/internal/wasmbuild"
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

// Tables are host memory outside the module's memory limit. table.grow does
// not validate (reference types are off), and a table whose declared size is
// over MaxTableElements is refused at load — before anything is allocated.
// (Found by review: a guest could take gigabytes, or kill the station, with
// one table.grow.)
func TestTablesCannotTakeHostMemory(t *testing.T) {
	h, err := New(Options{Cache: wasmbuild.CacheForTest()})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	// ref.null func; i32.const 1<<25; table.grow 0; drop
	grow := wasmModule([]byte{0xd0, 0x70, 0x41, 0x80, 0x80, 0x80, 0x10, 0xfc, 0x0f, 0x00, 0x1a})
	_, err = h.Load(context.Background(), reviewManifest(t, "test/tables", "memory: 1MiB"), grow)
	if err == nil || !strings.Contains(err.Error(), "reference-types") {
		t.Errorf("a module using table.grow: got %v, want a load error about reference types", err)
	}
	huge := wasmModule(nil)
	// Patch the table section's limits to min 2^27 (0x00 flag, LEB 0x80 0x80 0x80 0x40).
	i := bytes.Index(huge, []byte{4, 4, 1, 0x70, 0x00, 0})
	if i < 0 {
		t.Fatal("table section not found")
	}
	huge = append(append(append([]byte{}, huge[:i]...), 4, 7, 1, 0x70, 0x00, 0x80, 0x80, 0x80, 0x40), huge[i+6:]...)
	_, err = h.Load(context.Background(), reviewManifest(t, "test/tables", ""), huge)
	if err == nil || !strings.Contains(err.Error(), "elements; the limit is") {
		t.Errorf("a module declaring a 2^27-element table: got %v, want it refused", err)
	}
	if _, err := h.Load(context.Background(), reviewManifest(t, "test/tables", ""), wasmModule(nil)); err != nil {
		t.Errorf("a module with a small table: %v", err)
	}
}
