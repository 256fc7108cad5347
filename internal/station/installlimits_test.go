package station_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/station-dev/station/internal/host"
	"github.com/station-dev/station/internal/station"
	"github.com/station-dev/station/internal/store"
	"github.com/station-dev/station/internal/wasmbuild"
	"github.com/station-dev/station/internal/wasmgen"
)

// openFresh opens a station in a new home with config (if any) and its own
// on-disk compilation cache, so that modules are compiled in a child
// process as in production (no shared test cache).
func openFresh(t *testing.T, config string) *station.Station {
	t.Helper()
	home := t.TempDir()
	if config != "" {
		if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(config), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	st, err := station.Open(context.Background(), home, station.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close(context.Background()) })
	return st
}

// bombDir writes a module directory whose module.wasm is wasm (or, with
// wasm nil, a sparse file of size bytes).
func bombDir(t *testing.T, id string, wasm []byte, size int64) string {
	t.Helper()
	dir := t.TempDir()
	yaml := "id: " + id + "\nversion: \"1.0.0\"\nwasm: module.wasm\ncommands: [{name: run}]\n"
	if err := os.WriteFile(filepath.Join(dir, "module.yaml"), []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "module.wasm")
	if wasm == nil {
		f, err := os.Create(path)
		if err == nil {
			err = f.Truncate(size)
			f.Close()
		}
		if err != nil {
			t.Fatal(err)
		}
		return dir
	}
	if err := os.WriteFile(path, wasm, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

func approveAll(station.Plan) (bool, error) { return true, nil }

// Issue 12, item 3: a 100 MB module, a million functions and 100,000
// nested blocks all installed. Each is refused at install with an error
// that names the module, the limit and the key that raises it — or, for a
// binary that is not a module, where it is broken — nothing is recorded,
// and the station then installs and runs a normal module in the same
// process.
func TestInstallRefusesBombs(t *testing.T) {
	ctx := context.Background()
	st := openFresh(t, "")
	fn := func(body ...byte) []byte { return wasmgen.Module([]wasmgen.Func{{Body: body}}) }
	for _, b := range []struct {
		name string
		wasm []byte
		size int64
		key  string
		msg  string
	}{
		{name: "100 MB", size: 100 << 20, key: "install.max_module_size", msg: "the module's binary is 104857600 bytes; the limit is 64MiB"},
		{name: "a million functions", wasm: wasmgen.Functions(1_000_000), key: "install.max_functions", msg: "1000000 functions"},
		{name: "100,000 nested blocks", wasm: wasmgen.Nested(1, 100_000), key: "install.max_nesting", msg: "nests blocks 100000 deep; the limit is 16384"},
		{name: "a huge local count", wasm: wasmgen.Module([]wasmgen.Func{{Locals: []wasmgen.Locals{{Count: 0xffffffff, Type: 0x7f}}}}),
			key: "install.max_locals", msg: "4294967295 parameters and locals"},
		{name: "an unknown opcode", wasm: fn(0xfe, 0x00), msg: "unknown instruction 0xfe (threads are not enabled on this station)"},
		{name: "a truncated LEB128", wasm: append(wasmgen.Header(), 0x0a, 0xff, 0xff), msg: "unexpected end in the middle of an integer"},
		{name: "a section length beyond the file", wasm: append(wasmgen.Header(), append([]byte{0x00}, append(wasmgen.LEB(1<<31), wasmgen.Name("x")...)...)...),
			msg: "past the end of the file"},
	} {
		t.Run(b.name, func(t *testing.T) {
			start := time.Now()
			_, err := st.Install(ctx, bombDir(t, "test/bomb", b.wasm, b.size), approveAll)
			if err == nil {
				t.Fatal("installed")
			}
			if took := time.Since(start); took > 10*time.Second {
				t.Errorf("refused after %s", took)
			}
			if !strings.HasPrefix(err.Error(), "install test/bomb@1.0.0: ") || !strings.Contains(err.Error(), b.msg) {
				t.Errorf("got %v, want it to name the module and say %q", err, b.msg)
			}
			if b.key != "" {
				var le *host.InstallLimitError
				if !errors.As(err, &le) || le.Key != b.key || le.Module != "test/bomb" || !strings.Contains(err.Error(), b.key+" in config.yaml") {
					t.Errorf("got %v, want an InstallLimitError naming %s", err, b.key)
				}
			}
			if _, err := st.Store.Module(ctx, "test/bomb"); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("the refused module was recorded: %v", err)
			}
			t.Log(err)
		})
	}
	installHello(t, st)
}

// installHello installs examples/hello and runs it.
func installHello(t *testing.T, st *station.Station) {
	t.Helper()
	ctx := context.Background()
	root, err := wasmbuild.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	src, err := os.ReadFile(filepath.Join(root, "examples", "hello", "module.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "module.yaml"), src, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "module.wasm"), wasmbuild.ForTest(t, "examples/hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Install(ctx, dir, approveAll); err != nil {
		t.Fatalf("install hello: %v", err)
	}
	out, err := st.Run(ctx, "station/hello", "greet", []byte(`{"name":"Ada"}`))
	if err != nil || string(out) != `{"greeting":"Hello, Ada!"}` {
		t.Fatalf("greet: %s, %v", out, err)
	}
}

// A module that passes the structural check but whose compile outlasts
// install.compile_timeout is refused at that bound — the compile child is
// killed, the station is not held up longer — and a normal module then
// installs and runs in the same home. The operator's own keys set the
// bounds.
func TestInstallBoundsCompileTime(t *testing.T) {
	// The bound is the time the test waits for the refusal (the bomb takes
	// minutes), so it is short; hello is then installed under a bound it
	// compiles well within: about 0.7 s in a child on a quiet machine, over
	// 3 s while the rest of the suite compiles beside it on 2 cores, and
	// several times that with the race detector, which the compile child is
	// built with too.
	bound, helloBound := 2*time.Second, 8*time.Second
	if raceDetector {
		bound, helloBound = 2*bound, 6*helloBound
	}
	home := t.TempDir()
	config := func(b time.Duration) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(fmt.Sprintf("install:\n  compile_timeout: %s\n", b)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	config(bound)
	st, err := station.Open(context.Background(), home, station.Options{})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	// 120 functions that each nest blocks just under the limit: about a
	// second each to compile.
	_, err = st.Install(context.Background(), bombDir(t, "test/slow", wasmgen.Nested(120, 16000), 0), approveAll)
	took := time.Since(start)
	st.Close(context.Background())
	var le *host.InstallLimitError
	if !errors.As(err, &le) || le.Key != "install.compile_timeout" || le.Limit != bound.String() {
		t.Fatalf("got %v, want the compile timeout of %s", err, bound)
	}
	if took > bound+15*time.Second {
		t.Errorf("refused after %s; the bound is %s", took, bound)
	}
	t.Logf("%v (after %s)", err, took)
	config(helloBound)
	st, err = station.Open(context.Background(), home, station.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close(context.Background())
	installHello(t, st)
}
