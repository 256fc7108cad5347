package host_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/station-dev/station/internal/host"
	"github.com/station-dev/station/internal/probe"
	"github.com/station-dev/station/internal/wasmbuild"
	"github.com/station-dev/station/internal/wasmgen"
	"github.com/station-dev/station/manifest"
)

// bomb is a hostile binary and how the structural check must refuse it:
// over the limit key (an *InstallLimitError naming it), or malformed with
// a message containing msg.
type bomb struct {
	name string
	wasm []byte
	lim  host.InstallLimits // zero: the defaults
	key  string
	msg  string
}

func bombs() []bomb {
	leb := wasmgen.LEB
	sec := wasmgen.Section
	fn := func(body ...byte) []byte { return wasmgen.Module([]wasmgen.Func{{Body: body}}) }
	locals := func(decls ...wasmgen.Locals) []byte { return wasmgen.Module([]wasmgen.Func{{Locals: decls}}) }
	// A million-function module, and others whose vectors are too long.
	many := func(id byte, n int, entry []byte) []byte {
		content := leb(uint64(n))
		for range n {
			content = append(content, entry...)
		}
		return append(wasmgen.Header(), sec(id, content)...)
	}
	moduleLocals := make([]wasmgen.Func, 200)
	for k := range moduleLocals {
		moduleLocals[k].Locals = []wasmgen.Locals{{Count: 45_000, Type: 0x7f}}
	}
	nops := bytes.Repeat([]byte{0x01}, 8<<20)
	return []bomb{
		{name: "over the size", wasm: wasmgen.Module(nil, sec(0, append(wasmgen.Name("pad"), make([]byte, 2<<20)...))),
			lim: host.InstallLimits{ModuleBytes: 1 << 20}, key: "install.max_module_size"},
		{name: "a million functions", wasm: wasmgen.Functions(1_000_000), key: "install.max_functions"},
		{name: "a million imported functions", wasm: many(2, 1_000_000, append(append(wasmgen.Name("m"), wasmgen.Name("f")...), 0x00, 0x00)),
			lim: host.InstallLimits{Imports: 2_000_000}, key: "install.max_functions"},
		{name: "100,000 nested blocks", wasm: wasmgen.Nested(1, 100_000), key: "install.max_nesting", msg: "nests blocks 100000 deep"},
		{name: "nested ifs and loops", wasm: fn(append(bytes.Repeat([]byte{0x41, 0x00, 0x04, 0x40, 0x03, 0x40}, 9000), bytes.Repeat([]byte{0x0b, 0x0b}, 9000)...)...),
			key: "install.max_nesting", msg: "18000 deep"},
		{name: "2^32-1 locals", wasm: locals(wasmgen.Locals{Count: 0xffffffff, Type: 0x7f}), key: "install.max_locals"},
		{name: "locals summed over declarations", wasm: locals(wasmgen.Locals{Count: 30_000, Type: 0x7f}, wasmgen.Locals{Count: 30_000, Type: 0x7e}),
			key: "install.max_locals", msg: "60000 parameters and locals"},
		{name: "locals of the whole module", wasm: wasmgen.Module(moduleLocals), key: "install.max_module_locals"},
		{name: "a huge function body", wasm: fn(nops...), key: "install.max_function_size"},
		{name: "too many types", wasm: many(1, 100_001, []byte{0x60, 0, 0}), key: "install.max_types"},
		{name: "too many imports", wasm: many(2, 100_001, append(append(wasmgen.Name("m"), wasmgen.Name("g")...), 0x03, 0x7f, 0x00)),
			key: "install.max_imports"},
		{name: "too many globals", wasm: many(6, 100_001, []byte{0x7f, 0x00, 0x41, 0x00, 0x0b}), key: "install.max_globals"},
		{name: "too many exports", wasm: many(7, 100_001, append(wasmgen.Name("e"), 0x02, 0x00)), key: "install.max_exports"},
		{name: "too many data segments", wasm: many(11, 100_001, []byte{0x01, 0x00}), key: "install.max_data_segments"},
		{name: "too many custom sections", wasm: append(wasmgen.Header(), bytes.Repeat(sec(0, wasmgen.Name("c")), 1025)...), msg: "custom sections"},
		{name: "a type with too many parameters", wasm: append(wasmgen.Header(), sec(1, append(append([]byte{1, 0x60}, leb(1001)...), append(bytes.Repeat([]byte{0x7f}, 1001), 0)...))...),
			msg: "1001 parameters"},
		{name: "unknown opcode", wasm: fn(0x27), msg: "unknown instruction 0x27"},
		{name: "threads", wasm: fn(0xfe, 0x03, 0x00), msg: "threads are not enabled"},
		{name: "exception handling", wasm: fn(0x06, 0x40, 0x0b), msg: "exception handling is not enabled"},
		{name: "tail call", wasm: fn(0x12, 0x00), msg: "tail calls are not enabled"},
		{name: "unknown 0xfc instruction", wasm: fn(0xfc, 0x12), msg: "unknown instruction 0xfc 18"},
		{name: "unassigned SIMD instruction", wasm: fn(0xfd, 0x9a, 0x01), msg: "unknown SIMD instruction 0xfd 0x9a"},
		{name: "truncated LEB128 section size", wasm: append(wasmgen.Header(), 0x01, 0x80, 0x80, 0x80), msg: "unexpected end in the middle of an integer"},
		{name: "over-long LEB128", wasm: append(wasmgen.Header(), 0x01, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00), msg: "integer overflows 32 bits"},
		{name: "truncated immediate", wasm: withCode([]byte{1, 3, 0, 0x41, 0x80}), msg: "unexpected end in the middle of an integer"},
		{name: "section length beyond the file", wasm: append(append(wasmgen.Header(), 0x00), append(leb(0xfffffff0), wasmgen.Name("x")...)...),
			msg: "past the end of the file"},
		{name: "body length beyond its section", wasm: withCode(append([]byte{1}, leb(1<<20)...)),
			msg: "past the end of the code section"},
		{name: "vector count beyond its section", wasm: append(wasmgen.Header(), sec(1, leb(0xffffffff))...), msg: "cannot fit"},
		{name: "name section function count", wasm: wasmgen.Module(nil, sec(0, append(wasmgen.Name("name"), append([]byte{1}, append(leb(5), leb(0xffffffff)...)...)...))),
			msg: "cannot fit"},
		{name: "name section local count", wasm: wasmgen.Module(nil, sec(0, append(wasmgen.Name("name"), append([]byte{2}, append(leb(7), append([]byte{1, 0}, leb(0xffffffff)...)...)...)...))),
			msg: "cannot fit"},
		{name: "sections out of order", wasm: append(append(wasmgen.Header(), sec(3, []byte{0})...), sec(1, []byte{0})...), msg: "out of order"},
		{name: "a component", wasm: []byte{0x00, 'a', 's', 'm', 0x0d, 0x00, 0x01, 0x00}, msg: "a component is not a module"},
		{name: "an imported table", wasm: append(wasmgen.Header(), sec(2, append(append([]byte{1}, append(wasmgen.Name("m"), wasmgen.Name("t")...)...), 0x01, 0x70, 0x00, 0x00))...),
			msg: "must define its own tables"},
	}
}

