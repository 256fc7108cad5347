package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
)

// A command's schema is the module author's, and the station checks every
// input against it before the module runs — outside the module's deadline,
// in the station's own goroutine. So a schema must not be able to make that
// check expensive: CompileSchema refuses, before the validator sees it, a
// schema that applies itself to the same value (a reference cycle would
// recurse until the stack overflows), a recursion that could reach itself
// more than once per level of the value (its cost would grow exponentially
// with the value's nesting; schemaWalk.check says what is allowed), more
// than MaxSchemaPaths ways of reaching its parts (anyOf of anyOf of ... is
// exponential in the schema's size), references that are not JSON pointers
// into the schema itself, and the keywords only MCP SDKs may use. What is
// left is checked at a cost of at most CommandSchema.paths steps per value
// of the input, and Validate refuses an input whose size times that
// exceeds MaxSchemaWork.

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
	w := schemaWalk{root: doc, edges: map[string][]schemaEdge{}}
	if err := w.build(doc, "#", 0); err != nil {
		return nil, err
	}
	paths, err := w.check()
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

// schemaWalk builds the graph of a schema's parts: a node per subschema
// (by its JSON pointer), an edge per keyword that applies a subschema —
// to the same value (a $ref, allOf/anyOf/oneOf, not, if/then/else,
// dependentSchemas) or to a part of it (properties, items, …).
type schemaWalk struct {
	root  any
	edges map[string][]schemaEdge // by node
}

// schemaEdge is one keyword applying the subschema at to.
type schemaEdge struct {
	to   string
	same bool   // applied to the same value, not to a part of it
	key  string // a part: "p:NAME" (one property), "additional", "items", or the keyword
}

// Keywords whose value is a schema, a list of schemas, or a map of names to
// schemas (draft 2020-12's applicators, and the definitions), and whether
// each applies to the value itself or to its parts.
var (
	sameKeywords       = []string{"not", "if", "then", "else"}
	partKeywords       = []string{"additionalProperties", "propertyNames", "items", "contains", "unevaluatedItems", "unevaluatedProperties", "contentSchema", "additionalItems"}
	sameListKeywords   = []string{"allOf", "anyOf", "oneOf"}
	schemaMapKeywords  = []string{"properties", "patternProperties", "dependentSchemas", "$defs", "definitions"}
	refusedKeywords    = []string{"$dynamicRef", "$dynamicAnchor", "$recursiveRef", "$recursiveAnchor", "$anchor"}
	schemaKeywordNames = append(append([]string{"prefixItems"}, sameKeywords...), append(partKeywords, sameListKeywords...)...)
)

