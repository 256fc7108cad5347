package manifest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// schemaKeys maps every field of Manifest (as a Go path) to the manifest key
// that sets it (as a schema property path). A field added to Manifest without
// an entry here, or an entry whose key the schema does not describe, fails
// TestSchemaCoversManifest.
var schemaKeys = map[string]string{
	"ID":                        "id",
	"Version":                   "version",
	"Description":               "description",
	"Wasm":                      "wasm",
	"Commands":                  "commands",
	"Commands.Name":             "commands.name",
	"Commands.Description":      "commands.description",
	"Commands.InputSchema":      "commands.input_schema",
	"Commands.OutputSchema":     "commands.output_schema",
	"Requires":                  "requires",
	"Requires.Network":          "requires.network",
	"Requires.Network.Allow":    "requires.network.allow",
	"Requires.Subprocess":       "requires.subprocess",
	"Requires.Subprocess.Any":   "requires.subprocess", // subprocess: true
	"Requires.Subprocess.Allow": "requires.subprocess.allow",
	"Requires.FilesystemWrites": "requires.filesystem_writes",
	"Requires.FilesystemReads":  "requires.filesystem_reads",
	"Limits.MaxInput":           "limits.max_input",
	"Limits.MaxOutput":          "limits.max_output",
	"Limits.MaxRequest":         "limits.max_request",
	"Requires.Subprocess.Env":   "requires.subprocess.env",
	"Limits":                    "limits",
	"Limits.MemoryBytes":        "limits.memory",
	"Limits.Timeout":            "limits.timeout",
	"Limits.Concurrency":        "limits.concurrency",
	"Limits.Fresh":              "limits.instances",
	"File":                      "", // not a manifest key: where the manifest was read from

	"Requires.LLM":                    "requires.llm",
	"Requires.LLM.Enabled":            "requires.llm", // llm: true
	"Requires.LLM.MaxTokensPerCall":   "requires.llm.max_tokens_per_call",
	"Requires.LLM.BudgetTokensPerDay": "requires.llm.budget_tokens_per_day",
	"Requires.Secrets":                "requires.secrets",
	"Requires.Secrets.Name":           "requires.secrets", // the key
	"Requires.Secrets.Description":    "requires.secrets.description",
	"Requires.Secrets.Hosts":          "requires.secrets.hosts",
	"Requires.Secrets.Query":          "requires.secrets.in",
	"Requires.Secrets.Body":           "requires.secrets.in",
}

func loadSchema(t *testing.T) map[string]any {
	t.Helper()
	var s map[string]any
	if err := json.Unmarshal(Schema(), &s); err != nil {
		t.Fatalf("schema.json: %v", err)
	}
	if got, want := s["$schema"], "https://json-schema.org/draft/2020-12/schema"; got != want {
		t.Errorf("$schema = %v, want %v", got, want)
	}
	return s
}

