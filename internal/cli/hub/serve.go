package hub

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	hubapi "github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/hubserver"
	"github.com/station-dev/station/manifest"
)

// DefaultAddr is where `station hub serve` listens unless told otherwise.
const DefaultAddr = "127.0.0.1:7777"

// ServeOptions are what `station hub serve` was asked to do.
type ServeOptions struct {
	IO        *cmdutil.IOStreams
	Addr      string // --addr
	Data      string // --data
	DB        string // --db
	Blobs     string // --blobs
	Bootstrap string // --bootstrap-user
	MaxWasm   string // --max-wasm, e.g. 64MiB
	PublicURL string // --public-url
	Metrics   string // --metrics-addr
	// DrainDelay and DrainTimeout shape the shutdown (--drain-delay,
	// --drain-timeout).
	DrainDelay, DrainTimeout time.Duration
	Limits                   hubapi.Limits
	// NodeStreams bounds this process's event streams (--max-node-streams;
	// 0: hubserver.DefaultNodeStreams).
	NodeStreams int
}

// NewCmdServe returns `station hub serve`.
func NewCmdServe(f *cmdutil.Factory, runF func(*ServeOptions) error) *cobra.Command {
	opts := &ServeOptions{IO: &f.IO}
	c := &cobra.Command{
		Use:   "serve",
		Short: "Serve the hub (marketplace and Teams relay)",
		Long: `Serve runs the hub: accounts and API tokens, signed module bundles
(publish, search, download, yank), teams with their shared lockfile, and the
event stream that relays team and module changes to connected stations. The
protocol is docs/hub-protocol.md.

State lives in the data directory (--data, $STATION_HUB_DATA, default
~/.station-hub): hub.db (SQLite) and blobs/. It is the hub's own, never a
station's home. With --db postgres://... (or $STATION_HUB_DB) the database
is PostgreSQL instead, migrated to the current schema at start (see
'station hub migrate').

Module bundles (each version's module.yaml, wasm and signature, named by
their sha256 digests) go to --blobs (or $STATION_HUB_BLOBS): a directory
(default: blobs/ in the data directory), or a repository of an OCI
registry (docker-registry, zot, Harbor, ghcr.io, ECR...):

  oci://registry.example.com/station/modules       HTTPS
  oci+http://127.0.0.1:5000/station/modules        plain HTTP (never chosen but by this scheme)

Its credentials come from $STATION_HUB_OCI_USERNAME and
$STATION_HUB_OCI_PASSWORD (or user:password@ in the URL, which process
listings show); Basic and the registry token flow both work. The registry
keeps the bytes, the database what they must be: the hub checks every
digest it reads, and each published version also becomes an OCI artifact,
tagged owner_slug_version, that registry tools can list and pull.
Several hub processes on one PostgreSQL database and one registry
repository serve as one hub (docs/hub-operations.md).

The first account: --bootstrap-user NAME creates NAME if the hub has no such
account and prints its token once, on stdout. Later accounts and tokens:
'station hub user create NAME' and 'station hub user token NAME', also while
the hub runs.

Serve listens on 127.0.0.1:7777 by default; put a TLS-terminating proxy in
front of it to serve other machines (stations refuse plain http to anything
but a loopback address). --public-url is the address stations reach it at
through that proxy: the hub's security advisories name it and link the
reports they come from under it (without it, they leave both out).

For a load balancer and an operator: GET /healthz (the process serves) and
/readyz (the database and the blob storage answer; 503 while draining) are
on the same address; Prometheus metrics are served only on the operator's
own listener, --metrics-addr (e.g. 127.0.0.1:9090), at /metrics.

Stop it with Ctrl-C or SIGTERM: it drains. /readyz answers 503 at once and
the hub keeps serving for --drain-delay (give the load balancer time to
notice), then tells every event stream to reconnect (stations come back
through the same URL, to another node, from their cursor), stops accepting
connections and gives requests in flight --drain-timeout to finish.`,
		Example: `  station hub serve --bootstrap-user dave
  station hub serve --addr 127.0.0.1:0 --data /srv/station-hub
  station hub serve --public-url https://hub.example.com
  station hub serve --metrics-addr 127.0.0.1:9090 --drain-delay 5s
  STATION_HUB_DB=postgres://hub@db.internal/hub station hub serve
  STATION_HUB_OCI_USERNAME=hub STATION_HUB_OCI_PASSWORD=... station hub serve \
      --db postgres://hub@db.internal/hub --blobs oci://registry.internal/station/modules`,
		Args: cmdutil.ExactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.MaxWasm != "" {
				n, err := manifest.ParseSize(opts.MaxWasm)
				if err != nil {
					return cmdutil.Usagef("--max-wasm: %w", err)
				}
				opts.Limits.MaxWasmBytes = int64(n)
			}
			if opts.PublicURL != "" {
				if _, err := hubserver.CheckPublicURL(opts.PublicURL); err != nil {
					return cmdutil.Usagef("--public-url: %w", err)
				}
			}
			if opts.NodeStreams < 0 {
				return cmdutil.Usagef("--max-node-streams must be 0 (from the descriptor limit) or more")
			}
			if opts.DrainDelay < 0 || opts.DrainTimeout <= 0 {
				return cmdutil.Usagef("--drain-delay must be 0 or more and --drain-timeout more than 0")
			}
			if runF != nil {
				return runF(opts)
			}
			return serveRun(cmd.Context(), opts)
		},
	}
	c.Flags().StringVar(&opts.Addr, "addr", DefaultAddr, "address to listen on (port 0 picks a free one)")
	dataFlag(c, &opts.Data)
	dbFlag(c, &opts.DB)
	c.Flags().StringVar(&opts.Blobs, "blobs", "", "where module bundles are kept: a directory, or oci://host[:port]/repository (HTTPS; oci+http:// for plain HTTP) (default $STATION_HUB_BLOBS, else blobs/ in the data directory)")
	c.Flags().StringVar(&opts.Bootstrap, "bootstrap-user", "", "create this account if it does not exist and print its token once")
	c.Flags().StringVar(&opts.MaxWasm, "max-wasm", "", "largest module binary accepted, e.g. 64MiB (default 32MiB)")
	c.Flags().StringVar(&opts.PublicURL, "public-url", "", "the hub's address as stations reach it, e.g. https://hub.example.com (advisories name it)")
	c.Flags().StringVar(&opts.Metrics, "metrics-addr", "", "also serve Prometheus metrics at /metrics on this address, for the operator alone (default: no metrics)")
	c.Flags().DurationVar(&opts.DrainDelay, "drain-delay", 0, "after SIGTERM, keep serving this long with /readyz answering 503, so the load balancer moves traffic away")
	c.Flags().DurationVar(&opts.DrainTimeout, "drain-timeout", hubserver.DefaultDrainTimeout, "after the drain delay, how long requests in flight get to finish")
	c.Flags().Float64Var(&opts.Limits.RatePerSecond, "rate", 0, fmt.Sprintf("sustained requests per second per account or client address (default %d)", hubserver.DefaultRatePerSecond))
	c.Flags().IntVar(&opts.NodeStreams, "max-node-streams", 0, "event streams this process holds open at most, over all accounts; past it a station is told to retry (503), on another node behind a load balancer (default: the descriptor limit less 1024)")
	c.Flags().IntVar(&opts.Limits.Burst, "burst", 0, fmt.Sprintf("requests allowed at once before --rate applies (default %d)", hubserver.DefaultBurst))
	return c
}

