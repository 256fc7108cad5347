package manifest

import (
	"fmt"
	"strings"
	"testing"
)

const schemaHead = `id: dave/test
version: 1.0.0
wasm: module.wasm
commands:
  - name: create
`

func TestCommandSchemas(t *testing.T) {
	m, err := Parse("module.yaml", []byte(schemaHead+`    input_schema:
      type: object
      properties:
        customer: {type: string, minLength: 1}
        amount: {type: integer, minimum: 1}
        lines: {type: array, items: {$ref: "#/$defs/line"}}
      required: [customer, amount]
      additionalProperties: false
      $defs:
        line: {type: object, properties: {text: {type: string}}}
    output_schema:
      type: object
      properties:
        id: {type: string}
`))
	if err != nil {
		t.Fatal(err)
	}
	c := m.Commands[0]
	if !strings.HasPrefix(c.InputSchema, `{"$defs":`) || !strings.Contains(c.InputSchema, `"required":["customer","amount"]`) {
		t.Errorf("input schema %s", c.InputSchema)
	}
	if c.OutputSchema != `{"properties":{"id":{"type":"string"}},"type":"object"}` {
		t.Errorf("output schema %s", c.OutputSchema)
	}
	r, err := CompileSchema([]byte(c.InputSchema))
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Validate(map[string]any{"customer": "acme", "amount": 3}); err != nil {
		t.Errorf("a matching input: %v", err)
	}
	if err := r.Validate(map[string]any{"customer": "acme", "amount": 0}); err == nil {
		t.Error("amount 0 passed minimum 1")
	}
	if err := r.Validate(map[string]any{"customer": "acme", "amount": 1, "extra": true}); err == nil {
		t.Error("an extra property passed additionalProperties: false")
	}
}

// TestCommandSchemasRefused: what is not a usable input schema is refused
// at parse (so at install and at publish), each with the field named.
func TestCommandSchemasRefused(t *testing.T) {
	big := "    input_schema:\n      type: object\n      description: " + strings.Repeat("x", MaxSchemaBytes) + "\n"
	deep := "    input_schema:\n      type: object\n      properties: " + strings.Repeat("{a: ", 70) + "{}" + strings.Repeat("}", 70) + "\n"
	for _, tt := range []struct{ name, yaml, want string }{
		{"a list", "    input_schema: [1, 2]\n", "a mapping"},
		{"a string", "    input_schema: object\n", "a mapping"},
		{"not an object schema", "    input_schema: {type: string}\n", `type: object`},
		{"no type", "    input_schema: {properties: {a: {type: string}}}\n", `type: object`},
		{"a remote reference", "    input_schema: {type: object, properties: {a: {$ref: \"https://evil.example/s.json\"}}}\n", "nothing is loaded from elsewhere"},
		{"a relative reference", "    input_schema: {type: object, properties: {a: {$ref: \"other.json#/x\"}}}\n", "nothing is loaded from elsewhere"},
		{"a dangling reference", "    input_schema: {type: object, properties: {a: {$ref: \"#/$defs/none\"}}}\n", "points at nothing"},
		{"a reference to itself", "    input_schema: {type: object, $ref: \"#\"}\n", "refers to itself"},
		{"a cycle through allOf and anyOf", "    input_schema: {type: object, $defs: {a: {allOf: [{$ref: \"#/$defs/b\"}]}, b: {anyOf: [{$ref: \"#/$defs/a\"}]}}, $ref: \"#/$defs/a\"}\n", "refers to itself"},
		{"a recursion that doubles each level", "    input_schema: {type: object, properties: {a: {anyOf: [{$ref: \"#\"}, {$ref: \"#\"}]}}}\n", "exponentially"},
		{"a recursion through patternProperties", "    input_schema: {type: object, patternProperties: {\"^a\": {$ref: \"#\"}}}\n", "exponentially"},
		{"a recursion through contains", "    input_schema: {type: object, properties: {a: {contains: {$ref: \"#\"}}}}\n", "exponentially"},
		{"two subschemas applying the recursion to one property", "    input_schema: {type: object, $defs: {t: {allOf: [{$ref: \"#/$defs/u\"}], properties: {a: {$ref: \"#/$defs/t\"}}}, u: {properties: {a: {$ref: \"#/$defs/t\"}}}}, $ref: \"#/$defs/t\"}\n", "exponentially"},
		{"the other properties of one overlapping the named ones of another", "    input_schema: {type: object, $defs: {t: {allOf: [{$ref: \"#/$defs/u\"}], properties: {a: {$ref: \"#/$defs/t\"}}}, u: {additionalProperties: {$ref: \"#/$defs/t\"}}}, $ref: \"#/$defs/t\"}\n", "exponentially"},
		{"a cycle with a default", "    input_schema: {type: object, $defs: {a: {default: 1, not: {$ref: \"#/$defs/a\"}}}, properties: {x: {$ref: \"#/$defs/a\"}}}\n", "refers to itself"},
		{"an anchor", "    input_schema: {type: object, $anchor: a, not: {$ref: \"#a\"}}\n", "not supported"},
		{"a dynamic reference", "    input_schema: {type: object, $dynamicRef: \"#x\"}\n", "not supported"},
		{"an $id below the root", "    input_schema: {type: object, properties: {a: {$id: \"https://evil.example/\"}}}\n", "only at the schema's root"},
		{"an MCP header keyword", "    input_schema: {type: object, properties: {a: {type: string, x-mcp-header: {}}}}\n", "MCP's own keyword"},
		{"a control character in a description", "    input_schema: {type: object, properties: {a: {type: string, description: \"\\e]8;;https://evil.example\\e\\\\x\"}}}\n", "control character"},
		{"a bidirectional override in an enum", "    input_schema: {type: object, properties: {a: {enum: [\"safe\\u202e\"]}}}\n", "control character"},
		{"a control character in a key", "    input_schema: {type: object, properties: {\"a\\u0007\": {type: string}}}\n", "control character"},
		{"a wrong keyword type", "    input_schema: {type: object, required: yes}\n", "JSON Schema"},
		{"a bad pattern", "    input_schema: {type: object, properties: {a: {type: string, pattern: \"(\"}}}\n", "JSON Schema"},
		{"a timestamp", "    input_schema: {type: object, default: 2026-12-02T10:00:00Z}\n", "not a JSON value"},
		{"a non-string key", "    input_schema: {type: object, properties: {1: {type: string}}}\n", "JSON keys are strings"},
		{"too big", big, "at most"},
		{"too deep", deep, "nested deeper"},
		{"an output schema that is not one", "    output_schema: {type: 7}\n", "JSON Schema"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("module.yaml", []byte(schemaHead+tt.yaml))
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "commands[0].") {
				t.Errorf("Parse = %v, want an error naming commands[0] and saying %q", err, tt.want)
			}
		})
	}
}

