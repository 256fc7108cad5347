package host

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/station-dev/station/internal/fsgate"
	"github.com/station-dev/station/internal/units"
	"github.com/station-dev/station/manifest"
	"github.com/station-dev/station/sdk/abi"
)

// Inspect is the check a module passes before it is published: what a
// station verifies at install that needs no station — the binary is within
// the install limits, it compiles,
// it speaks the guest ABI and it imports only what its manifest grants —
// without running any of its code. The hub runs it on every publish and
// `station module publish` before it uploads, so that a module no station
// would install is refused with its reasons where it is published, not
// at each station that tries it.
//
// It compiles with wazero's interpreter (no machine code is generated for
// a binary from anyone) within the limits' CompileTimeout, and never
// instantiates the module: neither its start function nor _initialize
// runs. What it cannot know is left to the station: the operator's own
// install limits and maxima, the programs requires.subprocess names on
// that machine, and whatever the module does once started.
//
// m must come from manifest.Parse, which already checked everything a
// manifest alone can get wrong (the allowlist, the schemas, the limits).
// A module that would be refused yields an *InspectError listing every
// problem found; any other error (ctx ended) is the caller's.
func Inspect(ctx context.Context, m *manifest.Manifest, wasm []byte, opts InspectOptions) error {
	lim := opts.Limits.withDefaults()
	in := &inspection{m: m, lim: lim}
	size := opts.Size
	if size == 0 {
		size = int64(len(wasm))
	}
	if size > lim.ModuleBytes {
		in.add("limits", ModuleSizeError(m.ID, size, lim.ModuleBytes).Error())
		return in.err()
	}
	if _, err := checkBinary(wasm, lim, m.ID); err != nil {
		kind := "wasm"
		var le *InstallLimitError
		if errors.As(err, &le) {
			kind = "limits"
		}
		in.add(kind, "the wasm: "+err.Error())
		return in.err()
	}
	c, closeRT, err := inspectCompile(ctx, m.ID, wasm, lim)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		kind := "wasm"
		var le *InstallLimitError
		if errors.As(err, &le) {
			kind = "limits"
		}
		in.add(kind, "the wasm does not compile: "+err.Error())
		return in.err()
	}
	defer closeRT()
	in.shape(c)
	if len(in.problems) == 0 {
		// The station's own check, as install runs it: whatever it refuses
		// is refused here too, even if the checks above missed it.
		if err := checkShape(c, offeredBy(m), memoryLimitOf(m)); err != nil {
			in.add("abi", err.Error())
		}
	}
	return in.err()
}

// InspectOptions adjust Inspect.
type InspectOptions struct {
	// Limits are the install limits to check against; zero fields are
	// the defaults, which are what a station has unless its operator
	// changed them.
	Limits InstallLimits
	// Size is the size of the binary when wasm is its Skeleton; 0 means
	// len(wasm).
	Size int64
}

// Problem is one reason a station would refuse a module.
type Problem struct {
	// Kind is what is wrong: "manifest", "wasm" (not a module that
	// compiles), "limits" (over an install limit), "abi" (the exports the
	// guest ABI requires) or "imports" (an import the manifest does not
	// grant or no station offers).
	Kind string `json:"kind"`
	// Message says what and, where there is something to do, what to do.
	Message string `json:"message"`
}

// InspectError is a module Inspect refused, with every problem it found.
type InspectError struct {
	Module   string
	Problems []Problem
}

// Error renders the refusal as one line: the module, then each problem.
func (e *InspectError) Error() string {
	msgs := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		msgs[i] = p.Message
	}
	if len(msgs) == 1 {
		return fmt.Sprintf("module %s would not install on a station: %s", e.Module, msgs[0])
	}
	return fmt.Sprintf("module %s would not install on a station (%d problems): %s", e.Module, len(msgs), strings.Join(msgs, "; "))
}

type inspection struct {
	m        *manifest.Manifest
	lim      InstallLimits
	problems []Problem
}

func (in *inspection) add(kind, msg string) {
	in.problems = append(in.problems, Problem{Kind: kind, Message: msg})
}

func (in *inspection) err() error {
	if len(in.problems) == 0 {
		return nil
	}
	return &InspectError{Module: in.m.ID, Problems: in.problems}
}

// offeredBy is the set of station imports a module with manifest m is
// offered (Module.offered, from the manifest alone).
func offeredBy(m *manifest.Manifest) map[string]bool {
	sp := m.Requires.Subprocess
	return offeredImports(sp.Any || len(sp.Allow) > 0, m.Requires.LLM.Enabled)
}

