package manifest

import "github.com/station-dev/station/internal/yamlx"

// Error is one problem found in a manifest. Parse joins every Error it finds
// with errors.Join; use errors.As to get the first, or the
// interface{ Unwrap() []error } of the joined error to get them all.
type Error struct {
	File   string // the filename given to Parse
	Line   int    // 1-based; 0 when the problem has no position
	Column int    // 1-based; 0 when unknown
	Field  string // the field path, e.g. "requires.network.allow" or "commands[1].name"
	Entry  string // the offending list entry or value, when there is one
	Msg    string // what is wrong, lower case, no trailing period
}

// Error renders e as one line:
//
//	module.yaml:12:5: requires.network.allow: entry "*": a wildcard must be followed by a domain
func (e *Error) Error() string {
	return (&yamlx.Problem{File: e.File, Line: e.Line, Column: e.Column, Field: e.Field, Entry: e.Entry, Msg: e.Msg}).Error()
}

// quote renders s for an error message: Go-quoted (so control bytes and
// invalid UTF-8 are escaped) and bounded.
func quote(s string) string { return yamlx.Quote(s) }
