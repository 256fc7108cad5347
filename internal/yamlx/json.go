package yamlx

import (
	"fmt"
	"math"

	"go.yaml.in/yaml/v3"
)

// MaxJSONDepth bounds the nesting of a value JSON decodes.
const MaxJSONDepth = 64

// JSON decodes the YAML value n as the JSON value it spells: mappings with
// string keys become map[string]any, sequences []any, and scalars strings,
// booleans, null and numbers (int64 or float64). It records a problem at
// path, and returns false, for what JSON cannot hold — a key that is not a
// string, a timestamp or binary tag, a number out of range, an alias, or
// nesting deeper than MaxJSONDepth — and for a duplicate key.
func (d *Decoder) JSON(n *yaml.Node, path string) (any, bool) {
	return d.json(n, path, 0)
}

func (d *Decoder) json(n *yaml.Node, path string, depth int) (any, bool) {
	if depth > MaxJSONDepth {
		d.Addf(n, path, "nested deeper than %d levels", MaxJSONDepth)
		return nil, false
	}
	switch n.Kind {
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		ok := true
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode || k.ShortTag() != "!!str" {
				d.Addf(k, path, "JSON keys are strings, not %s; quote it", d.Describe(k))
				ok = false
				continue
			}
			if _, dup := m[k.Value]; dup {
				d.Addf(k, path, "duplicate key %q", k.Value)
				ok = false
				continue
			}
			val, vok := d.json(v, path+"."+k.Value, depth+1)
			ok = ok && vok
			m[k.Value] = val
		}
		return m, ok
	case yaml.SequenceNode:
		s := make([]any, 0, len(n.Content))
		ok := true
		for i, v := range n.Content {
			val, vok := d.json(v, fmt.Sprintf("%s[%d]", path, i), depth+1)
			ok = ok && vok
			s = append(s, val)
		}
		return s, ok
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!str":
			return n.Value, true
		case "!!null":
			return nil, true
		case "!!bool":
			var b bool
			if err := n.Decode(&b); err == nil {
				return b, true
			}
		case "!!int":
			var i int64
			if err := n.Decode(&i); err == nil {
				return i, true
			}
			d.Addf(n, path, "%s is out of range for an integer", n.Value)
			return nil, false
		case "!!float":
			var f float64
			if err := n.Decode(&f); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
				return f, true
			}
			d.Addf(n, path, "%s is not a finite number", n.Value)
			return nil, false
		}
	}
	d.Addf(n, path, "%s is not a JSON value; quote it", d.Describe(n))
	return nil, false
}
