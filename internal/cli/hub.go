package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/hubserver"
	"github.com/station-dev/station/manifest"
)

// DefaultHubAddr is where `station hub serve` listens unless told otherwise.
const DefaultHubAddr = "127.0.0.1:7777"

func (a *app) hubCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "hub",
		Short: "Log in to a hub, manage publisher keys, or run a hub (marketplace and Teams relay)",
	}
	c.AddCommand(a.hubServeCmd(), a.hubUserCmd(), a.hubLoginCmd(), a.hubLogoutCmd(), a.hubWhoamiCmd(), a.hubKeyCmd())
	return c
}

// hubDataFlag adds --data to c.
func hubDataFlag(c *cobra.Command, dir *string) {
	c.Flags().StringVar(dir, "data", "", "the hub's data directory (default $STATION_HUB_DATA or ~/.station-hub)")
}

// hubData returns the hub's data directory: the flag, $STATION_HUB_DATA, or
// ~/.station-hub. It is never a station's home.
func (a *app) hubData(flag string) (string, error) {
	dir := flag
	if dir == "" {
		dir = a.IO.Getenv("STATION_HUB_DATA")
	}
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("hub data directory: set --data or STATION_HUB_DATA: %w", err)
		}
		dir = filepath.Join(home, ".station-hub")
	}
	return filepath.Abs(dir)
}

func (a *app) hubServeCmd() *cobra.Command {
	var addr, data, bootstrap, maxWasm string
	var limits hub.Limits
	c := &cobra.Command{
		Use:   "serve",
		Short: "Serve the hub (marketplace and Teams relay)",
		Long: `Serve runs the hub: accounts and API tokens, signed module bundles
(publish, search, download, yank), teams with their shared lockfile, and the
event stream that relays team and module changes to connected stations. The
protocol is docs/hub-protocol.md.

State lives in the data directory (--data, $STATION_HUB_DATA, default
~/.station-hub): hub.db (SQLite) and blobs/. It is the hub's own, never a
station's home.

The first account: --bootstrap-user NAME creates NAME if the hub has no such
account and prints its token once, on stdout. Later accounts and tokens:
'station hub user create NAME' and 'station hub user token NAME', also while
the hub runs.

Serve listens on 127.0.0.1:7777 by default; put a TLS-terminating proxy in
front of it to serve other machines (stations refuse plain http to anything
but a loopback address). Stop it with Ctrl-C or SIGTERM: event streams end at
once (stations reconnect and catch up), other requests finish first.`,
		Example: `  station hub serve --bootstrap-user dave
  station hub serve --addr 127.0.0.1:0 --data /srv/station-hub`,
		Args: cmdutil.ExactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if maxWasm != "" {
				n, err := manifest.ParseSize(maxWasm)
				if err != nil {
					return cmdutil.Usagef("--max-wasm: %w", err)
				}
				limits.MaxWasmBytes = int64(n)
			}
			return a.hubServe(cmd.Context(), addr, data, bootstrap, limits)
		},
	}
	c.Flags().StringVar(&addr, "addr", DefaultHubAddr, "address to listen on (port 0 picks a free one)")
	hubDataFlag(c, &data)
	c.Flags().StringVar(&bootstrap, "bootstrap-user", "", "create this account if it does not exist and print its token once")
	c.Flags().StringVar(&maxWasm, "max-wasm", "", "largest module binary accepted, e.g. 64MiB (default 32MiB)")
	c.Flags().Float64Var(&limits.RatePerSecond, "rate", 0, fmt.Sprintf("sustained requests per second per account or client address (default %d)", hubserver.DefaultRatePerSecond))
	c.Flags().IntVar(&limits.Burst, "burst", 0, fmt.Sprintf("requests allowed at once before --rate applies (default %d)", hubserver.DefaultBurst))
	return c
}

