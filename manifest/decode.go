package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// maxErrors bounds how many errors one Parse reports; a file that is not a
// manifest at all would otherwise produce one per line.
const maxErrors = 50

// Bounds on list sizes. They are far above anything a real module needs and
// keep a hostile manifest cheap to reject.
const (
	maxCommands = 256
	maxEntries  = 256
)

// decoder walks a yaml.Node tree, filling a Manifest and collecting every
// problem as an *Error.
type decoder struct {
	file    string
	granted map[string]bool // globs the operator granted (Options.GrantedGlobs)
	errs    []*Error
	full    bool // more than maxErrors problems: the rest are not reported
}

// add records one problem at n (nil n: no position).
func (d *decoder) add(n *yaml.Node, field, entry, msg string) {
	if len(d.errs) >= maxErrors {
		d.full = true
		return
	}
	e := &Error{File: d.file, Field: field, Entry: entry, Msg: msg}
	if n != nil {
		e.Line, e.Column = n.Line, n.Column
	}
	d.errs = append(d.errs, e)
}

func (d *decoder) addf(n *yaml.Node, field, entry, format string, args ...any) {
	d.add(n, field, entry, fmt.Sprintf(format, args...))
}

// decode parses data into a Manifest. The result is meaningful only when no
// error was recorded.
func (d *decoder) decode(data []byte) *Manifest {
	root := d.document(data)
	if root == nil {
		return nil
	}
	if !d.noAliases(root) {
		return nil
	}
	m := &Manifest{}
	if isNull(root) {
		d.add(root, "", "", "the manifest is empty")
		return nil
	}
	seen := d.mapping(root, "", []field{
		{"id", func(v *yaml.Node) { m.ID = d.id(v) }},
		{"version", func(v *yaml.Node) { m.Version = d.version(v) }},
		{"description", func(v *yaml.Node) { m.Description = d.text(v, "description") }},
		{"wasm", func(v *yaml.Node) { m.Wasm = d.wasm(v) }},
		{"commands", func(v *yaml.Node) { m.Commands = d.commands(v) }},
		{"requires", func(v *yaml.Node) { m.Requires = d.requires(v) }},
		{"limits", func(v *yaml.Node) { m.Limits = d.limits(v) }},
	})
	if seen == nil {
		return nil
	}
	for _, name := range []string{"id", "version", "wasm", "commands"} {
		if seen[name] == nil {
			d.addf(root, "", "", "missing required field %q", name)
		}
	}
	sort.SliceStable(d.errs, func(i, j int) bool {
		a, b := d.errs[i], d.errs[j]
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Column < b.Column
	})
	if d.full {
		d.errs = append(d.errs, &Error{File: d.file, Msg: fmt.Sprintf("too many errors (more than %d); fix these first", maxErrors)})
	}
	return m
}

// yamlLine finds the line number in a yaml.v3 error message.
var yamlLine = regexp.MustCompile(`^(?:yaml: )?line (\d+): `)

// document parses data as exactly one YAML document and returns its root
// node, or nil after recording the error.
func (d *decoder) document(data []byte) (root *yaml.Node) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := safeDecode(dec, &doc); err != nil {
		if errors.Is(err, io.EOF) {
			d.add(nil, "", "", "the manifest is empty")
		} else {
			d.yamlError(err, data)
		}
		return nil
	}
	var extra yaml.Node
	switch err := safeDecode(dec, &extra); {
	case errors.Is(err, io.EOF):
	case err != nil:
		d.yamlError(err, data)
		return nil
	default:
		d.add(&extra, "", "", "a manifest is one YAML document; found a second one")
		return nil
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		d.add(&doc, "", "", "the manifest is empty")
		return nil
	}
	return doc.Content[0]
}

// safeDecode runs dec.Decode, turning a panic inside the YAML library into an
// error: a manifest is untrusted input and must never crash the station.
func safeDecode(dec *yaml.Decoder, v *yaml.Node) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("yaml: malformed document (%v)", r)
		}
	}()
	return dec.Decode(v)
}

// unquotedWildcard finds a plain scalar starting with "*", which YAML reads
// as an alias: the usual cause of a syntax error in an allowlist.
var unquotedWildcard = regexp.MustCompile(`(^|[\s\[,:-])\*`)

// yamlError records a syntax error reported by the YAML library.
func (d *decoder) yamlError(err error, data []byte) {
	msg := err.Error()
	var line int
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = msg[len(m[0]):]
	} else {
		msg = strings.TrimPrefix(msg, "yaml: ")
	}
	msg = "invalid YAML: " + printable(msg)
	if line > 0 {
		lines := bytes.Split(data, []byte("\n"))
		if line <= len(lines) && unquotedWildcard.Match(lines[line-1]) {
			msg += `; a value that starts with "*" must be quoted, as in "*.example.com"`
		}
	}
	d.errs = append(d.errs, &Error{File: d.file, Line: line, Msg: msg})
}

