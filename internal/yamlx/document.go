package yamlx

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// Document parses data as exactly one YAML document and returns its
// document node. It returns nil and true when data holds no document at all
// (it is empty or only comments), and nil and false after recording a
// syntax error or a second document.
func (d *Decoder) Document(data []byte) (doc *yaml.Node, ok bool) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var first yaml.Node
	if err := safeDecode(dec, &first); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, true
		}
		d.syntaxError(err, data)
		return nil, false
	}
	var extra yaml.Node
	switch err := safeDecode(dec, &extra); {
	case errors.Is(err, io.EOF):
	case err != nil:
		d.syntaxError(err, data)
		return nil, false
	default:
		d.Addf(&extra, "", "%s is one YAML document; found a second one", d.doc)
		return nil, false
	}
	return &first, true
}

// Root returns the one value of a document node, or nil when doc is nil or
// not a document with one value.
func Root(doc *yaml.Node) *yaml.Node {
	if doc == nil || doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil
	}
	return doc.Content[0]
}

// safeDecode runs dec.Decode, turning a panic inside the YAML library into
// an error: the files are untrusted input and must never crash the station.
func safeDecode(dec *yaml.Decoder, v *yaml.Node) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("yaml: malformed document (%v)", r)
		}
	}()
	return dec.Decode(v)
}

// yamlLine finds the line number in a YAML library error message.
var yamlLine = regexp.MustCompile(`^(?:yaml: )?line (\d+): `)

// unknownAnchor is the library's error for an alias whose anchor is not
// defined before it; it has no position.
var unknownAnchor = regexp.MustCompile(`^unknown anchor '(.*)' referenced$`)

// parserProblems are the problems the library's parser reports (all others
// come from its scanner or its reader). It reports their line 0-based.
var parserProblems = map[string]bool{
	"did not find expected ',' or ']'":       true,
	"did not find expected ',' or '}'":       true,
	"did not find expected '-' indicator":    true,
	"did not find expected <document start>": true,
	"did not find expected <stream-start>":   true,
	"did not find expected key":              true,
	"did not find expected node content":     true,
	"found duplicate %TAG directive":         true,
	"found duplicate %YAML directive":        true,
	"found incompatible YAML document":       true,
	"found undefined tag handle":             true,
}

// readerProblems are the problems the library's reader reports: a byte or
// character it does not accept, with no position in the message.
var readerProblems = map[string]bool{
	"control characters are not allowed": true,
	"invalid leading UTF-8 octet":        true,
	"invalid trailing UTF-8 octet":       true,
	"incomplete UTF-8 octet sequence":    true,
	"invalid length of a UTF-8 sequence": true,
	"invalid Unicode character":          true,
}

// syntaxError records an error of the YAML library. The library's
// positions are uneven: its parser counts lines from 0, an error on the
// first line has no line at all, an undefined alias and a character it
// refuses have no position, and none has a column. syntaxError makes each
// a 1-based line inside the file, finds the alias or the character in data,
// and words the problem as every format does:
//
//	invalid YAML: did not find expected key
//	invalid YAML: did not find expected alphabetic or numeric character; a value that starts with "*" must be quoted: "*.example.com"
//	aliases (*x) are not allowed in a manifest; a value that starts with "*" must be quoted: "*x"
func (d *Decoder) syntaxError(err error, data []byte) {
	msg := err.Error()
	line, fromLibrary := 0, true
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = msg[len(m[0]):]
	} else {
		msg = strings.TrimPrefix(msg, "yaml: ")
		fromLibrary = !strings.HasPrefix(msg, "malformed document (") // safeDecode's
	}
	src := newText(data)
	if m := unknownAnchor.FindStringSubmatch(msg); m != nil {
		p := Problem{Msg: fmt.Sprintf("aliases (*%s) are not allowed in %s; a value that starts with \"*\" must be quoted: %s",
			d.name(m[1]), d.doc, Quote("*"+m[1]))}
		p.Line, p.Column = src.find(aliasAt(m[1]))
		d.Report(p)
		return
	}
	if readerProblems[msg] {
		p := Problem{Msg: "invalid YAML: " + msg}
		if off, r, ok := badChar(data); ok {
			p.Line, p.Column = src.position(off)
			switch {
			case r == utf8.RuneError:
				p.Msg = fmt.Sprintf("invalid YAML: byte %#02x is not valid UTF-8; save the file as UTF-8", data[off])
			default:
				p.Msg = fmt.Sprintf("invalid YAML: character %U is not allowed; remove it (in a double-quoted string, write it as %s)",
					r, strings.Trim(strconv.QuoteRuneToASCII(r), "'"))
			}
		}
		d.Report(p)
		return
	}
	column := 0
	if fromLibrary {
		switch {
		case line == 0:
			line = 1
		case parserProblems[msg]:
			line++
		}
		line = min(line, src.lines())
	}
	msg = "invalid YAML: " + plain(msg)
	if line > 0 {
		if at := unquotedStar.FindSubmatchIndex(src.line(line)); at != nil {
			token := string(src.line(line)[at[2]:at[3]])
			msg += `; a value that starts with "*" must be quoted: ` + Quote(token)
			column = utf8.RuneCount(src.line(line)[:at[2]]) + 1
		}
	}
	d.Report(Problem{Line: line, Column: column, Msg: msg})
}

