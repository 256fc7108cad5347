package wasmbuild

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/station-dev/station/internal/units"
	"github.com/station-dev/station/internal/yamlx"
	"github.com/station-dev/station/manifest"
)

// DerivedComment is the comment on the line of every input_schema and
// output_schema key AddSchemas writes. A schema with it is AddSchemas's to
// rewrite when the Go types change; one without it (the author wrote it,
// or deleted the comment to edit it) is never touched.
const DerivedComment = "# derived from the Go types by station module build (delete to edit by hand)"

// SchemaEdit is what AddSchemas made of a manifest.
type SchemaEdit struct {
	// Manifest is the new text of the manifest: the old one when Changed
	// is false.
	Manifest []byte
	Changed  bool
	// Written says what was written, a line per command:
	// "create-invoice: input, output", "greet: output updated".
	Written []string
	// Notes say what was not written, and why, for the module's author.
	Notes []string
}

// AddSchemas returns the manifest src (read from file, which names it in
// errors) with the JSON Schemas of d written into its commands, as
// input_schema and output_schema mappings. It edits the text and nothing
// else of it: comments, order, quoting and blank lines stay as they are.
// For each command of the manifest and each of its two schemas:
//
//   - a schema the manifest does not declare is added at the end of the
//     command, marked with DerivedComment;
//   - a schema with DerivedComment is replaced by the derived one when they
//     differ, and removed when the module no longer derives one;
//   - a schema without it is the author's, and is left as written: a note
//     says so when it differs from the derived one.
//
// A derived schema the manifest would refuse (over 64 KiB, nested too
// deeply, an input schema that is not an object schema) is not written,
// and a note says why; so are the module's own notes, commands the
// manifest lists but the module does not register, and the reverse. The
// result is checked: it parses, it holds exactly the schemas written, and
// the rest of the manifest decodes as before.
func AddSchemas(file string, src []byte, d *Description) (*SchemaEdit, error) {
	old, err := manifest.Parse(file, src)
	if err != nil {
		return nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	e := &editor{lines: splitLines(src), newline: "\n"}
	if bytes.Contains(src, []byte("\r\n")) {
		e.newline = "\r\n"
	}
	seq, end := commandsNode(yamlx.Root(&doc), len(e.lines))
	if seq == nil || len(seq.Content) != len(old.Commands) {
		return nil, fmt.Errorf("%s: cannot find the commands", file) // Parse found them
	}
	edit := &SchemaEdit{Manifest: src}
	want := slices.Clone(old.Commands) // the commands' schemas once edited
	listed := map[string]bool{}
	for i, c := range old.Commands {
		listed[c.Name] = true
		cd, ok := d.Commands[c.Name]
		if !ok {
			edit.Notes = append(edit.Notes, c.Name+": the module registers no such command (a call of it would fail)")
			continue
		}
		for _, n := range cd.Notes {
			edit.Notes = append(edit.Notes, c.Name+": "+n)
		}
		next := end
		if i+1 < len(seq.Content) {
			next = seq.Content[i+1].Line - 1
		}
		written, notes := e.command(seq.Content[i], next, c, cd, &want[i])
		if written != "" {
			edit.Written = append(edit.Written, c.Name+": "+written)
		}
		edit.Notes = append(edit.Notes, notes...)
	}
	var unlisted []string
	for name := range d.Commands {
		if !listed[name] {
			unlisted = append(unlisted, name)
		}
	}
	if len(unlisted) > 0 {
		slices.Sort(unlisted)
		more := ""
		if len(unlisted) > maxUnlisted {
			unlisted, more = unlisted[:maxUnlisted], fmt.Sprintf(" and %d more", len(unlisted)-maxUnlisted)
		}
		for i, name := range unlisted {
			unlisted[i] = quote(name)
		}
		edit.Notes = append(edit.Notes, fmt.Sprintf("the module registers %s%s, which module.yaml does not list: the station never runs a command it does not list", strings.Join(unlisted, ", "), more))
	}
	if len(e.changes) == 0 {
		return edit, nil
	}
	out := e.apply()
	if len(out) > manifest.MaxFileSize {
		edit.Notes = append(edit.Notes, fmt.Sprintf("module.yaml would be %s with the derived schemas, over the %s a manifest may be: nothing written", units.Bytes(int64(len(out))), units.Bytes(manifest.MaxFileSize)))
		edit.Written = nil
		return edit, nil
	}
	if err := check(file, out, old, want); err != nil {
		return nil, fmt.Errorf("%s: the derived schemas could not be written without changing the rest of the manifest (%v); build with --no-schemas and write them by hand", file, err)
	}
	edit.Manifest, edit.Changed = out, true
	return edit, nil
}

// maxUnlisted bounds the commands a note names that the module registers
// and the manifest does not list.
const maxUnlisted = 10

// check verifies that the edited manifest out parses, declares the schemas
// of want, and is otherwise what old was.
func check(file string, out []byte, old *manifest.Manifest, want []manifest.Command) error {
	got, err := manifest.Parse(file, out)
	if err != nil {
		return err
	}
	if len(got.Commands) != len(want) {
		return fmt.Errorf("%d commands, want %d", len(got.Commands), len(want))
	}
	for i, c := range got.Commands {
		if !sameJSON(c.InputSchema, want[i].InputSchema) || !sameJSON(c.OutputSchema, want[i].OutputSchema) {
			return fmt.Errorf("command %s: the schemas read back are not the ones written", c.Name)
		}
	}
	a, b := *old, *got
	a.Commands, b.Commands = stripSchemas(a.Commands), stripSchemas(b.Commands)
	if !reflect.DeepEqual(a, b) {
		return errors.New("the rest of the manifest reads differently")
	}
	return nil
}

// stripSchemas returns cmds without their schemas.
func stripSchemas(cmds []manifest.Command) []manifest.Command {
	out := slices.Clone(cmds)
	for i := range out {
		out[i].InputSchema, out[i].OutputSchema = "", ""
	}
	return out
}

// commandsNode returns the commands sequence of the manifest's root mapping
// and the index of the line where what follows it starts (the next key of
// the root), or eof.
func commandsNode(root *yaml.Node, eof int) (*yaml.Node, int) {
	if root == nil || root.Kind != yaml.MappingNode {
		return nil, eof
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value != "commands" {
			continue
		}
		next := eof
		if i+2 < len(root.Content) {
			next = root.Content[i+2].Line - 1
		}
		return root.Content[i+1], next
	}
	return nil, eof
}

// editor collects changes to the lines of a manifest.
type editor struct {
	lines   []string // each with its line ending, if it has one
	newline string   // the file's line ending
	changes []change
}

// change replaces lines [from, to) with text.
type change struct {
	from, to int
	text     string
}

// A slot is one of a command's two schemas.
type slot struct {
	key      string          // input_schema, output_schema
	what     string          // input, output
	authored string          // the manifest's schema, compact JSON
	derived  json.RawMessage // the module's, or nil
	want     *string         // the schema the command ends up with
}

// command plans the changes to the command c, whose mapping is item and
// whose text ends before line next. It returns what it wrote (e.g.
// "input, output updated") and its notes, and sets want's schemas to what
// the edited manifest will declare.
func (e *editor) command(item *yaml.Node, next int, c manifest.Command, cd CommandDescription, want *manifest.Command) (string, []string) {
	slots := []slot{
		{key: "input_schema", what: "input", authored: c.InputSchema, derived: cd.InputSchema, want: &want.InputSchema},
		{key: "output_schema", what: "output", authored: c.OutputSchema, derived: cd.OutputSchema, want: &want.OutputSchema},
	}
	if cd.Raw {
		slots[0].derived, slots[1].derived = nil, nil
	}
	var notes, written []string
	var adds []string // the text of the schemas to add at the end of the command
	flow := item.Kind != yaml.MappingNode || item.Style&yaml.FlowStyle != 0 || len(item.Content) == 0
	keyCol := 0
	if !flow {
		keyCol = item.Content[0].Column
	}
	itemEnd := e.lastLine(item.Line-1, next, keyCol) + 1
	for _, s := range slots {
		k, v, nextKey := lookup(item, s.key)
		text := "" // the derived schema's YAML, if the manifest takes it
		if s.derived != nil {
			var err error
			if text, err = e.derivedText(s.key, s.derived, max(keyCol-1, 0)); err != nil {
				notes = append(notes, fmt.Sprintf("%s: the derived %s schema is not written: %v", c.Name, s.what, err))
				s.derived = nil
				if k == nil || !derived(k, v) {
					continue
				}
			}
		}
		switch {
		case k == nil && s.derived == nil:
			continue
		case k != nil && !derived(k, v):
			if s.derived != nil && !sameJSON(s.authored, string(s.derived)) {
				notes = append(notes, fmt.Sprintf("%s: module.yaml's %s differs from the one derived from the Go types and was left as written (delete it to have it derived)", c.Name, s.key))
			}
			continue
		case k != nil && s.derived != nil && sameJSON(s.authored, string(s.derived)):
			continue
		case flow:
			notes = append(notes, fmt.Sprintf("%s: its %s schema is not written: the command is written in flow style ({...}); write it as a block mapping", c.Name, s.what))
			continue
		}
		*s.want = compact(s.derived)
		switch {
		case k == nil:
			adds = append(adds, text)
			written = append(written, s.what)
		default:
			// Replace the key's line and its value's, up to the next key
			// of the command (or its end); comments at the key's
			// indentation before that stay.
			to := itemEnd
			if nextKey != nil {
				to = nextKey.Line - 1
			}
			e.changes = append(e.changes, change{from: k.Line - 1, to: e.lastLine(k.Line-1, to, keyCol+1) + 1, text: text})
			if text == "" {
				written = append(written, s.what+" removed (no longer derived)")
			} else {
				written = append(written, s.what+" updated")
			}
		}
	}
	if len(adds) > 0 {
		e.changes = append(e.changes, change{from: itemEnd, to: itemEnd, text: strings.Join(adds, "")})
	}
	return strings.Join(written, ", "), notes
}

// lookup returns the key and value nodes of key in the mapping m, and the
// key after it, if any.
func lookup(m *yaml.Node, key string) (k, v, next *yaml.Node) {
	if m.Kind != yaml.MappingNode {
		return nil, nil, nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			if i+2 < len(m.Content) {
				next = m.Content[i+2]
			}
			return m.Content[i], m.Content[i+1], next
		}
	}
	return nil, nil, nil
}

