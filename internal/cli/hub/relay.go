package hub

import (
	"fmt"
	"io"
	"strings"

	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/hubsync"
)

// RelayPrinter returns the hubsync.FollowOptions.OnEvent of `station
// serve`: one line on w for each thing the relay follower did that the
// operator should see (following a hub, a team change applied, a change
// that waits for approval, the relay stopped). Everything in the line but
// its wording came from the hub or its lockfile and goes through
// cmdutil.TermText.
func RelayPrinter(w io.Writer) func(hubsync.RelayEvent) {
	return func(e hubsync.RelayEvent) { fmt.Fprintln(w, relayLine(e)) }
}

// relayLine is the line RelayPrinter prints for e.
func relayLine(e hubsync.RelayEvent) string {
	t := cmdutil.TermText
	switch e.Kind {
	case hubsync.RelayFollowing:
		return fmt.Sprintf("following the hub relay at %s as %s", t(e.Hub), t(e.Account))
	case hubsync.RelayApplied:
		var parts []string
		if len(e.Installed) > 0 {
			parts = append(parts, "installed "+strings.Join(cmdutil.TermList(e.Installed), ", "))
		}
		for _, f := range e.Failed {
			parts = append(parts, "FAILED "+t(f))
		}
		what := "nothing to change"
		if len(parts) > 0 {
			what = strings.Join(parts, "; ")
		}
		return fmt.Sprintf("team %s: applied lockfile revision %d from the hub (%s)", t(e.Team), e.Revision, what)
	case hubsync.RelayPending:
		from := "not installed"
		if e.FromVersion != "" {
			from = t(e.FromVersion) + " keeps running"
		}
		return fmt.Sprintf("team %s: %s@%s waits for your approval (revision %d; %s): it %s; review: station team status %s, approve: station team sync %s",
			t(e.Team), t(e.Module), t(e.Version), e.Revision, from, strings.Join(cmdutil.TermList(e.Asks), "; "), t(e.Team), t(e.Team))
	case hubsync.RelayAdvisories:
		now := "no installed version is affected"
		if len(e.Affected) > 0 {
			now = "now " + strings.Join(cmdutil.TermList(e.Affected), "; ") + "; station advisories lists them"
		}
		return fmt.Sprintf("advisories from %s: %d advisories and %d yanks applied; %s", t(e.Hub), e.Advisories, e.Yanks, now)
	case hubsync.RelayStopped:
		if e.Hub == "" {
			return "not following the hub relay: " + t(e.Reason)
		}
		return fmt.Sprintf("stopped following the hub relay at %s: %s", t(e.Hub), t(e.Reason))
	}
	return "hub relay: " + t(string(e.Kind))
}
