package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
)

// A command's schema is the module author's, and the station checks every
// input against it before the module runs — outside the module's deadline,
// in the station's own goroutine. So a schema must not be able to make that
// check expensive: CompileSchema refuses, before the validator sees it, a
// schema that refers to itself (a reference cycle would recurse until the
// stack overflows; a recursive type makes the cost grow with the input's
// nesting), one with more than MaxSchemaPaths ways of reaching its parts
// (anyOf of anyOf of ... is exponential in the schema's size), references
// that are not JSON pointers into the schema itself, and the keywords only
// MCP SDKs may use. What is left is checked at a cost of at most
// CommandSchema.paths steps per value of the input, and Validate refuses an input
// whose size times that exceeds MaxSchemaWork.

// Bounds of a command schema's cost.
const (
	// MaxSchemaPaths bounds the ways from a schema's root to its parts
	// (the number of subschemas, counted once per way of reaching them).
	MaxSchemaPaths = 4096
	// MaxSchemaWork bounds the checks of one input or result: values in it
	// times MaxSchemaPaths' count for its schema.
	MaxSchemaWork = 10_000_000
)

// CommandSchema is a command's compiled input or output schema.
type CommandSchema struct {
	r     *jsonschema.Resolved
	paths int // the ways from the root to a part, each a check a value may cost
}

// CompileSchema parses a command's JSON Schema (Command.InputSchema or
// OutputSchema) and prepares it for validation. References must be JSON
// pointers into the schema itself ("#" or "#/$defs/…"): nothing is ever
// loaded from elsewhere. Unknown keywords are kept and ignored, as JSON
// Schema says, except MCP's own ("x-mcp-…"). Every string in it is plain
// text, like a description: no control characters or bidirectional
// overrides, since clients show schemas to people and models.
func CompileSchema(data []byte) (*CommandSchema, error) {
	var doc any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("not a JSON Schema: %v", err)
	}
	w := schemaWalk{root: doc, paths: map[string]int{}, onPath: map[string]bool{}}
	paths, err := w.count(doc, "#", 0)
	if err != nil {
		return nil, err
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("not a JSON Schema: %v", err)
	}
	r, err := s.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: true})
	if err != nil {
		return nil, fmt.Errorf("not a usable JSON Schema: %v", err)
	}
	return &CommandSchema{r: r, paths: paths}, nil
}

// Validate checks v, a decoded JSON value, against the schema.
func (s *CommandSchema) Validate(v any) error {
	limit := MaxSchemaWork / s.paths
	if n := countValues(v, limit+1); n > limit {
		return fmt.Errorf("too large to check against the schema: over %d values, and each may cost %d checks (at most %d in all)", limit, s.paths, MaxSchemaWork)
	}
	return s.r.Validate(v)
}

// countValues counts the values in v (v itself, and each element and
// member, all the way down), stopping at stop.
func countValues(v any, stop int) int {
	n := 1
	switch x := v.(type) {
	case map[string]any:
		for _, e := range x {
			if n >= stop {
				return n
			}
			n += countValues(e, stop-n)
		}
	case []any:
		for _, e := range x {
			if n >= stop {
				return n
			}
			n += countValues(e, stop-n)
		}
	}
	return n
}

// schemaWalk counts the ways from a schema's root to its parts, following
// references, refusing cycles.
type schemaWalk struct {
	root   any
	paths  map[string]int  // a subschema's count, by its pointer, once known
	onPath map[string]bool // the subschemas being counted (a cycle returns to one)
}

// Keywords whose value is a schema, a list of schemas, or a map of names to
// schemas (draft 2020-12's applicators, and the definitions).
var (
	schemaKeywords = []string{"additionalProperties", "propertyNames", "items", "contains", "not", "if", "then", "else",
		"unevaluatedItems", "unevaluatedProperties", "contentSchema", "additionalItems"}
	schemaListKeywords = []string{"allOf", "anyOf", "oneOf", "prefixItems"}
	schemaMapKeywords  = []string{"properties", "patternProperties", "dependentSchemas", "$defs", "definitions"}
	// refused: references the schema cannot check statically, and MCP's.
	refusedKeywords = []string{"$dynamicRef", "$dynamicAnchor", "$recursiveRef", "$recursiveAnchor", "$anchor"}
)

