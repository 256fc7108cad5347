package cmdutil

import (
	"cmp"
	"fmt"
	"io"
	"strings"

	"github.com/station-dev/station/internal/hubsync"
	"github.com/station-dev/station/internal/station"
	"github.com/station-dev/station/internal/units"
)

const (
	// AskOrUsage: --yes approves, a terminal asks, otherwise the command
	// fails asking for --yes (as a local install does).
	AskOrUsage ApprovalMode = iota
	// AskOrDecline: --yes approves, a terminal asks, otherwise the change
	// is declined (exit 5) with the difference shown.
	AskOrDecline
)

// PrintPlan shows what an install asks for. Everything in it but the
// digest comes from the module (its manifest), so all of it goes through
// TermText — the description too, on one line: in the approval prompt a
// line of the description must not pass for a line of the permissions.
func PrintPlan(w io.Writer, p station.Plan) {
	m := p.Manifest
	fmt.Fprintf(w, "%s %s", TermText(m.ID), TermText(m.Version))
	if m.Description != "" {
		fmt.Fprintf(w, " — %s", TermText(m.Description))
	}
	fmt.Fprintln(w)
	if p.Replaces != nil {
		fmt.Fprintf(w, "  replaces  %s (%s)\n", TermText(p.Replaces.Version), TermText(p.Replaces.Digest))
	}
	fmt.Fprintf(w, "  digest    %s (%s)\n", p.Digest, units.Bytes(int64(p.Size)))
	names := make([]string, len(m.Commands))
	for i, c := range m.Commands {
		names[i] = TermText(c.Name)
	}
	fmt.Fprintf(w, "  commands  %s\n", strings.Join(names, ", "))
	fmt.Fprintln(w, "  This module:")
	PrintPermissions(w, "    - ", "      ", p.Permissions.Describe(p.Children))
}

// PrintPermissions prints the lines of Permissions.Describe: each after
// bullet, and a line that starts with two spaces (a note on the one above)
// after note. The lines name hosts, paths and programs from the manifest.
func PrintPermissions(w io.Writer, bullet, note string, lines []string) {
	for _, l := range lines {
		if n, ok := strings.CutPrefix(l, "  "); ok {
			fmt.Fprintf(w, "%s%s\n", note, TermText(n))
			continue
		}
		fmt.Fprintf(w, "%s%s\n", bullet, TermText(l))
	}
}

// ApprovalMode says what happens when a hub install needs approval.
type ApprovalMode int

// HubApprover returns the approver of hub installs for a command: it
// shows the plan (with what it asks beyond the approval), then approves
// with --yes, asks on a terminal, or declines.
func (f *Factory) HubApprover(yes bool, mode ApprovalMode, verb string) hubsync.Approver {
	return func(p hubsync.Plan) (bool, error) {
		PrintHubPlan(f.IO.Err, p)
		ref := TermText(p.Version.Module + "@" + p.Version.Version)
		if !yes && !f.IO.IsTerminal && mode == AskOrDecline {
			return false, fmt.Errorf("%s %s: it %s; review it and rerun with --yes (the installed version keeps running): %w", verb, ref, strings.Join(TermList(p.Differences()), "; "), station.ErrNotApproved)
		}
		return Ask(yes, f.IO.IsTerminal, f.Confirm, fmt.Sprintf("%s %s?", capitalize(verb), ref),
			fmt.Sprintf("%s %s needs approval: review the permissions above and rerun with --yes", verb, ref))
	}
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// PrintHubPlan shows a hub install: where it comes from, who signed it,
// what the module may do and, for an upgrade or a team change, what it asks
// beyond what was approved. What the hub and the manifest supplied goes
// through TermText.
func PrintHubPlan(w io.Writer, p hubsync.Plan) {
	PrintPlan(w, p.Plan)
	from := TermText(p.Hub)
	if p.Team != "" {
		from += ", for team " + TermText(p.Team)
	}
	fmt.Fprintf(w, "  from      %s\n", from)
	owner, _, _ := strings.Cut(p.Version.Module, "/")
	fmt.Fprintf(w, "  signed by key %s of %s (signature and digests verified)\n", p.Key.ID, TermText(owner))
	if p.Version.Yanked {
		fmt.Fprintf(w, "  YANKED by its publisher: %s\n", TermText(p.Version.YankReason))
	}
	notes := TermList(p.AdvisoryNotes())
	for _, m := range p.Advisories {
		if m.Allowed != nil {
			fmt.Fprintf(w, "  advisory  %s (%s): %s; allowed for this version by you: %s\n", TermText(m.ID), TermText(cmp.Or(m.Severity, "unknown severity")), TermText(m.Summary), TermText(m.Allowed.Reason))
		}
	}
	for _, n := range notes {
		fmt.Fprintf(w, "  ! %s\n", n)
	}
	diff := TermList(p.Differences())
	diff = diff[:len(diff)-len(notes)] // the advisories are shown above
	switch {
	case p.Approved != nil && len(diff) > 0:
		fmt.Fprintf(w, "  Compared with what you approved for %s %s, this version:\n", TermText(p.Plan.Replaces.ID), TermText(p.Plan.Replaces.Version))
		for _, d := range diff {
			fmt.Fprintf(w, "    + %s\n", d)
		}
	case p.Approved != nil:
		fmt.Fprintln(w, "  It asks for nothing beyond what you approved for the installed version.")
	case p.KeyChange:
		for _, d := range diff[len(p.Escalations):] {
			fmt.Fprintf(w, "    + %s\n", d)
		}
	}
}
