package host

import (
	"errors"
	"fmt"
	"time"

	"github.com/station-dev/station/manifest"
	"github.com/station-dev/station/sdk/abi"
)

// InstallLimits bound what a module's binary may contain and what compiling
// it may cost (install.* in config.yaml, docs/config.md). A zero field means
// its default (DefaultInstallLimits). The binary is checked against them
// before wazero sees it (checkBinary); compilation is bounded by
// CompileTimeout and CompileMemory (compile.go).
type InstallLimits struct {
	ModuleBytes   int64 // install.max_module_size: the whole binary
	Functions     int   // install.max_functions: imported and defined
	FunctionBytes int   // install.max_function_size: one code body, its local declarations included
	Locals        int   // install.max_locals: one function's parameters and declared locals
	ModuleLocals  int64 // install.max_module_locals: declared locals of all functions together
	Nesting       int   // install.max_nesting: blocks, loops and ifs open at once in one function
	Types         int   // install.max_types
	Imports       int   // install.max_imports
	Exports       int   // install.max_exports
	Globals       int   // install.max_globals: imported and defined
	DataSegments  int   // install.max_data_segments
	// CompileTimeout bounds compiling the module (install.compile_timeout).
	CompileTimeout time.Duration
	// CompileMemory bounds the memory compiling it may take, where the
	// station compiles in a child process (install.compile_memory).
	CompileMemory uint64
}

// The defaults of InstallLimits; RATIONALE.md ("Why these install limits?")
// says where each comes from and what the modules the tests build use.
const (
	DefaultMaxModuleBytes   = 64 << 20
	DefaultMaxFunctions     = 200_000
	DefaultMaxFunctionBytes = 7_654_321
	DefaultMaxLocals        = 50_000
	DefaultMaxModuleLocals  = 8_000_000
	DefaultMaxNesting       = 16384
	DefaultMaxTypes         = 100_000
	DefaultMaxImports       = 100_000
	DefaultMaxExports       = 100_000
	DefaultMaxGlobals       = 100_000
	DefaultMaxDataSegments  = 100_000
	DefaultCompileTimeout   = 2 * time.Minute
	DefaultCompileMemory    = 3 << 30
)

// MaxTableElements bounds the initial (and declared maximum) size of every
// table a module declares. Tables live in host memory, outside the module's
// memory limit: wazero backs each element with a Go word. Go and Rust guests
// declare tables of a few thousand to a few hundred thousand functions.
//
// Growth at run time is closed separately: the station compiles modules
// without the reference-types feature, so table.grow does not validate (see
// RATIONALE.md, "Why are tables bounded and reference types off?").
const MaxTableElements = 1 << 20

// Fixed bounds: no toolchain comes near them and a browser refuses more
// (the WebAssembly JS API's implementation limits), so they are not
// configurable.
const (
	// MaxParams and MaxResults bound one function type.
	MaxParams  = 1000
	MaxResults = 1000
	// MaxCustomSections bounds the custom sections of a module (wazero keeps
	// each one it is given).
	MaxCustomSections = 1024
	// MaxElementEntries bounds the table entries all element segments
	// together initialize: no more than one table may hold.
	MaxElementEntries = MaxTableElements
)

// DefaultInstallLimits returns the default InstallLimits.
func DefaultInstallLimits() InstallLimits {
	return InstallLimits{
		ModuleBytes:    DefaultMaxModuleBytes,
		Functions:      DefaultMaxFunctions,
		FunctionBytes:  DefaultMaxFunctionBytes,
		Locals:         DefaultMaxLocals,
		ModuleLocals:   DefaultMaxModuleLocals,
		Nesting:        DefaultMaxNesting,
		Types:          DefaultMaxTypes,
		Imports:        DefaultMaxImports,
		Exports:        DefaultMaxExports,
		Globals:        DefaultMaxGlobals,
		DataSegments:   DefaultMaxDataSegments,
		CompileTimeout: DefaultCompileTimeout,
		CompileMemory:  DefaultCompileMemory,
	}
}

// withDefaults fills l's zero fields from DefaultInstallLimits.
func (l InstallLimits) withDefaults() InstallLimits {
	d := DefaultInstallLimits()
	return InstallLimits{
		ModuleBytes:    pick(l.ModuleBytes, d.ModuleBytes),
		Functions:      pick(l.Functions, d.Functions),
		FunctionBytes:  pick(l.FunctionBytes, d.FunctionBytes),
		Locals:         pick(l.Locals, d.Locals),
		ModuleLocals:   pick(l.ModuleLocals, d.ModuleLocals),
		Nesting:        pick(l.Nesting, d.Nesting),
		Types:          pick(l.Types, d.Types),
		Imports:        pick(l.Imports, d.Imports),
		Exports:        pick(l.Exports, d.Exports),
		Globals:        pick(l.Globals, d.Globals),
		DataSegments:   pick(l.DataSegments, d.DataSegments),
		CompileTimeout: pick(l.CompileTimeout, d.CompileTimeout),
		CompileMemory:  pick(l.CompileMemory, d.CompileMemory),
	}
}

