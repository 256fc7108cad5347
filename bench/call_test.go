package bench

import (
	"bytes"
	"context"
	"os/exec"
	"testing"
	"time"

	extism "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/station-dev/station/bench/greet"
	"github.com/station-dev/station/internal/daemon"
	"github.com/station-dev/station/sdk"
	"github.com/station-dev/station/sdk/abi"
)

var (
	in   = []byte(greet.In)
	want = []byte(greet.Want)
)

func init() {
	// The native path: the same handler, registered with the same SDK, run
	// by sdk.Invoke (strict decoding, encoding, panic recovery) in-process.
	sdk.Handle("greet", func(ctx context.Context, in greet.Input) (greet.Output, error) {
		return greet.Greet(in)
	})
}

func sdkInvoke(ctx context.Context) ([]byte, error) { return sdk.Invoke(ctx, "greet", in) }

// check fails b unless out is the greeting every path must return.
func check(tb testing.TB, out []byte, err error) { checkResult(tb, out, err, want) }

// checkResult fails tb unless the call succeeded with want.
func checkResult(tb testing.TB, out []byte, err error, want []byte) {
	if err != nil {
		tb.Fatal(err)
	}
	if !bytes.Equal(out, want) {
		tb.Fatalf("got %s, want %s", out, want)
	}
}

// BenchmarkCall is the warm call of the trivial JSON command greet, the same
// function every way it can be reached, in one run. The ratios that matter
// (BENCHMARKS.md): station / wazero-raw is what the station adds to
// wazero; station / extism is the station against the peer a user would
// otherwise pick.
func BenchmarkCall(b *testing.B) {
	ctx := context.Background()
	b.Run("native-func", func(b *testing.B) {
		// The function alone: no JSON, no dispatch.
		var out greet.Output
		var err error
		for b.Loop() {
			out, err = greet.Greet(greet.Input{Name: "Ada"})
		}
		if err != nil || out.Greeting != "Hello, Ada!" {
			b.Fatal(out, err)
		}
	})
	b.Run("native", func(b *testing.B) {
		// The same SDK handler natively: JSON decoding and encoding with
		// encoding/json, compiled for the host instead of wasm.
		b.ReportAllocs()
		for b.Loop() {
			out, err := sdkInvoke(ctx)
			check(b, out, err)
		}
	})
	b.Run("wazero-raw", func(b *testing.B) {
		benchRaw(b, false)
	})
	b.Run("wazero-raw-deadline", func(b *testing.B) {
		benchRaw(b, true)
	})
	b.Run("station", func(b *testing.B) {
		// station.Run: the dispatch every front end uses, with the module's
		// deadline, its pool and limiter, the real audit writer as the
		// gates' recorder, and the result checked as JSON.
		st := sharedStation(b)
		b.ReportAllocs()
		for b.Loop() {
			out, err := st.Run(ctx, greetID, "greet", in)
			check(b, out, err)
		}
	})
	b.Run("station-rawjson", func(b *testing.B) {
		// The same dispatch of sdk.HandleRaw: what the guest's JSON costs.
		st := sharedStation(b)
		b.ReportAllocs()
		for b.Loop() {
			out, err := st.Run(ctx, greetID, "greet-raw", in)
			check(b, out, err)
		}
	})
	b.Run("station-run-process", func(b *testing.B) {
		// `station run` as a user types it: a process that opens the home,
		// loads the module from the on-disk compilation cache, calls it
		// and prints the result.
		run := stationRun(b)
		run() // see stationRun
		for b.Loop() {
			out, err := run()
			check(b, out, err)
		}
	})
	b.Run("daemon", benchDaemon)
	b.Run("station-run-process-daemon", func(b *testing.B) {
		// `station run` while `station serve` runs: the process hands the
		// call to the daemon, whose module is warm.
		run := stationRun(b)
		startDaemon(b)
		run()
		for b.Loop() {
			out, err := run()
			check(b, out, err)
		}
	})
	b.Run("extism", func(b *testing.B) {
		// The Extism Go SDK, one warm plug-in instance, with a deadline
		// (manifest timeout) as the station has.
		p := extismPlugin(b, 30*time.Second)
		b.ReportAllocs()
		for b.Loop() {
			rc, out, err := p.CallWithContext(ctx, "greet", in)
			if rc != 0 {
				b.Fatalf("rc %d", rc)
			}
			check(b, out, err)
		}
	})
}

