package cmdutil

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
)

// PrintResult prints a module's (or a workflow's) JSON result: indented, or
// compacted with --compact (which also drops whitespace such as a carriage
// return between tokens), through JSONText, so that it is the same JSON
// value and nothing in it acts on the terminal. A result that is not JSON
// (the station checks that it is) is printed as text, through TermText.
func PrintResult(w io.Writer, out []byte, compact bool) {
	var buf bytes.Buffer
	var err error
	if compact {
		err = json.Compact(&buf, out)
	} else {
		err = json.Indent(&buf, bytes.TrimSpace(out), "", "  ")
	}
	if err != nil {
		fmt.Fprintln(w, TermText(string(out)))
		return
	}
	w.Write(JSONText(buf.Bytes()))
	fmt.Fprintln(w)
}

// ReadInput resolves --input and checks that it is JSON.
func ReadInput(stdin io.Reader, spec string) ([]byte, error) {
	var in []byte
	switch {
	case spec == "":
		in = []byte("{}")
	case spec == "-":
		b, err := io.ReadAll(io.LimitReader(stdin, 64<<20))
		if err != nil {
			return nil, fmt.Errorf("read input from stdin: %w", err)
		}
		in = b
	case strings.HasPrefix(spec, "@"):
		b, err := os.ReadFile(spec[1:])
		if err != nil {
			return nil, fmt.Errorf("read input: %w", err)
		}
		in = b
	default:
		in = []byte(spec)
	}
	in = bytes.TrimSpace(in)
	if !json.Valid(in) {
		return nil, UsageError{fmt.Errorf("--input is not valid JSON (use '{\"key\":\"value\"}', @file.json or - for stdin)")}
	}
	return in, nil
}

// ModuleDocument is a JSON document a module returned, put into a
// command's --json output as it is: valid JSON goes in as a value, anything
// else as a string (the station checks results are JSON, so that is a
// defect of the module, shown rather than hidden).
type ModuleDocument []byte

// MarshalJSON implements json.Marshaler.
func (d ModuleDocument) MarshalJSON() ([]byte, error) {
	b := bytes.TrimSpace(d)
	if json.Valid(b) {
		return b, nil
	}
	return json.Marshal(string(d))
}
