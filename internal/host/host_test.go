package host_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/station-dev/station/internal/host"
	"github.com/station-dev/station/internal/probe"
	"github.com/station-dev/station/internal/sandbox"
	"github.com/station-dev/station/internal/wasmbuild"
	"github.com/station-dev/station/manifest"
)

// newHost returns a host whose modules are compiled in this process, with
// the compilation cache every test shares (wasmbuild.CacheForTest).
func newHost(t testing.TB, opts host.Options) *host.Host {
	t.Helper()
	opts.Cache = wasmbuild.CacheForTest()
	h, err := host.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close(context.Background()) })
	return h
}

func parse(t testing.TB, src string) *manifest.Manifest {
	t.Helper()
	m, err := manifest.Parse("module.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func helloManifest(t testing.TB) *manifest.Manifest {
	t.Helper()
	m, err := manifest.Load(filepath.Join(repoRoot(t), "examples", "hello"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func repoRoot(t testing.TB) string {
	t.Helper()
	r, err := wasmbuild.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestCallHello(t *testing.T) {
	h := newHost(t, host.Options{})
	if _, err := h.Load(context.Background(), helloManifest(t), wasmbuild.ForTest(t, "examples/hello")); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		out, err := h.Call(context.Background(), "station/hello", "greet", []byte(`{"name":"Ada"}`))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := string(out), `{"greeting":"Hello, Ada!"}`; got != want {
			t.Fatalf("got %s, want %s", got, want)
		}
	}
	_, err := h.Call(context.Background(), "station/hello", "nope", nil)
	var ce *host.CallError
	if !errors.As(err, &ce) || ce.Kind != host.KindUnknown || !strings.Contains(err.Error(), "greet") {
		t.Fatalf("unknown command: got %v", err)
	}
	if _, err := h.Call(context.Background(), "station/missing", "greet", nil); !errors.Is(err, host.ErrUnknownModule) {
		t.Fatalf("unknown module: got %v", err)
	}
}

const probeNoNet = `id: test/probe
version: "1.0.0"
wasm: module.wasm
commands: [{name: run}]
requires: {network: {allow: []}, subprocess: false, filesystem_writes: []}
`

// A module that imports something the station does not offer does not load;
// a module without network grants loads and every request is denied.
func TestLoadRefusesUnofferedImports(t *testing.T) {
	h := newHost(t, host.Options{})
	_, err := h.Load(context.Background(), parse(t, probeNoNet), probe.Wasm(t, probe.ExtraImportTag))
	if err == nil || !strings.Contains(err.Error(), "station.exec") || !strings.Contains(err.Error(), "subprocess") {
		t.Fatalf("probe importing station.exec: got %v", err)
	}
	if _, err := h.Load(context.Background(), parse(t, probeNoNet), probe.Wasm(t)); err != nil {
		t.Fatal(err)
	}
	out, err := h.Call(context.Background(), "test/probe", probe.Command, probe.Run(probe.HTTP("GET", "https://api.stripe.com/")))
	if err != nil {
		t.Fatal(err)
	}
	res, err := probe.Decode(out)
	if err != nil {
		t.Fatal(err)
	}
	if res[0].OK || res[0].Error == nil || res[0].Error.Code != "denied" || !strings.Contains(res[0].Error.Reason, "(none)") {
		t.Fatalf("request under an empty allowlist: got %+v", res[0])
	}
}

// Host calls made while no call is active (from the start function) are
// refused; and the audit recorder sees host-boundary faults.
func TestFaultIsRecorded(t *testing.T) {
	var mu sync.Mutex
	var got []sandbox.Decision
	h := newHost(t, host.Options{Recorder: sandbox.RecorderFunc(func(d sandbox.Decision) {
		mu.Lock()
		got = append(got, d)
		mu.Unlock()
	})})
	if _, err := h.Load(context.Background(), parse(t, probeNoNet), probe.Wasm(t, probe.NoNetworkTag)); err != nil {
		t.Fatal(err)
	}
	_, err := h.Call(context.Background(), "test/probe", probe.Command, probe.Run(probe.Raw("output_set", 0xfffffff0, 64)))
	var ce *host.CallError
	if !errors.As(err, &ce) || ce.Kind != host.KindFault || ce.Module != "test/probe" {
		t.Fatalf("got %v, want a fault naming test/probe", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 || got[0].Capability != sandbox.Host || got[0].Allowed || got[0].Module != "test/probe" || got[0].Command != probe.Command {
		t.Fatalf("decisions: %+v", got)
	}
}

// Calls racing with reloads of the same module all succeed: a call either
// runs on the old module (which stays open until it finishes) or on the new.
func TestReloadWhileCalling(t *testing.T) {
	h := newHost(t, host.Options{})
	wasm := wasmbuild.ForTest(t, "examples/hello")
	man := helloManifest(t)
	if _, err := h.Load(context.Background(), man, wasm); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if _, err := h.Call(context.Background(), "station/hello", "greet", []byte(`{"name":"x"}`)); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for i := 0; i < 3; i++ {
		if _, err := h.Load(context.Background(), man, wasm); err != nil {
			t.Fatal(err)
		}
	}
	cancel()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// A manifest may lower (or, within the station's maximum, raise) its own
// size limits; they are enforced before anything is allocated.
func TestManifestSizeLimits(t *testing.T) {
	h := newHost(t, host.Options{})
	man := parse(t, probeNoNet+"limits: {max_output: 1KiB, max_input: 2KiB}\n")
	if _, err := h.Load(context.Background(), man, probe.Wasm(t, probe.NoNetworkTag)); err != nil {
		t.Fatal(err)
	}
	_, err := h.Call(context.Background(), "test/probe", probe.Command, probe.Run(probe.Output(4096)))
	if err == nil || !(strings.Contains(err.Error(), "too_large") || strings.Contains(err.Error(), "exceeds the limit of 1024")) {
		t.Errorf("4 KiB result under max_output 1KiB: got %v", err)
	}
	_, err = h.Call(context.Background(), "test/probe", probe.Command, probe.Run(probe.Log(strings.Repeat("x", 3000))))
	var ce *host.CallError
	if !errors.As(err, &ce) || ce.Kind != host.KindInput {
		t.Errorf("3 KB input under max_input 2KiB: got %v, want an input error", err)
	}
	if _, err := h.Call(context.Background(), "test/probe", probe.Command, probe.Run(probe.Output(100))); err != nil {
		t.Errorf("a small result: %v", err)
	}
}

// A command's input_schema is checked before the guest runs: an input that
// does not match it fails with an input error that quotes the schema's
// complaint, and the module is not entered; a matching one runs.
func TestInputSchema(t *testing.T) {
	h := newHost(t, host.Options{})
	man := parse(t, `id: test/probe
version: "1.0.0"
wasm: module.wasm
commands:
  - name: run
    input_schema:
      type: object
      properties: {actions: {type: array, maxItems: 1}}
      required: [actions]
requires: {network: {allow: []}, subprocess: false, filesystem_writes: []}
`)
	if _, err := h.Load(context.Background(), man, probe.Wasm(t, probe.NoNetworkTag)); err != nil {
		t.Fatal(err)
	}
	for _, in := range [][]byte{probe.Run(probe.Output(1), probe.Output(1)), []byte(`{}`), nil, []byte(`[1]`), []byte(`{"actions": []} {}`), []byte(`{"actions":`)} {
		_, err := h.Call(context.Background(), "test/probe", probe.Command, in)
		var ce *host.CallError
		if !errors.As(err, &ce) || ce.Kind != host.KindInput || !strings.Contains(err.Error(), "input_schema") {
			t.Errorf("input %s: got %v, want an input error naming the input_schema", in, err)
		}
	}
	if _, err := h.Call(context.Background(), "test/probe", probe.Command, probe.Run(probe.Output(10))); err != nil {
		t.Errorf("a matching input: %v", err)
	}
}