// build adds the node of the subschema v at pointer ptr, and what it
// applies, to the graph.
func (w *schemaWalk) build(v any, ptr string, depth int) error {
	if _, done := w.edges[ptr]; done {
		return nil
	}
	if depth > 256 {
		return errors.New("not a usable JSON Schema: nested deeper than 256 levels")
	}
	m, ok := v.(map[string]any)
	if !ok {
		if _, ok := v.(bool); ok {
			w.edges[ptr] = nil
			return nil
		}
		return fmt.Errorf("not a JSON Schema: %s is %s, not an object or a boolean", ptr, jsonKind(v))
	}
	w.edges[ptr] = []schemaEdge{} // visited, before its parts: a $ref back here stops
	for k := range m {
		if err := checkSchemaText(k); err != nil {
			return fmt.Errorf("%s: a key %w", ptr, err)
		}
		if strings.HasPrefix(k, "x-mcp-") {
			return fmt.Errorf("%s: %q is MCP's own keyword, not a module's", ptr, k)
		}
		if slices.Contains(refusedKeywords, k) {
			return fmt.Errorf("%s: %s is not supported: use $ref with a JSON pointer into the schema (#/$defs/NAME)", ptr, k)
		}
		if k == "$id" && ptr != "#" {
			return fmt.Errorf("%s: $id is allowed only at the schema's root", ptr)
		}
	}
	if err := checkStrings(m, ptr); err != nil {
		return err
	}
	var out []schemaEdge
	visit := func(sub any, at string, same bool, key string) error {
		if err := w.build(sub, at, depth+1); err != nil {
			return err
		}
		if key != "" || same {
			out = append(out, schemaEdge{to: at, same: same, key: key})
		}
		return nil
	}
	if ref, ok := m["$ref"]; ok {
		s, ok := ref.(string)
		if !ok {
			return fmt.Errorf("%s: $ref is not a string", ptr)
		}
		target, at, err := w.resolve(s)
		if err != nil {
			return fmt.Errorf("%s: $ref %q: %w", ptr, s, err)
		}
		if err := visit(target, at, true, ""); err != nil {
			return err
		}
	}
	for _, k := range sameKeywords {
		if sub, ok := m[k]; ok {
			if err := visit(sub, ptr+"/"+k, true, ""); err != nil {
				return err
			}
		}
	}
	for _, k := range partKeywords {
		if sub, ok := m[k]; ok {
			key := k
			switch k {
			case "additionalProperties":
				key = "additional"
			case "additionalItems":
				key = "items"
			}
			if err := visit(sub, ptr+"/"+k, false, key); err != nil {
				return err
			}
		}
	}
	for _, k := range append(sameListKeywords, "prefixItems") {
		if subs, ok := m[k].([]any); ok {
			for i, sub := range subs {
				same, key := true, "" // allOf, anyOf, oneOf: the same value
				if k == "prefixItems" {
					same, key = false, k
				}
				if err := visit(sub, ptr+"/"+k+"/"+strconv.Itoa(i), same, key); err != nil {
					return err
				}
			}
		}
	}
	for _, k := range schemaMapKeywords {
		if subs, ok := m[k].(map[string]any); ok {
			for name, sub := range subs {
				if err := checkSchemaText(name); err != nil {
					return fmt.Errorf("%s/%s: a name %w", ptr, k, err)
				}
				at := ptr + "/" + k + "/" + escapePointer(name)
				var err error
				switch k {
				case "properties":
					err = visit(sub, at, false, "p:"+name)
				case "patternProperties":
					err = visit(sub, at, false, k)
				case "dependentSchemas":
					err = visit(sub, at, true, "")
				default: // $defs, definitions: reached only through a $ref
					err = w.build(sub, at, depth+1)
				}
				if err != nil {
					return err
				}
			}
		}
	}
	w.edges[ptr] = out
	return nil
}