// goFields lists the field paths of a struct type, recursing into the
// package's own struct types (and the element type of slices of them).
func goFields(t reflect.Type, prefix string) []string {
	var out []string
	for f := range t.Fields() {
		p := prefix + f.Name
		out = append(out, p)
		ft := f.Type
		if ft.Kind() == reflect.Slice {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct && ft.PkgPath() == t.PkgPath() {
			out = append(out, goFields(ft, p+".")...)
		}
	}
	return out
}

// schemaProps lists the property paths the schema describes, with array
// items transparent ("commands.name").
func schemaProps(root, node map[string]any, prefix string) []string {
	node = deref(root, node)
	var out []string
	if props, ok := node["properties"].(map[string]any); ok {
		for name, sub := range props {
			p := prefix + name
			out = append(out, p)
			out = append(out, schemaProps(root, sub.(map[string]any), p+".")...)
		}
	}
	if items, ok := node["items"].(map[string]any); ok {
		out = append(out, schemaProps(root, items, prefix)...)
	}
	// A mapping's values (requires.secrets.NAME) are transparent like items.
	if values, ok := node["additionalProperties"].(map[string]any); ok {
		out = append(out, schemaProps(root, values, prefix)...)
	}
	if alts, ok := node["oneOf"].([]any); ok {
		for _, a := range alts {
			out = append(out, schemaProps(root, a.(map[string]any), prefix)...)
		}
	}
	return out
}

func deref(root, node map[string]any) map[string]any {
	for {
		ref, ok := node["$ref"].(string)
		if !ok {
			return node
		}
		name, ok := strings.CutPrefix(ref, "#/$defs/")
		if !ok {
			panic("unsupported $ref " + ref)
		}
		node = root["$defs"].(map[string]any)[name].(map[string]any)
	}
}

func TestSchemaCoversManifest(t *testing.T) {
	s := loadSchema(t)
	props := schemaProps(s, s, "")
	fields := goFields(reflect.TypeFor[Manifest](), "")
	mapped := map[string]bool{}
	for _, f := range fields {
		key, ok := schemaKeys[f]
		if !ok {
			t.Errorf("Manifest field %s has no entry in schemaKeys: add it there and to schema.json", f)
			continue
		}
		if key == "" {
			continue
		}
		mapped[key] = true
		if !slices.Contains(props, key) {
			t.Errorf("Manifest field %s (key %q) is not described in schema.json", f, key)
		}
	}
	for _, p := range props {
		if !mapped[p] {
			t.Errorf("schema.json describes %q, which sets no Manifest field", p)
		}
	}
	for f := range schemaKeys {
		if !slices.Contains(fields, f) {
			t.Errorf("schemaKeys names %s, which is not a Manifest field", f)
		}
	}
}

// TestSchemaAcceptsExamples checks that every valid example manifest fits
// the structure the schema describes, and that structurally wrong ones do
// not.
func TestSchemaAcceptsExamples(t *testing.T) {
	s := loadSchema(t)
	files, err := filepath.Glob("testdata/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	for _, file := range files {
		if _, err := Load2(t, file); err != nil {
			t.Errorf("%s does not parse: %v", file, err)
			continue
		}
		v := yamlValue(t, file)
		if errs := checkSchema(s, s, v, ""); len(errs) > 0 {
			t.Errorf("%s does not fit schema.json:\n%s", file, strings.Join(errs, "\n"))
		}
	}
	for _, name := range []string{"unknown-field", "wrong-types", "missing-required", "bad-limits", "bad-identity"} {
		v := yamlValue(t, filepath.Join("testdata", "bad", name+".yaml"))
		if errs := checkSchema(s, s, v, ""); len(errs) == 0 {
			t.Errorf("bad/%s.yaml fits schema.json; want schema errors", name)
		}
	}
}

func yamlValue(t *testing.T, file string) any {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return v
}

// checkSchema is a light JSON Schema checker: enough of draft 2020-12 (type,
// properties, additionalProperties: false, required, items, oneOf, enum,
// pattern, min/max length, items and value bounds, $ref into $defs) to keep
// schema.json honest without a validator dependency.
func checkSchema(root, node map[string]any, v any, at string) []string {
	node = deref(root, node)
	var errs []string
	fail := func(format string, args ...any) {
		errs = append(errs, fmt.Sprintf("%s: %s", or(at, "(root)"), fmt.Sprintf(format, args...)))
	}
	if alts, ok := node["oneOf"].([]any); ok {
		n := 0
		for _, a := range alts {
			if len(checkSchema(root, a.(map[string]any), v, at)) == 0 {
				n++
			}
		}
		if n != 1 {
			fail("matches %d of oneOf, want 1", n)
		}
	}
	if typ, ok := node["type"]; ok {
		var types []string
		switch typ := typ.(type) {
		case string:
			types = []string{typ}
		case []any:
			for _, t := range typ {
				types = append(types, t.(string))
			}
		}
		if !slices.Contains(types, jsonType(v)) {
			fail("is %s, want %v", jsonType(v), types)
			return errs
		}
	}
	if enum, ok := node["enum"].([]any); ok && !slices.Contains(enum, v) {
		fail("%v is not one of %v", v, enum)
	}
	switch v := v.(type) {
	case map[string]any:
		props, _ := node["properties"].(map[string]any)
		if node["additionalProperties"] == false {
			for k := range v {
				if _, ok := props[k]; !ok {
					fail("unknown property %q", k)
				}
			}
		}
		if req, ok := node["required"].([]any); ok {
			for _, r := range req {
				if _, ok := v[r.(string)]; !ok {
					fail("missing required property %q", r)
				}
			}
		}
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if sub, ok := props[k].(map[string]any); ok {
				errs = append(errs, checkSchema(root, sub, v[k], join(at, k))...)
			}
		}
	case []any:
		if n, ok := node["minItems"].(float64); ok && float64(len(v)) < n {
			fail("has %d items, want at least %v", len(v), n)
		}
		if n, ok := node["maxItems"].(float64); ok && float64(len(v)) > n {
			fail("has %d items, want at most %v", len(v), n)
		}
		if items, ok := node["items"].(map[string]any); ok {
			for i, e := range v {
				errs = append(errs, checkSchema(root, items, e, fmt.Sprintf("%s[%d]", at, i))...)
			}
		}
	case string:
		if p, ok := node["pattern"].(string); ok && !regexp.MustCompile(p).MatchString(v) {
			fail("%q does not match %s", v, p)
		}
		if n, ok := node["minLength"].(float64); ok && float64(len([]rune(v))) < n {
			fail("%q is shorter than %v", v, n)
		}
		if n, ok := node["maxLength"].(float64); ok && float64(len([]rune(v))) > n {
			fail("%q is longer than %v", v, n)
		}
	case int:
		if n, ok := node["minimum"].(float64); ok && float64(v) < n {
			fail("%d is less than %v", v, n)
		}
		if n, ok := node["maximum"].(float64); ok && float64(v) > n {
			fail("%d is more than %v", v, n)
		}
	}
	return errs
}

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case int, int64, uint64:
		return "integer"
	case float64:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + "." + b
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// TestSchemaPatternsAgree checks the schema's patterns against the parser's
// own checks on the table-test values, so that an editor and the station
// agree on what is valid.
func TestSchemaPatternsAgree(t *testing.T) {
	s := loadSchema(t)
	props := s["properties"].(map[string]any)
	pattern := func(node map[string]any) *regexp.Regexp {
		return regexp.MustCompile(deref(s, node)["pattern"].(string))
	}
	idRE := pattern(props["id"].(map[string]any))
	versionRE := pattern(props["version"].(map[string]any))
	nameRE := pattern(s["$defs"].(map[string]any)["command"].(map[string]any)["properties"].(map[string]any)["name"].(map[string]any))
	for _, id := range []string{"dave/stripe-invoicing", "a/b", "Dave/x", "-a/b", "a--b/c", "a/b-", "a", "a/b/c"} {
		if got, want := idRE.MatchString(id), CheckID(id) == ""; got != want {
			t.Errorf("id %q: schema accepts %v, parser accepts %v", id, got, want)
		}
	}
	for _, v := range []string{"1.4.0", "1.0.0-rc.1+b.2", "01.0.0", "1.0", "v1.0.0", "1.0.0-01", "1.0.0-x-y-z.--"} {
		if got, want := versionRE.MatchString(v), CheckVersion(v) == ""; got != want {
			t.Errorf("version %q: schema accepts %v, parser accepts %v", v, got, want)
		}
	}
	for _, n := range []string{"run", "create-invoice", "Run", "1x", "a_b"} {
		if got, want := nameRE.MatchString(n), checkCommandName(n) == ""; got != want {
			t.Errorf("command %q: schema accepts %v, parser accepts %v", n, got, want)
		}
	}
}
