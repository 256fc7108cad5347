package bench

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/station-dev/station/internal/station"
	"github.com/station-dev/station/internal/wasmbuild"
)

// root is this process's scratch directory: built guests, the station binary
// and station homes. TestMain removes it.
var root string

// server is the loopback HTTP server the network benchmarks GET from.
var server *httptest.Server

// conns counts the connections server accepted.
var conns atomic.Int64

// body is what server answers: a small JSON document, like an API's.
var body = []byte(`{"id":"in_1","object":"invoice","amount_due":1200}`)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "station-bench-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	root = dir
	server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	}))
	server.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	server.Start()
	code := m.Run()
	server.Close()
	if shared.st != nil {
		shared.st.Close(context.Background())
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// once memoizes a setup step for the whole process: benchmarks run their
// function several times (once per b.N they try), and a step such as
// building a guest must not be repeated each time.
type once[T any] struct {
	once sync.Once
	v    T
	err  error
}

func (o *once[T]) get(tb testing.TB, f func() (T, error)) T {
	tb.Helper()
	o.once.Do(func() { o.v, o.err = f() })
	if o.err != nil {
		tb.Fatal(o.err)
	}
	return o.v
}

var guests sync.Map // name -> *once[string]

// guest builds bench/guest/<name> once per process and returns the path of
// its wasm. The suite's guests live in this module, so they are built with
// wasmbuild.Build rather than wasmbuild.ForTest (whose cross-process cache
// keys only the station module's own files).
func guest(tb testing.TB, name string) string {
	tb.Helper()
	v, _ := guests.LoadOrStore(name, new(once[string]))
	return v.(*once[string]).get(tb, func() (string, error) {
		out := filepath.Join(root, "guest-"+name+".wasm")
		return out, wasmbuild.Build(context.Background(), filepath.Join("guest", name), out)
	})
}

func guestBytes(tb testing.TB, name string) []byte {
	tb.Helper()
	b, err := os.ReadFile(guest(tb, name))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// The modules the shared station has installed. They are all the station
// guest (or the fetch guest) under different ids and limits.
const (
	greetID  = "bench/greet" // pooled instances: the warm path
	freshID  = "bench/fresh" // limits.instances: fresh
	fetchID  = "bench/fetch" // allowed to GET http://api.bench.test
	fetchURL = "http://api.bench.test/v1/invoices/in_1"
)

// otherIDs are further copies of the greet module, for the several-modules
// throughput benchmark.
var otherIDs = []string{"bench/greet-2", "bench/greet-3", "bench/greet-4"}

// moduleYAML returns a module.yaml for the suite's modules.
func moduleYAML(id, commands, allow, limits string) string {
	s := "id: " + id + "\nversion: \"1.0.0\"\nwasm: module.wasm\ncommands: [" + commands + "]\n" +
		"requires: {network: {allow: [" + allow + "]}, subprocess: false, filesystem_writes: []}\n"
	if limits != "" {
		s += "limits: {" + limits + "}\n"
	}
	return s
}

// writeModule lays out a module directory: module.yaml and module.wasm.
func writeModule(dir, yaml, wasmPath string) error {
	wasm, err := os.ReadFile(wasmPath)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "module.yaml"), []byte(yaml), 0o600); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "module.wasm"), wasm, 0o600)
}

// newHome creates a station home whose configuration lets modules reach
// server as api.bench.test (a resolve override and the loopback grant, as an
// operator would write them) and installs modules into it: each entry maps a
// manifest to the guest it runs. The station is left open.
func newHome(home string, modules map[string]string) (*station.Station, error) {
	if err := os.MkdirAll(home, 0o700); err != nil {
		return nil, err
	}
	addr := strings.TrimPrefix(server.URL, "http://")
	cfg := "network:\n  resolve:\n    - api.bench.test:80=" + addr + "\n  allow_private: [127.0.0.0/8]\n"
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(cfg), 0o600); err != nil {
		return nil, err
	}
	ctx := context.Background()
	st, err := station.Open(ctx, home, station.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return nil, err
	}
	approve := func(station.Plan) (bool, error) { return true, nil }
	i := 0
	for yaml, wasm := range modules {
		dir := filepath.Join(home, "src", fmt.Sprint(i))
		i++
		if err := writeModule(dir, yaml, wasm); err != nil {
			st.Close(ctx)
			return nil, err
		}
		if _, err := st.Install(ctx, dir, approve); err != nil {
			st.Close(ctx)
			return nil, err
		}
	}
	return st, nil
}

// shared is the station every warm benchmark calls: one home with a real
// on-disk compilation cache, the real SQLite store and audit writer, opened
// once per process.
var shared struct {
	once once[*station.Station]
	st   *station.Station
	home string
}

func sharedStation(tb testing.TB) *station.Station {
	tb.Helper()
	greetWasm, fetchWasm := guest(tb, "station"), guest(tb, "fetch")
	return shared.once.get(tb, func() (*station.Station, error) {
		shared.home = filepath.Join(root, "home")
		mods := map[string]string{
			moduleYAML(greetID, "{name: greet}, {name: greet-raw}, "+kernelCommands, "", ""): greetWasm,
			moduleYAML(freshID, "{name: greet}", "", "instances: fresh"):                     greetWasm,
			moduleYAML(fetchID, "{name: get}", `"http://api.bench.test"`, ""):                fetchWasm,
		}
		for _, id := range otherIDs {
			mods[moduleYAML(id, "{name: greet}", "", "")] = greetWasm
		}
		st, err := newHome(shared.home, mods)
		if err != nil {
			return nil, fmt.Errorf("shared station: %w", err)
		}
		// Load every module now, so no benchmark times a first load.
		for _, id := range append([]string{greetID, freshID, fetchID}, otherIDs...) {
			in := `{"name":"Ada"}`
			cmd := "greet"
			if id == fetchID {
				in, cmd = `{"url":"`+fetchURL+`"}`, "get"
			}
			if _, err := st.Run(context.Background(), id, cmd, []byte(in)); err != nil {
				st.Close(context.Background())
				return nil, fmt.Errorf("shared station: warm %s: %w", id, err)
			}
		}
		shared.st = st
		return st, nil
	})
}

var stationBinary once[string]

// stationBin builds cmd/station once per process.
func stationBin(tb testing.TB) string {
	tb.Helper()
	return stationBinary.get(tb, func() (string, error) {
		out := filepath.Join(root, "station")
		repo, err := wasmbuild.RepoRoot()
		if err != nil {
			return "", err
		}
		cmd := exec.Command("go", "build", "-o", out, "./cmd/station")
		cmd.Dir = repo // the product's own module, not this one
		cmd.Env = append(os.Environ(), "GOTOOLCHAIN=local")
		if b, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("build cmd/station: %w\n%s", err, b)
		}
		return out, nil
	})
}
