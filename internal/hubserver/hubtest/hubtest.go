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
	"strings"
	"testing"
	"time"

	"github.com/station-dev/station/internal/hubclient"
	"github.com/station-dev/station/internal/hubserver"
	"github.com/station-dev/station/internal/hubserver/ocitest"
	"github.com/station-dev/station/internal/hubserver/pgtest"
	"github.com/station-dev/station/internal/wasmgen"
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

// Wasm returns a minimal module that passes the hub's publish check
// (host.Inspect) and differs by seed: it exports memory, station_abi_1 and
// station_call, imports nothing, and holds seed in a custom section.
func Wasm(seed string) []byte { return Module(WasmSpec{Seed: seed}) }

// WasmSpec describes a module Module assembles: by default one that
// passes the hub's publish check.
type WasmSpec struct {
	// Seed goes into a custom section, so that each seed gives other
	// bytes.
	Seed string
	// Pad adds a custom section of this many bytes, to make a large module
	// cheaply.
	Pad int
	// Imports are "module.name" imports, e.g. "station.process_run". A
	// station import has its ABI signature (wasi_snapshot_preview1's
	// sched_yield and proc_exit theirs); any other is () -> ().
	Imports []string
	// Marker replaces the station_abi_1 export's name ("-" leaves it out).
	Marker string
	// NoCall leaves station_call out; CallI64 gives it the signature
	// (i64) -> i32 instead of (i32, i32) -> i32.
	NoCall, CallI64 bool
	// NoMemory leaves the memory export out; MemoryPages is the memory's
	// initial size (default 1).
	NoMemory    bool
	MemoryPages uint32
}

// signatures are the import signatures of the ABI (docs/abi.md) and of
// a few WASI functions, as indexes into Module's type section.
var signatures = map[string]byte{
	"station.buf_len": 2, "station.buf_read": 3, "station.buf_free": 4, "station.output_set": 1, "station.log": 3,
	"station.http_request": 5, "station.process_run": 5, "station.llm_complete": 5,
	"wasi_snapshot_preview1.sched_yield": 7, "wasi_snapshot_preview1.proc_exit": 4,
}

// Module assembles the module s describes.
func Module(s WasmSpec) []byte {
	const i32, i64 = 0x7f, 0x7e
	types := [][]byte{
		{0x60, 0, 0},                     // 0: () -> ()
		{0x60, 2, i32, i32, 1, i32},      // 1: (i32, i32) -> i32
		{0x60, 1, i32, 1, i32},           // 2: (i32) -> i32
		{0x60, 3, i32, i32, i32, 1, i32}, // 3: (i32, i32, i32) -> i32
		{0x60, 1, i32, 0},                // 4: (i32) -> ()
		{0x60, 2, i32, i32, 1, i64},      // 5: (i32, i32) -> i64
		{0x60, 1, i64, 1, i32},           // 6: (i64) -> i32
		{0x60, 0, 1, i32},                // 7: () -> i32
	}
	vec := func(items [][]byte) []byte {
		out := wasmgen.LEB(uint64(len(items)))
		for _, it := range items {
			out = append(out, it...)
		}
		return out
	}
	m := wasmgen.Header()
	m = append(m, wasmgen.Section(1, vec(types))...)
	var imports [][]byte
	for _, imp := range s.Imports {
		mod, name, _ := strings.Cut(imp, ".")
		t := signatures[imp] // () -> () if unknown
		imports = append(imports, append(append(append(wasmgen.Name(mod), wasmgen.Name(name)...), 0x00), t))
	}
	if len(imports) > 0 {
		m = append(m, wasmgen.Section(2, vec(imports))...)
	}
	callType := byte(1)
	if s.CallI64 {
		callType = 6
	}
	m = append(m, wasmgen.Section(3, []byte{2, 0, callType})...) // the marker, station_call
	pages := s.MemoryPages
	if pages == 0 {
		pages = 1
	}
	m = append(m, wasmgen.Section(5, append([]byte{1, 0x00}, wasmgen.LEB(uint64(pages))...))...)
	nimp := uint64(len(imports))
	var exports [][]byte
	if !s.NoMemory {
		exports = append(exports, append(wasmgen.Name("memory"), 0x02, 0))
	}
	switch s.Marker {
	case "":
		exports = append(exports, append(append(wasmgen.Name("station_abi_1"), 0x00), wasmgen.LEB(nimp)...))
	case "-":
	default:
		exports = append(exports, append(append(wasmgen.Name(s.Marker), 0x00), wasmgen.LEB(nimp)...))
	}
	if !s.NoCall {
		exports = append(exports, append(append(wasmgen.Name("station_call"), 0x00), wasmgen.LEB(nimp+1)...))
	}
	m = append(m, wasmgen.Section(7, vec(exports))...)
	marker := []byte{0, 0x0b}        // no locals; end
	call := []byte{0, 0x41, 0, 0x0b} // no locals; i32.const 0; end
	code := [][]byte{append(wasmgen.LEB(uint64(len(marker))), marker...), append(wasmgen.LEB(uint64(len(call))), call...)}
	m = append(m, wasmgen.Section(10, vec(code))...)
	if s.Seed != "" {
		m = append(m, wasmgen.Section(0, append(wasmgen.Name("station-test-seed"), s.Seed...))...)
	}
	if s.Pad > 0 {
		m = append(m, wasmgen.Section(0, append(wasmgen.Name("station-test-padding"), make([]byte, s.Pad)...))...)
	}
	return m
}
