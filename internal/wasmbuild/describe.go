package wasmbuild

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"

	"github.com/station-dev/station/sdk/abi"
)

// ExportDescribe is the optional export `() -> i64` through which a module
// describes its commands at build time (docs/abi.md, "station_describe");
// the Go SDK's derives each typed command's JSON Schemas from its Go
// types. Its result is the address of a JSON document in the module's
// memory (the high 32 bits) and its length (the low 32).
const ExportDescribe = "station_describe"

// Bounds on running a module's ExportDescribe.
const (
	// DefaultDescribeTimeout bounds the module's start (_initialize) and
	// its answer together.
	DefaultDescribeTimeout = 10 * time.Second
	// DefaultDescribeMemory bounds the module's memory, in bytes.
	DefaultDescribeMemory = 256 << 20
	// MaxDescription bounds the document, in bytes: 256 commands (a
	// manifest's most) with two 64 KiB schemas each fit.
	MaxDescription = 40 << 20
)

// Description is what a module's ExportDescribe says about its commands.
type Description struct {
	Commands map[string]CommandDescription `json:"commands"`
}

// CommandDescription is what a module says about one command.
type CommandDescription struct {
	// InputSchema and OutputSchema are the JSON Schemas of the command's
	// input and result, if the module could derive them.
	InputSchema  json.RawMessage `json:"input_schema,omitempty"`
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
	// Raw is true for a command whose input and result are bytes to the
	// module (the Go SDK's HandleRaw): it has no schemas.
	Raw bool `json:"raw,omitempty"`
	// Notes say why a schema is missing, for the module's author.
	Notes []string `json:"notes,omitempty"`
}

// DescribeOptions bound Describe; the zero value is the defaults.
type DescribeOptions struct {
	// Timeout is DefaultDescribeTimeout when 0.
	Timeout time.Duration
	// Memory is DefaultDescribeMemory when 0, in bytes.
	Memory uint64
}

// Describe runs the ExportDescribe of the module wasm and returns what it
// said, or nil and no error if the module has no such export (a module
// built without the Go SDK, or with an SDK that predates it).
//
// Nothing the module does reaches the host: its station imports are stubs
// that refuse as they do while no call is active (-unavailable, or
// unavailable with no buffer), WASI has no files, arguments or
// environment, and a module that imports anything else is refused. Its
// start (_initialize) and answer must finish within the timeout and the
// memory bound; its standard error is kept for the error, and otherwise
// dropped.
func Describe(ctx context.Context, wasm []byte, opts DescribeOptions) (*Description, error) {
	timeout := cmp.Or(opts.Timeout, DefaultDescribeTimeout)
	memory := cmp.Or(opts.Memory, DefaultDescribeMemory)
	// The interpreter: the module runs little (its start and one call),
	// and the compiler would take seconds to compile all of it.
	cfg := wazero.NewRuntimeConfigInterpreter().
		WithCloseOnContextDone(true).
		WithMemoryLimitPages(uint32(min(memory>>16, 1<<16))).
		WithCoreFeatures(api.CoreFeaturesV2 &^ api.CoreFeatureReferenceTypes) // as the station runs it
	rt := wazero.NewRuntimeWithConfig(ctx, cfg)
	defer rt.Close(context.Background())
	cm, err := rt.CompileModule(ctx, wasm)
	if err != nil {
		return nil, fmt.Errorf("not a module the station can run: %w", err)
	}
	fn, ok := cm.ExportedFunctions()[ExportDescribe]
	if !ok {
		return nil, nil
	}
	if p, r := fn.ParamTypes(), fn.ResultTypes(); len(p) != 0 || len(r) != 1 || r[0] != api.ValueTypeI64 {
		return nil, fmt.Errorf("%s has type %s; it must be () -> i64", ExportDescribe, signature(p, r))
	}

	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := stubImports(ctx, rt, cm); err != nil {
		return nil, err
	}
	stderr := &tail{}
	mcfg := wazero.NewModuleConfig().
		WithName("").
		WithStartFunctions(abi.ExportInitialize).
		WithSysWalltime().
		WithSysNanotime().
		WithRandSource(rand.Reader).
		WithNanosleep(func(ns int64) { sleep(ctx, time.Duration(ns)) }).
		WithStderr(stderr)
	mod, err := rt.InstantiateModule(ctx, cm, mcfg)
	if err != nil {
		return nil, failed(ctx, "start ("+abi.ExportInitialize+")", timeout, err, stderr)
	}
	res, err := mod.ExportedFunction(ExportDescribe).Call(ctx)
	if err != nil || ctx.Err() != nil { // a sleep the deadline ended returns
		return nil, failed(ctx, ExportDescribe, timeout, err, stderr)
	}
	ptr, n := uint32(res[0]>>32), uint32(res[0])
	if n > MaxDescription {
		return nil, fmt.Errorf("%s: the document is %d bytes; at most %d", ExportDescribe, n, MaxDescription)
	}
	mem := mod.Memory()
	if mem == nil {
		return nil, fmt.Errorf("%s: the module exports no memory", ExportDescribe)
	}
	b, ok := mem.Read(ptr, n)
	if !ok {
		return nil, fmt.Errorf("%s: the document (%d bytes at %#x) is outside the module's memory (%d bytes)", ExportDescribe, n, ptr, mem.Size())
	}
	var d Description
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, fmt.Errorf("%s: not a description: %v", ExportDescribe, err)
	}
	return &d, nil
}

