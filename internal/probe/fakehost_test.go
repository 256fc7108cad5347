//go:build !wasip1

package probe_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/station-dev/station/internal/wasmbuild"
	"github.com/station-dev/station/sdk/abi"
)

// fakeHost is a minimal implementation of the station side of ABI 1
// (docs/abi.md), enough to exercise the SDK and the probe end to end. It is
// not the station's host (internal/host): no gates, one instance, one call at
// a time.
type fakeHost struct {
	t      testing.TB
	rt     wazero.Runtime
	mod    api.Module
	call   api.Function
	stdout bytes.Buffer

	mu      sync.Mutex
	active  bool
	bufs    map[uint32][]byte
	next    uint32
	output  []byte
	logs    []string
	http    func(abi.HTTPRequest) (abi.Status, any)
	maxOut  int
	maxBufs int
}

// compilationCache is shared by every fake host, and with the other
// packages' tests (on disk), so each guest is compiled once.
var compilationCache = wasmbuild.CacheForTest()

// newFakeHost instantiates wasm. imports lists the station imports to offer
// (all of them when nil).
func newFakeHost(t testing.TB, wasm []byte, imports ...string) (*fakeHost, error) {
	return newFakeHostWith(t, wazero.NewRuntimeConfig(), wasm, imports...)
}

// newFakeHostWith is newFakeHost with another engine: tests that only link a
// module use the interpreter, which compiles an 11 MB module much faster
// (under -race especially).
func newFakeHostWith(t testing.TB, cfg wazero.RuntimeConfig, wasm []byte, imports ...string) (*fakeHost, error) {
	ctx := context.Background()
	h := &fakeHost{t: t, bufs: map[uint32][]byte{}, maxOut: 16 << 20, maxBufs: 64}
	cfg = cfg.WithCloseOnContextDone(true).WithMemoryLimitPages(2048).WithCompilationCache(compilationCache)
	h.rt = wazero.NewRuntimeWithConfig(ctx, cfg)
	t.Cleanup(func() { h.rt.Close(ctx) })
	wasi_snapshot_preview1.MustInstantiate(ctx, h.rt)
	offer := map[string]bool{}
	for _, name := range imports {
		offer[name] = true
	}
	i32, i64 := api.ValueTypeI32, api.ValueTypeI64
	b := h.rt.NewHostModuleBuilder(abi.ImportModule)
	fn := func(name string, f api.GoModuleFunc, params, results []api.ValueType) {
		if len(imports) == 0 || offer[name] {
			b.NewFunctionBuilder().WithGoModuleFunction(f, params, results).Export(name)
		}
	}
	fn(abi.ImportBufLen, h.bufLen, []api.ValueType{i32}, []api.ValueType{i32})
	fn(abi.ImportBufRead, h.bufRead, []api.ValueType{i32, i32, i32}, []api.ValueType{i32})
	fn(abi.ImportBufFree, h.bufFree, []api.ValueType{i32}, nil)
	fn(abi.ImportOutputSet, h.outputSet, []api.ValueType{i32, i32}, []api.ValueType{i32})
	fn(abi.ImportLog, h.log, []api.ValueType{i32, i32, i32}, []api.ValueType{i32})
	fn(abi.ImportHTTPRequest, h.httpRequest, []api.ValueType{i32, i32}, []api.ValueType{i64})
	if _, err := b.Instantiate(ctx); err != nil {
		t.Fatal(err)
	}
	compiled, err := h.rt.CompileModule(ctx, wasm)
	if err != nil {
		return nil, fmt.Errorf("compile: %w", err)
	}
	modCfg := wazero.NewModuleConfig().WithStartFunctions(abi.ExportInitialize).
		WithStdout(&h.stdout).WithStderr(&h.stdout).
		WithSysWalltime().WithSysNanotime().WithSysNanosleep()
	h.mod, err = h.rt.InstantiateModule(ctx, compiled, modCfg)
	if err != nil {
		return nil, fmt.Errorf("instantiate: %w", err)
	}
	if h.mod.ExportedFunction(abi.ExportVersionPrefix+"1") == nil {
		return nil, fmt.Errorf("module does not export %s1", abi.ExportVersionPrefix)
	}
	h.call = h.mod.ExportedFunction(abi.ExportCall)
	return h, nil
}

