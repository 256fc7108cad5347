package host

import (
	"errors"
	"fmt"
)

// MaxTableElements bounds the initial (and declared maximum) size of every
// table a module declares. Tables live in host memory, outside the module's
// memory limit: wazero backs each element with a Go word. Go and Rust guests
// declare tables of a few thousand to a few hundred thousand functions.
//
// Growth at run time is closed separately: the station compiles modules
// without the reference-types feature, so table.grow does not validate (see
// RATIONALE.md, "Why are tables bounded and reference types off?").
const MaxTableElements = 1 << 20

// checkTables refuses, before compilation, modules whose tables could take
// host memory without bound: imported tables and tables whose minimum or
// declared maximum exceeds MaxTableElements. It walks only
// the import and table sections of the binary; wazero validates the rest.
func checkTables(wasm []byte) error {
	r := &reader{b: wasm}
	if len(wasm) < 8 || string(wasm[:4]) != "\x00asm" {
		return errors.New("not a WebAssembly module")
	}
	r.i = 8
	for !r.done() {
		id := r.byte()
		size := r.u32()
		if r.err != nil {
			return fmt.Errorf("malformed module: %w", r.err)
		}
		end := r.i + int(size)
		if end > len(wasm) || end < r.i {
			return errors.New("malformed module: section runs past the end")
		}
		sec := &reader{b: wasm[:end], i: r.i}
		switch id {
		case 2: // imports
			n := sec.u32()
			for k := uint32(0); k < n && sec.err == nil; k++ {
				mod, name := sec.name(), sec.name()
				switch kind := sec.byte(); kind {
				case 0x00: // function
					sec.u32()
				case 0x01: // table
					return fmt.Errorf("module imports table %s.%s; a module must define its own tables", mod, name)
				case 0x02: // memory
					sec.limits()
				case 0x03: // global
					sec.byte()
					sec.byte()
				case 0x04: // tag
					sec.byte()
					sec.u32()
				default:
					return fmt.Errorf("malformed module: import %s.%s has kind %#x", mod, name, kind)
				}
			}
		case 4: // tables
			n := sec.u32()
			for k := uint32(0); k < n && sec.err == nil; k++ {
				sec.byte() // reference type
				flags, min, mx := sec.limits()
				switch {
				case sec.err != nil:
				case min > MaxTableElements || (flags == 0x01 && mx > MaxTableElements):
					return fmt.Errorf("table %d may hold %d elements; the limit is %d", k, max(min, mx), MaxTableElements)
				}
			}
		}
		if sec.err != nil {
			return fmt.Errorf("malformed module: %w", sec.err)
		}
		r.i = end
	}
	return nil
}

// reader decodes the little of the binary format checkTables needs.
type reader struct {
	b   []byte
	i   int
	err error
}

func (r *reader) done() bool { return r.err != nil || r.i >= len(r.b) }

func (r *reader) byte() byte {
	if r.err != nil {
		return 0
	}
	if r.i >= len(r.b) {
		r.err = errors.New("unexpected end")
		return 0
	}
	c := r.b[r.i]
	r.i++
	return c
}

// u32 reads an unsigned LEB128 value of at most 32 bits.
func (r *reader) u32() uint32 {
	var v uint64
	for shift := 0; shift < 35; shift += 7 {
		c := r.byte()
		if r.err != nil {
			return 0
		}
		v |= uint64(c&0x7f) << shift
		if c&0x80 == 0 {
			if v > 0xffffffff {
				r.err = errors.New("integer overflows 32 bits")
				return 0
			}
			return uint32(v)
		}
	}
	r.err = errors.New("integer too long")
	return 0
}

func (r *reader) name() string {
	n := r.u32()
	if r.err != nil || r.i+int(n) > len(r.b) || int(n) < 0 {
		if r.err == nil {
			r.err = errors.New("name runs past the end")
		}
		return ""
	}
	s := string(r.b[r.i : r.i+int(n)])
	r.i += int(n)
	return s
}

// limits reads a limits structure; flags 0x00 (min) and 0x01 (min, max) are
// the 32-bit forms, anything else (shared, 64-bit) is reported as is with
// max unset.
func (r *reader) limits() (flags byte, min, max uint32) {
	flags = r.byte()
	switch flags {
	case 0x00:
		min = r.u32()
	case 0x01, 0x03:
		min = r.u32()
		max = r.u32()
	default:
		r.err = fmt.Errorf("unsupported limits flags %#x", flags)
	}
	return flags, min, max
}
