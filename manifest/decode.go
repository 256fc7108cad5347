package manifest

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/station-dev/station/internal/netgate"
	"github.com/station-dev/station/internal/yamlx"
)

// Bounds on list sizes. They are far above anything a real module needs and
// keep a hostile manifest cheap to reject.
const (
	maxCommands = 256
	maxEntries  = 256
)

// decoder walks a yaml.Node tree, filling a Manifest and collecting every
// problem as an *Error.
type decoder struct {
	*yamlx.Decoder
	file       string
	granted    map[string]bool       // globs the operator granted (Options.GrantedGlobs)
	grantedNet map[netgate.Rule]bool // network entries the operator granted (Options.GrantedNetwork)
	home       string                // the operator's home directory (Options.Home)
	resolve    func(string) string   // follows symbolic links (Options.Resolve), or nil
	errs       []*Error              // the problems found, once decode returns
}

// add records one problem at n (nil n: no position).
func (d *decoder) add(n *yaml.Node, field, entry, msg string) {
	d.AddEntry(n, field, entry, msg)
}

func (d *decoder) addf(n *yaml.Node, field, entry, format string, args ...any) {
	d.AddEntry(n, field, entry, fmt.Sprintf(format, args...))
}

// decode parses data into a Manifest and sets d.errs. The result is
// meaningful only when no error was recorded.
func (d *decoder) decode(data []byte) *Manifest {
	d.Decoder = yamlx.New(d.file, "a manifest")
	m := d.manifest(data)
	d.errs = yamlx.Errors[Error](d.Decoder)
	return m
}

// manifest walks the document. It sorts the problems only once it has
// walked all of it: after an early return (a syntax error, an anchor) they
// stay in the order found, without a "too many errors" line.
func (d *decoder) manifest(data []byte) *Manifest {
	doc, ok := d.Document(data)
	if !ok {
		return nil
	}
	root := yamlx.Root(doc)
	if root == nil {
		d.add(doc, "", "", "the manifest is empty")
		return nil
	}
	if !d.NoAliases(root) {
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
	d.Sort()
	return m
}

// field is one known key of a mapping and the function that decodes its
// value (yamlx.Field, under a name whose literals may be unkeyed).
type field yamlx.Field

// mapping decodes the mapping n at path (yamlx.Decoder.Mapping).
func (d *decoder) mapping(n *yaml.Node, path string, fields []field) map[string]*yaml.Node {
	return d.Mapping(n, path, yamlx.Fields(fields))
}

// isNull, typeError and str are yamlx's, under the names this package's
// decoding (llm.go too) uses.
var isNull = yamlx.IsNull

func (d *decoder) typeError(n *yaml.Node, path, want string) { d.TypeError(n, path, want) }

func (d *decoder) str(n *yaml.Node, path string) (string, bool) { return d.Str(n, path) }

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
	if msg := CheckID(s); msg != "" {
		d.addf(n, "id", "", "%s: %s", quote(s), msg)
	}
	return s
}

func (d *decoder) version(n *yaml.Node) string {
	s, ok := d.str(n, "version")
	if !ok {
		return ""
	}
	if msg := CheckVersion(s); msg != "" {
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
			{"input_schema", func(v *yaml.Node) { c.InputSchema = d.schema(v, path+".input_schema", true) }},
			{"output_schema", func(v *yaml.Node) { c.OutputSchema = d.schema(v, path+".output_schema", false) }},
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
	var secretHosts []*yaml.Node
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
		{"secrets", func(v *yaml.Node) { r.Secrets, secretHosts = d.secrets(v) }},
	})
	d.checkSecretHosts(&r, secretHosts)
	return r
}

func (d *decoder) network(n *yaml.Node) Network {
	var net Network
	if isNull(n) {
		return net
	}
	d.mapping(n, "requires.network", []field{
		{"allow", func(v *yaml.Node) {
			net.Allow = d.list(v, "requires.network.allow", d.checkNetworkEntry)
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
		{"memory", func(v *yaml.Node) {
			size, _ := d.Size(v, "limits.memory", "64MiB", MinMemory, MaxMemory)
			l.MemoryBytes = (size + PageSize - 1) / PageSize * PageSize
		}},
		{"timeout", func(v *yaml.Node) { l.Timeout = d.timeout(v) }},
		{"concurrency", func(v *yaml.Node) { l.Concurrency, _ = d.Int(v, "limits.concurrency", 1, MaxConcurrency) }},
		{"instances", func(v *yaml.Node) { l.Fresh = d.instances(v) }},
		{"max_input", func(v *yaml.Node) { l.MaxInput = d.docSize(v, "limits.max_input") }},
		{"max_output", func(v *yaml.Node) { l.MaxOutput = d.docSize(v, "limits.max_output") }},
		{"max_request", func(v *yaml.Node) { l.MaxRequest = d.docSize(v, "limits.max_request") }},
	})
	return l
}

// docSize decodes a document size limit: 1KiB to MaxDocument.
func (d *decoder) docSize(n *yaml.Node, path string) uint64 {
	size, _ := d.Size(n, path, "4MiB", 1<<10, MaxDocument)
	return size
}

func (d *decoder) timeout(n *yaml.Node) time.Duration {
	t, _ := d.Duration(n, "limits.timeout", MaxTimeout)
	return t
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
	if msg := checkGlobAt(s, d.home); msg != "" || d.resolve == nil {
		return msg
	}
	return checkResolved(s, d.home, d.resolve)
}

// checkNetworkEntry validates one requires.network.allow entry. The network
// gate owns the grammar (one parser for install and for linking); the
// manifest reports its verdict with the entry's position, and accepts a
// broad entry (netgate.Rule.Broad) only when the operator granted the same
// rule.
func (d *decoder) checkNetworkEntry(s string) string {
	r, err := netgate.ParseRule(s)
	if err != nil {
		// ParseRule names the entry itself; the *Error already does.
		if inner := errors.Unwrap(err); inner != nil {
			err = inner
		}
		return err.Error()
	}
	if why := r.Broad(); why != "" && !d.grantedNet[r] {
		return why + "; it needs an operator grant: the entry in network.grant of the station config"
	}
	return ""
}

// schema decodes a command's input or output schema: a mapping that is a
// JSON Schema whose references all resolve inside it (nothing is ever
// fetched), at most MaxSchemaBytes as JSON; an input schema describes an
// object. It returns the schema as compact JSON, or nil after recording a
// problem.
func (d *decoder) schema(n *yaml.Node, path string, input bool) string {
	if isNull(n) {
		return ""
	}
	if n.Kind != yaml.MappingNode || n.ShortTag() != "!!map" {
		d.typeError(n, path, "a mapping (a JSON Schema)")
		return ""
	}
	v, ok := d.JSON(n, path)
	if !ok {
		return ""
	}
	b, err := json.Marshal(v)
	if err != nil {
		d.addf(n, path, "", "not a JSON value: %v", err)
		return ""
	}
	if len(b) > MaxSchemaBytes {
		d.addf(n, path, "", "the schema is %d bytes as JSON; at most %d", len(b), MaxSchemaBytes)
		return ""
	}
	if _, err := CompileSchema(b); err != nil {
		d.add(n, path, "", err.Error())
		return ""
	}
	if input {
		if t, _ := v.(map[string]any)["type"].(string); t != "object" {
			d.add(n, path, "", `an input schema describes an object: give it "type: object" (a command's input is a JSON object)`)
			return ""
		}
	}
	return string(b)
}
