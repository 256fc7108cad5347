package sdk

import (
	"bytes"
	"maps"
	"slices"
)

// Describe returns the JSON document the module's station_describe export
// hands to `station module build` (docs/abi.md): for each registered
// command, the JSON Schemas (draft 2020-12) of its input and of its result,
// derived from the In and Out of its Handle call.
//
//	{"commands": {"greet": {
//	  "input_schema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"], "additionalProperties": false},
//	  "output_schema": {"type": "object", "properties": {"greeting": {"type": "string"}}, "required": ["greeting"], "additionalProperties": false}}}}
//
// A schema describes what the SDK decodes and encodes, with the
// conventions of github.com/google/jsonschema-go's jsonschema.For: a field
// is named by its json tag and required unless tagged omitempty or
// omitzero, its jsonschema tag is its description, a struct allows no
// other fields (the SDK decodes inputs strictly), a pointer, a slice and a
// map may also be null. An input schema is always an object schema, so a
// command whose In is not a struct or a map (or a pointer to one) has
// none; a result that may be any JSON value (Out is an interface or
// json.RawMessage) has no output schema. A schema that cannot be derived
// (a field of a channel type) is left out, and the command's "notes" say
// why. A command registered with HandleRaw is {"raw": true}: its bytes are
// its own.
//
// Build a module's commands natively and call Describe in a test to see
// what the station will be told, without building for wasip1.
func Describe() []byte {
	var commands schemaObject
	if cur := registry.commands.Load(); cur != nil {
		for _, name := range slices.Sorted(maps.Keys(*cur)) {
			commands = append(commands, member{name, describe((*cur)[name])})
		}
	}
	var b bytes.Buffer
	schemaObject{{"commands", commands}}.appendJSON(&b)
	return b.Bytes()
}

// describe returns the description of one command.
func describe(c *handler) schemaObject {
	if c.raw {
		return schemaObject{{"raw", true}}
	}
	var d schemaObject
	var notes []string
	if s, err := inputSchema(c.in); err != nil {
		notes = append(notes, "input: "+err.Error())
	} else {
		d = append(d, member{"input_schema", s})
	}
	switch s, err := outputSchema(c.out); {
	case err != nil:
		notes = append(notes, "output: "+err.Error())
	case s == nil:
		notes = append(notes, "output: "+c.out.String()+" may be any JSON value: no output schema")
	default:
		d = append(d, member{"output_schema", s})
	}
	if len(notes) > 0 {
		d = append(d, member{"notes", notes})
	}
	return d
}
