package learn

import (
	"errors"
	"fmt"

	"github.com/station-dev/station/sdk/abi"
)

// imports says which of the gated station imports a wasm module imports:
// the learning run must link each of them (a module that imports
// process_run is refused by a station that does not grant subprocess), and
// grants the capability with nothing allowed.
type imports struct {
	processRun, llmComplete bool
}

// readImports reads the import section of wasm, and nothing else: the
// station's install still checks and compiles the whole module (in a
// bounded child process), so learn never compiles it in this process.
func readImports(wasm []byte) (imports, error) {
	var im imports
	r := &reader{b: wasm}
	if len(wasm) < 8 || string(wasm[:4]) != "\x00asm" {
		return im, errors.New("not a WebAssembly module (no \\0asm header)")
	}
	r.off = 8
	for r.off < len(r.b) {
		id, err := r.byte()
		if err != nil {
			return im, err
		}
		size, err := r.u32()
		if err != nil {
			return im, err
		}
		if int(size) > len(r.b)-r.off {
			return im, fmt.Errorf("section %d at offset %d runs past the end of the module", id, r.off)
		}
		if id != 2 {
			r.off += int(size)
			continue
		}
		s := &reader{b: r.b[:r.off+int(size)], off: r.off}
		n, err := s.u32()
		if err != nil {
			return im, err
		}
		for range n {
			mod, err := s.name()
			if err != nil {
				return im, err
			}
			name, err := s.name()
			if err != nil {
				return im, err
			}
			if err := s.skipDesc(); err != nil {
				return im, err
			}
			if mod == abi.ImportModule {
				switch name {
				case abi.ImportProcessRun:
					im.processRun = true
				case abi.ImportLLMComplete:
					im.llmComplete = true
				}
			}
		}
		return im, nil
	}
	return im, nil
}

type reader struct {
	b   []byte
	off int
}

var errTruncated = errors.New("the module's import section is truncated")

func (r *reader) byte() (byte, error) {
	if r.off >= len(r.b) {
		return 0, errTruncated
	}
	c := r.b[r.off]
	r.off++
	return c, nil
}

func (r *reader) u32() (uint32, error) {
	var v uint32
	for shift := 0; shift < 35; shift += 7 {
		c, err := r.byte()
		if err != nil {
			return 0, err
		}
		v |= uint32(c&0x7f) << shift
		if c&0x80 == 0 {
			return v, nil
		}
	}
	return 0, fmt.Errorf("over-long integer at offset %d", r.off)
}

func (r *reader) name() (string, error) {
	n, err := r.u32()
	if err != nil {
		return "", err
	}
	if int(n) > len(r.b)-r.off {
		return "", errTruncated
	}
	s := string(r.b[r.off : r.off+int(n)])
	r.off += int(n)
	return s, nil
}

// skipDesc skips an import's description: a function's type index, a
// table, a memory or a global.
func (r *reader) skipDesc() error {
	kind, err := r.byte()
	if err != nil {
		return err
	}
	switch kind {
	case 0x00: // function: type index
		_, err = r.u32()
	case 0x01: // table: reference type, limits
		if _, err = r.byte(); err == nil {
			err = r.limits()
		}
	case 0x02: // memory: limits
		err = r.limits()
	case 0x03: // global: value type, mutability
		if _, err = r.byte(); err == nil {
			_, err = r.byte()
		}
	default:
		err = fmt.Errorf("unknown import kind 0x%02x at offset %d", kind, r.off-1)
	}
	return err
}

func (r *reader) limits() error {
	flags, err := r.byte()
	if err != nil {
		return err
	}
	if _, err := r.u32(); err != nil {
		return err
	}
	if flags&1 != 0 {
		_, err = r.u32()
	}
	return err
}
