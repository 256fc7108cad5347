package hub

import (
	"github.com/spf13/cobra"

	"github.com/station-dev/station/internal/cli/cmdutil"
)

// NewCmdUserToken returns `station hub user token`.
func NewCmdUserToken(f *cmdutil.Factory, runF func(*TokenOptions) error) *cobra.Command {
	opts := &TokenOptions{IO: &f.IO, Issue: issue}
	c := &cobra.Command{
		Use:   "token NAME",
		Short: "Issue another token for an account and print it once",
		Long: `Token issues another API token for the existing account NAME (for a CI
job, or a second station) and prints it on stdout, once: the hub keeps only
its hash. --label says what it is for.

With --json the output is {"account", "created", "admin", "id", "label",
"created_at", "secret"} (created and admin are false: nothing but the token
was made): the secret is the token, shown this once there too.`,
		Example: `  station hub user token dave --label ci`,
		Args:    cmdutil.ExactArgs(1, "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Name = args[0]
			if runF != nil {
				return runF(opts)
			}
			return tokenRun(cmd.Context(), opts)
		},
	}
	tokenFlags(c, opts)
	return c
}
