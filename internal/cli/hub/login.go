package hub

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/hubsync"
)

// LoginOptions are what `station hub login` was asked to do.
type LoginOptions struct {
	IO *cmdutil.IOStreams
	// Login checks token with the hub at url and saves the login for the
	// station (hubsync.Login on the Factory's station).
	Login      func(ctx context.Context, url, token string) (hubsync.Identity, error)
	URL        string // --url
	TokenStdin bool   // --token-stdin; otherwise $STATION_HUB_TOKEN
	JSON       bool
}

// NewCmdLogin returns `station hub login`.
func NewCmdLogin(f *cmdutil.Factory, runF func(*LoginOptions) error) *cobra.Command {
	opts := &LoginOptions{IO: &f.IO, Login: func(ctx context.Context, url, token string) (hubsync.Identity, error) {
		s, err := f.Open(ctx)
		if err != nil {
			return hubsync.Identity{}, err
		}
		l, err := hubsync.Login(ctx, s, url, token)
		return hubsync.Identity{Hub: l.URL, Account: l.Account}, err
	}}
	c := &cobra.Command{
		Use:   "login --url URL",
		Short: "Log this station in to a hub",
		Long: `Login checks an API token with the hub and saves it for this station: the
hub's URL and the account in the station's database, the token in
STATION_HOME/hub-token (mode 0600). The token is read from standard input
(--token-stdin) or from the STATION_HUB_TOKEN environment variable — never
from a flag, so that it stays out of shell history and process listings.

The hub must be https, or http to a loopback address. A daemon (station
serve) started after login follows the hub's relay and applies team changes;
one already running picks the login up within two seconds.`,
		Example: `  station hub login --url https://hub.example.com --token-stdin < token.txt
  STATION_HUB_TOKEN=sth_... station hub login --url http://127.0.0.1:7777`,
		Args: cmdutil.ExactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.URL == "" {
				return cmdutil.Usagef("hub login: --url is required")
			}
			if runF != nil {
				return runF(opts)
			}
			return loginRun(cmd.Context(), opts)
		},
	}
	c.Flags().StringVar(&opts.URL, "url", "", "the hub's URL, e.g. https://hub.example.com")
	c.Flags().BoolVar(&opts.TokenStdin, "token-stdin", false, "read the token from standard input (default: $STATION_HUB_TOKEN)")
	cmdutil.AddJSONFlag(c, &opts.JSON)
	return c
}

func loginRun(ctx context.Context, opts *LoginOptions) error {
	var token string
	if opts.TokenStdin {
		b, err := io.ReadAll(io.LimitReader(opts.IO.In, 4096))
		if err != nil {
			return fmt.Errorf("hub login: read the token from stdin: %w", err)
		}
		token = string(b)
	} else {
		token = opts.IO.Getenv("STATION_HUB_TOKEN")
	}
	id, err := opts.Login(ctx, opts.URL, token)
	if err != nil {
		return err
	}
	return cmdutil.Print(opts.IO.Out, opts.JSON, LoginResult(id))
}

// LoginResult is the hub and account a login saved.
type LoginResult hubsync.Identity

// Text implements cmdutil.Texter. The account name came from the hub.
func (r LoginResult) Text(w io.Writer) error {
	_, err := fmt.Fprintf(w, "logged in to %s as %s\n", cmdutil.TermText(r.Hub), cmdutil.TermText(r.Account))
	return err
}