// InstallLimitError is a module refused because its binary, or compiling
// it, exceeds an install limit. Like a sandbox.LimitError it names the
// module, what exceeded the limit and the limit; Key is the config.yaml key
// that raises it ("" for the fixed bounds).
type InstallLimitError struct {
	Module string
	What   string // e.g. "function 17 nests blocks 100000 deep"
	Limit  string // e.g. "16384", "64MiB", "2m0s"
	Key    string // e.g. "install.max_nesting"
}

// Error renders the refusal as one line, e.g.
//
//	limit exceeded: module dave/x: install: function 17 nests blocks 100000 deep; the limit is 16384 (the operator can raise it with install.max_nesting in config.yaml)
func (e *InstallLimitError) Error() string {
	how := "a fixed limit of this station: no toolchain emits more"
	if e.Key != "" {
		how = "the operator can raise it with " + e.Key + " in config.yaml"
	}
	return fmt.Sprintf("limit exceeded: module %s: install: %s; the limit is %s (%s)", e.Module, e.What, e.Limit, how)
}

// ModuleSizeError is the refusal of a binary larger than limit bytes
// (install.max_module_size); got is its size, or -1 when only "larger" is
// known.
func ModuleSizeError(module string, got, limit int64) *InstallLimitError {
	what := fmt.Sprintf("the module's binary is %d bytes", got)
	if got < 0 {
		what = fmt.Sprintf("the module's binary is larger than %d bytes", limit)
	}
	return &InstallLimitError{Module: module, What: what, Limit: manifest.FormatSize(uint64(limit)), Key: "install.max_module_size"}
}

// binaryStats is what checkBinary measured, for tests and benchmarks.
type binaryStats struct {
	Bytes     int
	Functions int // imported and defined
	Types     int
	Imports   int
	// StationImports are the names the module imports from the station
	// module (abi.ImportModule), in order.
	StationImports []string
	Exports        int
	Globals        int
	DataSegments   int
	ElementEntries int
	CustomSections int
	MaxFunction    int   // the largest code body, in bytes
	MaxLocals      int   // the most parameters and locals of one function
	Locals         int64 // declared locals of all functions
	MaxNesting     int   // the deepest nesting of blocks in any function
	Instructions   int64
}

// malformed is a binary the checker cannot read as a module. wazero would
// refuse it too; the checker's message says where.
type malformed struct {
	off int
	msg string
}

func (e *malformed) Error() string {
	return fmt.Sprintf("malformed module at offset %#x: %s", e.off, e.msg)
}

// checkBinary reads the whole binary once, in time linear in its size and
// with memory proportional to its number of types and functions, and
// refuses it if it exceeds lim or is not a module this station can run:
// every section length and vector count must fit in what holds it (wazero
// allocates what a count says before reading the entries), and every
// instruction of every function body is decoded, so that nesting is
// counted exactly and an opcode the station's wazero configuration does not
// know is refused here, not skipped. It does not validate types: wazero
// does that next, on a binary now known to be bounded.
func checkBinary(wasm []byte, lim InstallLimits, module string) (binaryStats, error) {
	c := &checker{b: wasm, lim: lim, module: module}
	err := c.binary()
	c.st.Bytes = len(wasm)
	return c.st, err
}

type checker struct {
	b      []byte
	i      int
	lim    InstallLimits
	module string
	st     binaryStats

	typeParams []uint32 // parameters of each type
	funcTypes  []uint32 // type of each defined function
	funcs      int      // imported functions, then all
	globals    int
	hasName    bool
}

func (c *checker) fail(off int, format string, args ...any) error {
	return &malformed{off: off, msg: fmt.Sprintf(format, args...)}
}

func (c *checker) over(what, limit, key string) error {
	return &InstallLimitError{Module: c.module, What: what, Limit: limit, Key: key}
}

func count(n int) string { return fmt.Sprint(n) }

// bounded reads the entry count of a section's vector (s.vec, each entry
// at least min bytes) and refuses, naming the config key, a count over
// limit; what is the refusal's text with a %d for the count.
func (c *checker) bounded(s *checker, section string, min, limit int, what, key string) (int, error) {
	n, err := s.vec(section, min)
	if err != nil {
		return 0, err
	}
	if n > limit {
		return 0, c.over(fmt.Sprintf(what, n), count(limit), key)
	}
	return n, nil
}

// Section ids and the order they must appear in (custom sections anywhere).
const (
	secCustom    = 0
	secType      = 1
	secImport    = 2
	secFunction  = 3
	secTable     = 4
	secMemory    = 5
	secGlobal    = 6
	secExport    = 7
	secStart     = 8
	secElement   = 9
	secCode      = 10
	secData      = 11
	secDataCount = 12
)