// withCode is a module of one function of type () -> () whose code
// section holds code as it is.
func withCode(code []byte) []byte {
	m := append(wasmgen.Header(), wasmgen.Section(1, []byte{1, 0x60, 0, 0})...)
	m = append(m, wasmgen.Section(3, []byte{1, 0})...)
	return append(m, wasmgen.Section(10, code)...)
}

// Every hostile binary is refused by the structural check, before wazero
// sees it, with an error that names the module, what exceeded which limit
// and the key that raises it.
func TestCheckBinaryRefusesBombs(t *testing.T) {
	for _, b := range bombs() {
		t.Run(b.name, func(t *testing.T) {
			lim := b.lim
			start := time.Now()
			_, err := host.CheckBinary(b.wasm, fill(lim), "test/bomb")
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("the check took %s", took)
			}
			if err == nil {
				t.Fatal("accepted")
			}
			var le *host.InstallLimitError
			if b.key != "" {
				if !errors.As(err, &le) || le.Key != b.key || le.Module != "test/bomb" {
					t.Fatalf("got %v, want an InstallLimitError for %s", err, b.key)
				}
				for _, want := range []string{"limit exceeded: module test/bomb: install: ", "; the limit is " + le.Limit, b.key + " in config.yaml"} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("%q does not say %q", err, want)
					}
				}
			}
			if !strings.Contains(err.Error(), b.msg) {
				t.Errorf("got %v, want it to say %q", err, b.msg)
			}
		})
	}
}

