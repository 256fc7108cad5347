// Package yamlx is the strict YAML decoding shared by the station's YAML
// files: module.yaml (package manifest), config.yaml (internal/config) and
// workflow files (internal/workflow).
//
// A Decoder reads exactly one document into a yaml.Node tree and helps its
// caller walk it: Mapping accepts only known fields, each once, and suggests
// the closest field for a typo; Str, Bool, Int, Duration and Size accept only
// values of their type; NoAliases refuses anchors and aliases. Nothing stops
// at the first problem: every one is recorded as a Problem with its file,
// line, column and field path, and Sort puts them in document order. What
// each field means stays in the package that owns the file.
//
// The three formats word every problem yamlx reports the same way; only the
// name of the document ("a manifest", "config.yaml", "a workflow") differs.
// Unknown and Closest give the same "did you mean" to a caller's own names
// (a step id, an input, a command).
package yamlx

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Problem is one thing wrong with a document.
type Problem struct {
	File   string // the file name given to New
	Line   int    // 1-based; 0 when the problem has no position
	Column int    // 1-based; 0 when unknown
	Field  string // the field path, e.g. "requires.network.allow" or "steps[1].with"
	Entry  string // the offending list entry, when there is one
	Msg    string // what is wrong, lower case, no trailing period
}

// Error renders p as one line:
//
//	module.yaml:12:5: requires.network.allow: entry "*": a wildcard must be followed by a domain
func (p *Problem) Error() string {
	var b strings.Builder
	if p.File != "" {
		b.WriteString(p.File + ":")
	}
	if p.Line > 0 {
		b.WriteString(strconv.Itoa(p.Line) + ":")
		if p.Column > 0 {
			b.WriteString(strconv.Itoa(p.Column) + ":")
		}
	}
	if b.Len() > 0 {
		b.WriteString(" ")
	}
	if p.Field != "" {
		b.WriteString(p.Field + ": ")
	}
	if p.Entry != "" {
		b.WriteString("entry " + Quote(p.Entry) + ": ")
	}
	b.WriteString(p.Msg)
	return b.String()
}

// MaxProblems bounds how many problems one Decoder records: a file that is
// not in the format at all would otherwise produce one per line. Past the
// bound further problems are dropped, and once sorted the list ends with
// one that says so.
const MaxProblems = 50

// Decoder records the problems found while decoding one document. Its
// methods take the node a problem is at, for the position, and the field
// path of the value being decoded.
type Decoder struct {
	file     string
	doc      string // names the document in messages: "a manifest"
	max      int    // MaxProblems; smaller in tests
	problems []Problem
	full     bool // more than max: the rest are dropped
	sorted   bool
}

// New returns a Decoder for the document read from file (a name for
// messages; "" for none). doc names the kind of document in messages, as
// in "aliases (*x) are not allowed in a manifest": "a manifest",
// "config.yaml", "a workflow".
func New(file, doc string) *Decoder {
	return &Decoder{file: file, doc: doc, max: MaxProblems}
}

// Report records p, filling in its File.
func (d *Decoder) Report(p Problem) {
	if len(d.problems) >= d.max {
		d.full = true
		return
	}
	p.File = d.file
	d.problems = append(d.problems, p)
}

// AddEntry records a problem at n (nil: no position) with the list entry
// it is about.
func (d *Decoder) AddEntry(n *yaml.Node, field, entry, msg string) {
	p := Problem{Field: field, Entry: entry, Msg: msg}
	if n != nil {
		p.Line, p.Column = n.Line, n.Column
	}
	d.Report(p)
}

// Add records a problem at n (nil: no position).
func (d *Decoder) Add(n *yaml.Node, field, msg string) {
	d.AddEntry(n, field, "", msg)
}

// AddFunc records a problem at n whose message msg works out, calling it
// only if the problem is kept (see MaxProblems): for a message that costs
// something, such as Unknown's over many names.
func (d *Decoder) AddFunc(n *yaml.Node, field string, msg func() string) {
	if len(d.problems) >= d.max {
		d.Report(Problem{}) // dropped: counts as such
		return
	}
	d.AddEntry(n, field, "", msg())
}

// Addf records a problem at n with a formatted message.
func (d *Decoder) Addf(n *yaml.Node, field, format string, args ...any) {
	d.AddEntry(n, field, "", fmt.Sprintf(format, args...))
}

// Len returns how many problems have been recorded.
func (d *Decoder) Len() int { return len(d.problems) }

// Sort puts the problems in document order: by line, then column; those
// without a position first, in the order they were found. From then on, if
// MaxProblems dropped some, Problems ends with a problem that says so.
func (d *Decoder) Sort() {
	sort.SliceStable(d.problems, func(i, j int) bool {
		a, b := d.problems[i], d.problems[j]
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Column < b.Column
	})
	d.sorted = true
}

// Problems returns the problems recorded: in the order they were found, or
// in document order after Sort.
func (d *Decoder) Problems() []Problem {
	if !d.sorted || !d.full {
		return d.problems
	}
	return append(slices.Clip(d.problems), Problem{File: d.file,
		Msg: fmt.Sprintf("too many errors (more than %d); fix these first", d.max)})
}

// Errors returns the problems of d (see Problems) as a package's own error
// type: one whose fields are exactly Problem's, such as manifest.Error.
func Errors[E ~struct {
	File   string
	Line   int
	Column int
	Field  string
	Entry  string
	Msg    string
}](d *Decoder) []*E {
	var errs []*E
	for _, p := range d.Problems() {
		e := E(p)
		errs = append(errs, &e)
	}
	return errs
}

// maxQuoted bounds how much of a value a message repeats.
const maxQuoted = 128

// Quote renders s for a message: Go-quoted (control bytes and invalid
// UTF-8 escaped) and cut after 128 bytes.
func Quote(s string) string {
	if len(s) > maxQuoted {
		cut := maxQuoted
		for cut > 0 && s[cut]&0xc0 == 0x80 { // do not split a UTF-8 sequence
			cut--
		}
		return strconv.Quote(s[:cut]) + "..."
	}
	return strconv.Quote(s)
}

// Printable returns s unchanged when Quote would only add the quotes, and
// Quote(s) otherwise.
func Printable(s string) string {
	if q := Quote(s); q != `"`+s+`"` {
		return q
	}
	return s
}

// name renders a name or tag from the document for a message: escaped, so
// that no document can put control bytes into a terminal.
func (d *Decoder) name(s string) string { return Printable(s) }