// sectionName names a section id for messages.
func sectionName(id byte) string {
	names := [...]string{"custom", "type", "import", "function", "table", "memory", "global", "export", "start", "element", "code", "data", "data count"}
	if int(id) < len(names) {
		return "the " + names[id] + " section"
	}
	return fmt.Sprintf("section %d", id)
}

// sectionRank orders the known sections: the data count section comes
// between the element and the code sections.
var sectionRank = [...]int{secType: 1, secImport: 2, secFunction: 3, secTable: 4, secMemory: 5, secGlobal: 6,
	secExport: 7, secStart: 8, secElement: 9, secDataCount: 10, secCode: 11, secData: 12}

func (c *checker) binary() error {
	b := c.b
	if int64(len(b)) > c.lim.ModuleBytes {
		return ModuleSizeError(c.module, int64(len(b)), c.lim.ModuleBytes)
	}
	if len(b) < 8 || string(b[:4]) != "\x00asm" {
		return errors.New("not a WebAssembly module")
	}
	if string(b[4:8]) != "\x01\x00\x00\x00" {
		return fmt.Errorf("WebAssembly binary version %#x: this station runs core modules of version 1 (a component is not a module)", b[4:8])
	}
	c.i = 8
	rank := 0
	codeSeen := false
	for c.i < len(b) {
		start := c.i
		id := b[c.i]
		c.i++
		size, err := c.u32()
		if err != nil {
			return err
		}
		if int64(size) > int64(len(b)-c.i) {
			return c.fail(start, "%s is %d bytes long, past the end of the file (%d bytes remain)", sectionName(id), size, len(b)-c.i)
		}
		end := c.i + int(size)
		if id != secCustom {
			if int(id) >= len(sectionRank) || sectionRank[id] == 0 {
				if id == 13 {
					return c.fail(start, "a tag section: exception handling is not enabled on this station")
				}
				return c.fail(start, "unknown section id %d", id)
			}
			if sectionRank[id] <= rank {
				return c.fail(start, "%s is out of order or repeated", sectionName(id))
			}
			rank = sectionRank[id]
		}
		s := &checker{b: b[:end], i: c.i}
		switch id {
		case secCustom:
			err = c.custom(s)
		case secType:
			err = c.types(s)
		case secImport:
			err = c.imports(s)
		case secFunction:
			err = c.functions(s)
		case secTable:
			err = c.tables(s)
		case secMemory:
			err = c.memories(s)
		case secGlobal:
			err = c.globalSection(s)
		case secExport:
			err = c.exports(s)
		case secStart:
			_, err = s.u32()
		case secElement:
			err = c.elements(s)
		case secDataCount:
			_, err = s.u32()
		case secCode:
			codeSeen = true
			err = c.code(s)
		case secData:
			err = c.data(s)
		}
		if err != nil {
			return err
		}
		if id != secCustom && s.i != end {
			return c.fail(s.i, "%s has %d bytes left over", sectionName(id), end-s.i)
		}
		c.i = end
	}
	if !codeSeen && len(c.funcTypes) > 0 {
		return c.fail(len(b), "%d functions are declared but there is no code section", len(c.funcTypes))
	}
	return nil
}

// u32 reads an unsigned LEB128 value of at most 32 bits.
func (c *checker) u32() (uint32, error) {
	var v uint32
	for k := 0; k < 5; k++ {
		if c.i >= len(c.b) {
			return 0, c.fail(c.i, "unexpected end in the middle of an integer")
		}
		x := c.b[c.i]
		c.i++
		if k == 4 && x&0xf0 != 0 {
			return 0, c.fail(c.i-1, "integer overflows 32 bits")
		}
		v |= uint32(x&0x7f) << (7 * k)
		if x&0x80 == 0 {
			return v, nil
		}
	}
	return 0, c.fail(c.i, "integer too long")
}

// skipLEB skips a LEB128 integer of at most max bytes (signed values: their
// range is wazero's to check).
func (c *checker) skipLEB(max int) error {
	for k := 0; k < max; k++ {
		if c.i >= len(c.b) {
			return c.fail(c.i, "unexpected end in the middle of an integer")
		}
		x := c.b[c.i]
		c.i++
		if x&0x80 == 0 {
			return nil
		}
	}
	return c.fail(c.i, "integer too long")
}

func (c *checker) byte() (byte, error) {
	if c.i >= len(c.b) {
		return 0, c.fail(c.i, "unexpected end")
	}
	x := c.b[c.i]
	c.i++
	return x, nil
}

func (c *checker) skip(n int) error {
	if n > len(c.b)-c.i {
		return c.fail(c.i, "%d bytes run past the end (%d remain)", n, len(c.b)-c.i)
	}
	c.i += n
	return nil
}