// fill is lim with its zero fields at the defaults.
func fill(lim host.InstallLimits) host.InstallLimits {
	d := host.DefaultInstallLimits()
	set := func(v *int, dv int) {
		if *v == 0 {
			*v = dv
		}
	}
	set(&lim.Functions, d.Functions)
	set(&lim.FunctionBytes, d.FunctionBytes)
	set(&lim.Locals, d.Locals)
	set(&lim.Nesting, d.Nesting)
	set(&lim.Types, d.Types)
	set(&lim.Imports, d.Imports)
	set(&lim.Exports, d.Exports)
	set(&lim.Globals, d.Globals)
	set(&lim.DataSegments, d.DataSegments)
	if lim.ModuleBytes == 0 {
		lim.ModuleBytes = d.ModuleBytes
	}
	if lim.ModuleLocals == 0 {
		lim.ModuleLocals = d.ModuleLocals
	}
	return lim
}

// realModules are the modules the test suites build, by name.
func realModules(t testing.TB) map[string][]byte {
	mods := map[string][]byte{}
	for _, dir := range []string{"examples/hello", "examples/stripe-invoicing", "examples/summarize", "internal/fsgate/testdata/guest"} {
		mods[dir] = wasmbuild.ForTest(t, dir)
	}
	mods["probe"] = probe.Wasm(t)
	for _, tag := range []string{probe.NoNetworkTag, probe.ExecTag, probe.LLMTag, probe.ExtraImportTag} {
		mods["probe "+tag] = probe.Wasm(t, tag)
	}
	return mods
}

// wazeroDir is the directory of the wazero release the station's copy
// comes from (third_party/wazero holds no test data; the release's holds
// modules built by TinyGo, Rust, Zig and C compilers, and the spec tests).
func wazeroDir(t testing.TB) string {
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Version}}", "github.com/tetratelabs/wazero")
	cmd.Dir = repoRoot(t)
	version, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list wazero: %v", err)
	}
	// The release in the module cache, as go mod download leaves it (and
	// .ci/unprivileged copies it, for a user with no proxy and no checksum
	// database); else fetched.
	mod := "github.com/tetratelabs/wazero@" + strings.TrimSpace(string(version))
	cache, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Fatalf("go env GOMODCACHE: %v", err)
	}
	if dir := filepath.Join(strings.TrimSpace(string(cache)), mod); dirExists(dir) {
		return dir
	}
	cmd = exec.Command("go", "mod", "download", "-json", mod)
	cmd.Dir = repoRoot(t)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go mod download %s: %v: %s", mod, err, stderr.String())
	}
	var got struct{ Dir string }
	if err := json.Unmarshal(out, &got); err != nil || got.Dir == "" {
		t.Fatalf("go mod download %s: no directory in %s", mod, out)
	}
	return got.Dir
}

