// Package wasmgen assembles small WebAssembly binaries for tests: the
// hostile ones the install limits refuse (a million functions, deep
// nesting, huge local counts, truncated integers, sections past the end)
// are generated when the tests run, never committed.
package wasmgen

// LEB encodes v as an unsigned LEB128 integer.
func LEB(v uint64) []byte {
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

// Section encodes a section with its id and length.
func Section(id byte, content []byte) []byte {
	return append(append([]byte{id}, LEB(uint64(len(content)))...), content...)
}

// Name encodes a name (a length and the bytes).
func Name(s string) []byte { return append(LEB(uint64(len(s))), s...) }

// Header is the magic number and version 1.
func Header() []byte { return []byte{0x00, 'a', 's', 'm', 0x01, 0x00, 0x00, 0x00} }

// Locals is one local declaration: Count locals of Type (0x7f is i32).
type Locals struct {
	Count uint64
	Type  byte
}

// Func is a function of type () -> (): its local declarations and its
// instructions (the final end is added).
type Func struct {
	Locals []Locals
	Body   []byte
}

// Module assembles a module of funcs, all of type () -> (), with one
// memory page exported as "memory". Sections in extra are appended as
// they are (a custom section, say).
func Module(funcs []Func, extra ...[]byte) []byte {
	m := Header()
	m = append(m, Section(1, []byte{1, 0x60, 0, 0})...) // () -> ()
	fs := LEB(uint64(len(funcs)))
	for range funcs {
		fs = append(fs, 0)
	}
	m = append(m, Section(3, fs)...)
	m = append(m, Section(5, []byte{1, 0x00, 1})...)                                 // one memory page
	m = append(m, Section(7, append(append([]byte{1}, Name("memory")...), 2, 0))...) // export it
	code := LEB(uint64(len(funcs)))
	for _, f := range funcs {
		body := LEB(uint64(len(f.Locals)))
		for _, l := range f.Locals {
			body = append(append(body, LEB(l.Count)...), l.Type)
		}
		body = append(append(body, f.Body...), 0x0b)
		code = append(append(code, LEB(uint64(len(body)))...), body...)
	}
	m = append(m, Section(10, code)...)
	for _, s := range extra {
		m = append(m, s...)
	}
	return m
}

// Functions is a module of n empty functions.
func Functions(n int) []byte {
	return Module(make([]Func, n))
}

// Nest returns instructions that open depth blocks and close them again.
func Nest(depth int) []byte {
	b := make([]byte, 0, 3*depth)
	for range depth {
		b = append(b, 0x02, 0x40) // block (no result)
	}
	for range depth {
		b = append(b, 0x0b)
	}
	return b
}

// Nested is a module of n functions that each nest depth blocks.
func Nested(n, depth int) []byte {
	fs := make([]Func, n)
	body := Nest(depth)
	for k := range fs {
		fs[k].Body = body
	}
	return Module(fs)
}
