package cmdutil

import (
	"fmt"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/station-dev/station/internal/sandbox"
)

// TermText makes a string that a hub, a relay, a module or a workflow file
// supplied safe to print on a terminal: control bytes (escape sequences,
// carriage returns, backspaces, newlines, tabs), invalid UTF-8, line
// separators and bidi controls are shown escaped, never interpreted, and
// the result is bounded. Every such string goes through it before it
// reaches the terminal, in every command; it is the one sanitizer (TermBlock
// and JSONText apply it, they do not judge a character themselves).
func TermText(s string) string { return sandbox.SanitizeLimit(s, MaxTermText) }

// MaxTermText bounds one printed field from a hub or a module.
const MaxTermText = 4096

// TermBlock is TermText for a text that may have several lines (a module's
// description, an error that joins several): each line goes through
// TermText, so the newlines stay and nothing else does, and every line but
// the first starts with indent, so that no line of the text can pass for one
// the station printed (a "logged in" line, a permission). The whole is
// bounded too.
func TermBlock(s, indent string) string {
	var b strings.Builder
	for i, line := range strings.Split(s, "\n") {
		if i > 0 {
			if b.Len() >= MaxTermText {
				b.WriteString("...")
				break
			}
			b.WriteString("\n" + indent)
		}
		b.WriteString(TermText(line))
	}
	return b.String()
}

// TermList is TermText of each element.
func TermList(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = TermText(s)
	}
	return out
}

// JSONText makes JSON text safe to print without changing the value it
// encodes, so --json output stays exact JSON: encoding/json already escapes
// C0 controls, U+2028 and U+2029, but it leaves DEL, the C1 controls (U+009B
// is CSI to some terminals) and the bidi controls as they are, and a
// json.RawMessage (a module's output) may carry invalid UTF-8. Those can
// only be inside strings, so each is replaced by its \u escape (invalid
// UTF-8 by \ufffd, which is what a decoder reads it as). The characters
// replaced are exactly those TermText escapes. src must be valid JSON as
// encoding/json writes it (no whitespace but newlines and spaces).
func JSONText(src []byte) []byte {
	var out []byte // nil until something changes
	for i := 0; i < len(src); {
		c := src[i]
		if c < utf8.RuneSelf && c != 0x7f {
			if out != nil {
				out = append(out, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(src[i:])
		esc := ""
		switch {
		case r == utf8.RuneError && size <= 1:
			esc = `\ufffd`
		case TermText(string(r)) != string(r):
			if r1, r2 := utf16.EncodeRune(r); r1 != utf8.RuneError {
				esc = fmt.Sprintf(`\u%04x\u%04x`, r1, r2)
			} else {
				esc = fmt.Sprintf(`\u%04x`, r)
			}
		}
		if esc != "" && out == nil {
			out = append(make([]byte, 0, len(src)+16), src[:i]...)
		}
		if out != nil {
			if esc != "" {
				out = append(out, esc...)
			} else {
				out = append(out, src[i:i+size]...)
			}
		}
		i += size
	}
	if out == nil {
		return src
	}
	return out
}