// The defaults accept every real module: the Go modules the tests build
// and the TinyGo, Rust and Zig/C modules in wazero's test data. The
// margins are logged (go test -v -run AcceptsRealModules).
func TestCheckBinaryAcceptsRealModules(t *testing.T) {
	mods := realModules(t)
	dir := wazeroDir(t)
	for _, rel := range []string{
		"imports/wasi_snapshot_preview1/testdata/tinygo/wasi.wasm",
		"imports/wasi_snapshot_preview1/testdata/cargo-wasi/wasi.wasm",
		"imports/wasi_snapshot_preview1/testdata/zig-cc/wasi.wasm",
		"imports/wasi_snapshot_preview1/testdata/zig/wasi.wasm",
		"examples/allocation/tinygo/testdata/greet.wasm",
		"examples/allocation/rust/testdata/greet.wasm",
		"examples/allocation/zig/testdata/greet.wasm",
		"internal/testing/dwarftestdata/testdata/zig-cc/main.wasm",
	} {
		b, err := os.ReadFile(filepath.Join(dir, rel))
		if err != nil {
			t.Fatal(err)
		}
		mods["wazero "+rel] = b
	}
	lim := host.DefaultInstallLimits()
	var most host.BinaryStats
	for name, wasm := range mods {
		st, err := host.CheckBinary(wasm, lim, "test/real")
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		t.Logf("%s: %+v", name, st)
		most.Bytes = max(most.Bytes, st.Bytes)
		most.Functions = max(most.Functions, st.Functions)
		most.MaxFunction = max(most.MaxFunction, st.MaxFunction)
		most.MaxLocals = max(most.MaxLocals, st.MaxLocals)
		most.Locals = max(most.Locals, st.Locals)
		most.MaxNesting = max(most.MaxNesting, st.MaxNesting)
		most.Types = max(most.Types, st.Types)
		most.Imports = max(most.Imports, st.Imports)
		most.Exports = max(most.Exports, st.Exports)
		most.Globals = max(most.Globals, st.Globals)
		most.DataSegments = max(most.DataSegments, st.DataSegments)
		most.ElementEntries = max(most.ElementEntries, st.ElementEntries)
		most.CustomSections = max(most.CustomSections, st.CustomSections)
	}
	t.Logf("the most any real module has: %+v", most)
	t.Logf("margins (limit / most): size %.1fx, functions %.0fx, function size %.0fx, locals %.0fx, module locals %.0fx, nesting %.0fx, data segments %.1fx",
		float64(lim.ModuleBytes)/float64(most.Bytes), float64(lim.Functions)/float64(most.Functions),
		float64(lim.FunctionBytes)/float64(most.MaxFunction), float64(lim.Locals)/float64(most.MaxLocals),
		float64(lim.ModuleLocals)/float64(most.Locals), float64(lim.Nesting)/float64(most.MaxNesting),
		float64(lim.DataSegments)/float64(most.DataSegments))
}

// The structural check refuses nothing wazero (as the station configures
// it) accepts, over every binary in wazero's module — the spec tests of
// WebAssembly 1.0 and 2.0 and its proposals included — except what the
// station refuses on purpose: imported tables and tables over
// MaxTableElements. It decodes every instruction, so a decoding that
// differed from wazero's would end a body at the wrong place and refuse.
func TestCheckBinaryAgreesWithWazero(t *testing.T) {
	ctx := context.Background()
	cfg := wazero.NewRuntimeConfigInterpreter().WithCoreFeatures(api.CoreFeaturesV2 &^ api.CoreFeatureReferenceTypes)
	lim := host.DefaultInstallLimits()
	var valid, files int
	err := filepath.WalkDir(wazeroDir(t), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".wasm") {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files++
		// The check comes first: wazero may allocate what a hostile
		// count says, and the test data has such binaries.
		_, cerr := host.CheckBinary(b, lim, "test/spec")
		if cerr == nil {
			return nil
		}
		if strings.Contains(cerr.Error(), "must define its own tables") || strings.Contains(cerr.Error(), "elements; the limit is") {
			return nil
		}
		rt := wazero.NewRuntimeWithConfig(ctx, cfg)
		defer rt.Close(ctx)
		if _, werr := rt.CompileModule(ctx, b); werr == nil {
			valid++
			t.Errorf("%s: wazero accepts it, the check refuses it: %v", p, cerr)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 1000 {
		t.Fatalf("only %d binaries in wazero's module", files)
	}
}

// FuzzCheckBinary: whatever the bytes, the check returns (no panic, no
// hang), and what it accepts wazero can decode and validate without
// crashing the station.
func FuzzCheckBinary(f *testing.F) {
	for _, b := range [][]byte{
		wasmgen.Module(nil),
		wasmgen.Nested(2, 3),
		wasmgen.Module([]wasmgen.Func{{Locals: []wasmgen.Locals{{Count: 3, Type: 0x7f}}, Body: []byte{0x20, 0x00, 0x21, 0x01}}}),
		wasmgen.Module([]wasmgen.Func{{Body: []byte{0xfd, 0x0c, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 0x1a}}}),
		wasmgen.Module([]wasmgen.Func{{Body: []byte{0x41, 0x00, 0x0e, 0x02, 0x00, 0x00, 0x00}}}),
		wasmgen.Module(nil, wasmgen.Section(0, append(wasmgen.Name("name"), 1, 4, 1, 0, 1, 'f'))),
	} {
		f.Add(b)
	}
	ctx := context.Background()
	cfg := wazero.NewRuntimeConfigInterpreter().WithCoreFeatures(api.CoreFeaturesV2 &^ api.CoreFeatureReferenceTypes)
	lim := host.DefaultInstallLimits()
	lim.ModuleBytes = 1 << 20
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, err := host.CheckBinary(b, lim, "test/fuzz"); err != nil {
			return
		}
		rt := wazero.NewRuntimeWithConfig(ctx, cfg)
		defer rt.Close(ctx)
		rt.CompileModule(ctx, b) // must not panic or exhaust memory
	})
}