// noAliases reports anchors and aliases, which a manifest does not use: they
// make the decoded structure differ from what a reader sees.
func (d *decoder) noAliases(n *yaml.Node) bool {
	ok := true
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		switch {
		case n.Kind == yaml.AliasNode:
			d.addf(n, "", "", "aliases (*%s) are not allowed in a manifest", printable(n.Value))
			ok = false
		case n.Anchor != "":
			d.addf(n, "", "", "anchors (&%s) are not allowed in a manifest", printable(n.Anchor))
			ok = false
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(n)
	return ok
}

// field is one known key of a mapping and the function that decodes its
// value.
type field struct {
	name   string
	decode func(v *yaml.Node)
}

// mapping decodes the mapping n at path: each known key's value is handed to
// its field's decode function; unknown and duplicate keys are errors. It
// returns the key node of each field seen, or nil if n is not a mapping.
func (d *decoder) mapping(n *yaml.Node, path string, fields []field) map[string]*yaml.Node {
	if n.Kind != yaml.MappingNode || n.ShortTag() != "!!map" {
		d.typeError(n, path, "a mapping")
		return nil
	}
	seen := make(map[string]*yaml.Node, len(fields))
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
			d.add(k, path, "", "merge keys (<<) are not allowed in a manifest")
			continue
		}
		if k.Kind != yaml.ScalarNode || k.ShortTag() != "!!str" {
			d.addf(k, path, "", "keys must be field names, not %s", describe(k))
			continue
		}
		if first := seen[k.Value]; first != nil {
			d.addf(k, path, "", "duplicate field %q (first at line %d)", k.Value, first.Line)
			continue
		}
		var f *field
		for j := range fields {
			if fields[j].name == k.Value {
				f = &fields[j]
				break
			}
		}
		if f == nil {
			d.add(k, path, "", unknownField(k.Value, fields))
			continue
		}
		seen[k.Value] = k
		f.decode(v)
	}
	return seen
}

// unknownField describes an unknown key, suggesting the closest known one.
func unknownField(name string, fields []field) string {
	msg := fmt.Sprintf("unknown field %s", quote(name))
	best, bestDist := "", 3
	for _, f := range fields {
		if dist := editDistance(strings.ToLower(name), f.name); dist < bestDist {
			best, bestDist = f.name, dist
		}
	}
	if best != "" {
		return msg + fmt.Sprintf("; did you mean %q?", best)
	}
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = f.name
	}
	return msg + " (known fields: " + strings.Join(names, ", ") + ")"
}

// editDistance is the Levenshtein distance between a and b, in bytes. Names
// longer than 64 bytes are never close to a field name.
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 64
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// isNull reports whether n is an explicit or implicit YAML null ("key:" with
// no value, "~" or "null").
func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// describe names the YAML type of n for an error message.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		if tag := n.ShortTag(); tag != "!!map" {
			return "a mapping tagged " + printable(tag)
		}
		return "a mapping"
	case yaml.SequenceNode:
		if tag := n.ShortTag(); tag != "!!seq" {
			return "a list tagged " + printable(tag)
		}
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	case yaml.ScalarNode:
		switch tag := n.ShortTag(); tag {
		case "!!str":
			return "a string"
		case "!!int":
			return "an integer"
		case "!!float":
			return "a number"
		case "!!bool":
			return "a boolean"
		case "!!null":
			return "empty"
		case "!!timestamp":
			return "a timestamp"
		default:
			return "a value tagged " + printable(tag)
		}
	}
	return "an unknown node"
}

// typeError records that n, at path, is not of the wanted type.
func (d *decoder) typeError(n *yaml.Node, path, want string) {
	msg := fmt.Sprintf("must be %s, not %s", want, describe(n))
	if want == "a string" && n.Kind == yaml.ScalarNode && n.Style == 0 {
		switch n.ShortTag() {
		case "!!int", "!!float", "!!bool", "!!timestamp":
			msg += fmt.Sprintf("; quote it: %q", n.Value)
		}
	}
	d.add(n, path, "", msg)
}

// str decodes a string scalar.
func (d *decoder) str(n *yaml.Node, path string) (string, bool) {
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str" {
		return n.Value, true
	}
	d.typeError(n, path, "a string")
	return "", false
}