// memoryLimitOf is the memory limit a station gives a module with
// manifest m (Module.memoryLimit): its limits.memory, else DefaultMemory,
// the default of every station whose operator did not change
// limits.default_memory.
func memoryLimitOf(m *manifest.Manifest) uint64 {
	b := m.Limits.MemoryBytes
	if b == 0 {
		b = DefaultMemory
	}
	return (b + 65535) / 65536 * 65536
}

// stationImport is one import of the station module: its signature and
// the manifest key that grants it ("" for the ones every module has).
type stationImport struct {
	params, results []api.ValueType
	grant           string
}

var (
	i32x1 = []api.ValueType{api.ValueTypeI32}
	i32x2 = []api.ValueType{api.ValueTypeI32, api.ValueTypeI32}
	i32x3 = []api.ValueType{api.ValueTypeI32, api.ValueTypeI32, api.ValueTypeI32}
	i64x1 = []api.ValueType{api.ValueTypeI64}
)

// stationImports is every station import: what Module.link exports (the
// ones offered) and what Inspect checks a module's imports against.
var stationImports = map[string]stationImport{
	abi.ImportBufLen:      {i32x1, i32x1, ""},
	abi.ImportBufRead:     {i32x3, i32x1, ""},
	abi.ImportBufFree:     {i32x1, nil, ""},
	abi.ImportOutputSet:   {i32x2, i32x1, ""},
	abi.ImportLog:         {i32x3, i32x1, ""},
	abi.ImportHTTPRequest: {i32x2, i64x1, ""},
	abi.ImportProcessRun:  {i32x2, i64x1, "requires.subprocess"},
	abi.ImportLLMComplete: {i32x2, i64x1, "requires.llm"},
}

// shape lists every way c does not fit the guest ABI or the manifest's
// grants: each missing or mistyped export, each import refused.
func (in *inspection) shape(c wazero.CompiledModule) {
	exports := c.ExportedFunctions()
	marker := abi.ExportVersionPrefix + fmt.Sprint(abi.Version)
	if _, ok := exports[marker]; !ok {
		var found []string
		for name := range exports {
			if strings.HasPrefix(name, abi.ExportVersionPrefix) {
				found = append(found, name)
			}
		}
		slices.Sort(found)
		if len(found) > 0 {
			in.add("abi", fmt.Sprintf("module speaks guest ABI %s; stations speak %s (rebuild it with this station's SDK)", strings.Join(found, ", "), marker))
		} else {
			in.add("abi", fmt.Sprintf("module does not export %s: build it with the station SDK (station module build)", marker))
		}
	}
	if call, ok := exports[abi.ExportCall]; !ok {
		in.add("abi", fmt.Sprintf("module does not export %s, the function each command runs: (i32, i32) -> i32", abi.ExportCall))
	} else if !slices.Equal(call.ParamTypes(), i32x2) || !slices.Equal(call.ResultTypes(), i32x1) {
		in.add("abi", fmt.Sprintf("%s has the signature %s; it must be (i32, i32) -> i32", abi.ExportCall, signature(call.ParamTypes(), call.ResultTypes())))
	}
	mem, ok := c.ExportedMemories()[abi.ExportMemory]
	if !ok {
		in.add("abi", fmt.Sprintf("module does not export its memory as %q", abi.ExportMemory))
	} else if limit := memoryLimitOf(in.m); uint64(mem.Min())*65536 > limit {
		in.add("limits", fmt.Sprintf("module's memory starts at %s, more than its limit of %s (raise limits.memory in the module's manifest)",
			units.Bytes(int64(mem.Min())*65536), units.Bytes(int64(limit))))
	}

	offered := offeredBy(in.m)
	wasi, wasiErr := wasiFunctions()
	seen := map[string]bool{}
	for _, f := range c.ImportedFunctions() {
		mod, name, _ := f.Import()
		key := mod + "." + name
		if seen[key] {
			continue // Go emits one import per declaration
		}
		seen[key] = true
		switch mod {
		case abi.ImportModule:
			imp, ok := stationImports[name]
			switch {
			case !ok:
				in.add("imports", fmt.Sprintf("module imports %s, which no station offers (the station imports are %s)%s", key, importNames(), grantHint(name)))
			case !offered[name]:
				in.add("imports", fmt.Sprintf("module imports %s, which its manifest does not grant (add %s)", key, imp.grant))
			case !slices.Equal(f.ParamTypes(), imp.params) || !slices.Equal(f.ResultTypes(), imp.results):
				in.add("imports", fmt.Sprintf("module imports %s as %s; the station's is %s", key, signature(f.ParamTypes(), f.ResultTypes()), signature(imp.params, imp.results)))
			}
		case wasi_snapshot_preview1.ModuleName:
			if wasiErr != nil {
				continue // the station's own failure, not the module's: checkShape still runs
			}
			def, ok := wasi[name]
			switch {
			case !ok:
				in.add("imports", fmt.Sprintf("module imports %s, which the station's WASI does not provide", key))
			case !slices.Equal(f.ParamTypes(), def.ParamTypes()) || !slices.Equal(f.ResultTypes(), def.ResultTypes()):
				in.add("imports", fmt.Sprintf("module imports %s as %s; WASI's is %s", key, signature(f.ParamTypes(), f.ResultTypes()), signature(def.ParamTypes(), def.ResultTypes())))
			}
		default:
			in.add("imports", fmt.Sprintf("module imports %s; only %s and %s imports exist", key, abi.ImportModule, wasi_snapshot_preview1.ModuleName))
		}
	}
	for _, mem := range c.ImportedMemories() {
		mod, name, _ := mem.Import()
		in.add("imports", fmt.Sprintf("module imports memory %s.%s; a module must define its own memory", mod, name))
	}
}