// dataFlag adds --data to c.
func dataFlag(c *cobra.Command, dir *string) {
	c.Flags().StringVar(dir, "data", "", "the hub's data directory (default $STATION_HUB_DATA or ~/.station-hub)")
}

// dataDir returns the hub's data directory: the flag, $STATION_HUB_DATA,
// or ~/.station-hub. It is never a station's home.
func dataDir(flag string, getenv func(string) string) (string, error) {
	dir := flag
	if dir == "" {
		dir = getenv("STATION_HUB_DATA")
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

func serveRun(ctx context.Context, opts *ServeOptions) error {
	dir, err := dataDir(opts.Data, opts.IO.Getenv)
	if err != nil {
		return err
	}
	db, err := dbOf(opts.DB, opts.IO.Getenv)
	if err != nil {
		return err
	}
	blobSpec, err := blobsOf(opts.Blobs, dir, opts.IO.Getenv)
	if err != nil {
		return err
	}
	st, blobs, err := openHub(ctx, dir, db, blobSpec)
	if err != nil {
		return err
	}
	defer st.Close()
	errw := opts.IO.Err
	log := slog.New(slog.NewTextHandler(errw, &slog.HandlerOptions{Level: slog.LevelInfo}))
	if opts.Bootstrap != "" {
		tok, err := hubserver.CreateAccount(ctx, st, opts.Bootstrap, "bootstrap", time.Now())
		switch {
		case hubapi.CodeOf(err) == hubapi.CodeAccountExists:
			fmt.Fprintf(errw, "account %s exists; for a new token: station hub user token %s\n", opts.Bootstrap, opts.Bootstrap)
		case err != nil:
			return fmt.Errorf("--bootstrap-user: %w", err)
		default:
			fmt.Fprintf(errw, "created account %s; its token (shown once, store it now):\n", opts.Bootstrap)
			fmt.Fprintln(opts.IO.Out, tok.Secret)
		}
	}
	o := hubserver.Options{Store: st, Blobs: blobs, Logger: log, Limits: opts.Limits, PublicURL: opts.PublicURL,
		DrainDelay: opts.DrainDelay, DrainTimeout: opts.DrainTimeout, NodeStreams: opts.NodeStreams}
	if o.NodeStreams == 0 {
		o.NodeStreams = hubserver.DefaultNodeStreams()
	}
	if opts.Metrics != "" {
		mln, err := net.Listen("tcp", opts.Metrics)
		if err != nil {
			return fmt.Errorf("listen on --metrics-addr %s: %w", opts.Metrics, err)
		}
		o.MetricsListener = mln
	}
	srv, err := hubserver.New(o)
	if err != nil {
		if o.MetricsListener != nil {
			o.MetricsListener.Close()
		}
		return err
	}
	ln, err := net.Listen("tcp", opts.Addr)
	if err != nil {
		srv.Close()
		if o.MetricsListener != nil {
			o.MetricsListener.Close()
		}
		return fmt.Errorf("hub serve: %w", err)
	}
	where := "data " + dir
	if db != "" || blobSpec != filepath.Join(dir, "blobs") {
		shown, _ := hubserver.RedactBlobs(blobSpec) // checked by blobsOf
		where = fmt.Sprintf("database %s, blobs %s", filepath.Join(dir, "hub.db"), shown)
		if db != "" {
			where = fmt.Sprintf("database %s, blobs %s", redactDB(db), shown)
		}
	}
	fmt.Fprintf(errw, "hub listening on http://%s (%s, protocol %d)\n", ln.Addr(), where, hubapi.ProtocolVersion)
	if o.MetricsListener != nil {
		fmt.Fprintf(errw, "metrics on http://%s/metrics\n", o.MetricsListener.Addr())
	}
	if err := srv.Serve(ctx, ln); err != nil {
		return fmt.Errorf("hub serve: %w", err)
	}
	fmt.Fprintln(errw, "hub stopped")
	return nil
}
