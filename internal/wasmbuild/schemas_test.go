package wasmbuild

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/station-dev/station/manifest"
)

const (
	greetIn  = `{"type":"object","properties":{"name":{"type":"string","description":"who: \"you\" # not a comment"}},"required":["name"],"additionalProperties":false}`
	greetOut = `{"type":"object","properties":{"greeting":{"type":"string"}},"required":["greeting"],"additionalProperties":false}`
	otherIn  = `{"type":"object","properties":{"true":{"type":["null","array"],"items":{"type":"integer","minimum":-128,"maximum":127}},"<<":{}},"additionalProperties":false}`
)

// describes returns a description of greet and wave with these schemas.
func describes(greetInput, greetOutput string) *Description {
	raw := func(s string) json.RawMessage {
		if s == "" {
			return nil
		}
		return json.RawMessage(s)
	}
	return &Description{Commands: map[string]CommandDescription{
		"greet": {InputSchema: raw(greetInput), OutputSchema: raw(greetOutput)},
		"wave":  {InputSchema: raw(otherIn)},
	}}
}

const bare = `# The smallest module.
id: station/hello
version: "1.0.0"
wasm: module.wasm

commands:
  # Say hello.
  - name: greet
    description: |
      Greets someone.
      # this line is the description's, not a comment

  # Wave.
  - name: wave
requires:
  network:
    allow: []
`

const withSchemas = `# The smallest module.
id: station/hello
version: "1.0.0"
wasm: module.wasm

commands:
  # Say hello.
  - name: greet
    description: |
      Greets someone.
      # this line is the description's, not a comment
    input_schema: ` + DerivedComment + `
      type: object
      properties:
        name: {type: string, description: 'who: "you" # not a comment'}
      required: [name]
      additionalProperties: false
    output_schema: ` + DerivedComment + `
      type: object
      properties:
        greeting: {type: string}
      required: [greeting]
      additionalProperties: false

  # Wave.
  - name: wave
    input_schema: ` + DerivedComment + `
      type: object
      properties:
        "true":
          type: ["null", array]
          items: {type: integer, minimum: -128, maximum: 127}
        "<<": {}
      additionalProperties: false
requires:
  network:
    allow: []
`

func TestAddSchemas(t *testing.T) {
	e := addSchemas(t, bare, describes(greetIn, greetOut))
	if got := string(e.Manifest); got != withSchemas {
		t.Fatalf("manifest:\n%s\nwant:\n%s", got, withSchemas)
	}
	if !e.Changed || strings.Join(e.Written, "; ") != "greet: input, output; wave: input" || e.Notes != nil {
		t.Errorf("edit: %+v", e)
	}
	checkSchemas(t, e.Manifest, map[string][2]string{"greet": {greetIn, greetOut}, "wave": {otherIn, ""}})

	// Again: nothing to do.
	again := addSchemas(t, string(e.Manifest), describes(greetIn, greetOut))
	if again.Changed || string(again.Manifest) != withSchemas || again.Written != nil || again.Notes != nil {
		t.Errorf("a second time: %+v", again)
	}
}

// TestAddSchemasLayouts: where a command ends, whatever the file looks
// like.
func TestAddSchemasLayouts(t *testing.T) {
	d := &Description{Commands: map[string]CommandDescription{"greet": {OutputSchema: json.RawMessage(`{"type":"integer"}`)}}}
	out := "output_schema: " + DerivedComment + "\n"
	tests := []struct{ name, src, want string }{
		{
			name: "commands last, no newline at the end",
			src:  "id: a/b\nversion: \"1.0.0\"\nwasm: m.wasm\ncommands:\n  - name: greet",
			want: "id: a/b\nversion: \"1.0.0\"\nwasm: m.wasm\ncommands:\n  - name: greet\n    " + out + "      type: integer\n",
		},
		{
			name: "a sequence not indented, comments after it",
			src:  "id: a/b\nversion: \"1.0.0\"\nwasm: m.wasm\ncommands:\n- name: greet\n  description: hi # a comment\n\n\n# about requires\nrequires: {}\n",
			want: "id: a/b\nversion: \"1.0.0\"\nwasm: m.wasm\ncommands:\n- name: greet\n  description: hi # a comment\n  " + out + "    type: integer\n\n\n# about requires\nrequires: {}\n",
		},
		{
			name: "the dash on a line of its own",
			src:  "id: a/b\nversion: \"1.0.0\"\nwasm: m.wasm\ncommands:\n  -\n    name: greet\n  -\n    name: other\n",
			want: "id: a/b\nversion: \"1.0.0\"\nwasm: m.wasm\ncommands:\n  -\n    name: greet\n    " + out + "      type: integer\n  -\n    name: other\n",
		},
		{
			name: "CRLF",
			src:  "id: a/b\r\nversion: \"1.0.0\"\r\nwasm: m.wasm\r\ncommands:\r\n  - name: greet\r\n    description: hi\r\nrequires: {}\r\n",
			want: "id: a/b\r\nversion: \"1.0.0\"\r\nwasm: m.wasm\r\ncommands:\r\n  - name: greet\r\n    description: hi\r\n    output_schema: " + DerivedComment + "\r\n      type: integer\r\nrequires: {}\r\n",
		},
		{
			name: "a block scalar's indented lines and a comment deeper than the keys",
			src:  "id: a/b\nversion: \"1.0.0\"\nwasm: m.wasm\ncommands:\n    - name: greet\n      description: >-\n          folded\n\n          text\n        # a comment inside the command\n    - name: other\n",
			want: "id: a/b\nversion: \"1.0.0\"\nwasm: m.wasm\ncommands:\n    - name: greet\n      description: >-\n          folded\n\n          text\n        # a comment inside the command\n      " + out + "        type: integer\n    - name: other\n",
		},
		{
			name: "the name last and quoted",
			src:  "id: a/b\nversion: \"1.0.0\"\nwasm: m.wasm\ncommands:\n  - description: \"hi\"\n    name: 'greet'\nlimits: {timeout: 5s}\n",
			want: "id: a/b\nversion: \"1.0.0\"\nwasm: m.wasm\ncommands:\n  - description: \"hi\"\n    name: 'greet'\n    " + out + "      type: integer\nlimits: {timeout: 5s}\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := addSchemas(t, tt.src, d)
			if string(e.Manifest) != tt.want {
				t.Errorf("manifest:\n%q\nwant:\n%q", e.Manifest, tt.want)
			}
			checkSchemas(t, e.Manifest, map[string][2]string{"greet": {"", `{"type":"integer"}`}})
		})
	}
}

