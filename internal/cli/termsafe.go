package cli

import "github.com/station-dev/station/internal/sandbox"

// termText makes a string that a hub, a relay or a module supplied safe to
// print on a terminal: control bytes (escape sequences, carriage returns,
// backspaces), invalid UTF-8, line separators and bidi controls are shown
// escaped, never interpreted, and the result is bounded. Every such string
// goes through it before it reaches the terminal, in every command.
func termText(s string) string { return sandbox.SanitizeLimit(s, maxTermText) }

// maxTermText bounds one printed field from a hub or a module.
const maxTermText = 4096