// list decodes a sequence of strings, calling check on each; check returns
// the problem with an entry, or "". Duplicate entries are errors. A null list
// is empty.
func (d *decoder) list(n *yaml.Node, path string, check func(string) string) []string {
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.SequenceNode || n.ShortTag() != "!!seq" {
		d.typeError(n, path, "a list")
		return nil
	}
	if len(n.Content) > maxEntries {
		d.addf(n, path, "", "too many entries (%d; at most %d)", len(n.Content), maxEntries)
		return nil
	}
	out := make([]string, 0, len(n.Content))
	first := make(map[string]int, len(n.Content))
	for _, e := range n.Content {
		s, ok := d.str(e, path)
		if !ok {
			continue
		}
		if line, dup := first[s]; dup {
			d.addf(e, path, s, "duplicate entry (first at line %d)", line)
			continue
		}
		first[s] = e.Line
		if s == "" {
			d.add(e, path, "", "empty entry")
			continue
		}
		if msg := check(s); msg != "" {
			d.add(e, path, s, msg)
			continue
		}
		out = append(out, s)
	}
	return out
}

func (d *decoder) id(n *yaml.Node) string {
	s, ok := d.str(n, "id")
	if !ok {
		return ""
	}
	if msg := checkID(s); msg != "" {
		d.addf(n, "id", "", "%s: %s", quote(s), msg)
	}
	return s
}

func (d *decoder) version(n *yaml.Node) string {
	s, ok := d.str(n, "version")
	if !ok {
		return ""
	}
	if msg := checkVersion(s); msg != "" {
		d.addf(n, "version", "", "%s: %s", quote(s), msg)
	}
	return s
}

func (d *decoder) wasm(n *yaml.Node) string {
	s, ok := d.str(n, "wasm")
	if !ok {
		return ""
	}
	if msg := checkWasmPath(s); msg != "" {
		d.addf(n, "wasm", "", "%s: %s", quote(s), msg)
	}
	return s
}

// text decodes a human-readable description; null is "".
func (d *decoder) text(n *yaml.Node, path string) string {
	if isNull(n) {
		return ""
	}
	s, ok := d.str(n, path)
	if !ok {
		return ""
	}
	if msg := checkText(s); msg != "" {
		d.add(n, path, "", msg)
	}
	return s
}

func (d *decoder) commands(n *yaml.Node) []Command {
	if isNull(n) || (n.Kind == yaml.SequenceNode && len(n.Content) == 0) {
		d.add(n, "commands", "", "at least one command is required")
		return nil
	}
	if n.Kind != yaml.SequenceNode || n.ShortTag() != "!!seq" {
		d.typeError(n, "commands", "a list")
		return nil
	}
	if len(n.Content) > maxCommands {
		d.addf(n, "commands", "", "too many commands (%d; at most %d)", len(n.Content), maxCommands)
		return nil
	}
	cmds := make([]Command, 0, len(n.Content))
	first := make(map[string]int)
	for i, item := range n.Content {
		path := fmt.Sprintf("commands[%d]", i)
		var c Command
		var nameNode *yaml.Node
		seen := d.mapping(item, path, []field{
			{"name", func(v *yaml.Node) {
				nameNode = v
				s, ok := d.str(v, path+".name")
				if !ok {
					return
				}
				c.Name = s
				if msg := checkCommandName(s); msg != "" {
					d.addf(v, path+".name", "", "%s: %s", quote(s), msg)
				}
			}},
			{"description", func(v *yaml.Node) { c.Description = d.text(v, path+".description") }},
		})
		if seen == nil {
			continue
		}
		if seen["name"] == nil {
			d.add(item, path, "", `missing required field "name"`)
			continue
		}
		if c.Name != "" {
			if line, dup := first[c.Name]; dup {
				d.addf(nameNode, path+".name", "", "duplicate command %q (first at line %d)", c.Name, line)
			} else {
				first[c.Name] = nameNode.Line
			}
		}
		cmds = append(cmds, c)
	}
	return cmds
}

func (d *decoder) requires(n *yaml.Node) Requires {
	var r Requires
	if isNull(n) {
		return r
	}
	d.mapping(n, "requires", []field{
		{"network", func(v *yaml.Node) { r.Network = d.network(v) }},
		{"subprocess", func(v *yaml.Node) { r.Subprocess = d.subprocess(v) }},
		{"filesystem_writes", func(v *yaml.Node) {
			r.FilesystemWrites = d.list(v, "requires.filesystem_writes", d.checkGlob)
		}},
		{"filesystem_reads", func(v *yaml.Node) {
			r.FilesystemReads = d.list(v, "requires.filesystem_reads", d.checkGlob)
		}},
		{"llm", func(v *yaml.Node) { r.LLM = d.llm(v) }},
	})
	return r
}

func (d *decoder) network(n *yaml.Node) Network {
	var net Network
	if isNull(n) {
		return net
	}
	d.mapping(n, "requires.network", []field{
		{"allow", func(v *yaml.Node) {
			net.Allow = d.list(v, "requires.network.allow", checkNetworkEntry)
		}},
	})
	return net
}

