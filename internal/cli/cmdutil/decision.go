package cmdutil

import (
	"fmt"

	"github.com/station-dev/station/internal/store"
)

// Decision is an audit record's decision on a line of its own: "allow" or
// "DENY " (the same width), and for a summary row how many decisions it
// stands for, "DENY  (folded 12)". station audit's table has a FOLDED
// column instead; the demo and workflow show print their records with it.
func Decision(r store.AuditRecord) string {
	d := "allow"
	if !r.Allowed {
		d = "DENY "
	}
	if r.Folded > 0 {
		d += fmt.Sprintf(" (folded %d)", r.Folded)
	}
	return d
}