// derived reports whether the schema key k with value v carries
// DerivedComment.
func derived(k, v *yaml.Node) bool {
	return strings.TrimSpace(k.LineComment) == DerivedComment || strings.TrimSpace(v.LineComment) == DerivedComment
}

// lastLine returns the index of the last line in [from, to) that is not
// blank and is indented to column col (1-based) or deeper: the end of a
// node that starts on line from and whose content is indented to col.
// Blank lines and lines indented less (comments before what follows, the
// "-" of the next command) are not the node's. It returns from if no such
// line follows it.
func (e *editor) lastLine(from, to, col int) int {
	for i := min(to, len(e.lines)) - 1; i > from; i-- {
		l := strings.TrimRight(e.lines[i], "\r\n")
		t := strings.TrimLeft(l, " \t")
		if t == "" || len(l)-len(t)+1 < col {
			continue
		}
		return i
	}
	return from
}

// derivedText returns the YAML of key: schema for a command whose keys are
// indented by indent spaces, with the file's line endings, or why the
// manifest would refuse the schema: it is checked by parsing a manifest
// that declares it, so that what is written is what the manifest takes.
func (e *editor) derivedText(key string, schema json.RawMessage, indent int) (string, error) {
	c := json.RawMessage(compact(schema))
	if len(c) > manifest.MaxSchemaBytes {
		return "", fmt.Errorf("it is %d bytes as JSON; a manifest takes at most %d", len(c), manifest.MaxSchemaBytes)
	}
	probe, err := schemaText(key, c, 4)
	if err != nil {
		return "", err
	}
	if _, err := manifest.Parse(manifest.FileName, []byte(probeManifest+probe)); err != nil {
		var me *manifest.Error
		if !errors.As(err, &me) {
			return "", err
		}
		if field := strings.TrimPrefix(strings.TrimPrefix(me.Field, "commands[0]."+key), "."); field != "" {
			return "", fmt.Errorf("%s: %s", field, me.Msg)
		}
		return "", errors.New(me.Msg)
	}
	text, err := schemaText(key, c, indent)
	return strings.ReplaceAll(text, "\n", e.newline), err
}

