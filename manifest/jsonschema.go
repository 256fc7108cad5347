package manifest

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
)

// CompileSchema parses a command's JSON Schema (Command.InputSchema or
// OutputSchema) and prepares it for validation. References must resolve
// inside the schema: nothing is ever loaded from elsewhere. Unknown
// keywords are kept and ignored, as JSON Schema says.
func CompileSchema(data []byte) (*jsonschema.Resolved, error) {
	var s jsonschema.Schema
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("not a JSON Schema: %v", err)
	}
	r, err := s.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: true})
	if err != nil {
		return nil, fmt.Errorf("not a usable JSON Schema: %v", err)
	}
	return r, nil
}
