package yamlx

import (
	"fmt"
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
// to its field's Decode, in document order; unknown keys (with the closest
// known one, see Unknown), duplicate keys, keys that are not strings and
// merge keys are problems. It returns the key node of each field seen, or
// nil (after recording a problem) if n is not a mapping.
func (d *Decoder) Mapping(n *yaml.Node, path string, fields []Field) map[string]*yaml.Node {
	if n.Kind != yaml.MappingNode || n.ShortTag() != "!!map" {
		d.TypeError(n, path, "a mapping")
		return nil
	}
	seen := make(map[string]*yaml.Node, len(fields))
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if d.MergeKey(k, path) {
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
			d.AddFunc(k, path, func() string {
				names := make([]string, len(fields))
				for i, f := range fields {
					names[i] = f.Name
				}
				return Unknown("field", k.Value, names)
			})
			continue
		}
		seen[k.Value] = k
		f.Decode(v)
	}
	return seen
}

// MergeKey reports whether the key k of a mapping at path is a merge key
// ("<<"), after recording that it is not allowed. Mapping checks its keys
// with it; so must a caller that walks a mapping of its own.
func (d *Decoder) MergeKey(k *yaml.Node, path string) bool {
	if k.Kind != yaml.ScalarNode || k.ShortTag() != "!!merge" {
		return false
	}
	d.Addf(k, path, "merge keys (<<) are not allowed in %s; write the fields out in this mapping", d.doc)
	return true
}

// IsNull reports whether n is an explicit or implicit YAML null ("key:"
// with no value, "~" or "null").
func IsNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// Describe names the YAML type of n for a message: "a string", "a list",
// "a timestamp", "a mapping tagged !x". Tags are escaped (see Printable).
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
		case "!!timestamp":
			return "a timestamp"
		}
		return "a value tagged " + d.name(tag)
	}
	return "an unknown node"
}

// tagged describes a mapping or list, naming its tag unless it is the
// usual one.
func (d *Decoder) tagged(what, tag, usual string) string {
	if tag == usual {
		return what
	}
	return what + " tagged " + d.name(tag)
}

// TypeError records that n, at path, is not what was wanted ("a mapping",
// "true or false"). A plain scalar that is not a string where a string is
// wanted gets a hint to quote it.
func (d *Decoder) TypeError(n *yaml.Node, path, want string) {
	msg := fmt.Sprintf("must be %s, not %s", want, d.Describe(n))
	if want == "a string" && n.Kind == yaml.ScalarNode && n.Style == 0 {
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
// "1m30s", more than 0 and at most hi (0: no upper bound).
func (d *Decoder) Duration(n *yaml.Node, path string, hi time.Duration) (time.Duration, bool) {
	if !scalar(n, "!!str") {
		d.TypeError(n, path, `a duration such as "30s"`)
		return 0, false
	}
	t, err := time.ParseDuration(n.Value)
	if err != nil {
		d.Addf(n, path, "%s is not a duration (write it like 30s, 5m or 1h30m)", Quote(n.Value))
		return 0, false
	}
	switch {
	case hi > 0 && (t <= 0 || t > hi):
		d.Addf(n, path, "%s is out of range (more than 0, at most %s)", Quote(n.Value), FormatDuration(hi))
		return 0, false
	case t <= 0:
		d.Addf(n, path, "%s is out of range (more than 0)", Quote(n.Value))
		return 0, false
	}
	return t, true
}

// Size decodes a size from lo to hi bytes, written as an integer or as a
// string such as example ("64MiB"); see ParseSize.
func (d *Decoder) Size(n *yaml.Node, path, example string, lo, hi uint64) (uint64, bool) {
	if !scalar(n, "!!str", "!!int") {
		d.TypeError(n, path, fmt.Sprintf("a size such as %q", example))
		return 0, false
	}
	size, err := ParseSize(n.Value)
	if err != nil {
		d.Add(n, path, err.Error())
		return 0, false
	}
	if size < lo || size > hi {
		d.Addf(n, path, "%s is out of range (%s to %s)", Quote(n.Value), FormatSize(lo), FormatSize(hi))
		return 0, false
	}
	return size, true
}
