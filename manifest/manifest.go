// Package manifest is the contract between a module and the station: the
// module.yaml file that names a module, lists its commands and declares
// everything it may do outside its own memory.
//
// Parse decodes a manifest strictly: unknown keys, wrong types, duplicate keys
// and over-broad grants are errors, and every error names the file, line,
// column, field and offending entry (see Error). Parse reports all the errors
// it finds at once, joined with errors.Join.
//
// A Manifest is a request, not a grant: the station decides at install what
// of it the operator approves, and binds the approved policy to the module
// when it is linked. The user reference is docs/manifest.md; the structure is
// also published as a JSON Schema (Schema, manifest/schema.json) for editors.
//
// # Version history
//
//   - 1 (2026-11): id, version, description, wasm, commands, requires
//     (network, subprocess, filesystem_writes, filesystem_reads, llm),
//     limits (memory, timeout, concurrency, instances, max_input,
//     max_output, max_request). Fields were only ever added: a station
//     that predates one refuses a manifest using it as an unknown field.
//   - 1, 2026-12: commands[].input_schema and commands[].output_schema.
//   - 1, 2026-12: requires.secrets.
package manifest

import (
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/station-dev/station/internal/netgate"
)

// SchemaVersion is the version of the manifest format this package decodes.
// A new version may add fields; it never changes the meaning of one.
const SchemaVersion = 1

// FileName is the name of the manifest file inside a module directory.
const FileName = "module.yaml"

// MaxFileSize bounds the size of a manifest file. A real manifest is a few
// hundred bytes; the bound keeps a hostile one from costing the station
// memory or time.
const MaxFileSize = 1 << 20

// PageSize is the size of a WebAssembly memory page. Limits.MemoryBytes is
// always a multiple of it.
const PageSize = 64 << 10

// Bounds on the limits a manifest may request.
const (
	MinMemory      = 1 << 20 // 1 MiB
	MaxMemory      = 4 << 30 // 4 GiB, all of a 32-bit linear memory
	MaxTimeout     = time.Hour
	MaxConcurrency = 1024
)

// Manifest is a decoded, validated module.yaml.
type Manifest struct {
	// ID is the module's marketplace identity, "owner/slug".
	ID string
	// Version is the module's semantic version, e.g. "1.4.0".
	Version string
	// Description is one human sentence about what the module does.
	Description string
	// Wasm is the path of the WebAssembly binary, relative to the module
	// directory (slash-separated, never leaving it).
	Wasm string
	// Commands are the commands the module exports, in manifest order.
	Commands []Command
	// Requires is what the module asks to be allowed to do.
	Requires Requires
	// Limits are the module's requested resource limits; zero fields mean
	// "the station's default".
	Limits Limits
	// File is the path the manifest was read from (the filename given to
	// Parse).
	File string
}

// Command is one command a module exports.
type Command struct {
	// Name is the command's name, [a-z][a-z0-9-]*, unique in the module.
	Name string
	// Description is one human sentence about what the command does.
	Description string
	// InputSchema, when set, is the JSON Schema (draft 2020-12) the
	// command's input must match, as compact JSON: an object schema
	// (`"type": "object"`) whose references stay inside it. The station
	// checks an input against it before the module runs, and MCP clients
	// see it as the tool's input schema. Nil: any JSON object.
	InputSchema string
	// OutputSchema, when set, is the JSON Schema of the command's result,
	// as compact JSON (any schema, same rules for references). MCP
	// clients see it as the tool's output schema.
	OutputSchema string
}

// MaxSchemaBytes bounds a command's input or output schema, as compact
// JSON.
const MaxSchemaBytes = 64 << 10

// Requires lists the capabilities a module asks for. The zero value asks for
// nothing: no network, no subprocess, no filesystem writes.
type Requires struct {
	// Network is the module's network allowlist.
	Network Network
	// Subprocess says whether, and which, programs the module may start.
	Subprocess Subprocess
	// FilesystemWrites are the host path globs the module may create,
	// change or delete. Each is absolute or starts with "~/".
	FilesystemWrites []string
	// FilesystemReads are the host path globs the module may read, in
	// addition to everything it may write. Same syntax as FilesystemWrites.
	FilesystemReads []string
	// LLM says whether, and within which token limits, the module may ask
	// the station's LLM for completions.
	LLM LLM
	// Secrets are the secrets the module needs, each bound to the hosts
	// its value may be sent to, in manifest order (secrets.go).
	Secrets []Secret
}

// Network is a module's network allowlist.
type Network struct {
	// Allow holds the allowlist entries exactly as written in the manifest;
	// each was accepted by the network gate's rule parser.
	Allow []string
}

