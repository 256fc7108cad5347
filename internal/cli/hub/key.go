package hub

import (
	"github.com/spf13/cobra"

	"github.com/station-dev/station/internal/cli/cmdutil"
)

// NewCmdKey returns `station hub key`.
func NewCmdKey(f *cmdutil.Factory) *cobra.Command {
	c := &cobra.Command{
		Use:   "key",
		Short: "Manage the publisher key modules are signed with",
		Long: `Key manages your publisher key: the Ed25519 key 'station module publish'
signs with. 'create' makes one, saves its private half on this station and
registers its public half with your hub account; 'list' shows the keys the hub
has for your account and which one this station holds.

Stations that install your modules pin the key that signed them: a version
signed by another key asks their operators first. Rotate a key (create
--force) when it may have leaked or is lost, not routinely.`,
		Example: `  station hub key create
  station hub key list`,
	}
	c.AddCommand(NewCmdKeyCreate(f, nil), NewCmdKeyList(f, nil))
	return cmdutil.Group(c)
}