// Call runs command with input and returns the call's code and output.
func (h *fakeHost) Call(ctx context.Context, command string, input []byte) (int32, []byte, error) {
	h.mu.Lock()
	h.active, h.output = true, nil
	c := h.newBuf([]byte(command))
	var in uint32
	if len(input) > 0 {
		in = h.newBuf(input)
	}
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		h.active, h.bufs = false, map[uint32][]byte{}
		h.mu.Unlock()
	}()
	res, err := h.call.Call(ctx, uint64(c), uint64(in))
	h.mu.Lock()
	defer h.mu.Unlock()
	if err != nil {
		return -1, nil, err
	}
	return int32(res[0]), h.output, nil
}

// Logs returns the log lines so far.
func (h *fakeHost) Logs() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.logs...)
}

func neg(s abi.Status) uint64 { return uint64(uint32(-int32(s))) }

func (h *fakeHost) newBuf(b []byte) uint32 {
	if len(h.bufs) >= h.maxBufs {
		return 0
	}
	h.next++
	h.bufs[h.next] = b
	return h.next
}

func (h *fakeHost) bufLen(_ context.Context, _ api.Module, s []uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	b, ok := h.bufs[uint32(s[0])]
	if !ok || !h.active {
		s[0] = uint64(0xffffffff)
		return
	}
	s[0] = uint64(len(b))
}

func (h *fakeHost) bufRead(_ context.Context, m api.Module, s []uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	hd, ptr, n := uint32(s[0]), uint32(s[1]), uint32(s[2])
	b, ok := h.bufs[hd]
	switch {
	case !h.active:
		s[0] = neg(abi.StatusUnavailable)
	case !ok:
		s[0] = neg(abi.StatusInvalid)
	case int(n) < len(b):
		s[0] = neg(abi.StatusTooLarge)
	case !m.Memory().Write(ptr, b):
		s[0] = neg(abi.StatusFault)
	default:
		delete(h.bufs, hd)
		s[0] = uint64(len(b))
	}
}

func (h *fakeHost) bufFree(_ context.Context, _ api.Module, s []uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.bufs, uint32(s[0]))
}

func (h *fakeHost) outputSet(_ context.Context, m api.Module, s []uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ptr, n := uint32(s[0]), uint32(s[1])
	if !h.active {
		s[0] = neg(abi.StatusUnavailable)
		return
	}
	if int(n) > h.maxOut {
		s[0] = neg(abi.StatusTooLarge)
		return
	}
	b, ok := m.Memory().Read(ptr, n)
	if !ok {
		s[0] = neg(abi.StatusFault)
		return
	}
	h.output = append([]byte(nil), b...)
	s[0] = 0
}

func (h *fakeHost) log(_ context.Context, m api.Module, s []uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	level, ptr, n := int32(s[0]), uint32(s[1]), uint32(s[2])
	if !h.active {
		s[0] = neg(abi.StatusUnavailable)
		return
	}
	if n > 64<<10 {
		s[0] = neg(abi.StatusTooLarge)
		return
	}
	b, ok := m.Memory().Read(ptr, n)
	if !ok {
		s[0] = neg(abi.StatusFault)
		return
	}
	h.logs = append(h.logs, fmt.Sprintf("%d %s", level, b))
	s[0] = 0
}

func (h *fakeHost) httpRequest(_ context.Context, m api.Module, s []uint64) {
	ptr, n := uint32(s[0]), uint32(s[1])
	h.mu.Lock()
	active, handler := h.active, h.http
	h.mu.Unlock()
	if !active {
		s[0] = abi.Pack(abi.StatusUnavailable, 0)
		return
	}
	reply := func(st abi.Status, doc any) {
		b, _ := json.Marshal(doc)
		h.mu.Lock()
		defer h.mu.Unlock()
		s[0] = abi.Pack(st, h.newBuf(b))
	}
	raw, ok := m.Memory().Read(ptr, n)
	if !ok {
		reply(abi.StatusFault, abi.Error{Code: "fault", Message: "request pointer and length are outside guest memory"})
		return
	}
	var req abi.HTTPRequest
	if err := json.Unmarshal(raw, &req); err != nil {
		reply(abi.StatusInvalid, abi.Error{Code: "invalid", Message: "request document: " + err.Error()})
		return
	}
	if handler == nil {
		reply(abi.StatusFailed, abi.Error{Code: "failed", Message: "no network in this test"})
		return
	}
	reply(handler(req))
}

// withTimeout returns a context for one call.
func withTimeout(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