// vec reads a vector's count and checks that many entries of at least
// least bytes each fit in what remains.
func (c *checker) vec(what string, least int) (int, error) {
	at := c.i
	n, err := c.u32()
	if err != nil {
		return 0, err
	}
	if int64(n)*int64(least) > int64(len(c.b)-c.i) {
		return 0, c.fail(at, "%s: %d entries cannot fit in the %d bytes that remain", what, n, len(c.b)-c.i)
	}
	return int(n), nil
}

// name reads a name and returns its bytes (not copied).
func (c *checker) name() ([]byte, error) {
	n, err := c.vec("name", 1)
	if err != nil {
		return nil, err
	}
	s := c.b[c.i : c.i+n]
	c.i += n
	return s, nil
}

// valType reads a value type as wazero's decoder does: a number, vector or
// reference type in its one-byte form (exnref included), or a reference
// type written out (0x63 or 0x64 and a heap type), which wazero decodes
// whatever the enabled features and its validator then judges.
func (c *checker) valType() error {
	at := c.i
	t, err := c.byte()
	switch {
	case err != nil:
		return err
	case t == 0x7f || t == 0x7e || t == 0x7d || t == 0x7c || t == 0x7b: // i32 i64 f32 f64 v128
		return nil
	}
	c.i = at
	return c.refType()
}

// refType reads a reference type: funcref, externref, exnref, or 0x63/0x64
// with a heap type (an s33).
func (c *checker) refType() error {
	at := c.i
	t, err := c.byte()
	switch {
	case err != nil:
		return err
	case t == 0x70 || t == 0x6f || t == 0x69: // funcref externref exnref
		return nil
	case t == 0x63 || t == 0x64: // (ref null ht), (ref ht)
		return c.skipLEB(5)
	}
	return c.fail(at, "unknown value type %#x", t)
}