func importNames() string {
	names := make([]string, 0, len(stationImports))
	for name := range stationImports {
		names = append(names, name)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// signature renders a function type as "(i32, i32) -> i32".
func signature(params, results []api.ValueType) string {
	names := func(ts []api.ValueType) string {
		s := make([]string, len(ts))
		for i, t := range ts {
			s[i] = api.ValueTypeName(t)
		}
		return strings.Join(s, ", ")
	}
	r := names(results)
	switch len(results) {
	case 0:
		r = "()"
	case 1:
	default:
		r = "(" + r + ")"
	}
	return "(" + names(params) + ") -> " + r
}

// wasiFunctions are the functions of the WASI the station links
// (fsgate.InstantiateWASI), by name.
var wasiFunctions = sync.OnceValues(func() (map[string]api.FunctionDefinition, error) {
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, inspectConfig())
	defer rt.Close(ctx)
	if _, err := fsgate.InstantiateWASI(ctx, rt); err != nil {
		return nil, err
	}
	mod := rt.Module(wasi_snapshot_preview1.ModuleName)
	if mod == nil {
		return nil, errors.New("wasi is not linked")
	}
	return mod.ExportedFunctionDefinitions(), nil
})

// inspectConfig is the runtime Inspect compiles in: wazero's interpreter,
// which generates no machine code, with the core features of the station's
// runtimeConfig (no reference types) and its memory bound. Without debug
// information wazero skips the custom sections other than "name" instead
// of copying them, which is what lets it compile a Skeleton; it decodes
// nothing differently (what it reads of DWARF never fails a module).
func inspectConfig() wazero.RuntimeConfig {
	return wazero.NewRuntimeConfigInterpreter().
		WithDebugInfoEnabled(false).
		WithMemoryLimitPages(wasmPages).
		WithCoreFeatures(api.CoreFeaturesV2 &^ api.CoreFeatureReferenceTypes)
}

// inspectSlots bounds the compilations Inspect runs at once in this
// process: each holds the decoded module and its interpreter code, a few
// times the binary's size.
var inspectSlots = make(chan struct{}, 2)

// inspectCompile compiles wasm in the interpreter within lim's
// CompileTimeout. wazero's interpreter does not stop a compilation when its
// context ends, so a compilation past the deadline is abandoned: it keeps
// its slot until it finishes (checkBinary bounded what it reads), so
// abandoned ones never pile up.
func inspectCompile(ctx context.Context, id string, wasm []byte, lim InstallLimits) (wazero.CompiledModule, func(), error) {
	select {
	case inspectSlots <- struct{}{}:
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
	type result struct {
		c   wazero.CompiledModule
		err error
	}
	done := make(chan result, 1)
	rt := wazero.NewRuntimeWithConfig(context.Background(), inspectConfig())
	go func() {
		defer func() { <-inspectSlots }()
		c, err := rt.CompileModule(context.Background(), wasm)
		done <- result{c, err}
	}()
	t := time.NewTimer(lim.CompileTimeout)
	defer t.Stop()
	select {
	case r := <-done:
		if r.err != nil {
			rt.Close(context.Background())
			return nil, nil, r.err
		}
		return r.c, func() { rt.Close(context.Background()) }, nil
	case <-t.C:
		go func() { <-done; rt.Close(context.Background()) }()
		return nil, nil, &InstallLimitError{Module: id, What: "compiling it takes longer", Limit: lim.CompileTimeout.String(), Key: "install.compile_timeout"}
	case <-ctx.Done():
		go func() { <-done; rt.Close(context.Background()) }()
		return nil, nil, ctx.Err()
	}
}

// Skeleton keeps, of a binary written to it, what Inspect reads: all of it
// except the contents of the custom sections other than "name" (debug
// information, producers, padding), which neither checkBinary nor wazero
// reads; each such section stays, with its name and nothing else. A hub
// that receives a module as a stream holds its skeleton, not its custom
// sections. What is not a well-formed sequence of sections is kept as it
// is, from where it stops being one, so Inspect refuses the skeleton of a
// binary exactly when it refuses the binary. Pass Size as
// InspectOptions.Size.
type Skeleton struct {
	out  []byte
	n    int64
	head int    // bytes of the module header kept
	hdr  []byte // the header of the section being read: id, size, and a custom section's name
	keep int64  // bytes of the current section still to keep
	skip int64  // bytes of a custom section's contents still to drop
	raw  bool   // not well formed from here on: keep everything
	// at and orig are the offset of the last custom section whose
	// contents were dropped, in out, and its header as it was: restored
	// if the binary ends inside those contents.
	at   int
	orig []byte
}

// maxSkeletonName bounds the custom section names Skeleton reads; a
// section with a longer one is kept whole.
const maxSkeletonName = 4096

// Write implements io.Writer; it never fails.
func (s *Skeleton) Write(p []byte) (int, error) {
	n := len(p)
	s.n += int64(n)
	if s.head < 8 { // the magic number and the version
		k := min(8-s.head, len(p))
		s.out = append(s.out, p[:k]...)
		s.head += k
		p = p[k:]
	}
	for len(p) > 0 {
		switch {
		case s.raw:
			s.out = append(s.out, p...)
			return n, nil
		case s.keep > 0:
			k := int(min(s.keep, int64(len(p))))
			s.out = append(s.out, p[:k]...)
			s.keep -= int64(k)
			p = p[k:]
		case s.skip > 0:
			k := int(min(s.skip, int64(len(p))))
			s.skip -= int64(k)
			p = p[k:]
		default:
			s.hdr = append(s.hdr, p[0])
			p = p[1:]
			s.header()
		}
	}
	return n, nil
}

// header looks at the section header read so far and, once it is whole,
// decides what to keep of the section.
func (s *Skeleton) header() {
	size, sn, ok := uleb(s.hdr[1:])
	if !ok {
		if sn < 0 {
			s.verbatim(0, true)
		}
		return
	}
	if s.hdr[0] != secCustom {
		s.verbatim(int64(size), false)
		return
	}
	body := s.hdr[1+sn:]
	if uint64(len(body)) > uint64(size) {
		s.verbatim(0, true) // the name runs past its section
		return
	}
	nameLen, nn, ok := uleb(body)
	switch {
	case !ok && nn < 0, ok && uint64(nn)+nameLen > uint64(size):
		s.verbatim(0, true)
		return
	case !ok:
		return
	case nameLen > maxSkeletonName:
		s.verbatim(int64(size)-int64(len(body)), false)
		return
	case uint64(len(body)-nn) < nameLen:
		return
	}
	if string(body[nn:]) == "name" {
		s.verbatim(int64(size)-int64(len(body)), false)
		return
	}
	s.at, s.orig = len(s.out), append(s.orig[:0], s.hdr...)
	s.out = append(binary.AppendUvarint(append(s.out, secCustom), uint64(len(body))), body...) // LEB128
	s.skip = int64(size) - int64(len(body))
	s.hdr = s.hdr[:0]
}

// verbatim keeps the header read and the next keep bytes (all that
// follows, if raw).
func (s *Skeleton) verbatim(keep int64, raw bool) {
	s.out = append(s.out, s.hdr...)
	s.hdr = s.hdr[:0]
	s.keep, s.raw = keep, raw
}

// Bytes returns the skeleton of what was written.
func (s *Skeleton) Bytes() []byte {
	out := append(s.out, s.hdr...)
	if s.skip > 0 {
		// The binary ends inside the contents it dropped: keep the
		// section's header as it was, which says it runs past the end.
		out = append(out[:s.at:s.at], s.orig...)
	}
	return out
}

// Size returns how many bytes were written.
func (s *Skeleton) Size() int64 { return s.n }

// uleb decodes an unsigned LEB128 of at most 32 bits from the start of b:
// the value, its length and true; or false and a length of 0 when b ends
// first, -1 when it is longer than 5 bytes or over 32 bits.
func uleb(b []byte) (uint64, int, bool) {
	var v uint64
	for i := 0; i < len(b); i++ {
		if i == 5 {
			return 0, -1, false
		}
		v |= uint64(b[i]&0x7f) << (7 * i)
		if b[i]&0x80 == 0 {
			if v > 1<<32-1 {
				return 0, -1, false
			}
			return v, i + 1, true
		}
	}
	if len(b) >= 5 {
		return 0, -1, false
	}
	return 0, 0, false
}
