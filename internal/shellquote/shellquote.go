// Package shellquote writes a word for a POSIX shell: the commands the
// station prints for its user to copy (the demo's tour, what to run after
// station module new).
package shellquote

import (
	"regexp"
	"strings"
)

var safe = regexp.MustCompile(`^[A-Za-z0-9_@%+=:,./-]+$`)

// Quote returns s as one shell word: as it is when it needs no quoting,
// else in single quotes.
func Quote(s string) string {
	if safe.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
