package manifest

import (
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
		{"a remote reference", "    input_schema: {type: object, properties: {a: {$ref: \"https://evil.example/s.json\"}}}\n", "JSON Schema"},
		{"a dangling reference", "    input_schema: {type: object, properties: {a: {$ref: \"#/$defs/none\"}}}\n", "JSON Schema"},
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