// TestAddSchemasAuthored: a schema without DerivedComment is the author's:
// never changed, and a note says when it differs from the derived one.
func TestAddSchemasAuthored(t *testing.T) {
	src := strings.Replace(bare, "  - name: wave\n", "  - name: wave\n    input_schema: {type: object}  # mine\n    output_schema: null\n", 1)
	d := describes(greetIn, greetOut)
	c := d.Commands["wave"]
	c.OutputSchema = json.RawMessage(`{"type":"string"}`)
	d.Commands["wave"] = c
	e := addSchemas(t, src, d)
	want := []string{
		`wave: module.yaml's input_schema differs from the one derived from the Go types and was left as written (delete it to have it derived)`,
		`wave: module.yaml's output_schema differs from the one derived from the Go types and was left as written (delete it to have it derived)`,
	}
	if strings.Join(e.Notes, "\n") != strings.Join(want, "\n") || strings.Join(e.Written, "; ") != "greet: input, output" {
		t.Errorf("notes %q, written %q", e.Notes, e.Written)
	}
	if !strings.Contains(string(e.Manifest), "    input_schema: {type: object}  # mine\n    output_schema: null\n") {
		t.Errorf("the authored schemas changed:\n%s", e.Manifest)
	}

	// The same schema, written otherwise, is no difference.
	src = strings.Replace(bare, "  - name: wave\n", "  - name: wave\n    input_schema:\n      additionalProperties: false\n      properties: {\"<<\": {}, \"true\": {items: {type: integer, maximum: 127.0, minimum: -128}, type: [\"null\", array]}}\n      type: object\n", 1)
	e = addSchemas(t, src, describes(greetIn, greetOut))
	if e.Notes != nil || strings.Join(e.Written, "; ") != "greet: input, output" {
		t.Errorf("an equal authored schema: notes %q, written %q", e.Notes, e.Written)
	}
}

// TestAddSchemasRewritesDerived: a schema with DerivedComment follows the
// Go types: updated when they change, removed when they no longer give
// one.
func TestAddSchemasRewritesDerived(t *testing.T) {
	newIn := `{"type":"object","properties":{"name":{"type":"string"},"loud":{"type":"boolean"}},"required":["name"],"additionalProperties":false}`
	e := addSchemas(t, withSchemas, describes(newIn, ""))
	if strings.Join(e.Written, "; ") != "greet: input updated, output removed (no longer derived)" || e.Notes != nil {
		t.Errorf("edit: written %q, notes %q", e.Written, e.Notes)
	}
	checkSchemas(t, e.Manifest, map[string][2]string{"greet": {newIn, ""}, "wave": {otherIn, ""}})
	for _, keep := range []string{"# Say hello.\n", "      # this line is the description's, not a comment\n", "\n  # Wave.\n  - name: wave\n"} {
		if !strings.Contains(string(e.Manifest), keep) {
			t.Errorf("lost %q:\n%s", keep, e.Manifest)
		}
	}
	// And back.
	back := addSchemas(t, string(e.Manifest), describes(greetIn, greetOut))
	if string(back.Manifest) != withSchemas {
		t.Errorf("rewritten back:\n%s\nwant:\n%s", back.Manifest, withSchemas)
	}

	// Raw commands have no schemas: a derived one goes.
	d := describes(greetIn, greetOut)
	d.Commands["wave"] = CommandDescription{Raw: true}
	e = addSchemas(t, withSchemas, d)
	if strings.Join(e.Written, "; ") != "wave: input removed (no longer derived)" {
		t.Errorf("a command now raw: written %q", e.Written)
	}
	checkSchemas(t, e.Manifest, map[string][2]string{"greet": {greetIn, greetOut}, "wave": {"", ""}})
}

