package module

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/units"
	"github.com/station-dev/station/internal/wasmbuild"
	"github.com/station-dev/station/manifest"
)

// BuildOptions are what `station module build` was asked to do.
type BuildOptions struct {
	IO *cmdutil.IOStreams
	// Build compiles the module in dir to out (wasmbuild.BuildWith).
	Build func(ctx context.Context, dir, out string) error
	// Describe asks the built module wasm for its commands' schemas
	// (wasmbuild.Describe); nil derives none, as with --no-schemas.
	Describe      func(ctx context.Context, wasm []byte) (*wasmbuild.Description, error)
	StartProgress func(label string) *cmdutil.Progress

	Dir       string
	Output    string // --output: "" for the manifest's wasm path
	NoSchemas bool   // --no-schemas
	JSON      bool
}

// NewCmdBuild returns `station module build`.
func NewCmdBuild(f *cmdutil.Factory, runF func(*BuildOptions) error) *cobra.Command {
	opts := &BuildOptions{IO: &f.IO, StartProgress: f.StartProgress, Build: func(ctx context.Context, dir, out string) error {
		return wasmbuild.BuildWith(ctx, dir, out, buildOptions(f))
	}}
	c := &cobra.Command{
		Use:   "build DIR",
		Short: "Build a module directory (Go, C or Rust) to WebAssembly",
		Long: `Build compiles the module in DIR into the wasm file its module.yaml names
(default module.wasm), or into --output, as a WASI reactor. The language is
the one DIR holds:

  Go    (go.mod or .go files) GOOS=wasip1 GOARCH=wasm go build
        -buildmode=c-shared with the stock toolchain. A go.mod that requires
        github.com/station-dev/station/sdk gets it from this station: build
        puts a file-based GOPROXY in the station home (goproxy/) first in
        GOPROXY, so no network is needed (GOPROXY=off works).
  Rust  (Cargo.toml or src/lib.rs) rustc --target wasm32-wasi, no cargo:
        the station crate from DIR/station/ if there is one, else this
        station's copy of the Rust SDK.
  C     (.c files) clang --target=wasm32-wasi with wasi-libc: DIR's
        station.c if it has one, else this station's copy of the C SDK.

clang and rustc run confined: they read only the system's directories, DIR,
the SDK and the toolchain, write only a temporary directory (the module is
then put in place), and see no environment but PATH, HOME and the locale,
so a module's source cannot carry a file or a token of yours into what it
builds. Without Landlock in the kernel that build is refused unless
STATION_UNCONFINED_BUILD=1.

On a terminal it shows how long the build has run; then it prints the file,
its size and the time it took. A missing toolchain is an error naming what
to install.

A module built with the Go SDK describes its commands: build writes the
JSON Schemas of each command's input and result, derived from the In and
Out types of its sdk.Handle, into module.yaml as the command's input_schema
and output_schema. A field is named by its json tag, required unless it is
omitempty, and described by its jsonschema tag. The station checks every
input against input_schema before the module runs, and MCP clients see
both. To ask for them, build runs the built module for a moment with every
host call refused.

A schema build wrote carries the comment "# derived from the Go types by
station module build ..." and is rewritten when the types change; delete
the comment to edit the schema by hand. A schema without it is yours and is
never changed: build says so when it differs from the derived one.
Building again changes nothing. --no-schemas leaves module.yaml alone; a
module that does not describe itself (not written with the Go SDK) is built
as before.`,
		Example: "  station module build examples/quote\n" +
			"  station module build examples/rust/hello\n" +
			"  station module build examples/quote -o /tmp/quote.wasm\n" +
			"  station module build examples/quote --no-schemas",
		Args: cmdutil.ExactArgs(1, "DIR"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Dir = args[0]
			if runF != nil {
				return runF(opts)
			}
			opts.Describe = describe
			return buildRun(cmd.Context(), opts)
		},
	}
	c.Flags().StringVarP(&opts.Output, "output", "o", "", "output file (default: the manifest's wasm path)")
	c.Flags().BoolVar(&opts.NoSchemas, "no-schemas", false, "do not write the commands' schemas into module.yaml")
	cmdutil.AddJSONFlag(c, &opts.JSON)
	return c
}

// describe is BuildOptions.Describe with wasmbuild's bounds.
func describe(ctx context.Context, wasm []byte) (*wasmbuild.Description, error) {
	return wasmbuild.Describe(ctx, wasm, wasmbuild.DescribeOptions{})
}