func (a *app) hubServe(ctx context.Context, addr, dataFlag, bootstrap string, limits hub.Limits) error {
	dir, err := a.hubData(dataFlag)
	if err != nil {
		return err
	}
	st, blobs, err := hubserver.OpenDir(dir)
	if err != nil {
		return err
	}
	defer st.Close()
	log := slog.New(slog.NewTextHandler(a.IO.Err, &slog.HandlerOptions{Level: slog.LevelInfo}))
	if bootstrap != "" {
		tok, err := hubserver.CreateAccount(ctx, st, bootstrap, "bootstrap", time.Now())
		switch {
		case hub.CodeOf(err) == hub.CodeAccountExists:
			fmt.Fprintf(a.IO.Err, "account %s exists; for a new token: station hub user token %s\n", bootstrap, bootstrap)
		case err != nil:
			return fmt.Errorf("--bootstrap-user: %w", err)
		default:
			fmt.Fprintf(a.IO.Err, "created account %s; its token (shown once, store it now):\n", bootstrap)
			fmt.Fprintln(a.IO.Out, tok.Secret)
		}
	}
	srv, err := hubserver.New(hubserver.Options{Store: st, Blobs: blobs, Logger: log, Limits: limits})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		srv.Close()
		return fmt.Errorf("hub serve: %w", err)
	}
	fmt.Fprintf(a.IO.Err, "hub listening on http://%s (data %s, protocol %d)\n", ln.Addr(), dir, hub.ProtocolVersion)
	if err := srv.Serve(ctx, ln); err != nil {
		return fmt.Errorf("hub serve: %w", err)
	}
	fmt.Fprintln(a.IO.Err, "hub stopped")
	return nil
}

func (a *app) hubUserCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "user",
		Short: "Create hub accounts and tokens (operator)",
	}
	var data, label string
	create := &cobra.Command{
		Use:   "create NAME",
		Short: "Create an account and print its first token once",
		Long: `Create adds an account to the hub's database directly (the hub may be
running) and prints its API token on stdout. The hub keeps only a hash of the
token: this is the only time it is shown. The account name is also the
namespace it publishes into (NAME/*).`,
		Example: "  station hub user create dave",
		Args:    cmdutil.ExactArgs(1, "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.hubIssue(cmd.Context(), data, args[0], label, true)
		},
	}
	token := &cobra.Command{
		Use:     "token NAME",
		Short:   "Issue another token for an account and print it once",
		Example: "  station hub user token dave --label ci",
		Args:    cmdutil.ExactArgs(1, "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.hubIssue(cmd.Context(), data, args[0], label, false)
		},
	}
	for _, sub := range []*cobra.Command{create, token} {
		hubDataFlag(sub, &data)
		sub.Flags().StringVar(&label, "label", "cli", "what the token is for")
	}
	c.AddCommand(create, token)
	return c
}

func (a *app) hubIssue(ctx context.Context, dataFlag, name, label string, create bool) error {
	dir, err := a.hubData(dataFlag)
	if err != nil {
		return err
	}
	// `user create` may set up a hub before its first start; `user token`
	// needs accounts to exist, so a missing database is a wrong --data.
	if _, err := os.Stat(filepath.Join(dir, "hub.db")); !create && errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("no hub database in %s (--data, $STATION_HUB_DATA)", dir)
	}
	st, _, err := hubserver.OpenDir(dir)
	if err != nil {
		return err
	}
	defer st.Close()
	var tok hub.NewToken
	if create {
		tok, err = hubserver.CreateAccount(ctx, st, name, label, time.Now())
	} else {
		tok, err = hubserver.CreateToken(ctx, st, name, label, time.Now())
	}
	if err != nil {
		return err
	}
	if create {
		fmt.Fprintf(a.IO.Err, "created account %s; its token (shown once, store it now):\n", name)
	} else {
		fmt.Fprintf(a.IO.Err, "new token %s for %s (shown once, store it now):\n", tok.ID, name)
	}
	fmt.Fprintln(a.IO.Out, tok.Secret)
	return nil
}
