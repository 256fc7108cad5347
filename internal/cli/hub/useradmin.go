package hub

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	hubapi "github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/hubserver"
)

// AdminSetter makes an account of the hub whose database is at dir (its
// data directory, or a postgres:// URL from --db) an admin (admin true) or
// not.
type AdminSetter func(ctx context.Context, dir, name string, admin bool) error

// AdminOptions are what `station hub user admin` was asked to do.
type AdminOptions struct {
	IO       *cmdutil.IOStreams
	SetAdmin AdminSetter
	Data     string // --data
	DB       string // --db
	Name     string
	Revoke   bool // --revoke
	JSON     bool
}

// NewCmdUserAdmin returns `station hub user admin`.
func NewCmdUserAdmin(f *cmdutil.Factory, runF func(*AdminOptions) error) *cobra.Command {
	opts := &AdminOptions{IO: &f.IO, SetAdmin: setAdmin}
	c := &cobra.Command{
		Use:   "admin NAME",
		Short: "Make an account one of the hub's admins, or not",
		Long: `Admin makes the existing account NAME one of the hub's admins, directly in
the hub's database (the hub may be running; the change holds from the
account's next request). An admin reads and triages every security report,
triages the reports against the station itself, and records station
releases. --revoke makes it an ordinary account again.

With --json the output is {"account", "admin"}.`,
		Example: `  station hub user admin erin
  station hub user admin erin --revoke`,
		Args: cmdutil.ExactArgs(1, "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Name = args[0]
			if runF != nil {
				return runF(opts)
			}
			return adminRun(cmd.Context(), opts)
		},
	}
	dataFlag(c, &opts.Data)
	dbFlag(c, &opts.DB)
	c.Flags().BoolVar(&opts.Revoke, "revoke", false, "make the account an ordinary one again")
	cmdutil.AddJSONFlag(c, &opts.JSON)
	return c
}

// AdminResult is an account's admin role after the change.
type AdminResult struct {
	Account string `json:"account"`
	Admin   bool   `json:"admin"`
}

// Text implements cmdutil.Texter.
func (r AdminResult) Text(w io.Writer) error {
	what := "is now an admin of the hub"
	if !r.Admin {
		what = "is not an admin of the hub"
	}
	_, err := fmt.Fprintf(w, "%s %s\n", cmdutil.TermText(r.Account), what)
	return err
}

func adminRun(ctx context.Context, opts *AdminOptions) error {
	dir, err := hubDatabase(opts.Data, opts.DB, opts.IO.Getenv)
	if err != nil {
		return err
	}
	if err := opts.SetAdmin(ctx, dir, opts.Name, !opts.Revoke); err != nil {
		return err
	}
	return cmdutil.Print(opts.IO.Out, opts.JSON, AdminResult{Account: opts.Name, Admin: !opts.Revoke})
}

// setAdmin is the AdminSetter of a hub's data directory on this machine.
func setAdmin(ctx context.Context, dir, name string, admin bool) error {
	if msg := hubapi.CheckName(name); msg != "" {
		return hubapi.Errorf(hubapi.CodeInvalidName, "account name %q %s", name, msg)
	}
	if err := hasHub(dir); err != nil {
		return err
	}
	st, err := openStore(ctx, dir)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.SetAdmin(ctx, name, admin); errors.Is(err, hubserver.ErrNotFound) {
		return hubapi.Errorf(hubapi.CodeAccountNotFound, "account %q does not exist on this hub (create an admin: station hub user create %s --admin)", name, name)
	} else if err != nil {
		return fmt.Errorf("set the admin role of %s: %w", name, err)
	}
	return nil
}
