package config

import (
	"slices"

	"go.yaml.in/yaml/v3"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/yamlx"
)

// Advisories says what the station does with an installed (or about to be
// installed) module version that a security advisory of its hub affects.
type Advisories struct {
	// Block is the severity level at or above which such a version is
	// refused at install, upgrade and team sync, and does not run: one of
	// AdvisoryBlockLevels. "none" blocks nothing (every advisory is a
	// warning). Default DefaultAdvisoryBlock.
	Block string
}

// DefaultAdvisoryBlock is advisories.block when the file does not set it.
const DefaultAdvisoryBlock = hub.SeverityCritical

// AdvisoryBlockNone is the advisories.block that blocks nothing.
const AdvisoryBlockNone = "none"

// AdvisoryBlockLevels are the values advisories.block takes, lowest first.
func AdvisoryBlockLevels() []string {
	return append(hub.SeverityLevels(), AdvisoryBlockNone)
}

// Blocks reports whether an advisory of severity level (hub.SeverityLow
// to hub.SeverityCritical) blocks under a. A level that is none of them
// (an advisory whose hub gave it no level this station knows) never
// blocks: it warns.
func (a Advisories) Blocks(level string) bool {
	block := hub.SeverityRank(a.Block)
	return block > 0 && hub.SeverityRank(level) >= block
}

func (d *decoder) advisories(n *yaml.Node, a *Advisories) {
	d.mapping(n, "advisories", []field{
		{"block", func(v *yaml.Node) {
			const path = "advisories.block"
			s, ok := d.str(v, path)
			if !ok {
				return
			}
			if levels := AdvisoryBlockLevels(); !slices.Contains(levels, s) {
				d.add(v, path, "", yamlx.Unknown("level", s, levels))
				return
			}
			a.Block = s
		}},
	})
}
