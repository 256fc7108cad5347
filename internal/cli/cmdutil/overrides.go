package cmdutil

import (
	"github.com/spf13/cobra"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/hubsync"
)

// Overrides are the operator's explicit overrides, for one command, of
// what an advisory or a yank would refuse: --allow-advisory ID (install,
// upgrade, team sync and join: a version at or above advisories.block;
// team push: any affected version) and --allow-yanked (team push). Each
// override that is used is recorded in the audit log.
type Overrides struct {
	Advisories []string
	Yanked     bool
}

// AddAdvisoryFlag adds --allow-advisory to c.
func AddAdvisoryFlag(c *cobra.Command, o *Overrides) {
	c.Flags().StringArrayVar(&o.Advisories, "allow-advisory", nil,
		"go ahead although advisory `ID` affects the version (repeatable; the override is recorded in the audit log)")
}

// AddYankedFlag adds --allow-yanked to c.
func AddYankedFlag(c *cobra.Command, o *Overrides) {
	c.Flags().BoolVar(&o.Yanked, "allow-yanked", false, "go ahead although the version is yanked on the hub")
}

// Apply checks the overrides and gives them to s.
func (o *Overrides) Apply(s *hubsync.Session) error {
	for _, id := range o.Advisories {
		if !hub.ValidAdvisoryID(id) {
			return Usagef("--allow-advisory %q: not an advisory id (%s-YEAR-NUMBER, as station advisories and the refusal show it)", TermText(id), hub.AdvisoryPrefix)
		}
	}
	s.AllowAdvisories, s.AllowYanked = o.Advisories, o.Yanked
	return nil
}