func (d *decoder) subprocess(n *yaml.Node) Subprocess {
	const path = "requires.subprocess"
	var sp Subprocess
	switch {
	case isNull(n):
	case n.Kind == yaml.ScalarNode && n.ShortTag() == "!!bool":
		var b bool
		if err := n.Decode(&b); err != nil {
			d.typeError(n, path, "true, false or a mapping with allow")
			break
		}
		sp.Any = b
	case n.Kind == yaml.MappingNode:
		d.mapping(n, path, []field{
			{"allow", func(v *yaml.Node) { sp.Allow = d.list(v, path+".allow", checkProgram) }},
			{"env", func(v *yaml.Node) { sp.Env = d.list(v, path+".env", checkEnvName) }},
		})
	default:
		d.typeError(n, path, "true, false or a mapping with allow")
	}
	return sp
}

func (d *decoder) limits(n *yaml.Node) Limits {
	var l Limits
	if isNull(n) {
		return l
	}
	d.mapping(n, "limits", []field{
		{"memory", func(v *yaml.Node) { l.MemoryBytes = d.memory(v) }},
		{"timeout", func(v *yaml.Node) { l.Timeout = d.timeout(v) }},
		{"concurrency", func(v *yaml.Node) { l.Concurrency = d.concurrency(v) }},
		{"instances", func(v *yaml.Node) { l.Fresh = d.instances(v) }},
		{"max_input", func(v *yaml.Node) { l.MaxInput = d.docSize(v, "limits.max_input") }},
		{"max_output", func(v *yaml.Node) { l.MaxOutput = d.docSize(v, "limits.max_output") }},
		{"max_request", func(v *yaml.Node) { l.MaxRequest = d.docSize(v, "limits.max_request") }},
	})
	return l
}

// docSize decodes a document size limit: 1KiB to MaxDocument.
func (d *decoder) docSize(n *yaml.Node, path string) uint64 {
	if n.Kind != yaml.ScalarNode || (n.ShortTag() != "!!str" && n.ShortTag() != "!!int") {
		d.typeError(n, path, `a size such as "4MiB"`)
		return 0
	}
	size, err := ParseSize(n.Value)
	if err != nil {
		d.add(n, path, "", err.Error())
		return 0
	}
	if size < 1<<10 || size > MaxDocument {
		d.addf(n, path, "", "%s is out of range (1KiB to 64MiB)", quote(n.Value))
		return 0
	}
	return size
}

func (d *decoder) memory(n *yaml.Node) uint64 {
	const path = "limits.memory"
	if n.Kind != yaml.ScalarNode || (n.ShortTag() != "!!str" && n.ShortTag() != "!!int") {
		d.typeError(n, path, `a size such as "64MiB"`)
		return 0
	}
	size, err := ParseSize(n.Value)
	if err != nil {
		d.add(n, path, "", err.Error())
		return 0
	}
	if size < MinMemory || size > MaxMemory {
		d.addf(n, path, "", "%s is out of range (1MiB to 4GiB)", quote(n.Value))
		return 0
	}
	return (size + PageSize - 1) / PageSize * PageSize
}

func (d *decoder) timeout(n *yaml.Node) time.Duration {
	const path = "limits.timeout"
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		d.typeError(n, path, `a duration such as "30s"`)
		return 0
	}
	t, err := time.ParseDuration(n.Value)
	if err != nil {
		d.addf(n, path, "", "%s is not a duration (write it like 30s, 2m or 1m30s)", quote(n.Value))
		return 0
	}
	if t <= 0 || t > MaxTimeout {
		d.addf(n, path, "", "%s is out of range (more than 0, at most 1h)", quote(n.Value))
		return 0
	}
	return t
}

func (d *decoder) concurrency(n *yaml.Node) int {
	const path = "limits.concurrency"
	var c int
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" || n.Decode(&c) != nil {
		d.typeError(n, path, "an integer")
		return 0
	}
	if c < 1 || c > MaxConcurrency {
		d.addf(n, path, "", "%d is out of range (1 to %d)", c, MaxConcurrency)
		return 0
	}
	return c
}

func (d *decoder) instances(n *yaml.Node) bool {
	const path = "limits.instances"
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		d.typeError(n, path, `"fresh" or "pooled"`)
		return false
	}
	switch s := n.Value; s {
	case "pooled":
		return false
	case "fresh":
		return true
	}
	d.addf(n, path, "", `%s is not "fresh" or "pooled"`, quote(n.Value))
	return false
}

// checkGlob validates a filesystem glob; one the operator granted is only
// checked for syntax.
func (d *decoder) checkGlob(s string) string {
	if d.granted[s] {
		return checkGlobSyntax(s)
	}
	return checkWriteGlob(s)
}
