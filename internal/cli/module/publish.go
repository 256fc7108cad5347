package module

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/hubsync"
)

// Publisher publishes a built module (*hubsync.Session).
type Publisher interface {
	Publish(ctx context.Context, dir, keyFile string) (*hubsync.Published, error)
}

// PublishOptions are what `station module publish` was asked to do.
type PublishOptions struct {
	IO        *cmdutil.IOStreams
	Publisher func(context.Context) (Publisher, error)

	Dir  string
	Key  string // --key: the signing key file, "" for the station's
	JSON bool
}

// NewCmdPublish returns `station module publish`.
func NewCmdPublish(f *cmdutil.Factory, runF func(*PublishOptions) error) *cobra.Command {
	opts := &PublishOptions{IO: &f.IO, Publisher: func(ctx context.Context) (Publisher, error) {
		s, err := f.HubSession(ctx)
		if err != nil {
			return nil, err
		}
		return s, nil
	}}
	c := &cobra.Command{
		Use:   "publish DIR",
		Short: "Sign a built module and publish it to the hub",
		Long: `Publish reads the built module in DIR (module.yaml and its wasm), signs the
statement of its id, version and digests with your publisher key
(STATION_HOME/hub-signing-key.pem from 'station hub key create', or the file
--key PATH names, as 'station hub key create --key PATH' made it), and
uploads the bundle. Versions are immutable: publish a new version to change
anything. The manifest's owner must be the account you are logged in as.`,
		Example: `  station module build examples/hello
  station module publish examples/hello
  station module publish --key ~/keys/dave.pem examples/hello`,
		Args: cmdutil.ExactArgs(1, "DIR"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Dir = args[0]
			if runF != nil {
				return runF(opts)
			}
			return publishRun(cmd.Context(), opts)
		},
	}
	c.Flags().StringVar(&opts.Key, "key", "", "signing key file (default STATION_HOME/"+hubsync.SigningKeyFile+")")
	cmdutil.AddJSONFlag(c, &opts.JSON)
	return c
}

// PublishResult is the version published: the hub's record of it, and
// the hub.
type PublishResult struct {
	hub.Version
	Hub string `json:"hub"`
}

// Text implements cmdutil.Texter. The hub supplied all of it.
func (r PublishResult) Text(w io.Writer) error {
	_, err := fmt.Fprintf(w, "published %s@%s (%s, signed by %s) to %s\n", cmdutil.TermText(r.Module), cmdutil.TermText(r.Version.Version),
		cmdutil.TermText(r.WasmDigest), cmdutil.TermText(r.KeyID), cmdutil.TermText(r.Hub))
	return err
}

func publishRun(ctx context.Context, opts *PublishOptions) error {
	p, err := opts.Publisher(ctx)
	if err != nil {
		return err
	}
	res, err := p.Publish(ctx, opts.Dir, opts.Key)
	if err != nil {
		return err
	}
	return cmdutil.Print(opts.IO.Out, opts.JSON, PublishResult{Version: res.Version, Hub: res.Hub})
}
