package config

import (
	"time"

	"go.yaml.in/yaml/v3"
)

// Install bounds what `station module install` (and every load) accepts
// into the WebAssembly runtime, and what compiling a module may cost. A
// zero field means the station's default (host.DefaultInstallLimits); the
// defaults and why they are what they are are in docs/manifest.md and
// RATIONALE.md.
type Install struct {
	MaxModuleSize   uint64 // bytes of the whole binary
	MaxFunctions    int    // imported and defined
	MaxFunctionSize uint64 // bytes of one code body
	MaxLocals       int    // parameters and locals of one function
	MaxModuleLocals int    // locals of all functions together
	MaxNesting      int    // blocks open at once in one function
	MaxTypes        int
	MaxImports      int
	MaxExports      int
	MaxGlobals      int
	MaxDataSegments int
	CompileTimeout  time.Duration
	CompileMemory   uint64 // bytes
}

// maxCount bounds every count key of install: a typo guard, far above what
// any toolchain emits.
const maxCount = 100_000_000

func (d *decoder) install(n *yaml.Node, in *Install) {
	count := func(key string, out *int) field {
		return field{key, func(v *yaml.Node) {
			if c, ok := d.Int(v, "install."+key, 1, maxCount); ok {
				*out = c
			}
		}}
	}
	size := func(key, example string, lo, hi uint64, out *uint64) field {
		return field{key, func(v *yaml.Node) {
			if s, ok := d.Size(v, "install."+key, example, lo, hi); ok {
				*out = s
			}
		}}
	}
	d.mapping(n, "install", []field{
		size("max_module_size", "64MiB", 1<<20, 1<<30, &in.MaxModuleSize),
		count("max_functions", &in.MaxFunctions),
		size("max_function_size", "8MiB", 1<<10, 1<<30, &in.MaxFunctionSize),
		count("max_locals", &in.MaxLocals),
		count("max_module_locals", &in.MaxModuleLocals),
		count("max_nesting", &in.MaxNesting),
		count("max_types", &in.MaxTypes),
		count("max_imports", &in.MaxImports),
		count("max_exports", &in.MaxExports),
		count("max_globals", &in.MaxGlobals),
		count("max_data_segments", &in.MaxDataSegments),
		{"compile_timeout", func(v *yaml.Node) { d.duration(v, "install.compile_timeout", &in.CompileTimeout) }},
		size("compile_memory", "2GiB", 64<<20, 1<<40, &in.CompileMemory),
	})
}
