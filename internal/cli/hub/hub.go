// Package hub is `station hub`: a station's login to a hub (login, logout,
// whoami), the publisher key modules are signed with (key create, key
// list), and running a hub (serve, and its accounts: user create, user
// token). Each command is a file: its options, its constructor (with a run
// hook for tests of its flags) and its run function, which calls one
// service (hubsync for a station's side, hubserver for a hub's) and prints
// a typed result as text or, with --json, as JSON.
package hub

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/hubsync"
)

// NewCmdHub returns `station hub` with its subcommands. The commands that
// read or write a station home (login, logout, whoami, key) take --home
// and --no-daemon; those that run a hub or edit its accounts do not.
func NewCmdHub(f *cmdutil.Factory) *cobra.Command {
	c := &cobra.Command{
		Use:   "hub",
		Short: "Log in to a hub, manage publisher keys, or run a hub (marketplace and Teams relay)",
		Long: `A hub is the marketplace and Teams relay stations talk to: accounts, signed
module bundles, teams with their shared lockfile, and the event stream that
relays changes to stations (docs/hub-protocol.md).

On a station: 'station hub login' saves a hub's URL and an API token for the
station, 'station hub whoami' shows the login, 'station hub key create' makes
the key 'station module publish' signs with, 'station hub release' records and
lists the station's releases (admins record them, for reports against the
station), and 'station hub logout' forgets the login. Running a hub: 'station hub serve', 'station hub migrate' for a PostgreSQL
database, and 'station hub user' for its
accounts and tokens (an operator's commands, on the hub's machine).`,
		Example: `  station hub serve --bootstrap-user dave
  station hub login --url http://127.0.0.1:7777 --token-stdin < token.txt
  station hub whoami
  station hub key create`,
	}
	onStation := []*cobra.Command{NewCmdLogin(f, nil), NewCmdLogout(f, nil), NewCmdWhoami(f, nil), NewCmdKey(f), NewCmdRelease(f)}
	for _, sub := range onStation {
		cmdutil.StationFlags(sub, f)
	}
	c.AddCommand(NewCmdServe(f, nil), NewCmdMigrate(f, nil), NewCmdExport(f, nil), NewCmdImport(f, nil), NewCmdGC(f, nil), NewCmdUser(f))
	c.AddCommand(onStation...)
	return cmdutil.Group(c)
}

// Service is what the station's hub commands ask of the station's hub
// session (*hubsync.Session).
type Service interface {
	WhoAmI(ctx context.Context) (hubsync.Identity, error)
	CreateKey(ctx context.Context, file string, replace bool) (hubsync.CreatedKey, error)
	Keys(ctx context.Context, file string) (hubsync.KeyList, error)
}

// session opens the Factory's station and its hub login.
func session(f *cmdutil.Factory) func(context.Context) (Service, error) {
	return func(ctx context.Context) (Service, error) {
		s, err := f.HubSession(ctx)
		if err != nil {
			return nil, err
		}
		return s, nil
	}
}