// probeManifest is the manifest derivedText adds a schema to, to check it.
const probeManifest = "id: probe/probe\nversion: \"1.0.0\"\nwasm: m.wasm\ncommands:\n  - name: probe\n"

// schemaText returns the YAML of key: schema, indented by indent spaces,
// with DerivedComment on the key's line.
func schemaText(key string, schema json.RawMessage, indent int) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(schema))
	dec.UseNumber()
	v, err := jsonNode(dec, 0)
	if err != nil {
		return "", err
	}
	flowLeaves(v)
	k := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key, LineComment: DerivedComment}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{k, v}}); err != nil {
		return "", err
	}
	if err := enc.Close(); err != nil {
		return "", err
	}
	var out strings.Builder
	pad := strings.Repeat(" ", indent)
	for line := range strings.Lines(b.String()) {
		out.WriteString(pad + line)
	}
	return out.String(), nil
}

// jsonNode decodes the next JSON value of dec as a YAML node, keeping the
// order of object members.
func jsonNode(dec *json.Decoder, depth int) (*yaml.Node, error) {
	if depth > yamlx.MaxJSONDepth {
		return nil, fmt.Errorf("nested deeper than %d levels", yamlx.MaxJSONDepth)
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch tok := tok.(type) {
	case json.Delim:
		n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		if tok == '[' {
			n.Kind, n.Tag = yaml.SequenceNode, "!!seq"
		}
		for dec.More() {
			if n.Kind == yaml.MappingNode {
				key, err := dec.Token()
				if err != nil {
					return nil, err
				}
				n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key.(string)})
			}
			child, err := jsonNode(dec, depth+1)
			if err != nil {
				return nil, err
			}
			n.Content = append(n.Content, child)
		}
		if _, err := dec.Token(); err != nil { // the closing delimiter
			return nil, err
		}
		return n, nil
	case string:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: tok}, nil
	case json.Number:
		tag := "!!int"
		if strings.ContainsAny(string(tok), ".eE") {
			tag = "!!float"
		}
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: string(tok)}, nil
	case bool:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: fmt.Sprint(tok)}, nil
	case nil:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}, nil
	}
	return nil, fmt.Errorf("unexpected JSON token %v", tok)
}