// Subprocess is a module's subprocess request. The zero value
// (subprocess: false) means the module may start no program.
type Subprocess struct {
	// Any is true for "subprocess: true": any program, which the operator
	// must grant explicitly.
	Any bool
	// Allow lists the programs the module may start
	// ("subprocess: {allow: [git]}"): bare program names, resolved at
	// install, or absolute paths.
	Allow []string
	// Env names the environment variables the module may pass to the
	// programs it starts ("subprocess: {allow: [git], env: [GIT_AUTHOR_NAME]}");
	// every other variable is scrubbed.
	Env []string
}

// Limits are a module's requested resource limits. A zero field means the
// station's default applies (see internal/config).
type Limits struct {
	// MemoryBytes is the maximum linear memory, rounded up to a multiple of
	// PageSize; 0 means the default.
	MemoryBytes uint64
	// Timeout is the deadline of one call; 0 means the default.
	Timeout time.Duration
	// Concurrency is the maximum number of concurrent calls of the module; 0
	// means the default.
	Concurrency int
	// Fresh asks for a new instance per call ("instances: fresh") instead of
	// a pool of warm instances.
	Fresh bool
	// MaxInput bounds a call's input document in bytes; 0 means the default.
	MaxInput uint64
	// MaxOutput bounds a call's result in bytes; 0 means the default.
	MaxOutput uint64
	// MaxRequest bounds a host-call argument document (an HTTP or process
	// request) in bytes; 0 means the default.
	MaxRequest uint64
}

// MaxDocument is the largest value of the max_input, max_output and
// max_request limits: 64 MiB.
const MaxDocument = 64 << 20

// MemoryPages returns MemoryBytes in WebAssembly pages (0 means the default).
func (l Limits) MemoryPages() uint32 {
	return uint32(l.MemoryBytes / PageSize)
}

// Command returns the command named name.
func (m *Manifest) Command(name string) (Command, bool) {
	for _, c := range m.Commands {
		if c.Name == name {
			return c, true
		}
	}
	return Command{}, false
}

// Load reads and parses dir/module.yaml.
func Load(dir string) (*Manifest, error) {
	file := filepath.Join(dir, FileName)
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("load manifest: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("load manifest: %w", err)
	}
	return Parse(file, data)
}

// Parse decodes and validates a manifest. filename is used in error messages
// and recorded in Manifest.File. On failure the error is an errors.Join of
// one *Error per problem found, in document order.
func Parse(filename string, data []byte) (*Manifest, error) {
	return ParseWith(filename, data, Options{})
}

// Options adjust Parse to the operator's grants.
type Options struct {
	// GrantedGlobs are filesystem globs the operator has granted explicitly
	// (config.yaml, filesystem.grant). A manifest entry equal to one of them
	// is accepted even though it is broader than Parse allows on its own
	// (a system directory, a whole home directory); its syntax is still
	// checked.
	GrantedGlobs []string
	// GrantedNetwork are network allowlist entries the operator has granted
	// explicitly (config.yaml, network.grant). A manifest entry that is the
	// same rule (scheme, host and port) is accepted even though it is broad
	// (netgate.Rule.Broad: a wildcard under a shared-tenant domain such as
	// "*.amazonaws.com").
	GrantedNetwork []string
	// Home is the operator's home directory. An absolute glob inside it is
	// judged as the same glob written with "~/" (its dot-directories need a
	// grant). "" judges only "~/" globs, and those under /home and /Users,
	// that way.
	Home string
	// Resolve, if set, returns the directory a path leads to on this
	// machine with symbolic links followed, or "" if it does not exist
	// (the station passes filepath.EvalSymlinks). A glob whose leading
	// directory, or the home directory, is reached through a link is
	// judged again as the path it leads to: "/srv/link/**" with /srv/link
	// pointing at ~/.ssh needs the grant that "~/.ssh/**" needs.
	Resolve func(dir string) string
}

// ParseWith is Parse with the operator's grants.
func ParseWith(filename string, data []byte, o Options) (*Manifest, error) {
	if len(data) > MaxFileSize {
		return nil, &Error{File: filename, Msg: fmt.Sprintf("file is larger than %d bytes", MaxFileSize)}
	}
	d := &decoder{file: filename, granted: map[string]bool{}, grantedNet: map[netgate.Rule]bool{}, home: o.Home, resolve: o.Resolve}
	for _, g := range o.GrantedGlobs {
		d.granted[g] = true
	}
	for _, g := range o.GrantedNetwork {
		if r, err := netgate.ParseRule(g); err == nil {
			d.grantedNet[r] = true
		}
	}
	m := d.decode(data)
	if len(d.errs) > 0 {
		errs := make([]error, len(d.errs))
		for i, e := range d.errs {
			errs[i] = e
		}
		return nil, errors.Join(errs...)
	}
	m.File = filename
	return m, nil
}

//go:embed schema.json
var schema []byte

// Schema returns the JSON Schema (draft 2020-12) that describes module.yaml,
// for editors and other tools. The caller may modify the returned slice.
func Schema() []byte {
	return append([]byte(nil), schema...)
}