func TestAddSchemasNotes(t *testing.T) {
	deep := `{"type":"object","properties":{"a":` + strings.Repeat(`{"type":"array","items":`, 70) + `{}` + strings.Repeat(`}`, 70) + `}}`
	large := `{"type":"object","description":"` + strings.Repeat("x", manifest.MaxSchemaBytes) + `"}`
	d := &Description{Commands: map[string]CommandDescription{
		"greet": {InputSchema: json.RawMessage(`{"type":"string"}`), OutputSchema: json.RawMessage(`{"$ref":"https://evil.example/schema.json"}`), Notes: []string{"output: a note of the module's"}},
		"wave":  {InputSchema: json.RawMessage(deep), OutputSchema: json.RawMessage(large)},
		"bool":  {OutputSchema: json.RawMessage(`true`)},
		"huge":  {OutputSchema: json.RawMessage(`{"type":"integer","maximum":18446744073709551615}`)},
	}}
	for i := range 12 {
		d.Commands[fmt.Sprintf("extra-%02d\x1b[2J", i)] = CommandDescription{}
	}
	src := bare + "" // and two more commands
	src = strings.Replace(src, "requires:", "  - name: bool\n  - name: huge\nrequires:", 1)
	e := addSchemas(t, src, d)
	if e.Changed || string(e.Manifest) != src || e.Written != nil {
		t.Errorf("nothing to write, but: %+v", e)
	}
	notes := strings.Join(e.Notes, "\n")
	for _, want := range []string{
		"greet: output: a note of the module's",
		`greet: the derived input schema is not written: an input schema describes an object: give it "type: object"`,
		"greet: the derived output schema is not written: #: $ref \"https://evil.example/schema.json\": only JSON pointers into the schema itself",
		"wave: the derived input schema is not written: nested deeper than 64 levels",
		"bool: the derived output schema is not written: must be a mapping (a JSON Schema), not a boolean",
		"huge: the derived output schema is not written: maximum: 18446744073709551615 is out of range for an integer",
		"wave: the derived output schema is not written: it is 65570 bytes as JSON; a manifest takes at most 65536",
		`the module registers "extra-00\x1b[2J", `,
		`"extra-09\x1b[2J" and 2 more, which module.yaml does not list`,
	} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
	if strings.Contains(notes, "extra-10") {
		t.Errorf("more commands named than the bound:\n%s", notes)
	}

	// A command the module does not register, one in flow style, and a
	// manifest the schemas would make too large.
	d = describes(greetIn, greetOut)
	delete(d.Commands, "wave")
	e = addSchemas(t, "id: a/b\nversion: \"1.0.0\"\nwasm: m.wasm\ncommands:\n  - {name: greet}\n  - name: wave\n", d)
	want := "greet: its input schema is not written: the command is written in flow style ({...}); write it as a block mapping\n" +
		"greet: its output schema is not written: the command is written in flow style ({...}); write it as a block mapping\n" +
		"wave: the module registers no such command (a call of it would fail)"
	if e.Changed || strings.Join(e.Notes, "\n") != want {
		t.Errorf("notes:\n%s\nwant:\n%s", strings.Join(e.Notes, "\n"), want)
	}
	big := bare + "#" + strings.Repeat("x", manifest.MaxFileSize-len(bare)-200) + "\n"
	e = addSchemas(t, big, describes(greetIn, greetOut))
	if e.Changed || len(e.Notes) != 1 || !strings.Contains(e.Notes[0], "over the 1 MiB a manifest may be: nothing written") || e.Written != nil {
		t.Errorf("too large a manifest: %+v", e.Notes)
	}
}

func TestAddSchemasRefusesABrokenManifest(t *testing.T) {
	if _, err := AddSchemas("module.yaml", []byte("id: [\n"), describes(greetIn, greetOut)); err == nil {
		t.Error("a manifest that does not parse was edited")
	}
}

// addSchemas is AddSchemas on src, which must succeed.
func addSchemas(t *testing.T, src string, d *Description) *SchemaEdit {
	t.Helper()
	e, err := AddSchemas("module.yaml", []byte(src), d)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// checkSchemas checks that the manifest b parses and declares the given
// input and output schemas, as JSON.
func checkSchemas(t *testing.T, b []byte, want map[string][2]string) {
	t.Helper()
	m, err := manifest.Parse("module.yaml", b)
	if err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	for name, w := range want {
		c, ok := m.Command(name)
		if !ok {
			t.Fatalf("no command %s", name)
		}
		if !sameJSON(c.InputSchema, w[0]) || !sameJSON(c.OutputSchema, w[1]) {
			t.Errorf("%s: schemas %s and %s, want %s and %s", name, c.InputSchema, c.OutputSchema, w[0], w[1])
		}
	}
}
