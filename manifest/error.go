package manifest

import (
	"strconv"
	"strings"
)

// Error is one problem found in a manifest. Parse joins every Error it finds
// with errors.Join; use errors.As to get the first, or the
// interface{ Unwrap() []error } of the joined error to get them all.
type Error struct {
	File   string // the filename given to Parse
	Line   int    // 1-based; 0 when the problem has no position
	Column int    // 1-based; 0 when unknown
	Field  string // the field path, e.g. "requires.network.allow" or "commands[1].name"
	Entry  string // the offending list entry or value, when there is one
	Msg    string // what is wrong, lower case, no trailing period
}

// Error renders e as one line:
//
//	module.yaml:12:5: requires.network.allow: entry "*": a wildcard must be followed by a domain
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
	if e.Entry != "" {
		b.WriteString("entry ")
		b.WriteString(quote(e.Entry))
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// maxQuoted bounds how much of an entry an error message repeats.
const maxQuoted = 128

// quote renders s for an error message: Go-quoted (so control bytes and
// invalid UTF-8 are escaped) and bounded.
func quote(s string) string {
	if len(s) > maxQuoted {
		cut := maxQuoted
		for cut > 0 && s[cut]&0xc0 == 0x80 { // do not split a UTF-8 sequence
			cut--
		}
		return strconv.Quote(s[:cut]) + "..."
	}
	return strconv.Quote(s)
}

// printable returns s unchanged when it has only printable characters, and
// Go-quoted otherwise.
func printable(s string) string {
	if q := quote(s); q == `"`+s+`"` {
		return s
	} else {
		return q
	}
}
