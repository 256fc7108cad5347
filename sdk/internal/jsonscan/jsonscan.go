// Package jsonscan is the JSON scanner of the SDK's fast paths: the typed
// commands' input (package sdk) and the HTTP response document (package
// shttp) are read with it instead of encoding/json.
//
// Inside the station every loop iteration and every function call of a Go
// guest costs an exit to the host (wazero checks for the call's deadline
// there), so the scanner is a few small methods the compiler inlines, and
// PlainRun tests eight bytes of a string at a time.
//
// A Scanner only accepts what encoding/json reads exactly as it does: a
// string without escapes, in valid UTF-8, a number as JSON writes it. Its
// callers report anything else to their own callers, which then use
// encoding/json from the start.
package jsonscan

import (
	"encoding/binary"
	"unicode/utf8"
	"unsafe"
)

// Scanner reads a JSON document from its start. The zero value reads an
// empty document.
type Scanner struct {
	b []byte
	i int
}

// New returns a Scanner at the start of b.
func New(b []byte) Scanner { return Scanner{b: b} }

// Space skips white space.
func (s *Scanner) Space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// Peek returns the next byte, or 0 at the end.
func (s *Scanner) Peek() byte {
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// Byte consumes c if it is next.
func (s *Scanner) Byte(c byte) bool {
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// Literal consumes lit if it is next.
func (s *Scanner) Literal(lit string) bool {
	if len(s.b)-s.i >= len(lit) && string(s.b[s.i:s.i+len(lit)]) == lit {
		s.i += len(lit)
		return true
	}
	return false
}

// Null consumes null if it is next.
func (s *Scanner) Null() bool { return s.Literal("null") }

// End reports whether only white space is left.
func (s *Scanner) End() bool {
	s.Space()
	return s.i == len(s.b)
}

// Str scans a string without escapes and returns its contents, which alias
// the document. It reports false for a string with an escape sequence or a
// control character, one that is not valid UTF-8, or one that does not end.
func (s *Scanner) Str() ([]byte, bool) {
	if !s.Byte('"') {
		return nil, false
	}
	start := s.i
	s.i += PlainRun(s.b[s.i:])
	ascii := true
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			str := s.b[start:s.i]
			s.i++
			return str, ascii || utf8.Valid(str)
		case c == '\\' || c < 0x20:
			return nil, false
		case c >= utf8.RuneSelf:
			ascii = false
		}
		s.i++
	}
	return nil, false
}

// Number scans a JSON number and returns it, aliasing the document (for
// strconv, which copies what it keeps), and whether it has neither a
// fraction nor an exponent. What follows it is not checked: a caller that
// expects a delimiter next finds it or fails.
func (s *Scanner) Number() (tok string, integer, ok bool) {
	start := s.i
	s.Byte('-')
	switch c := s.Peek(); {
	case c == '0':
		s.i++
	case '1' <= c && c <= '9':
		s.digits()
	default:
		return "", false, false
	}
	integer = true
	if s.Byte('.') {
		integer = false
		if !isDigit(s.Peek()) {
			return "", false, false
		}
		s.digits()
	}
	if c := s.Peek(); c == 'e' || c == 'E' {
		integer = false
		s.i++
		if c := s.Peek(); c == '+' || c == '-' {
			s.i++
		}
		if !isDigit(s.Peek()) {
			return "", false, false
		}
		s.digits()
	}
	b := s.b[start:s.i]
	return unsafe.String(&b[0], len(b)), integer, true
}

// digits skips the digits at the scanner.
func (s *Scanner) digits() {
	for s.i++; isDigit(s.Peek()); s.i++ {
	}
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// PlainRun returns how many leading bytes of b are printable ASCII other
// than '"' and '\\': bytes a JSON string holds as they are, and that
// encoding/json writes unchanged. It tests eight bytes at a time.
func PlainRun(b []byte) int {
	const lsb, msb = 0x0101010101010101, 0x8080808080808080
	i := 0
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		ctl := (x - lsb*0x20) &^ x // a byte < 0x20 (exact while no byte has its top bit set)
		q := x ^ lsb*'"'
		bs := x ^ lsb*'\\'
		if (x|ctl|(q-lsb)&^q|(bs-lsb)&^bs)&msb != 0 {
			break
		}
	}
	for ; i < len(b); i++ {
		if c := b[i]; c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' {
			break
		}
	}
	return i
}
