package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/hubclient"
	"github.com/station-dev/station/internal/hubsync"
)

func (a *app) hubLoginCmd() *cobra.Command {
	var url string
	var fromStdin bool
	c := &cobra.Command{
		Use:   "login --url URL",
		Short: "Log this station in to a hub",
		Long: `Login checks an API token with the hub and saves it for this station: the
hub's URL and the account in the station's database, the token in
STATION_HOME/hub-token (mode 0600). The token is read from standard input
(--token-stdin) or from the STATION_HUB_TOKEN environment variable — never
from a flag, so that it stays out of shell history and process listings.

The hub must be https, or http to a loopback address. A daemon (station
serve) started after login follows the hub's relay and applies team changes.`,
		Example: `  station hub login --url https://hub.example.com --token-stdin < token.txt
  STATION_HUB_TOKEN=sth_... station hub login --url http://127.0.0.1:7777`,
		Args: cmdutil.ExactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if url == "" {
				return cmdutil.Usagef("hub login: --url is required")
			}
			var token string
			if fromStdin {
				b, err := io.ReadAll(io.LimitReader(a.IO.In, 4096))
				if err != nil {
					return fmt.Errorf("hub login: read the token from stdin: %w", err)
				}
				token = string(b)
			} else {
				token = a.IO.Getenv("STATION_HUB_TOKEN")
			}
			ctx := cmd.Context()
			s, err := a.Open(ctx)
			if err != nil {
				return err
			}
			l, err := hubsync.Login(ctx, s, url, token)
			if err != nil {
				return hubError(err)
			}
			fmt.Fprintf(a.IO.Out, "logged in to %s as %s\n", cmdutil.TermText(l.URL), cmdutil.TermText(l.Account))
			return nil
		},
	}
	c.Flags().StringVar(&url, "url", "", "the hub's URL, e.g. https://hub.example.com")
	c.Flags().BoolVar(&fromStdin, "token-stdin", false, "read the token from standard input (default: $STATION_HUB_TOKEN)")
	return c
}

func (a *app) hubLogoutCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "logout",
		Short: "Forget the hub login and remove the saved token",
		Long: `Logout removes STATION_HOME/hub-token and forgets the hub, its teams and
pending team changes. Installed modules stay installed. The token itself stays
valid on the hub until you revoke it there.`,
		Args: cmdutil.ExactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			s, err := a.Open(ctx)
			if err != nil {
				return err
			}
			if err := hubsync.Logout(ctx, s); err != nil {
				return err
			}
			fmt.Fprintln(a.IO.Out, "logged out")
			return nil
		},
	}
}

func (a *app) hubWhoamiCmd() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "whoami",
		Short: "Show the hub and account this station is logged in as",
		Args:  cmdutil.ExactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			sess, err := a.HubSession(ctx)
			if err != nil {
				return err
			}
			acct, err := sess.Client.WhoAmI(ctx)
			if err != nil {
				return hubError(err)
			}
			if asJSON {
				return cmdutil.WriteJSON(a.IO.Out, map[string]string{"hub": sess.Login.URL, "account": acct.Name})
			}
			fmt.Fprintf(a.IO.Out, "%s on %s\n", cmdutil.TermText(acct.Name), cmdutil.TermText(sess.Login.URL))
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return c
}

func (a *app) hubKeyCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "key",
		Short: "Manage the publisher key modules are signed with",
	}
	var file string
	create := &cobra.Command{
		Use:   "create",
		Short: "Make a signing key and register its public half with the hub",
		Long: `Create generates an Ed25519 signing key, saves it (PKCS#8 PEM, mode 0600) in
STATION_HOME/hub-signing-key.pem or --file, and registers its public half
(minisign format) with your hub account. 'station module publish' signs with
it. It never overwrites an existing key file. Back the file up: a lost key
cannot sign new versions, and stations that pinned it will ask their operators
before trusting a new one.`,
		Args: cmdutil.ExactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			sess, err := a.HubSession(ctx)
			if err != nil {
				return err
			}
			if file == "" {
				file = filepath.Join(sess.Station.Home, hubsync.SigningKeyFile)
			}
			signer, err := hubclient.GenerateSigner()
			if err != nil {
				return err
			}
			if err := signer.Save(file); err != nil {
				return err
			}
			k, err := sess.Client.AddKey(ctx, signer.PublicKey())
			if err != nil {
				os.Remove(file) // a key the hub does not know signs nothing it accepts
				return hubError(err)
			}
			fmt.Fprintf(a.IO.Out, "key %s registered for %s; private key in %s (keep it secret, back it up)\n", cmdutil.TermText(k.ID), cmdutil.TermText(k.Account), file)
			return nil
		},
	}
	create.Flags().StringVar(&file, "file", "", "where to save the private key (default STATION_HOME/"+hubsync.SigningKeyFile+")")
	c.AddCommand(create)
	return c
}