// BuildResult is what a build made.
type BuildResult struct {
	ID      string `json:"id"`
	Version string `json:"version"`
	Wasm    string `json:"wasm"`
	Size    int64  `json:"size_bytes"`
	// Took is how long the build took; DurationMS the same in
	// milliseconds, the unit of every duration in --json.
	Took       time.Duration `json:"-"`
	DurationMS int64         `json:"duration_ms"`
	// Manifest is the module.yaml the schemas were written into, if any
	// were; Schemas says which, a line per command
	// ("create-invoice: input, output").
	Manifest string   `json:"manifest,omitempty"`
	Schemas  []string `json:"schemas"`
	// Notes are for the module's author: the schemas not written and
	// why, the commands module.yaml and the module disagree on.
	Notes []string `json:"notes"`
}

// Text implements cmdutil.Texter.
func (r BuildResult) Text(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "built %s (%s) in %s\n", cmdutil.TermText(r.Wasm), units.Bytes(r.Size), r.Took)
	if len(r.Schemas) > 0 {
		fmt.Fprintf(&b, "wrote the schemas derived from the Go types into %s:\n", cmdutil.TermText(r.Manifest))
		for _, s := range r.Schemas {
			fmt.Fprintf(&b, "  %s\n", cmdutil.TermText(s))
		}
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "note: %s\n", cmdutil.TermText(n))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func buildRun(ctx context.Context, opts *BuildOptions) error {
	man, err := manifest.Load(opts.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w (to start a module there: station module new %s)", err, opts.Dir)
	} else if err != nil {
		return err
	}
	out := opts.Output
	if out == "" {
		out = filepath.Join(opts.Dir, man.Wasm)
	}
	res := BuildResult{ID: man.ID, Version: man.Version, Wasm: out, Schemas: []string{}, Notes: []string{}}
	p := opts.StartProgress("building " + man.ID + "@" + man.Version)
	err = opts.Build(ctx, opts.Dir, out)
	if err == nil && !opts.NoSchemas && opts.Describe != nil {
		err = writeSchemas(ctx, opts, out, &res)
	}
	took := cmdutil.Round(p.Stop())
	if err != nil {
		return fmt.Errorf("build %s: %w", man.ID, err)
	}
	res.Size, res.Took, res.DurationMS = fileSize(out), took, took.Milliseconds()
	return cmdutil.Print(opts.IO.Out, opts.JSON, res)
}

// writeSchemas asks the module built at wasmFile for its commands'
// schemas and writes those module.yaml lacks into it (wasmbuild.AddSchemas),
// recording what it did in res.
func writeSchemas(ctx context.Context, opts *BuildOptions, wasmFile string, res *BuildResult) error {
	wasm, err := os.ReadFile(wasmFile)
	if err != nil {
		return err
	}
	d, err := opts.Describe(ctx, wasm)
	if err != nil {
		return fmt.Errorf("derive the commands' schemas: %w (--no-schemas skips this)", err)
	}
	if d == nil {
		return nil // not a module that describes itself
	}
	file := filepath.Join(opts.Dir, manifest.FileName)
	src, err := readManifest(file)
	if err != nil {
		return err
	}
	edit, err := wasmbuild.AddSchemas(file, src, d)
	if err != nil {
		return err
	}
	res.Notes = append(res.Notes, edit.Notes...)
	if !edit.Changed {
		return nil
	}
	if err := replaceFile(file, edit.Manifest); err != nil {
		return fmt.Errorf("write the schemas into %s: %w", file, err)
	}
	res.Manifest, res.Schemas = file, append(res.Schemas, edit.Written...)
	return nil
}

// readManifest reads the manifest file, again, after the build: no more
// than a manifest may be (AddSchemas refuses a longer one).
func readManifest(file string) ([]byte, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, manifest.MaxFileSize+1))
}

// replaceFile replaces the file name (the one a symbolic link leads to)
// with data, keeping its permissions: written to a temporary file beside
// it and renamed over it, so that it is never half written.
func replaceFile(name string, data []byte) error {
	if p, err := filepath.EvalSymlinks(name); err == nil {
		name = p
	}
	fi, err := os.Stat(name)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(name), "."+filepath.Base(name)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after the rename, nothing
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(fi.Mode().Perm()); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), name)
}
