package hub

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/hubsync"
)

// KeyCreateOptions are what `station hub key create` was asked to do.
type KeyCreateOptions struct {
	IO      *cmdutil.IOStreams
	Session func(context.Context) (Service, error)
	Key     string // --key (--file, deprecated): the private key file, "" for the station's
	Force   bool   // --force: replace an existing key file (a rotation)
	JSON    bool
}

// NewCmdKeyCreate returns `station hub key create`.
func NewCmdKeyCreate(f *cmdutil.Factory, runF func(*KeyCreateOptions) error) *cobra.Command {
	opts := &KeyCreateOptions{IO: &f.IO, Session: session(f)}
	c := &cobra.Command{
		Use:   "create",
		Short: "Make a signing key and register its public half with the hub",
		Long: `Create generates an Ed25519 signing key, saves it (PKCS#8 PEM, mode 0600) in
STATION_HOME/hub-signing-key.pem or --key PATH, and registers its public half
(minisign format) with your hub account. 'station module publish' signs with
it (--key PATH there names the same file). Back the file up: a lost key
cannot sign new versions.

Create never overwrites a key file by itself: when the file exists it says
which key it holds and changes nothing. --force rotates: it makes and
registers a new key, then moves the old file aside to FILE.KEYID.old and puts
the new key in its place. The old key stays registered, so the versions it
signed still verify; stations that pinned it will ask their operators before
they trust versions signed by the new one.`,
		Example: `  station hub key create
  station hub key create --key ~/keys/dave.pem
  station hub key create --force        # rotate: a new key replaces the station's`,
		Args: cmdutil.ExactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("file") {
				fmt.Fprintln(opts.IO.Err, "station: --file is deprecated: use --key PATH (as station module publish does)")
			}
			if runF != nil {
				return runF(opts)
			}
			return keyCreateRun(cmd.Context(), opts)
		},
	}
	c.Flags().StringVar(&opts.Key, "key", "", "where to save the private key (default STATION_HOME/"+hubsync.SigningKeyFile+")")
	// --file is the former name of --key: hidden, and the command says so
	// on stderr. (Not MarkDeprecated: cobra prints its notice with
	// cmd.Print, on the command's standard output, into --json output.)
	c.Flags().StringVar(&opts.Key, "file", "", "the former name of --key")
	c.Flags().MarkHidden("file")
	c.Flags().BoolVar(&opts.Force, "force", false, "replace an existing key file with a new key (a rotation; the old file is kept beside it)")
	cmdutil.AddJSONFlag(c, &opts.JSON)
	return c
}

// KeyCreateResult is the key made: {"key": {"id", "account", "public_key",
// "created_at"}, "file", "replaced", "backup"}.
type KeyCreateResult hubsync.CreatedKey

// Text implements cmdutil.Texter. The key's id and account are the hub's
// answer.
func (r KeyCreateResult) Text(w io.Writer) error {
	id := cmdutil.TermText(r.Key.ID)
	fmt.Fprintf(w, "key %s registered for %s; private key in %s (keep it secret, back it up)\n", id, cmdutil.TermText(r.Key.Account), cmdutil.TermText(r.File))
	if r.Replaced != "" || r.Backup != "" {
		old := cmdutil.TermText(r.Replaced)
		if old == "" {
			old = "the file's previous content"
		}
		fmt.Fprintf(w, "replaced key %s, now in %s: it stays registered, so what it signed still verifies; stations that pinned it will ask their operators before trusting versions signed by %s\n",
			old, cmdutil.TermText(r.Backup), id)
	}
	return nil
}

func keyCreateRun(ctx context.Context, opts *KeyCreateOptions) error {
	s, err := opts.Session(ctx)
	if err != nil {
		return err
	}
	k, err := s.CreateKey(ctx, opts.Key, opts.Force)
	if err != nil {
		return err
	}
	return cmdutil.Print(opts.IO.Out, opts.JSON, KeyCreateResult(k))
}
