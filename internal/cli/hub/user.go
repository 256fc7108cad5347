package hub

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	hubapi "github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/hubserver"
)

// NewCmdUser returns `station hub user`: the hub operator's commands for
// accounts and their tokens.
func NewCmdUser(f *cmdutil.Factory) *cobra.Command {
	c := &cobra.Command{
		Use:   "user",
		Short: "Create hub accounts and tokens (operator)",
		Long: `User edits the hub's accounts directly in its data directory (--data,
$STATION_HUB_DATA, default ~/.station-hub), also while the hub runs: 'create'
adds an account and prints its first API token, 'token' issues another one,
'admin' makes an account one of the hub's admins (or, with --revoke, not).
A token is printed once, on standard output; the hub keeps only its hash.`,
		Example: `  station hub user create dave
  station hub user token dave --label ci
  station hub user admin erin`,
	}
	c.AddCommand(NewCmdUserCreate(f, nil), NewCmdUserToken(f, nil), NewCmdUserAdmin(f, nil))
	return cmdutil.Group(c)
}

// Issuer makes an account's token in the hub whose database is at dir
// (its data directory, or a postgres:// URL from --db): with create, the
// account too, an admin with admin.
type Issuer func(ctx context.Context, dir, name, label string, create, admin bool) (hubapi.NewToken, error)

// TokenOptions are what `station hub user create` and `station hub user
// token` were asked to do.
type TokenOptions struct {
	IO     *cmdutil.IOStreams
	Issue  Issuer
	Data   string // --data
	DB     string // --db
	Name   string
	Label  string // --label
	Create bool   // user create: make the account
	Admin  bool   // user create --admin
	JSON   bool
}

func tokenFlags(c *cobra.Command, opts *TokenOptions) {
	dataFlag(c, &opts.Data)
	dbFlag(c, &opts.DB)
	c.Flags().StringVar(&opts.Label, "label", "cli", "what the token is for")
	cmdutil.AddJSONFlag(c, &opts.JSON)
}

// TokenResult is an account's new token. Secret is the bearer token itself:
// printed this once, on stdout, as text or in the JSON — a script that asks
// for --json asks for it.
type TokenResult struct {
	Account string `json:"account"`
	// Created is set when the account was created with it.
	Created bool `json:"created"`
	// Admin is set when the account was created an admin.
	Admin     bool      `json:"admin"`
	ID        string    `json:"id"`
	Label     string    `json:"label"`
	CreatedAt time.Time `json:"created_at"`
	Secret    string    `json:"secret"`
}

// Text implements cmdutil.Texter: the token alone, so that
// `station hub user create dave > token.txt` holds just it. (The hub makes
// tokens of letters, digits and _ and -: TermText leaves them as they are.)
func (r TokenResult) Text(w io.Writer) error {
	_, err := fmt.Fprintln(w, cmdutil.TermText(r.Secret))
	return err
}

func tokenRun(ctx context.Context, opts *TokenOptions) error {
	dir, err := hubDatabase(opts.Data, opts.DB, opts.IO.Getenv)
	if err != nil {
		return err
	}
	tok, err := opts.Issue(ctx, dir, opts.Name, opts.Label, opts.Create, opts.Admin)
	if err != nil {
		return err
	}
	res := TokenResult{Account: opts.Name, Created: opts.Create, Admin: opts.Admin, ID: tok.ID, Label: tok.Label, CreatedAt: tok.CreatedAt, Secret: tok.Secret}
	if !opts.JSON {
		if opts.Create {
			what := "account"
			if opts.Admin {
				what = "admin account"
			}
			fmt.Fprintf(opts.IO.Err, "created %s %s; its token (shown once, store it now):\n", what, cmdutil.TermText(opts.Name))
		} else {
			fmt.Fprintf(opts.IO.Err, "new token %s for %s (shown once, store it now):\n", cmdutil.TermText(tok.ID), cmdutil.TermText(opts.Name))
		}
	}
	return cmdutil.Print(opts.IO.Out, opts.JSON, res)
}

// issue is the Issuer of a hub's data directory on this machine. `user
// create` may set up a hub before its first start; `user token` needs
// accounts to exist, so a missing database is a wrong --data.
func issue(ctx context.Context, dir, name, label string, create, admin bool) (hubapi.NewToken, error) {
	if !create {
		if err := hasHub(dir); err != nil {
			return hubapi.NewToken{}, err
		}
	}
	st, err := openStore(ctx, dir)
	if err != nil {
		return hubapi.NewToken{}, err
	}
	defer st.Close()
	if !create {
		return hubserver.CreateToken(ctx, st, name, label, time.Now())
	}
	tok, err := hubserver.CreateAccount(ctx, st, name, label, time.Now())
	if err != nil || !admin {
		return tok, err
	}
	if err := st.SetAdmin(ctx, name, true); err != nil {
		return hubapi.NewToken{}, fmt.Errorf("account %s was created but is not an admin (%w): make it one with 'station hub user admin %s', and issue its token with 'station hub user token %s'", name, err, name, name)
	}
	return tok, nil
}

// hubDatabase returns where the operator commands find the hub's
// database: the PostgreSQL URL of --db or $STATION_HUB_DB, else the data
// directory.
func hubDatabase(data, db string, getenv func(string) string) (string, error) {
	pg, err := dbOf(db, getenv)
	if err != nil || pg != "" {
		return pg, err
	}
	return dataDir(data, getenv)
}

// hasHub refuses a data directory without a hub database: a wrong --data.
func hasHub(dir string) error {
	if isPostgresURL(dir) {
		return nil // the accounts are there or not: ErrNotFound says which
	}
	if _, err := os.Stat(filepath.Join(dir, "hub.db")); errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("no hub database in %s (--data, $STATION_HUB_DATA)", dir)
	}
	return nil
}