// BenchmarkCheckBinary checks the largest module the tests build (the
// probe, 11 MB); BENCHMARKS.md records it.
func BenchmarkCheckBinary(b *testing.B) {
	wasm := probe.Wasm(b)
	lim := host.DefaultInstallLimits()
	b.SetBytes(int64(len(wasm)))
	for b.Loop() {
		if _, err := host.CheckBinary(wasm, lim, "test/probe"); err != nil {
			b.Fatal(err)
		}
	}
}

// A host with an on-disk cache compiles in a child process: a module whose
// compile outlasts install.compile_timeout is refused at that bound, one
// whose compile needs more than install.compile_memory at that bound, and
// a normal module then loads and runs in the same host.
func TestCompileIsBoundedInAChild(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	bounded := func(lim host.InstallLimits) *host.Host {
		h, err := host.New(host.Options{CacheDir: dir, Install: lim})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { h.Close(ctx) })
		return h
	}
	man := func(id string) *manifest.Manifest {
		return parse(t, "id: "+id+"\nversion: \"1.0.0\"\nwasm: module.wasm\ncommands: [{name: run}]\n")
	}

	t.Run("time", func(t *testing.T) {
		h := bounded(host.InstallLimits{CompileTimeout: time.Second})
		// Each function nests just under the limit; compiling one takes
		// about a second, and there are 60.
		start := time.Now()
		_, err := h.Load(ctx, man("test/slow"), wasmgen.Nested(60, 16000))
		var le *host.InstallLimitError
		if !errors.As(err, &le) || le.Key != "install.compile_timeout" || le.Module != "test/slow" {
			t.Fatalf("got %v, want the compile timeout", err)
		}
		if took := time.Since(start); took > 30*time.Second {
			t.Errorf("refused after %s; the bound is 1s", took)
		}
		t.Log(err)
	})
	t.Run("memory", func(t *testing.T) {
		if raceDetector {
			t.Skip("the race detector's shadow memory defeats the child's address-space limit, so it has none")
		}
		h := bounded(host.InstallLimits{Functions: 2_000_000, CompileMemory: 64 << 20})
		_, err := h.Load(ctx, man("test/big"), wasmgen.Functions(1_000_000))
		var le *host.InstallLimitError
		if !errors.As(err, &le) || le.Key != "install.compile_memory" || le.Module != "test/big" {
			t.Fatalf("got %v, want the compile memory bound", err)
		}
		t.Log(err)
	})
	t.Run("wazero's refusal", func(t *testing.T) {
		h := bounded(host.InstallLimits{})
		// i32.add with nothing on the stack: well formed, not valid.
		_, err := h.Load(ctx, man("test/invalid"), wasmgen.Module([]wasmgen.Func{{Body: []byte{0x6a}}}))
		if err == nil || !strings.Contains(err.Error(), "compile: ") || !strings.Contains(err.Error(), "i32.add") {
			t.Fatalf("got %v, want wazero's validation error", err)
		}
		t.Log(err)
	})
	t.Run("a normal module", func(t *testing.T) {
		h := bounded(host.InstallLimits{})
		if _, err := h.Load(ctx, helloManifest(t), wasmbuild.ForTest(t, "examples/hello")); err != nil {
			t.Fatal(err)
		}
		out, err := h.Call(ctx, "station/hello", "greet", []byte(`{"name":"Ada"}`))
		if err != nil || string(out) != `{"greeting":"Hello, Ada!"}` {
			t.Fatalf("greet: %s, %v", out, err)
		}
	})
}

func dirExists(dir string) bool {
	fi, err := os.Stat(dir)
	return err == nil && fi.IsDir()
}
