package workflow

import "github.com/station-dev/station/internal/yamlx"

// Error is one problem found in a workflow file. Parse joins every Error it
// finds with errors.Join.
type Error struct {
	File   string // the filename given to Parse
	Line   int    // 1-based; 0 when the problem has no position
	Column int    // 1-based; 0 when unknown
	Field  string // the field path, e.g. "steps[1].with.customer"
	Msg    string // what is wrong, lower case, no trailing period
}

// Error renders e as one line:
//
//	invoice.yaml:12:7: steps[1].needs: unknown step "charge"
func (e *Error) Error() string {
	return (&yamlx.Problem{File: e.File, Line: e.Line, Column: e.Column, Field: e.Field, Msg: e.Msg}).Error()
}

// quote renders s for an error message: Go-quoted and bounded.
func quote(s string) string { return yamlx.Quote(s) }