// check refuses what would make checking a value against the schema cost
// more than linearly in the value's size, and returns the ways from the
// root to its parts (a value is checked against at most that many
// subschemas), capped above MaxSchemaPaths.
//
// A schema may be recursive (a tree, a list) when checking a value reaches
// each part of the recursion at most once per level of the value: within a
// cycle, a subschema applies at most one other of the cycle to the same
// value, the subschemas applied to one value apply the cycle to distinct
// parts of it (named properties, or the remaining properties, or the
// items), and nothing applies itself to the same value without descending
// into it. Anything else — anyOf of two references back, a cycle through
// patternProperties or contains — could cost exponentially in the value's
// nesting, and is refused.
func (w *schemaWalk) check() (int, error) {
	scc := w.components()
	// Same-value cycles: a subschema applying itself to the same value.
	state := map[string]int{}
	var sameCycle func(n string) error
	sameCycle = func(n string) error {
		state[n] = 1
		for _, e := range w.edges[n] {
			if !e.same {
				continue
			}
			switch state[e.to] {
			case 1:
				return fmt.Errorf("refers to itself (through %s) without descending into the value: its check would never end", e.to)
			case 0:
				if err := sameCycle(e.to); err != nil {
					return err
				}
			}
		}
		state[n] = 2
		return nil
	}
	for n := range w.edges {
		if state[n] == 0 {
			if err := sameCycle(n); err != nil {
				return 0, err
			}
		}
	}
	recursive := func(n string) error {
		return fmt.Errorf("refers to itself (through %s) in a way whose check could grow exponentially with the value's nesting: a recursive schema may reach itself once per level (a property, the other properties, or the items), not twice (anyOf of two references back, patternProperties, contains)", n)
	}
	for n := range w.edges {
		c := scc[n]
		if c.size == 1 && !c.selfLoop {
			continue
		}
		// The subschemas of the cycle applied to the value n is checked
		// against: n, and the one it applies to the same value, and so on.
		var chain []string
		for at := n; at != ""; {
			chain = append(chain, at)
			next := ""
			for _, e := range w.edges[at] {
				if e.same && scc[e.to].id == c.id {
					if next != "" {
						return 0, recursive(at)
					}
					next = e.to
				}
			}
			at = next
		}
		parts := map[string]string{} // a part of the value → the subschema that applies the cycle to it
		for _, at := range chain {
			for _, e := range w.edges[at] {
				if e.same || scc[e.to].id != c.id {
					continue
				}
				if e.key != "additional" && e.key != "items" && !strings.HasPrefix(e.key, "p:") {
					return 0, recursive(e.to)
				}
				if _, twice := parts[e.key]; twice {
					return 0, recursive(e.to)
				}
				for k, by := range parts {
					if by != at && (e.key == "additional" && strings.HasPrefix(k, "p:") || k == "additional" && strings.HasPrefix(e.key, "p:")) {
						return 0, recursive(e.to) // the other properties of one overlap the named ones of another
					}
				}
				parts[e.key] = at
			}
		}
	}
	// The ways from the root to a part, each subschema once per way, not
	// following an edge back into the recursion being counted.
	paths := map[string]int{}
	onStack := map[string]bool{}
	var count func(n string) int
	count = func(n string) int {
		if v, ok := paths[n]; ok {
			return v
		}
		onStack[n] = true
		total := 1
		for _, e := range w.edges[n] {
			if !onStack[e.to] {
				total = min(total+count(e.to), MaxSchemaPaths+1)
			}
		}
		delete(onStack, n)
		paths[n] = total
		return total
	}
	total := count("#")
	if total > MaxSchemaPaths {
		return 0, fmt.Errorf("too complex to check cheaply: more than %d ways to reach its parts (references to shared definitions count once for each place they are used)", MaxSchemaPaths)
	}
	return total, nil
}

// component is a strongly connected component of the graph.
type component struct {
	id, size int
	selfLoop bool // a node of size-1 component applies itself
}

// components returns each node's strongly connected component (Tarjan).
func (w *schemaWalk) components() map[string]component {
	index, low := map[string]int{}, map[string]int{}
	onStack := map[string]bool{}
	var stack []string
	out := map[string]component{}
	next, ids := 0, 0
	var strong func(n string)
	strong = func(n string) {
		index[n], low[n] = next, next
		next++
		stack = append(stack, n)
		onStack[n] = true
		self := false
		for _, e := range w.edges[n] {
			if e.to == n {
				self = true
			}
			if _, seen := index[e.to]; !seen {
				strong(e.to)
				low[n] = min(low[n], low[e.to])
			} else if onStack[e.to] {
				low[n] = min(low[n], index[e.to])
			}
		}
		if low[n] == index[n] {
			var members []string
			for {
				m := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				onStack[m] = false
				members = append(members, m)
				if m == n {
					break
				}
			}
			for _, m := range members {
				out[m] = component{id: ids, size: len(members), selfLoop: self && len(members) == 1}
			}
			ids++
		}
	}
	for n := range w.edges {
		if _, seen := index[n]; !seen {
			strong(n)
		}
	}
	return out
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

func isSchemaKeyword(k string) bool { return slices.Contains(schemaKeywordNames, k) }

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
