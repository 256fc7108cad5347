package hub

import (
	"github.com/spf13/cobra"

	"github.com/station-dev/station/internal/cli/cmdutil"
)

// NewCmdUserCreate returns `station hub user create`.
func NewCmdUserCreate(f *cmdutil.Factory, runF func(*TokenOptions) error) *cobra.Command {
	opts := &TokenOptions{IO: &f.IO, Issue: issue, Create: true}
	c := &cobra.Command{
		Use:   "create NAME",
		Short: "Create an account and print its first token once",
		Long: `Create adds an account to the hub's database directly (the hub may be
running) and prints its API token on stdout. The hub keeps only a hash of the
token: this is the only time it is shown. The account name is also the
namespace it publishes into (NAME/*). With --admin the account is one of the
hub's admins: it reads and triages every security report, triages those
against the station itself, and records station releases.

With --json the output is {"account", "created", "admin", "id", "label",
"created_at", "secret"}: the secret is the token, shown this once there too.`,
		Example: `  station hub user create dave
  station hub user create dave --data /srv/station-hub > dave.token
  station hub user create root --admin`,
		Args: cmdutil.ExactArgs(1, "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Name = args[0]
			if runF != nil {
				return runF(opts)
			}
			return tokenRun(cmd.Context(), opts)
		},
	}
	tokenFlags(c, opts)
	c.Flags().BoolVar(&opts.Admin, "admin", false, "make the account one of the hub's admins")
	return c
}