// stubImports defines every function the module imports from the station
// as a stub that refuses, and WASI if the module imports it. Anything else
// is refused: the station would not offer it either.
func stubImports(ctx context.Context, rt wazero.Runtime, cm wazero.CompiledModule) error {
	station := rt.NewHostModuleBuilder(abi.ImportModule)
	wasi := false
	defined := map[string]bool{}
	for _, f := range cm.ImportedFunctions() {
		module, name, _ := f.Import()
		switch module {
		case wasi_snapshot_preview1.ModuleName:
			wasi = true
		case abi.ImportModule:
			if defined[name] {
				continue // Go declares an import once per declaration
			}
			defined[name] = true
			results := f.ResultTypes()
			station.NewFunctionBuilder().
				WithGoModuleFunction(api.GoModuleFunc(func(_ context.Context, _ api.Module, stack []uint64) {
					for i, t := range results {
						stack[i] = refusal(t)
					}
				}), f.ParamTypes(), results).
				Export(name)
		default:
			return fmt.Errorf("the module imports %s.%s, which the station does not offer (it would be refused at install)", quote(module), quote(name))
		}
	}
	if mems := cm.ImportedMemories(); len(mems) > 0 {
		module, name, _ := mems[0].Import()
		return fmt.Errorf("the module imports its memory (%s.%s); it must define and export its own", quote(module), quote(name))
	}
	if len(defined) > 0 {
		if _, err := station.Instantiate(ctx); err != nil {
			return err
		}
	}
	if wasi {
		if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
			return err
		}
	}
	return nil
}

// refusal is what a stub returns as a result of type t: what the station's
// imports return while no call is active (abi.StatusUnavailable).
func refusal(t api.ValueType) uint64 {
	switch t {
	case api.ValueTypeI32:
		return api.EncodeI32(-int32(abi.StatusUnavailable))
	case api.ValueTypeI64:
		return abi.Pack(abi.StatusUnavailable, 0)
	}
	return 0
}

// failed describes a start or a call of the module that failed.
func failed(ctx context.Context, what string, timeout time.Duration, err error, stderr *tail) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%s: the module did not finish within %s", what, timeout)
	}
	var exit *sys.ExitError
	if errors.As(err, &exit) {
		err = fmt.Errorf("the module exited with code %d", exit.ExitCode())
	}
	if s := stderr.String(); s != "" {
		return fmt.Errorf("%s: %w; its standard error ended with:\n%s", what, err, s)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// sleep is the module's clock sleep: it ends when ctx does.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// signature formats a function type for errors.
func signature(params, results []api.ValueType) string {
	names := func(ts []api.ValueType) string {
		s := make([]string, len(ts))
		for i, t := range ts {
			s[i] = api.ValueTypeName(t)
		}
		return strings.Join(s, ", ")
	}
	return "(" + names(params) + ") -> (" + names(results) + ")"
}

// quote quotes an import's name, which the module chose, for errors.
func quote(s string) string {
	if len(s) > 64 {
		s = s[:64] + "..."
	}
	return fmt.Sprintf("%q", s)
}

// maxTail is how much of the module's standard error tail keeps.
const maxTail = 4 << 10

// tail keeps the last maxTail bytes written to it.
type tail struct{ b []byte }

func (t *tail) Write(p []byte) (int, error) {
	n := len(p)
	if len(p) >= maxTail {
		p = p[len(p)-maxTail:]
	}
	if over := len(t.b) + len(p) - maxTail; over > 0 {
		t.b = t.b[over:]
	}
	t.b = append(t.b, p...)
	return n, nil
}

// String returns what was kept, as text. (The CLI escapes what a
// terminal would act on in every error it prints.)
func (t *tail) String() string {
	return strings.TrimSpace(string(bytes.ToValidUTF8(t.b, []byte("\uFFFD"))))
}