// unquotedStar finds a plain scalar starting with "*", which YAML reads as
// an alias: the usual cause of a syntax error in a list of hosts. The
// group is the value as written.
var unquotedStar = regexp.MustCompile(`(?:^|[\s\[{,:?-])(\*[^\s,\[\]{}]*)`)

// aliasAt matches the alias *name where a value starts, for the position of
// an undefined alias.
func aliasAt(name string) *regexp.Regexp {
	return regexp.MustCompile(`(?:^|[\s\[{,:?-])(\*` + regexp.QuoteMeta(name) + `)(?:[^A-Za-z0-9_-]|$)`)
}

// badChar finds the first byte of data that is not UTF-8 (r is
// utf8.RuneError) or the first character YAML does not allow in a file.
// It finds nothing in a file in UTF-16, which it does not decode.
func badChar(data []byte) (off int, r rune, ok bool) {
	if bytes.HasPrefix(data, []byte{0xfe, 0xff}) || bytes.HasPrefix(data, []byte{0xff, 0xfe}) {
		return 0, 0, false
	}
	for off < len(data) {
		r, size := utf8.DecodeRune(data[off:])
		switch {
		case r == utf8.RuneError && size == 1:
			return off, r, true
		case r == '\t', r == '\n', r == '\r', r >= 0x20 && r <= 0x7e, r == 0x85,
			r >= 0xa0 && r <= 0xd7ff, r >= 0xe000 && r <= 0xfffd, r >= 0x10000:
		default:
			return off, r, true
		}
		off += size
	}
	return 0, 0, false
}

// text is a document's bytes split into lines as YAML splits them: at
// "\r\n", "\r", "\n", NEL, LS and PS.
type text struct {
	data  []byte
	start []int // the offset of each line
	end   []int // the offset of each line's break
}

func newText(data []byte) *text {
	t := &text{data: data, start: []int{0}}
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		brk := 0
		switch {
		case r == '\r' && i+1 < len(data) && data[i+1] == '\n':
			brk = 2
		case r == '\r', r == '\n', r == 0x85, r == 0x2028, r == 0x2029:
			brk = size
		}
		if brk > 0 {
			t.end = append(t.end, i)
			t.start = append(t.start, i+brk)
			size = brk
		}
		i += size
	}
	t.end = append(t.end, len(data))
	return t
}

// lines is how many lines the file has: a break at the end does not start
// another one. It is at least 1.
func (t *text) lines() int {
	n := len(t.start)
	if n > 1 && t.start[n-1] == len(t.data) {
		n--
	}
	return n
}

// line returns the text of line n (1-based), without its break.
func (t *text) line(n int) []byte {
	if n < 1 || n > len(t.start) {
		return nil
	}
	return t.data[t.start[n-1]:t.end[n-1]]
}

// position returns the 1-based line and column (in characters) of the byte
// at off.
func (t *text) position(off int) (line, column int) {
	line = sort.Search(len(t.start), func(i int) bool { return t.start[i] > off })
	return line, utf8.RuneCount(t.data[t.start[line-1]:off]) + 1
}

// find returns the position of the first group of re's first match, or
// 0, 0.
func (t *text) find(re *regexp.Regexp) (line, column int) {
	m := re.FindSubmatchIndex(t.data)
	if m == nil {
		return 0, 0
	}
	return t.position(m[2])
}

// plain escapes what a message repeats from the library, which may quote
// the document: control characters and bytes that are not UTF-8 as in Go
// strings, but not quotes, and at most 128 bytes of it, then "...".
func plain(s string) string {
	var b strings.Builder
	for i, r := range s {
		if b.Len() >= maxQuoted {
			b.WriteString("...")
			break
		}
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD"):
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unicode.IsPrint(r) || r == ' ':
			b.WriteRune(r)
		default:
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		}
	}
	return b.String()
}

// NoAliases records every anchor and alias under n and reports whether
// there were none: they make the decoded structure differ from what a
// reader sees.
func (d *Decoder) NoAliases(n *yaml.Node) bool {
	ok := true
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		switch {
		case n.Kind == yaml.AliasNode:
			d.Addf(n, "", "aliases (*%s) are not allowed in %s; write the value out here", d.name(n.Value), d.doc)
			ok = false
		case n.Anchor != "":
			d.Addf(n, "", "anchors (&%s) are not allowed in %s; write the value out where it is used", d.name(n.Anchor), d.doc)
			ok = false
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(n)
	return ok
}