// stationRun returns a function that runs greet with the station binary on
// the shared home. The first run after a build compiles the module: the
// binary's wazero names its cache entries by its own version, and a test
// binary's wazero calls itself "dev", so what the shared station (in this
// test binary) compiled at install does not count for the real binary. After
// one run it does, as it does for a user after `station module install`.
func stationRun(tb testing.TB) func() ([]byte, error) {
	bin := stationBin(tb)
	sharedStation(tb) // installs the module in shared.home
	return func() ([]byte, error) {
		out, err := exec.Command(bin, "--home", shared.home, "run", "--compact", "--input", greet.In, greetID, "greet").Output()
		return bytes.TrimSpace(out), err
	}
}

// benchDaemon is the call through the daemon API (`station serve`): the
// daemon's client sends a run request over a kept-alive loopback connection,
// the daemon checks it and dispatches greet to the shared station.
func benchDaemon(b *testing.B) {
	c := startDaemon(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		out, err := c.Run(ctx, greetID, "greet", in, "")
		check(b, out, err)
	}
}

// startDaemon serves the shared station's API on 127.0.0.1 until tb ends.
// While it runs, `station run` on the shared home goes through it.
func startDaemon(tb testing.TB) *daemon.Client {
	tb.Helper()
	ready := make(chan struct{})
	srv, err := daemon.New(daemon.Options{Station: sharedStation(tb), Ready: func() { close(ready) }})
	if err != nil {
		tb.Fatal(err)
	}
	ln, err := daemon.Listen("127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln, 5*time.Second) }()
	select {
	case <-ready:
	case err := <-done:
		cancel()
		tb.Fatal(err)
	}
	c := daemon.NewClient(ln.Addr().String(), srv.Token())
	tb.Cleanup(func() {
		c.Close()
		cancel()
		if err := <-done; err != nil { // and the state file is gone
			tb.Error(err)
		}
	})
	return c
}

// rawHost is the least a host can link for the station guest to run: a
// buffer table for the command name and the input, and output_set. No
// deadline (unless asked), no pool, no limits, no audit.
type rawHost struct {
	bufs [3][]byte
	out  []byte
}

func (h *rawHost) link(ctx context.Context, rt wazero.Runtime) error {
	i32 := api.ValueTypeI32
	b := rt.NewHostModuleBuilder(abi.ImportModule)
	fn := func(name string, f api.GoModuleFunc, params, results []api.ValueType) {
		b.NewFunctionBuilder().WithGoModuleFunction(f, params, results).Export(name)
	}
	fn(abi.ImportBufLen, func(_ context.Context, _ api.Module, s []uint64) {
		s[0] = uint64(len(h.bufs[uint32(s[0])%3]))
	}, []api.ValueType{i32}, []api.ValueType{i32})
	fn(abi.ImportBufRead, func(_ context.Context, m api.Module, s []uint64) {
		buf := h.bufs[uint32(s[0])%3]
		if !m.Memory().Write(uint32(s[1]), buf) {
			panic("buf_read out of range")
		}
		s[0] = uint64(len(buf))
	}, []api.ValueType{i32, i32, i32}, []api.ValueType{i32})
	fn(abi.ImportBufFree, func(context.Context, api.Module, []uint64) {}, []api.ValueType{i32}, nil)
	fn(abi.ImportOutputSet, func(_ context.Context, m api.Module, s []uint64) {
		b, ok := m.Memory().Read(uint32(s[0]), uint32(s[1]))
		if !ok {
			panic("output_set out of range")
		}
		h.out = append(h.out[:0], b...)
		s[0] = 0
	}, []api.ValueType{i32, i32}, []api.ValueType{i32})
	fn(abi.ImportLog, func(_ context.Context, _ api.Module, s []uint64) { s[0] = 0 }, []api.ValueType{i32, i32, i32}, []api.ValueType{i32})
	_, err := b.Instantiate(ctx)
	return err
}

// rawGuest instantiates the station guest in a bare wazero runtime.
func rawGuest(tb testing.TB, deadline bool) (*rawHost, api.Function) {
	ctx := context.Background()
	return rawGuestOn(tb, wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler().WithCloseOnContextDone(deadline)))
}