// maxFlow bounds the length of a mapping flowLeaves writes on one line.
const maxFlow = 60

// flowLeaves writes the mappings and sequences under n that hold only
// scalars (or short sequences of scalars) in flow style, as a person
// would: name: {type: string}, required: [a, b].
func flowLeaves(n *yaml.Node) {
	for _, c := range n.Content {
		if c.Kind != yaml.MappingNode && c.Kind != yaml.SequenceNode {
			continue
		}
		if w, ok := flowWidth(c); ok && (c.Kind == yaml.SequenceNode || w <= maxFlow) {
			c.Style = yaml.FlowStyle
			for _, cc := range c.Content {
				if cc.Kind == yaml.SequenceNode {
					cc.Style = yaml.FlowStyle
				}
			}
			continue
		}
		flowLeaves(c)
	}
}

// flowWidth estimates the width of n on one line, and reports whether it
// holds only scalars and sequences of scalars (for a mapping) or only
// scalars (for a sequence) on one line each.
func flowWidth(n *yaml.Node) (int, bool) {
	w := 2
	for _, c := range n.Content {
		switch {
		case c.Kind == yaml.ScalarNode && !strings.ContainsAny(c.Value, "\n"):
			w += len(c.Value) + 2
		case c.Kind == yaml.SequenceNode && n.Kind == yaml.MappingNode:
			cw, ok := flowWidth(c)
			if !ok {
				return 0, false
			}
			w += cw + 2
		default:
			return 0, false
		}
	}
	return w, true
}

// apply returns the text with the changes made.
func (e *editor) apply() []byte {
	lines := slices.Clone(e.lines)
	changes := slices.Clone(e.changes)
	slices.SortFunc(changes, func(a, b change) int { return b.from - a.from })
	if n := len(lines); n > 0 && changes[0].from == n && !strings.HasSuffix(lines[n-1], "\n") {
		lines[n-1] += e.newline // text is added after it
	}
	for _, c := range changes {
		lines = slices.Replace(lines, c.from, c.to, c.text)
	}
	return []byte(strings.Join(lines, ""))
}

// splitLines splits src into lines, each with its line ending.
func splitLines(src []byte) []string {
	var lines []string
	for l := range strings.Lines(string(src)) {
		lines = append(lines, l)
	}
	return lines
}

// compact returns the JSON b compacted, or "" for none.
func compact(b json.RawMessage) string {
	if len(b) == 0 {
		return ""
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return string(b)
	}
	return buf.String()
}

// sameJSON reports whether a and b are the same JSON value ("" is none).
func sameJSON(a, b string) bool {
	if a == "" || b == "" {
		return a == b
	}
	var va, vb any
	if json.Unmarshal([]byte(a), &va) != nil || json.Unmarshal([]byte(b), &vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}
