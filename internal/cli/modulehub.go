package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/hubclient"
	"github.com/station-dev/station/internal/hubsync"
	"github.com/station-dev/station/internal/store"
)

// installFromHub is `station module install owner/slug[@version]`.
func (a *app) installFromHub(ctx context.Context, ref string, yes, asJSON bool) error {
	sess, err := a.HubSession(ctx)
	if err != nil {
		return err
	}
	id, version, err := hubclient.ParseRef(ref)
	if err != nil {
		return cmdutil.UsageError{Err: err}
	}
	res, err := sess.Install(ctx, hubsync.Request{ID: id, Version: version, Ask: true}, a.HubApprover(yes, cmdutil.AskOrUsage, "install"))
	if err != nil {
		return hubError(err)
	}
	if !res.Changed {
		fmt.Fprintf(a.IO.Out, "%s@%s is already installed\n", cmdutil.TermText(res.ID), cmdutil.TermText(res.Version))
		return nil
	}
	a.ReloadInDaemon(ctx, id)
	p := res.Plan
	if asJSON {
		return cmdutil.WriteJSON(a.IO.Out, map[string]any{"id": id, "version": res.Version, "digest": p.Digest, "hub": p.Hub, "key": p.Key.ID.String(), "permissions": p.Permissions})
	}
	fmt.Fprintf(a.IO.Out, "installed %s@%s (%s) from %s\n", cmdutil.TermText(id), cmdutil.TermText(res.Version), p.Digest, cmdutil.TermText(p.Hub))
	return nil
}

func (a *app) modulePublishCmd() *cobra.Command {
	var keyFile string
	var asJSON bool
	c := &cobra.Command{
		Use:   "publish DIR",
		Short: "Sign a built module and publish it to the hub",
		Long: `Publish reads the built module in DIR (module.yaml and its wasm), signs the
statement of its id, version and digests with your publisher key
(STATION_HOME/hub-signing-key.pem from 'station hub key create', or --key),
and uploads the bundle. Versions are immutable: publish a new version to
change anything. The manifest's owner must be the account you are logged in
as.`,
		Example: "  station module build examples/hello\n  station module publish examples/hello",
		Args:    cmdutil.ExactArgs(1, "DIR"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			sess, err := a.HubSession(ctx)
			if err != nil {
				return err
			}
			if keyFile == "" {
				keyFile = filepath.Join(sess.Station.Home, hubsync.SigningKeyFile)
			}
			signer, err := hubclient.LoadSigner(keyFile)
			if errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("publish: no signing key at %s (make one: station hub key create)", keyFile)
			}
			if err != nil {
				return err
			}
			raw, wasm, err := hubclient.ReadModuleDir(args[0])
			if err != nil {
				return err
			}
			b, err := hubclient.NewBundle(raw, wasm, signer)
			if err != nil {
				return err
			}
			v, err := sess.Client.Publish(ctx, b)
			if err != nil {
				return hubError(err)
			}
			if asJSON {
				return cmdutil.WriteJSON(a.IO.Out, v)
			}
			fmt.Fprintf(a.IO.Out, "published %s@%s (%s, signed by %s) to %s\n", cmdutil.TermText(v.Module), cmdutil.TermText(v.Version), cmdutil.TermText(v.WasmDigest), cmdutil.TermText(v.KeyID), cmdutil.TermText(sess.Login.URL))
			return nil
		},
	}
	c.Flags().StringVar(&keyFile, "key", "", "signing key file (default STATION_HOME/"+hubsync.SigningKeyFile+")")
	c.Flags().BoolVar(&asJSON, "json", false, "print the published version as JSON")
	return c
}