// count returns the number of ways from the subschema v (at pointer ptr)
// to its parts, v included, capped above MaxSchemaPaths.
func (w *schemaWalk) count(v any, ptr string, depth int) (int, error) {
	if depth > 256 {
		return 0, errors.New("not a usable JSON Schema: nested deeper than 256 levels")
	}
	if n, ok := w.paths[ptr]; ok {
		return n, nil
	}
	if w.onPath[ptr] {
		return 0, fmt.Errorf("refers to itself (through %s): recursive schemas are not supported, since checking an input against one costs more with each level of its nesting", ptr)
	}
	m, ok := v.(map[string]any)
	if !ok {
		if _, ok := v.(bool); ok {
			return 1, nil
		}
		return 0, fmt.Errorf("not a JSON Schema: %s is %s, not an object or a boolean", ptr, jsonKind(v))
	}
	w.onPath[ptr] = true
	defer delete(w.onPath, ptr)
	total := 1
	add := func(n int) {
		total = min(total+n, MaxSchemaPaths+1)
	}
	for k := range m {
		if err := checkSchemaText(k); err != nil {
			return 0, fmt.Errorf("%s: a key %w", ptr, err)
		}
		if strings.HasPrefix(k, "x-mcp-") {
			return 0, fmt.Errorf("%s: %q is MCP's own keyword, not a module's", ptr, k)
		}
		for _, r := range refusedKeywords {
			if k == r {
				return 0, fmt.Errorf("%s: %s is not supported: use $ref with a JSON pointer into the schema (#/$defs/NAME)", ptr, k)
			}
		}
		if k == "$id" && ptr != "#" {
			return 0, fmt.Errorf("%s: $id is allowed only at the schema's root", ptr)
		}
	}
	if err := checkStrings(m, ptr); err != nil {
		return 0, err
	}
	if ref, ok := m["$ref"]; ok {
		s, ok := ref.(string)
		if !ok {
			return 0, fmt.Errorf("%s: $ref is not a string", ptr)
		}
		target, at, err := w.resolve(s)
		if err != nil {
			return 0, fmt.Errorf("%s: $ref %q: %w", ptr, s, err)
		}
		n, err := w.count(target, at, depth+1)
		if err != nil {
			return 0, err
		}
		add(n)
	}
	for _, k := range schemaKeywords {
		if sub, ok := m[k]; ok {
			n, err := w.count(sub, ptr+"/"+escapePointer(k), depth+1)
			if err != nil {
				return 0, err
			}
			add(n)
		}
	}
	for _, k := range schemaListKeywords {
		if subs, ok := m[k].([]any); ok {
			for i, sub := range subs {
				n, err := w.count(sub, ptr+"/"+k+"/"+strconv.Itoa(i), depth+1)
				if err != nil {
					return 0, err
				}
				add(n)
			}
		}
	}
	for _, k := range schemaMapKeywords {
		if subs, ok := m[k].(map[string]any); ok {
			for name, sub := range subs {
				if err := checkSchemaText(name); err != nil {
					return 0, fmt.Errorf("%s/%s: a name %w", ptr, k, err)
				}
				n, err := w.count(sub, ptr+"/"+k+"/"+escapePointer(name), depth+1)
				if err != nil {
					return 0, err
				}
				if k != "$defs" && k != "definitions" { // reached only through a $ref
					add(n)
				}
			}
		}
	}
	if total > MaxSchemaPaths {
		return 0, fmt.Errorf("too complex to check cheaply: more than %d ways to reach its parts (references to shared definitions count once for each place they are used)", MaxSchemaPaths)
	}
	w.paths[ptr] = total
	return total, nil
}

// resolve finds the subschema a $ref names: "#" or a JSON pointer "#/…"
// into the schema.
func (w *schemaWalk) resolve(ref string) (any, string, error) {
	if ref != "#" && !strings.HasPrefix(ref, "#/") {
		return nil, "", errors.New("only JSON pointers into the schema itself (\"#\", \"#/$defs/NAME\") are followed; nothing is loaded from elsewhere")
	}
	v := w.root
	if ref == "#" {
		return v, "#", nil
	}
	for _, tok := range strings.Split(ref[2:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[tok]; !ok {
				return nil, "", errors.New("points at nothing in the schema")
			}
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(x) {
				return nil, "", errors.New("points at nothing in the schema")
			}
			v = x[i]
		default:
			return nil, "", errors.New("points at nothing in the schema")
		}
	}
	// The pointer the walk knows the target by: the same subschema reached
	// through its own path is the same entry.
	return v, canonicalPointer(ref), nil
}

// canonicalPointer is ref with its tokens unescaped and escaped again, so
// that two spellings of one pointer are one key.
func canonicalPointer(ref string) string {
	if ref == "#" {
		return ref
	}
	toks := strings.Split(ref[2:], "/")
	for i, t := range toks {
		toks[i] = escapePointer(strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~"))
	}
	return "#/" + strings.Join(toks, "/")
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// checkStrings refuses, in the values of m's keywords that are strings or
// lists of strings (title, description, enum, pattern, …), what a
// description may not hold.
func checkStrings(m map[string]any, ptr string) error {
	var check func(v any, depth int) error
	check = func(v any, depth int) error {
		switch x := v.(type) {
		case string:
			return checkSchemaText(x)
		case []any:
			if depth > 0 {
				for _, e := range x {
					if err := check(e, depth-1); err != nil {
						return err
					}
				}
			}
		case map[string]any:
			if depth > 0 {
				for k, e := range x {
					if err := checkSchemaText(k); err != nil {
						return err
					}
					if err := check(e, depth-1); err != nil {
						return err
					}
				}
			}
		}
		return nil
	}
	for k, v := range m {
		switch k {
		case "properties", "patternProperties", "dependentSchemas", "$defs", "definitions", "allOf", "anyOf", "oneOf", "prefixItems":
			continue // subschemas: walked on their own
		}
		if _, isSchema := v.(map[string]any); isSchema && isSchemaKeyword(k) {
			continue
		}
		if err := check(v, 64); err != nil {
			return fmt.Errorf("%s/%s: %w", ptr, escapePointer(k), err)
		}
	}
	return nil
}

func isSchemaKeyword(k string) bool {
	for _, s := range schemaKeywords {
		if s == k {
			return true
		}
	}
	return false
}

// checkSchemaText refuses what a description may not hold (checkText's
// characters; the schema as a whole is bounded, not each string).
func checkSchemaText(s string) error {
	if !utf8.ValidString(s) {
		return errors.New("is not valid UTF-8")
	}
	for _, r := range s {
		if r != '\n' && r != '\t' && unsafeRune(r) {
			return fmt.Errorf("contains the control character %U", r)
		}
	}
	return nil
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case []any:
		return "a list"
	}
	return fmt.Sprintf("%T", v)
}