// TestRecursiveSchemas: a recursion that reaches itself once per level of
// the value — a tree's children, a linked list's next, a map of trees —
// compiles, and checks deep values in linear time.
func TestRecursiveSchemas(t *testing.T) {
	for _, schema := range []string{
		`{"type":"object","properties":{"next":{"$ref":"#"}}}`,
		`{"$ref":"#/$defs/tree","$defs":{"treeMap":{"type":["null","object"],"additionalProperties":{"$ref":"#/$defs/treeMap"}},"tree":{"type":"object","properties":{"name":{"type":"string"},"children":{"type":["null","array"],"items":{"$ref":"#/$defs/tree"}},"parent":{"anyOf":[{"type":"null"},{"$ref":"#/$defs/tree"}]},"meta":{"$ref":"#/$defs/treeMap"}},"required":["name"],"additionalProperties":false}}}`,
		`{"$ref":"#/$defs/ping","$defs":{"ping":{"type":"object","properties":{"pong":{"type":["null","object"],"properties":{"ping":{"anyOf":[{"type":"null"},{"$ref":"#/$defs/ping"}]}},"required":["ping"],"additionalProperties":false}},"required":["pong"],"additionalProperties":false}}}`,
	} {
		if _, err := CompileSchema([]byte(schema)); err != nil {
			t.Errorf("%s: %v", schema, err)
		}
	}
	s, err := CompileSchema([]byte(`{"type":"object","properties":{"v":{"type":"integer"},"next":{"anyOf":[{"type":"null"},{"$ref":"#"}]}},"required":["v"]}`))
	if err != nil {
		t.Fatal(err)
	}
	var v any = nil
	for i := range 2000 {
		v = map[string]any{"v": float64(i), "next": v}
	}
	if err := s.Validate(v); err != nil {
		t.Errorf("a list 2000 long: %v", err)
	}
	v = map[string]any{"v": "not a number", "next": v}
	if err := s.Validate(v); err == nil {
		t.Error("a bad head passed")
	}
}

// TestCommandSchemaCost: a schema whose check would cost exponentially in
// its own size (anyOf of anyOf of … a shared definition) is refused at
// parse; a big one that is cheap is not; and an input too big for its
// schema's cost is refused before it is checked.
func TestCommandSchemaCost(t *testing.T) {
	var defs strings.Builder
	for i := range 40 {
		fmt.Fprintf(&defs, "d%d: {anyOf: [{$ref: \"#/$defs/d%d\"}, {$ref: \"#/$defs/d%d\"}]}, ", i, i+1, i+1)
	}
	defs.WriteString("d40: {type: string}")
	_, err := Parse("module.yaml", []byte(schemaHead+"    input_schema: {type: object, $defs: {"+defs.String()+"}, properties: {a: {$ref: \"#/$defs/d0\"}}}\n"))
	if err == nil || !strings.Contains(err.Error(), "too complex") {
		t.Errorf("an exponential schema: %v, want it refused as too complex", err)
	}
	var props strings.Builder
	for i := range 500 {
		fmt.Fprintf(&props, "p%d: {type: string, maxLength: 10}, ", i)
	}
	if _, err := Parse("module.yaml", []byte(schemaHead+"    input_schema: {type: object, properties: {"+props.String()+"}}\n")); err != nil {
		t.Errorf("500 plain properties: %v", err)
	}

	s, err := CompileSchema([]byte(`{"type":"object","properties":{"a":{"type":"array","items":{"anyOf":[{"type":"string"},{"type":"integer"}]}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	big := make([]any, MaxSchemaWork/s.paths+1)
	for i := range big {
		big[i] = "x"
	}
	if err := s.Validate(map[string]any{"a": big}); err == nil || !strings.Contains(err.Error(), "too large to check") {
		t.Errorf("an input beyond the schema's work bound: %v", err)
	}
	if err := s.Validate(map[string]any{"a": big[:1000]}); err != nil {
		t.Errorf("a fair input: %v", err)
	}
}