func (a *app) moduleSearchCmd() *cobra.Command {
	var o hubclient.SearchOptions
	var asJSON bool
	c := &cobra.Command{
		Use:   "search [QUERY]",
		Short: "Search the hub's modules",
		Long:  `Search lists the hub's modules whose id or description contains QUERY (any case); without QUERY, all of them.`,
		Example: `  station module search invoice
  station module search --owner dave`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			sess, err := a.HubSession(ctx)
			if err != nil {
				return err
			}
			if len(args) == 1 {
				o.Query = args[0]
			}
			res, err := sess.Client.Search(ctx, o)
			if err != nil {
				return hubError(err)
			}
			if asJSON {
				if res.Modules == nil {
					res.Modules = []hub.Module{}
				}
				return cmdutil.WriteJSON(a.IO.Out, res)
			}
			if len(res.Modules) == 0 {
				fmt.Fprintln(a.IO.Err, "no modules found")
				return nil
			}
			tw := tabwriter.NewWriter(a.IO.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tLATEST\tDESCRIPTION")
			for _, m := range res.Modules {
				latest := m.Latest
				if latest == "" {
					latest = "(all yanked)"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\n", cmdutil.TermText(m.ID), cmdutil.TermText(latest), cmdutil.TermText(m.Description))
			}
			if res.Next > 0 {
				fmt.Fprintf(a.IO.Err, "more results: --offset %d\n", res.Next)
			}
			return tw.Flush()
		},
	}
	c.Flags().StringVar(&o.Owner, "owner", "", "only modules of this account")
	c.Flags().IntVar(&o.Offset, "offset", 0, "skip this many results")
	c.Flags().IntVar(&o.Limit, "limit", 0, "at most this many results (1-100, default 20)")
	c.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return c
}

func (a *app) moduleUpgradeCmd() *cobra.Command {
	var yes bool
	c := &cobra.Command{
		Use:   "upgrade [ID]",
		Short: "Upgrade modules installed from the hub to their latest version",
		Long: `Upgrade installs the latest version (not yanked) of ID, or of every module
installed from the hub. An upgrade that asks for nothing beyond what you
approved, signed by the key you trusted before, applies at once. One that asks
for more — a new host, a program, a wider write glob, the LLM — or is signed
by another key shows the difference and waits for your approval (a terminal
prompt, or --yes); without it nothing changes and the installed version keeps
running (exit code 5).`,
		Example: "  station module upgrade\n  station module upgrade dave/stripe-invoicing --yes",
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			sess, err := a.HubSession(ctx)
			if err != nil {
				return err
			}
			var origins []store.HubOrigin
			if len(args) == 1 {
				o, err := sess.Station.Store.HubOrigin(ctx, args[0])
				if errors.Is(err, store.ErrNotFound) {
					return fmt.Errorf("upgrade %s: it was not installed from a hub (station module install OWNER/SLUG installs from one)", args[0])
				}
				if err != nil {
					return err
				}
				origins = append(origins, o)
			} else if origins, err = sess.Station.Store.HubOrigins(ctx); err != nil {
				return err
			}
			var errs []error
			for _, o := range origins {
				rec, err := sess.Station.Store.Module(ctx, o.Module)
				if err != nil || rec.Version != o.Version {
					continue // removed, or replaced by a local install
				}
				if o.HubURL != sess.Login.URL {
					errs = append(errs, fmt.Errorf("upgrade %s: it came from %s, and this station is logged in to %s", cmdutil.TermText(o.Module), cmdutil.TermText(o.HubURL), cmdutil.TermText(sess.Login.URL)))
					continue
				}
				latest, err := sess.Client.Resolve(ctx, o.Module)
				if err != nil {
					errs = append(errs, hubError(err))
					continue
				}
				if hub.CompareVersions(latest.Version, rec.Version) <= 0 {
					fmt.Fprintf(a.IO.Out, "%s@%s is up to date\n", cmdutil.TermText(o.Module), cmdutil.TermText(rec.Version))
					continue
				}
				res, err := sess.Install(ctx, hubsync.Request{ID: o.Module, Version: latest.Version}, a.HubApprover(yes, cmdutil.AskOrDecline, "upgrade to"))
				if err != nil {
					errs = append(errs, hubError(err))
					continue
				}
				a.ReloadInDaemon(ctx, o.Module)
				fmt.Fprintf(a.IO.Out, "upgraded %s %s -> %s\n", cmdutil.TermText(o.Module), cmdutil.TermText(rec.Version), cmdutil.TermText(res.Version))
			}
			return errors.Join(errs...)
		},
	}
	c.Flags().BoolVarP(&yes, "yes", "y", false, "approve what the new versions ask for without asking")
	return c
}
