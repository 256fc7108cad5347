// Package hubtest runs a real hub in a test: SQLite and blobs in a temporary
// directory, served on 127.0.0.1 on a free port, stopped when the test ends.
// Stations under test reach it through hubclient with their own clients.
package hubtest

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/hubclient"
	"github.com/station-dev/station/internal/hubserver"
)

// Hub is a running hub.
type Hub struct {
	// URL is the hub's base URL, http://127.0.0.1:PORT.
	URL string
	// Server is the hub itself.
	Server *hubserver.Server
	// Store is its database.
	Store *hubserver.SQLite
	// Dir is its data directory.
	Dir string
}

// Start runs a hub with default options for the rest of the test.
func Start(t testing.TB) *Hub { return StartWith(t, nil) }

// StartWith runs a hub whose options configure may adjust (Store and Blobs
// are filled in) for the rest of the test.
func StartWith(t testing.TB, configure func(*hubserver.Options)) *Hub {
	t.Helper()
	dir := t.TempDir()
	st, blobs, err := hubserver.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	o := hubserver.Options{Store: st, Blobs: blobs}
	if configure != nil {
		configure(&o)
	}
	srv, err := hubserver.New(o)
	if err != nil {
		st.Close()
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		srv.Close()
		st.Close()
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("hub: serve: %v", err)
		}
		st.Close()
	})
	return &Hub{URL: "http://" + ln.Addr().String(), Server: srv, Store: st, Dir: dir}
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
