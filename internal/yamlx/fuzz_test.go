package yamlx

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// FuzzDecode decodes arbitrary input with testFile's format, seeded from
// the table tests. The decoder must not panic; every problem must be at a
// position inside the input (or on the line after it: the YAML library puts
// an implicit value at the end there), in document order; and every
// message must be one line of printable text, whatever bytes the input
// holds.
func FuzzDecode(f *testing.F) {
	for _, tt := range decodeTests {
		f.Add(tt.in)
	}
	f.Fuzz(func(t *testing.T, in string) {
		if len(in) > 1<<16 {
			return
		}
		lines := yamlLines(in)
		d := New("f.yaml", "a test file")
		d.max = 20
		walk(d, in)
		problems := d.Problems()
		if d.full {
			problems = problems[:len(problems)-1] // "too many errors"
		}
		for i, p := range problems {
			if p.Line < 0 || p.Line > lines+1 || p.Column < 0 || (p.Line == 0 && p.Column != 0) {
				t.Errorf("%q: problem at %d:%d, past the end of %d lines: %s", in, p.Line, p.Column, lines, p.Msg)
			}
			if i > 0 {
				if q := problems[i-1]; q.Line > p.Line || (q.Line == p.Line && q.Column > p.Column) {
					t.Errorf("%q: problems out of order: %d:%d before %d:%d", in, q.Line, q.Column, p.Line, p.Column)
				}
			}
			msg := p.Error()
			if !utf8.ValidString(msg) || strings.ContainsFunc(msg, func(r rune) bool { return !unicode.IsPrint(r) && r != ' ' }) {
				t.Errorf("%q: message is not printable: %q", in, msg)
			}
		}
	})
}

// yamlLines counts the lines of s as YAML does: \r\n, \r, \n, NEL, LS and
// PS each end one.
func yamlLines(s string) int {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	n := 1
	for _, r := range s {
		switch r {
		case '\n', '\r', '\u0085', '\u2028', '\u2029':
			n++
		}
	}
	return n
}
