package workflow

import (
	"strconv"
	"strings"
)

// Error is one problem found in a workflow file. Parse joins every Error it
// finds with errors.Join.
type Error struct {
	File   string // the filename given to Parse
	Line   int    // 1-based; 0 when the problem has no position
	Column int    // 1-based; 0 when unknown
	Field  string // the field path, e.g. "steps[1].with.customer"
	Msg    string // what is wrong, lower case, no trailing period
}

// Error renders e as one line:
//
//	invoice.yaml:12:7: steps[1].needs: unknown step "charge"
func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		b.WriteString(":")
	}
	if e.Line > 0 {
		b.WriteString(strconv.Itoa(e.Line))
		b.WriteString(":")
		if e.Column > 0 {
			b.WriteString(strconv.Itoa(e.Column))
			b.WriteString(":")
		}
	}
	if b.Len() > 0 {
		b.WriteString(" ")
	}
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// maxQuoted bounds how much of a value an error message repeats.
const maxQuoted = 128

// quote renders s for an error message: Go-quoted and bounded.
func quote(s string) string {
	if len(s) > maxQuoted {
		cut := maxQuoted
		for cut > 0 && s[cut]&0xc0 == 0x80 {
			cut--
		}
		return strconv.Quote(s[:cut]) + "..."
	}
	return strconv.Quote(s)
}
