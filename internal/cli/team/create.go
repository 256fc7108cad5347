package team

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/station-dev/station/internal/cli/cmdutil"
)

// CreateOptions are what `station team create` was asked to do.
type CreateOptions struct {
	IO            *cmdutil.IOStreams
	Session       func(context.Context) (Service, error)
	Name          string
	FromInstalled bool // --from-installed
	JSON          bool
}

// NewCmdCreate returns `station team create`.
func NewCmdCreate(f *cmdutil.Factory, runF func(*CreateOptions) error) *cobra.Command {
	opts := &CreateOptions{IO: &f.IO, Session: session(f)}
	c := &cobra.Command{
		Use:   "create NAME",
		Short: "Create a team you own",
		Long: `Create makes a team on the hub with you as its owner. Its lockfile starts
empty (revision 0); with --from-installed it is the modules this station
installed from the hub, at their installed versions with the permissions you
approved (revision 1).

With --json: {"team", "role", "revision", "modules"}.`,
		Example: "  station team create acme\n  station team create acme --from-installed",
		Args:    cmdutil.ExactArgs(1, "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Name = args[0]
			if runF != nil {
				return runF(opts)
			}
			return createRun(cmd.Context(), opts)
		},
	}
	c.Flags().BoolVar(&opts.FromInstalled, "from-installed", false, "start the lockfile with this station's hub-installed modules")
	cmdutil.AddJSONFlag(c, &opts.JSON)
	return c
}

// CreateResult is the team created and its first lockfile.
type CreateResult struct {
	Team string `json:"team"`
	Role string `json:"role"`
	// Revision is the lockfile's: 0 (empty), or 1 with --from-installed.
	Revision int64 `json:"revision"`
	// Modules are the lockfile's, as id@version.
	Modules []string `json:"modules"`
	pushed  bool
}

// Text implements cmdutil.Texter. The name and role are the hub's answer.
func (r CreateResult) Text(w io.Writer) error {
	fmt.Fprintf(w, "created team %s (you are its %s)\n", cmdutil.TermText(r.Team), cmdutil.TermText(r.Role))
	if r.pushed {
		fmt.Fprintf(w, "pushed lockfile revision %d: %s\n", r.Revision, namesText(r.Modules))
	}
	return nil
}

func createRun(ctx context.Context, opts *CreateOptions) error {
	s, err := opts.Session(ctx)
	if err != nil {
		return err
	}
	t, tl, err := s.CreateTeam(ctx, opts.Name, opts.FromInstalled)
	if err != nil {
		return err
	}
	res := CreateResult{Team: t.Name, Role: t.Role, Modules: []string{}}
	if tl != nil {
		res.Revision, res.Modules, res.pushed = tl.Revision, lockedNames(tl.Lockfile), true
	}
	if err := cmdutil.Print(opts.IO.Out, opts.JSON, res); err != nil {
		return err
	}
	if !opts.JSON {
		fmt.Fprintf(opts.IO.Err, "invite members with: station team invite %s\n", cmdutil.TermText(t.Name))
	}
	return nil
}