func (c *checker) types(s *checker) error {
	n, err := c.bounded(s, "type section", 3, c.lim.Types, "the module declares %d function types", "install.max_types")
	if err != nil {
		return err
	}
	c.st.Types = n
	c.typeParams = make([]uint32, n)
	for k := range n {
		at := s.i
		form, err := s.byte()
		if err != nil {
			return err
		}
		if form != 0x60 {
			return s.fail(at, "type %d is not a function type (form %#x)", k, form)
		}
		for r, most := range [2]int{MaxParams, MaxResults} {
			m, err := s.vec("type", 1)
			if err != nil {
				return err
			}
			if m > most {
				what := [2]string{"parameters", "results"}[r]
				return c.over(fmt.Sprintf("function type %d has %d %s", k, m, what), count(most), "")
			}
			if r == 0 {
				c.typeParams[k] = uint32(m)
			}
			for range m {
				if err := s.valType(); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func (c *checker) imports(s *checker) error {
	n, err := c.bounded(s, "import section", 4, c.lim.Imports, "the module has %d imports", "install.max_imports")
	if err != nil {
		return err
	}
	c.st.Imports = n
	for range n {
		mod, err := s.name()
		if err != nil {
			return err
		}
		name, err := s.name()
		if err != nil {
			return err
		}
		if string(mod) == abi.ImportModule {
			c.st.StationImports = append(c.st.StationImports, string(name))
		}
		at := s.i
		kind, err := s.byte()
		if err != nil {
			return err
		}
		switch kind {
		case 0x00: // function
			if _, err := s.u32(); err != nil {
				return err
			}
			c.funcs++
		case 0x01: // table
			return fmt.Errorf("module imports table %s.%s; a module must define its own tables", quoteName(mod), quoteName(name))
		case 0x02: // memory
			if _, _, _, err := s.limits(); err != nil {
				return err
			}
		case 0x03: // global
			if err := s.valType(); err != nil {
				return err
			}
			if _, err := s.byte(); err != nil {
				return err
			}
			c.globals++
		default:
			return s.fail(at, "import %s.%s has kind %#x", quoteName(mod), quoteName(name), kind)
		}
	}
	return c.checkFunctions()
}

func quoteName(b []byte) string {
	s := string(b)
	if len(s) > 64 {
		s = s[:64] + "..."
	}
	return fmt.Sprintf("%q", s)
}

func (c *checker) checkFunctions() error {
	n := c.funcs + len(c.funcTypes)
	c.st.Functions = n
	if n > c.lim.Functions {
		return c.over(fmt.Sprintf("the module has %d functions (imported and defined)", n), count(c.lim.Functions), "install.max_functions")
	}
	return nil
}

func (c *checker) functions(s *checker) error {
	n, err := s.vec("function section", 1)
	if err != nil {
		return err
	}
	if c.funcs+n > c.lim.Functions {
		c.st.Functions = c.funcs + n
		return c.over(fmt.Sprintf("the module has %d functions (imported and defined)", c.funcs+n), count(c.lim.Functions), "install.max_functions")
	}
	c.funcTypes = make([]uint32, n)
	for k := range n {
		at := s.i
		t, err := s.u32()
		if err != nil {
			return err
		}
		if int(t) >= len(c.typeParams) {
			return s.fail(at, "function %d has type %d, which does not exist", c.funcs+k, t)
		}
		c.funcTypes[k] = t
	}
	return c.checkFunctions()
}

// limits reads a limits structure: flags 0x00 (min) and 0x01 (min, max);
// 0x03 (shared, with max) is read for wazero to refuse with its reason.
func (c *checker) limits() (flags byte, min, max uint32, err error) {
	at := c.i
	if flags, err = c.byte(); err != nil {
		return
	}
	switch flags {
	case 0x00:
		min, err = c.u32()
	case 0x01, 0x03:
		if min, err = c.u32(); err == nil {
			max, err = c.u32()
		}
	default:
		err = c.fail(at, "unsupported limits flags %#x", flags)
	}
	return
}

func (c *checker) tables(s *checker) error {
	n, err := s.vec("table section", 3)
	if err != nil {
		return err
	}
	for k := range n {
		// A table with an initializer (typed function references) starts
		// with 0x40 0x00 and ends with a constant expression.
		init := s.i+1 < len(s.b) && s.b[s.i] == 0x40 && s.b[s.i+1] == 0x00
		if init {
			s.i += 2
		}
		if err := s.refType(); err != nil {
			return err
		}
		flags, min, mx, err := s.limits()
		if err != nil {
			return err
		}
		if min > MaxTableElements || (flags != 0x00 && mx > MaxTableElements) {
			return fmt.Errorf("table %d may hold %d elements; the limit is %d", k, max(min, mx), MaxTableElements)
		}
		if init {
			if err := s.constExpr(); err != nil {
				return err
			}
		}
	}
	return nil
}

func (c *checker) memories(s *checker) error {
	n, err := s.vec("memory section", 2)
	if err != nil {
		return err
	}
	for range n {
		if _, _, _, err := s.limits(); err != nil {
			return err
		}
	}
	return nil
}

func (c *checker) globalSection(s *checker) error {
	n, err := s.vec("global section", 3)
	if err != nil {
		return err
	}
	c.globals += n
	c.st.Globals = c.globals
	if c.globals > c.lim.Globals {
		return c.over(fmt.Sprintf("the module has %d globals (imported and defined)", c.globals), count(c.lim.Globals), "install.max_globals")
	}
	for range n {
		if err := s.valType(); err != nil {
			return err
		}
		if _, err := s.byte(); err != nil {
			return err
		}
		if err := s.constExpr(); err != nil {
			return err
		}
	}
	return nil
}

func (c *checker) exports(s *checker) error {
	n, err := c.bounded(s, "export section", 3, c.lim.Exports, "the module has %d exports", "install.max_exports")
	if err != nil {
		return err
	}
	c.st.Exports = n
	for range n {
		name, err := s.name()
		if err != nil {
			return err
		}
		at := s.i
		kind, err := s.byte()
		if err != nil {
			return err
		}
		if kind > 0x03 {
			return s.fail(at, "export %s has kind %#x", quoteName(name), kind)
		}
		if _, err := s.u32(); err != nil {
			return err
		}
	}
	return nil
}

func (c *checker) elements(s *checker) error {
	n, err := s.vec("element section", 2)
	if err != nil {
		return err
	}
	for k := range n {
		at := s.i
		flags, err := s.u32()
		if err != nil {
			return err
		}
		if flags > 7 {
			return s.fail(at, "element segment %d has flags %d", k, flags)
		}
		if flags&0x02 != 0 && flags&0x01 == 0 { // active with a table index
			if _, err := s.u32(); err != nil {
				return err
			}
		}
		if flags&0x01 == 0 { // active: an offset
			if err := s.constExpr(); err != nil {
				return err
			}
		}
		switch {
		case flags&0x03 == 0: // neither an element kind nor a reference type
		case flags&0x04 == 0: // an element kind
			if _, err := s.byte(); err != nil {
				return err
			}
		default: // a reference type
			if err := s.refType(); err != nil {
				return err
			}
		}
		m, err := s.vec("element segment", 1)
		if err != nil {
			return err
		}
		c.st.ElementEntries += m
		if c.st.ElementEntries > MaxElementEntries {
			return c.over(fmt.Sprintf("the module's element segments initialize %d table entries", c.st.ElementEntries), count(MaxElementEntries), "")
		}
		for range m {
			if flags&0x04 == 0 {
				_, err = s.u32()
			} else {
				err = s.constExpr()
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}

func (c *checker) data(s *checker) error {
	n, err := c.bounded(s, "data section", 2, c.lim.DataSegments, "the module has %d data segments", "install.max_data_segments")
	if err != nil {
		return err
	}
	c.st.DataSegments = n
	for k := range n {
		at := s.i
		flags, err := s.u32()
		if err != nil {
			return err
		}
		switch flags {
		case 0:
			err = s.constExpr()
		case 1:
		case 2:
			if _, err = s.u32(); err == nil {
				err = s.constExpr()
			}
		default:
			return s.fail(at, "data segment %d has flags %d", k, flags)
		}
		if err != nil {
			return err
		}
		m, err := s.vec("data segment", 1)
		if err != nil {
			return err
		}
		s.i += m
	}
	return nil
}

// custom checks a custom section's name and, for the name section that
// wazero decodes, every count in it.
func (c *checker) custom(s *checker) error {
	c.st.CustomSections++
	if c.st.CustomSections > MaxCustomSections {
		return c.over(fmt.Sprintf("the module has %d custom sections", c.st.CustomSections), count(MaxCustomSections), "")
	}
	name, err := s.name()
	if err != nil {
		return err
	}
	if string(name) != "name" {
		return nil
	}
	if c.hasName {
		return s.fail(s.i, "a second name section")
	}
	c.hasName = true
	return c.names(s)
}

// names checks the name section: wazero reads the module name, function
// names and local names (allocating what their counts say) and skips other
// subsections by their size.
func (c *checker) names(s *checker) error {
	var localNames int64
	for s.i < len(s.b) {
		id, err := s.byte()
		if err != nil {
			return err
		}
		size, err := s.u32()
		if err != nil {
			return err
		}
		if int64(size) > int64(len(s.b)-s.i) {
			return s.fail(s.i, "name subsection %d is %d bytes long, past the end of its section", id, size)
		}
		end := s.i + int(size)
		sub := &checker{b: s.b[:end], i: s.i}
		switch id {
		case 0:
			_, err = sub.name()
		case 1:
			err = c.nameMap(sub, "function names", c.lim.Functions, "install.max_functions")
		case 2:
			var n int
			if n, err = sub.vec("local names", 2); err != nil {
				return err
			}
			if n > c.lim.Functions {
				return c.over(fmt.Sprintf("the name section names the locals of %d functions", n), count(c.lim.Functions), "install.max_functions")
			}
			for range n {
				if _, err := sub.u32(); err != nil {
					return err
				}
				at := sub.i
				m, err := sub.vec("local names", 2)
				if err != nil {
					return err
				}
				sub.i = at
				if localNames += int64(m); localNames > c.lim.ModuleLocals {
					return c.over(fmt.Sprintf("the name section names %d locals", localNames), count64(c.lim.ModuleLocals), "install.max_module_locals")
				}
				if err := c.nameMap(sub, "local names", c.lim.Locals, "install.max_locals"); err != nil {
					return err
				}
			}
		default:
			sub.i = end
		}
		if err != nil {
			return err
		}
		if sub.i != end {
			return s.fail(sub.i, "name subsection %d has %d bytes left over", id, end-sub.i)
		}
		s.i = end
	}
	return nil
}

func count64(n int64) string { return fmt.Sprint(n) }

func (c *checker) nameMap(s *checker, what string, limit int, key string) error {
	n, err := s.vec(what, 2)
	if err != nil {
		return err
	}
	if n > limit {
		return c.over(fmt.Sprintf("the name section has %d %s in one map", n, what), count(limit), key)
	}
	for range n {
		if _, err := s.u32(); err != nil {
			return err
		}
		if _, err := s.name(); err != nil {
			return err
		}
	}
	return nil
}

func (c *checker) code(s *checker) error {
	n, err := s.vec("code section", 2)
	if err != nil {
		return err
	}
	if n != len(c.funcTypes) {
		return s.fail(s.i, "the code section has %d bodies for %d declared functions", n, len(c.funcTypes))
	}
	body := &checker{} // reused for every body
	for k := range n {
		fn := c.funcs + k // the function's index
		at := s.i
		size, err := s.u32()
		if err != nil {
			return err
		}
		if int64(size) > int64(c.lim.FunctionBytes) {
			return c.over(fmt.Sprintf("function %d's body is %d bytes", fn, size), fmt.Sprintf("%d bytes", c.lim.FunctionBytes), "install.max_function_size")
		}
		if int64(size) > int64(len(s.b)-s.i) {
			return s.fail(at, "function %d's body is %d bytes long, past the end of the code section", fn, size)
		}
		c.st.MaxFunction = max(c.st.MaxFunction, int(size))
		end := s.i + int(size)
		body.b, body.i = s.b[:end], s.i
		if err := c.body(body, fn, int(c.typeParams[c.funcTypes[k]])); err != nil {
			return err
		}
		s.i = end
	}
	return nil
}

// body checks one function body: its locals, then every instruction.
func (c *checker) body(s *checker, fn, params int) error {
	decls, err := s.vec("local declarations", 2)
	if err != nil {
		return err
	}
	locals := int64(params)
	for range decls {
		m, err := s.u32()
		if err != nil {
			return err
		}
		if err := s.valType(); err != nil {
			return err
		}
		locals += int64(m)
	}
	c.st.Locals += locals - int64(params)
	if locals > int64(c.lim.Locals) {
		return c.over(fmt.Sprintf("function %d has %d parameters and locals", fn, locals), count(c.lim.Locals), "install.max_locals")
	}
	if c.st.Locals > c.lim.ModuleLocals {
		return c.over(fmt.Sprintf("the module's functions declare %d locals", c.st.Locals), count64(c.lim.ModuleLocals), "install.max_module_locals")
	}
	c.st.MaxLocals = max(c.st.MaxLocals, int(locals))
	depth, deepest, err := s.instructions(&c.st.Instructions)
	if err != nil {
		var m *malformed
		if errors.As(err, &m) {
			m.msg = fmt.Sprintf("function %d: %s", fn, m.msg)
		}
		return err
	}
	if depth != 0 {
		return s.fail(s.i, "function %d's body ends inside %d open blocks", fn, depth)
	}
	if s.i != len(s.b) {
		return s.fail(s.i, "function %d has %d bytes after its final end", fn, len(s.b)-s.i)
	}
	if deepest > c.lim.Nesting {
		return c.over(fmt.Sprintf("function %d nests blocks %d deep", fn, deepest), count(c.lim.Nesting), "install.max_nesting")
	}
	c.st.MaxNesting = max(c.st.MaxNesting, deepest)
	return nil
}

// constExpr checks a constant expression: instructions up to its end.
func (c *checker) constExpr() error {
	var n int64
	depth, deepest, err := c.instructions(&n)
	switch {
	case err != nil:
	case depth != 0:
		err = c.fail(c.i, "a constant expression ends inside a block")
	case deepest > 0:
		err = c.fail(c.i, "a block in a constant expression")
	}
	return err
}

// Immediates of one-byte opcodes: what follows the opcode.
const (
	opInvalid  = iota
	opNone     // no immediate
	opBlock    // a block type; opens a block
	opEnd      // closes a block
	opU32      // one u32 (an index)
	opU32x2    // two u32s
	opBrTable  // a vector of labels and a default label
	opMemarg   // alignment and offset
	opS32      // i32.const
	opS64      // i64.const
	opF32      // 4 bytes
	opF64      // 8 bytes
	opSelectT  // a vector of value types
	opRefType  // ref.null's heap type
	opPrefixFC // 0xfc: a u32 sub-opcode
	opPrefixFD // 0xfd: a one-byte sub-opcode (as wazero reads it)
)

// opcodes is every one-byte opcode of the WebAssembly 2.0 core instruction
// set the station's wazero configuration decodes (api.CoreFeaturesV2:
// MVP, sign extension, non-trapping conversions, bulk memory, reference
// types' instructions, which wazero then refuses with its reason, multi-value
// and SIMD). Everything else is invalid: exception handling, tail calls,
// typed function references, GC, threads (0xfe).
var opcodes = func() (t [256]uint8) {
	set := func(from, to int, kind uint8) {
		for op := from; op <= to; op++ {
			t[op] = kind
		}
	}
	set(0x00, 0x01, opNone)   // unreachable, nop
	set(0x02, 0x04, opBlock)  // block, loop, if
	t[0x05] = opNone          // else
	t[0x0b] = opEnd           // end
	set(0x0c, 0x0d, opU32)    // br, br_if
	t[0x0e] = opBrTable       // br_table
	t[0x0f] = opNone          // return
	t[0x10] = opU32           // call
	t[0x11] = opU32x2         // call_indirect: type, table
	set(0x1a, 0x1b, opNone)   // drop, select
	t[0x1c] = opSelectT       // select t*
	set(0x20, 0x26, opU32)    // local.get/set/tee, global.get/set, table.get/set
	set(0x28, 0x3e, opMemarg) // loads and stores
	set(0x3f, 0x40, opU32)    // memory.size, memory.grow: a memory index
	t[0x41] = opS32           // i32.const
	t[0x42] = opS64           // i64.const
	t[0x43] = opF32           // f32.const
	t[0x44] = opF64           // f64.const
	set(0x45, 0xc4, opNone)   // numeric, sign extension
	t[0xd0] = opRefType       // ref.null
	t[0xd1] = opNone          // ref.is_null
	t[0xd2] = opU32           // ref.func
	t[0xfc] = opPrefixFC      // saturating conversions, bulk memory, tables
	t[0xfd] = opPrefixFD      // SIMD
	return t
}()

// Immediates of 0xfd (SIMD) sub-opcodes.
const (
	vecInvalid = iota
	vecNone
	vecMemarg
	vecMemargLane
	vecBytes16
	vecLane
)

var vecOpcodes = func() (t [256]uint8) {
	set := func(from, to int, kind uint8) {
		for op := from; op <= to; op++ {
			t[op] = kind
		}
	}
	set(0, 11, vecMemarg)      // v128.load*, v128.store
	set(12, 13, vecBytes16)    // v128.const, i8x16.shuffle
	set(14, 20, vecNone)       // i8x16.swizzle, splats
	set(21, 34, vecLane)       // extract_lane, replace_lane
	set(35, 83, vecNone)       // comparisons, bitwise, any_true
	set(84, 91, vecMemargLane) // load/store lane
	set(92, 93, vecMemarg)     // v128.load32_zero, v128.load64_zero
	set(94, 255, vecNone)      // arithmetic and conversions
	// Unassigned in the SIMD proposal (wazero has no instruction for them).
	for _, op := range []int{154, 162, 165, 166, 175, 176, 178, 179, 180, 187, 194, 197, 198, 207, 208, 210, 211, 212, 226, 238} {
		t[op] = vecInvalid
	}
	return t
}()

// instructions decodes instructions until the end that closes the
// expression (depth 0), or to the end of c.b for a function body. It
// returns the depth left open (0 once that end was read) and the deepest
// nesting of blocks seen. It decodes immediates exactly as wazero's
// validator and compiler read them, so the nesting it counts is the one
// wazero sees.
func (c *checker) instructions(n *int64) (depth, deepest int, err error) {
	b := c.b
	depth = 1 // the expression's own block
	for c.i < len(b) {
		at := c.i
		op := b[c.i]
		c.i++
		*n++
		switch opcodes[op] {
		case opNone:
		case opBlock:
			if err := c.skipLEB(5); err != nil { // a block type: an s33
				return depth, deepest, err
			}
			if depth++; depth-1 > deepest {
				deepest = depth - 1
			}
		case opEnd:
			if depth--; depth == 0 {
				return 0, deepest, nil
			}
		case opU32:
			_, err = c.u32()
		case opU32x2, opMemarg:
			if _, err = c.u32(); err == nil {
				_, err = c.u32()
			}
		case opBrTable:
			var m int
			if m, err = c.vec("br_table", 1); err == nil {
				for k := 0; k <= m && err == nil; k++ {
					_, err = c.u32()
				}
			}
		case opS32:
			err = c.skipLEB(5)
		case opS64:
			err = c.skipLEB(10)
		case opF32:
			err = c.skip(4)
		case opF64:
			err = c.skip(8)
		case opSelectT:
			var m int
			if m, err = c.vec("select", 1); err == nil {
				for k := 0; k < m && err == nil; k++ {
					err = c.valType()
				}
			}
		case opRefType:
			err = c.skipLEB(5)
		case opPrefixFC:
			var sub uint32
			if sub, err = c.u32(); err != nil {
				break
			}
			switch {
			case sub <= 7: // saturating truncations
			case sub == 9 || sub == 11 || sub == 13 || sub == 15 || sub == 16 || sub == 17:
				// data.drop, memory.fill, elem.drop, table.grow/size/fill
				_, err = c.u32()
			case sub == 8 || sub == 10 || sub == 12 || sub == 14:
				// memory.init, memory.copy, table.init, table.copy
				if _, err = c.u32(); err == nil {
					_, err = c.u32()
				}
			default:
				return depth, deepest, c.fail(at, "unknown instruction 0xfc %d", sub)
			}
		case opPrefixFD:
			var sub byte
			if sub, err = c.byte(); err != nil {
				break
			}
			switch vecOpcodes[sub] {
			case vecNone:
			case vecMemarg:
				if _, err = c.u32(); err == nil {
					_, err = c.u32()
				}
			case vecMemargLane:
				if _, err = c.u32(); err == nil {
					if _, err = c.u32(); err == nil {
						err = c.skip(1)
					}
				}
			case vecBytes16:
				err = c.skip(16)
			case vecLane:
				err = c.skip(1)
			default:
				return depth, deepest, c.fail(at, "unknown SIMD instruction 0xfd %#x", sub)
			}
		default:
			why := ""
			switch {
			case op == 0xfe:
				why = " (threads are not enabled on this station)"
			case op >= 0x06 && op <= 0x0a || op == 0x18 || op == 0x19 || op == 0x1f:
				why = " (exception handling is not enabled on this station)"
			case op == 0x12 || op == 0x13 || op == 0x15:
				why = " (tail calls are not enabled on this station)"
			}
			return depth, deepest, c.fail(at, "unknown instruction %#02x%s", op, why)
		}
		if err != nil {
			return depth, deepest, err
		}
	}
	return depth, deepest, nil
}

// StationImports returns the names wasm imports from the station module,
// read by the install check's own parser under the default install limits
// (no compilation): what a module will ask to be linked.
func StationImports(wasm []byte) ([]string, error) {
	st, err := checkBinary(wasm, DefaultInstallLimits(), "")
	return st.StationImports, err
}
