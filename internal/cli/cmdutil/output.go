package cmdutil

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

// A Texter is a command's result that prints itself for a person. The same
// value, encoded by WriteJSON, is what --json prints: one result type per
// command, two renderings.
type Texter interface {
	Text(w io.Writer) error
}

// Print writes r for a person or, with asJSON, as JSON.
func Print(w io.Writer, asJSON bool, r Texter) error {
	if asJSON {
		return WriteJSON(w, r)
	}
	return r.Text(w)
}

// AddJSONFlag adds --json to c.
func AddJSONFlag(c *cobra.Command, asJSON *bool) {
	c.Flags().BoolVar(asJSON, "json", false, "print the result as JSON (snake_case keys), for scripts")
}

// WriteJSON prints v as indented JSON, through JSONText: exact JSON, with
// nothing in its strings a terminal would act on. In a test binary it also
// checks that every key v's type can produce is snake_case, so that one
// naming convention holds for every command a test runs with --json.
func WriteJSON(w io.Writer, v any) error {
	if testing.Testing() {
		if err := CheckJSONNames(v); err != nil {
			return err
		}
	}
	return writeJSON(w, v, "  ")
}

// WriteJSONLine prints v as JSON on one line, through JSONText, with the
// same check as WriteJSON: for a stream of values (a workflow's events),
// one a line.
func WriteJSONLine(w io.Writer, v any) error {
	if testing.Testing() {
		if err := CheckJSONNames(v); err != nil {
			return err
		}
	}
	return writeJSON(w, v, "")
}

// writeJSON encodes v (indented by indent, or on one line) without
// encoding/json's HTML escapes: a module's "a -> b" stays "a -> b", not
// "a -\u003e b", because the value is printed, not put in a web page.
// JSONText then escapes what a terminal would act on.
func writeJSON(w io.Writer, v any, indent string) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", indent)
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(JSONText(buf.Bytes())) // Encode ends it with a newline
	return err
}

var (
	snakeCase = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)
	checked   sync.Map // reflect.Type → error (nil when its names are fine)
)

// CheckJSONNames returns an error naming each field of v's type (and of the
// types inside it) whose JSON key is not snake_case: a field without a json
// tag is encoded under its Go name, which is how PascalCase keys leaked into
// --json output. Map keys and raw JSON are data, not names, and are not
// checked.
func CheckJSONNames(v any) error {
	if v == nil {
		return nil
	}
	t := reflect.TypeOf(v)
	if e, ok := checked.Load(t); ok {
		err, _ := e.(error)
		return err
	}
	var bad []string
	walkJSON(t, t.String(), map[reflect.Type]bool{}, &bad)
	var err error
	if len(bad) > 0 {
		err = fmt.Errorf("JSON keys that are not snake_case: %s", strings.Join(bad, ", "))
	}
	checked.Store(t, err)
	return err
}

var marshaler = reflect.TypeFor[json.Marshaler]()

func walkJSON(t reflect.Type, path string, seen map[reflect.Type]bool, bad *[]string) {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || seen[t] || t.Implements(marshaler) || reflect.PointerTo(t).Implements(marshaler) {
		return
	}
	seen[t] = true
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			walkJSON(f.Type, path, seen, bad)
			continue
		}
		if name == "" {
			name = f.Name
		}
		if !snakeCase.MatchString(name) {
			*bad = append(*bad, path+"."+name)
		}
		walkJSON(f.Type, path+"."+name, seen, bad)
	}
}

// NewTable returns a tabwriter for a table of results; Flush it.
func NewTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
}
