// Package hubtest runs a real hub in a test: SQLite and blobs in a temporary
// directory, served on 127.0.0.1 on a free port, stopped when the test ends.
// Stations under test reach it through hubclient with their own clients.
//
// With STATION_HUB_TEST_DB=postgres every hub it starts keeps its store in
// PostgreSQL instead, in a fresh database of the test's own (pgtest finds
// the server, or skips the test), so that the black-box hub suites run on
// both stores: `STATION_HUB_TEST_DB=postgres go test ./internal/hubserver/`.
//
// Likewise STATION_HUB_TEST_BLOBS=oci keeps every hub's blobs in a
// repository of the test's own in an OCI registry (ocitest finds one, or
// skips the test) instead of the data directory.
package hubtest

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/hubclient"
	"github.com/station-dev/station/internal/hubserver"
	"github.com/station-dev/station/internal/hubserver/ocitest"
	"github.com/station-dev/station/internal/hubserver/pgtest"
)

// EnvDB selects the store of the hubs hubtest starts: "sqlite" (or unset)
// or "postgres".
const EnvDB = "STATION_HUB_TEST_DB"

// EnvBlobs selects where the hubs hubtest starts keep blobs: "dir" (or
// unset: blobs/ in the data directory) or "oci" (an OCI registry).
const EnvBlobs = "STATION_HUB_TEST_BLOBS"

// Hub is a running hub.
type Hub struct {
	// URL is the hub's base URL, http://127.0.0.1:PORT.
	URL string
	// Server is the hub itself.
	Server *hubserver.Server
	// Store is its database: a *hubserver.SQLite in Dir, or (EnvDB) a
	// *hubserver.Postgres.
	Store hubserver.Store
	// Blobs is where it keeps blobs: a *hubserver.BlobDir in Dir/blobs, or
	// (EnvBlobs) a *hubserver.OCIRegistry.
	Blobs hubserver.Blobs
	// Dir is its data directory (its blobs, unless EnvBlobs is oci, and
	// its SQLite database).
	Dir string

	stop   context.CancelFunc // begins the shutdown
	served chan struct{}      // closed when Serve returned, with err set
	err    error
}

// Start runs a hub with default options for the rest of the test.
func Start(t testing.TB) *Hub { return StartWith(t, nil) }

// StartWith runs a hub whose options configure may adjust (Store and Blobs
// are filled in) for the rest of the test.
func StartWith(t testing.TB, configure func(*hubserver.Options)) *Hub {
	t.Helper()
	dir := t.TempDir()
	st, blobs, err := open(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() }) // after the hub stopped: cleanups run last first
	o := hubserver.Options{Store: st, Blobs: blobs}
	if configure != nil {
		configure(&o)
	}
	h := Serve(t, o)
	h.Dir = dir
	return h
}

// Serve runs a hub on o, whose Store and Blobs the caller opened (and
// closes), on 127.0.0.1 on a free port, until Stop or the end of the test.
func Serve(t testing.TB, o hubserver.Options) *Hub {
	t.Helper()
	srv, err := hubserver.New(o)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		srv.Close()
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h := &Hub{URL: "http://" + ln.Addr().String(), Server: srv, Store: o.Store, Blobs: o.Blobs, stop: cancel, served: make(chan struct{})}
	go func() {
		defer close(h.served)
		h.err = srv.Serve(ctx, ln)
	}()
	t.Cleanup(func() {
		select {
		case err := <-h.Stop():
			if err != nil {
				t.Errorf("hub: serve: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("hub: did not stop within 30 s")
		}
	})
	return h
}

// Stop begins the shutdown of a hub Serve (or Start) runs — its drain —
// and returns a channel that delivers Serve's error once it returned.
func (h *Hub) Stop() <-chan error {
	h.stop()
	ch := make(chan error, 1)
	go func() {
		<-h.served
		ch <- h.err
	}()
	return ch
}

// open opens the store EnvDB selects and the blobs EnvBlobs selects.
func open(t testing.TB, dir string) (hubserver.Store, hubserver.Blobs, error) {
	var blobs hubserver.Blobs
	var err error
	switch b := os.Getenv(EnvBlobs); b {
	case "", "dir":
		blobs, err = hubserver.OpenBlobDir(filepath.Join(dir, "blobs"))
	case "oci":
		blobs, err = hubserver.OpenBlobs(context.Background(), ocitest.URL(t))
	default:
		err = fmt.Errorf("%s=%q: want dir or oci", EnvBlobs, b)
	}
	if err != nil {
		return nil, nil, err
	}
	var st hubserver.Store
	switch db := os.Getenv(EnvDB); db {
	case "", "sqlite":
		st, err = hubserver.OpenSQLite(filepath.Join(dir, "hub.db"))
	case "postgres":
		st, err = hubserver.OpenPostgres(context.Background(), pgtest.DSN(t))
	default:
		err = fmt.Errorf("%s=%q: want sqlite or postgres", EnvDB, db)
	}
	if err != nil {
		return nil, nil, err
	}
	return st, blobs, nil
}

// Account creates an account and returns its token.
func (h *Hub) Account(t testing.TB, name string) string {
	t.Helper()
	tok, err := hubserver.CreateAccount(context.Background(), h.Store, name, "test", time.Now())
	if err != nil {
		t.Fatalf("create account %s: %v", name, err)
	}
	return tok.Secret
}

// Client returns a client of the hub that sends token ("" for anonymous),
// with an HTTP client of its own (as each station has).
func (h *Hub) Client(t testing.TB, token string) *hubclient.Client {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{}, Timeout: 30 * time.Second}
	t.Cleanup(hc.CloseIdleConnections)
	c, err := hubclient.New(h.URL, hc, hubclient.Options{Token: token})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Publisher creates an account with a registered signing key and returns
// its client and signer.
func (h *Hub) Publisher(t testing.TB, name string) (*hubclient.Client, *hubclient.Signer) {
	t.Helper()
	c := h.Client(t, h.Account(t, name))
	s, err := hubclient.GenerateSigner()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.AddKey(context.Background(), s.PublicKey()); err != nil {
		t.Fatalf("register key of %s: %v", name, err)
	}
	return c, s
}

// Manifest returns a minimal valid module.yaml for id@version.
func Manifest(id, version string, allow ...string) []byte {
	m := "id: " + id + "\nversion: \"" + version + "\"\ndescription: test module " + id + "\nwasm: module.wasm\ncommands:\n  - name: run\n"
	if len(allow) > 0 {
		m += "requires:\n  network:\n    allow:\n"
		for _, a := range allow {
			m += "      - " + a + "\n"
		}
	}
	return []byte(m)
}

// Wasm returns bytes that start like a WebAssembly binary and differ by
// seed. The hub does not compile modules; the station does at install.
func Wasm(seed string) []byte {
	return append([]byte(hub.WasmMagic), seed...)
}