// rawGuestOn instantiates the station guest in rt, which it closes when tb
// ends.
func rawGuestOn(tb testing.TB, rt wazero.Runtime) (*rawHost, api.Function) {
	ctx := context.Background()
	tb.Cleanup(func() { rt.Close(ctx) })
	wasi_snapshot_preview1.MustInstantiate(ctx, rt)
	h := &rawHost{}
	if err := h.link(ctx, rt); err != nil {
		tb.Fatal(err)
	}
	mod, err := rt.InstantiateWithConfig(ctx, guestBytes(tb, "station"), wazero.NewModuleConfig().WithName("").WithStartFunctions(abi.ExportInitialize))
	if err != nil {
		tb.Fatal(err)
	}
	return h, mod.ExportedFunction(abi.ExportCall)
}

// callRaw runs one call of command on the raw guest, as the station's
// dispatch does it minus everything the station adds.
func callRaw(ctx context.Context, h *rawHost, fn api.Function, command []byte, stack *[2]uint64) ([]byte, error) {
	h.bufs[1], h.bufs[2] = command, in
	stack[0], stack[1] = 1, 2
	if err := fn.CallWithStack(ctx, stack[:]); err != nil {
		return nil, err
	}
	if uint32(stack[0]) != abi.CallOK {
		return nil, &rawError{h.out}
	}
	return h.out, nil
}

type rawError struct{ msg []byte }

func (e *rawError) Error() string { return string(e.msg) }

func benchRaw(b *testing.B, deadline bool) {
	h, fn := rawGuest(b, deadline)
	ctx := context.Background()
	command := []byte("greet")
	var stack [2]uint64
	b.ReportAllocs()
	for b.Loop() {
		cctx, cancel := ctx, context.CancelFunc(nil)
		if deadline {
			cctx, cancel = context.WithTimeout(ctx, 30*time.Second)
		}
		out, err := callRaw(cctx, h, fn, command, &stack)
		if cancel != nil {
			cancel()
		}
		check(b, out, err)
	}
}

// extismPlugin compiles the Extism guest and returns one instance. A
// non-zero timeout gives every call a deadline (Extism then runs wazero with
// WithCloseOnContextDone, as the station does).
func extismPlugin(tb testing.TB, timeout time.Duration) *extism.Plugin {
	tb.Helper()
	ctx := context.Background()
	c := extismCompiled(tb, timeout)
	p, err := c.Instance(ctx, extism.PluginInstanceConfig{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { p.Close(ctx) })
	return p
}

func extismCompiled(tb testing.TB, timeout time.Duration) *extism.CompiledPlugin {
	tb.Helper()
	ctx := context.Background()
	m := extism.Manifest{
		Wasm:    []extism.Wasm{extism.WasmData{Data: guestBytes(tb, "extism"), Name: "main"}},
		Timeout: uint64(timeout / time.Millisecond),
	}
	c, err := extism.NewCompiledPlugin(ctx, m, extism.PluginConfig{EnableWasi: true}, nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close(ctx) })
	return c
}
