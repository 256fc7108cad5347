package hub

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/hubsync"
)

// KeyListOptions are what `station hub key list` was asked to do.
type KeyListOptions struct {
	IO      *cmdutil.IOStreams
	Session func(context.Context) (Service, error)
	Key     string // --key: the private key file to compare, "" for the station's
	JSON    bool
}

// NewCmdKeyList returns `station hub key list`.
func NewCmdKeyList(f *cmdutil.Factory, runF func(*KeyListOptions) error) *cobra.Command {
	opts := &KeyListOptions{IO: &f.IO, Session: session(f)}
	c := &cobra.Command{
		Use:   "list",
		Short: "List your account's publisher keys on the hub",
		Long: `List shows the keys the hub has registered for your account, revoked ones
included, and marks the one in this station's key file
(STATION_HOME/hub-signing-key.pem, or --key PATH): the key 'station module
publish' signs with here.

With --json: {"account", "keys": [{"id", "account", "public_key",
"created_at", "revoked_at"}], "file", "local_id"}.`,
		Example: "  station hub key list\n  station hub key list --json",
		Args:    cmdutil.ExactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return keyListRun(cmd.Context(), opts)
		},
	}
	c.Flags().StringVar(&opts.Key, "key", "", "the private key file to look for (default STATION_HOME/"+hubsync.SigningKeyFile+")")
	cmdutil.AddJSONFlag(c, &opts.JSON)
	return c
}

// KeyListResult is the account's keys.
type KeyListResult hubsync.KeyList

// Text implements cmdutil.Texter: a table. The ids, keys and dates are the
// hub's answer.
func (r KeyListResult) Text(w io.Writer) error {
	if len(r.Keys) == 0 {
		fmt.Fprintf(w, "%s has no keys on the hub (make one: station hub key create)\n", cmdutil.TermText(r.Account))
	} else {
		tw := cmdutil.NewTable(w)
		fmt.Fprintln(tw, "ID\tCREATED\tSTATUS\tON THIS STATION")
		for _, k := range r.Keys {
			status := "active"
			if k.RevokedAt != nil {
				status = "revoked " + k.RevokedAt.Local().Format(time.RFC3339)
			}
			here := ""
			if k.ID == r.LocalID {
				here = "yes (" + cmdutil.TermText(r.File) + ")"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", cmdutil.TermText(k.ID), k.CreatedAt.Local().Format(time.RFC3339), status, here)
		}
		tw.Flush()
	}
	switch {
	case r.LocalError != "":
		fmt.Fprintf(w, "this station's key file: %s\n", cmdutil.TermText(r.LocalError))
	case r.LocalID == "":
		fmt.Fprintf(w, "no key file at %s\n", cmdutil.TermText(r.File))
	case !r.registered():
		fmt.Fprintf(w, "the key in %s (%s) is not registered to %s on this hub: what it signs, the hub refuses\n", cmdutil.TermText(r.File), cmdutil.TermText(r.LocalID), cmdutil.TermText(r.Account))
	}
	return nil
}

func (r KeyListResult) registered() bool {
	for _, k := range r.Keys {
		if k.ID == r.LocalID {
			return true
		}
	}
	return false
}

func keyListRun(ctx context.Context, opts *KeyListOptions) error {
	s, err := opts.Session(ctx)
	if err != nil {
		return err
	}
	l, err := s.Keys(ctx, opts.Key)
	if err != nil {
		return err
	}
	return cmdutil.Print(opts.IO.Out, opts.JSON, KeyListResult(l))
}
