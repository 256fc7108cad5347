package yamlx

import (
	"fmt"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Field is one known key of a mapping and the function that decodes its
// value.
type Field struct {
	Name   string
	Decode func(v *yaml.Node)
}

// Fields returns fs as Fields. It lets a package name Field with a type of
// its own (type field yamlx.Field), whose literals may leave out the field
// names ({"id", decodeID}).
func Fields[F ~struct {
	Name   string
	Decode func(v *yaml.Node)
}](fs []F) []Field {
	out := make([]Field, len(fs))
	for i, f := range fs {
		out[i] = Field(f)
	}
	return out
}

// Mapping decodes the mapping n at path: each known key's value is handed
// to its field's Decode, in document order; unknown keys, duplicate keys,
// keys that are not strings and merge keys are problems. It returns the key
// node of each field seen, or nil (after recording a problem) if n is not a
// mapping.
func (d *Decoder) Mapping(n *yaml.Node, path string, fields []Field) map[string]*yaml.Node {
	if n.Kind != yaml.MappingNode || n.ShortTag() != "!!map" {
		d.TypeError(n, path, "a mapping")
		return nil
	}
	seen := make(map[string]*yaml.Node, len(fields))
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if !d.style.PlainMergeKeys && k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
			d.Add(k, path, "merge keys (<<) are not allowed in "+d.style.Doc)
			continue
		}
		if k.Kind != yaml.ScalarNode || k.ShortTag() != "!!str" {
			d.Addf(k, path, "keys must be field names, not %s", d.Describe(k))
			continue
		}
		if first := seen[k.Value]; first != nil {
			d.Addf(k, path, "duplicate field %q (first at line %d)", k.Value, first.Line)
			continue
		}
		var f *Field
		for j := range fields {
			if fields[j].Name == k.Value {
				f = &fields[j]
				break
			}
		}
		if f == nil {
			d.Add(k, path, d.unknownField(k.Value, fields))
			continue
		}
		seen[k.Value] = k
		f.Decode(v)
	}
	return seen
}

// unknownField describes an unknown key: the closest known one, if one is
// close, or else all of them.
func (d *Decoder) unknownField(name string, fields []Field) string {
	msg := "unknown field " + Quote(name)
	if !d.style.ListFields {
		best, bestDist := "", 3
		for _, f := range fields {
			if dist := editDistance(strings.ToLower(name), f.Name); dist < bestDist {
				best, bestDist = f.Name, dist
			}
		}
		if best != "" {
			return msg + fmt.Sprintf("; did you mean %q?", best)
		}
	}
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = f.Name
	}
	return msg + " (known fields: " + strings.Join(names, ", ") + ")"
}

// editDistance is the Levenshtein distance between a and b, in bytes. Names
// longer than 64 bytes are never close to a field name.
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 64
	}
	prev, cur := make([]int, len(b)+1), make([]int, len(b)+1)
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

// IsNull reports whether n is an explicit or implicit YAML null ("key:"
// with no value, "~" or "null").
func IsNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// Describe names the YAML type of n for a message: "a string", "a list",
// "a mapping tagged !x".
func (d *Decoder) Describe(n *yaml.Node) string {
	tag := n.ShortTag()
	switch n.Kind {
	case yaml.MappingNode:
		return d.tagged("a mapping", tag, "!!map")
	case yaml.SequenceNode:
		return d.tagged("a list", tag, "!!seq")
	case yaml.AliasNode:
		return "an alias"
	case yaml.ScalarNode:
		switch tag {
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
		}
		switch {
		case d.style.BasicTypes:
		case tag == "!!timestamp":
			return "a timestamp"
		default:
			return "a value tagged " + d.name(tag)
		}
	}
	if d.style.BasicTypes {
		return "a value of another type"
	}
	return "an unknown node"
}

// tagged describes a mapping or list, naming its tag unless it is the
// usual one.
func (d *Decoder) tagged(what, tag, usual string) string {
	if tag == usual || d.style.PlainTypes || d.style.BasicTypes {
		return what
	}
	return what + " tagged " + d.name(tag)
}

// TypeError records that n, at path, is not what was wanted ("a mapping",
// "true or false"). A plain scalar that is not a string where a string is
// wanted gets a hint to quote it.
func (d *Decoder) TypeError(n *yaml.Node, path, want string) {
	msg := fmt.Sprintf("must be %s, not %s", want, d.Describe(n))
	if !d.style.NoQuoteHint && want == "a string" && n.Kind == yaml.ScalarNode && n.Style == 0 {
		switch n.ShortTag() {
		case "!!int", "!!float", "!!bool", "!!timestamp":
			msg += fmt.Sprintf("; quote it: %q", n.Value)
		}
	}
	d.Add(n, path, msg)
}

// scalar reports whether n is a scalar with one of tags.
func scalar(n *yaml.Node, tags ...string) bool {
	if n.Kind != yaml.ScalarNode {
		return false
	}
	tag := n.ShortTag()
	for _, t := range tags {
		if tag == t {
			return true
		}
	}
	return false
}

// Str decodes a string.
func (d *Decoder) Str(n *yaml.Node, path string) (string, bool) {
	if scalar(n, "!!str") {
		return n.Value, true
	}
	d.TypeError(n, path, "a string")
	return "", false
}

// Bool decodes true or false.
func (d *Decoder) Bool(n *yaml.Node, path string) (bool, bool) {
	var b bool
	if !scalar(n, "!!bool") || n.Decode(&b) != nil {
		d.TypeError(n, path, "true or false")
		return false, false
	}
	return b, true
}

// Int decodes an integer from lo to hi.
func (d *Decoder) Int(n *yaml.Node, path string, lo, hi int) (int, bool) {
	var i int
	if !scalar(n, "!!int") || n.Decode(&i) != nil {
		d.TypeError(n, path, "an integer")
		return 0, false
	}
	if i < lo || i > hi {
		d.Addf(n, path, "%d is out of range (%d to %d)", i, lo, hi)
		return 0, false
	}
	return i, true
}

// Duration decodes a duration written as a string such as "30s" or
// "1m30s". Its bounds are the caller's to check.
func (d *Decoder) Duration(n *yaml.Node, path string) (time.Duration, bool) {
	if !scalar(n, "!!str") {
		d.TypeError(n, path, `a duration such as "30s"`)
		return 0, false
	}
	t, err := time.ParseDuration(n.Value)
	if err != nil {
		d.Addf(n, path, "%s is not a duration (write it like 30s, 2m or 1m30s)", Quote(n.Value))
		return 0, false
	}
	return t, true
}

// Size decodes a size from lo to hi bytes, written as an integer or as a
// string such as example ("64MiB"), with Style.ParseSize.
func (d *Decoder) Size(n *yaml.Node, path, example string, lo, hi uint64) (uint64, bool) {
	if !scalar(n, "!!str", "!!int") {
		d.TypeError(n, path, fmt.Sprintf("a size such as %q", example))
		return 0, false
	}
	size, err := d.style.ParseSize(n.Value)
	if err != nil {
		d.Add(n, path, err.Error())
		return 0, false
	}
	if size < lo || size > hi {
		d.Addf(n, path, "%s is out of range (%s to %s)", Quote(n.Value), d.style.FormatSize(lo), d.style.FormatSize(hi))
		return 0, false
	}
	return size, true
}
