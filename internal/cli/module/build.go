package module

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
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
	// Build compiles the Go main package in dir to out (wasmbuild.Build).
	Build         func(ctx context.Context, dir, out string) error
	StartProgress func(label string) *cmdutil.Progress

	Dir    string
	Output string // --output: "" for the manifest's wasm path
	JSON   bool
}

// NewCmdBuild returns `station module build`.
func NewCmdBuild(f *cmdutil.Factory, runF func(*BuildOptions) error) *cobra.Command {
	opts := &BuildOptions{IO: &f.IO, Build: wasmbuild.Build, StartProgress: f.StartProgress}
	c := &cobra.Command{
		Use:   "build DIR",
		Short: "Build a Go module directory to WebAssembly",
		Long: `Build compiles the Go main package in DIR with the stock Go toolchain
(GOOS=wasip1 GOARCH=wasm, -buildmode=c-shared) into the wasm file its
module.yaml names (default module.wasm), or into --output. On a terminal it
shows how long the build has run; then it prints the file, its size and the
time it took.`,
		Example: "  station module build examples/hello\n  station module build examples/hello -o /tmp/hello.wasm",
		Args:    cmdutil.ExactArgs(1, "DIR"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Dir = args[0]
			if runF != nil {
				return runF(opts)
			}
			return buildRun(cmd.Context(), opts)
		},
	}
	c.Flags().StringVarP(&opts.Output, "output", "o", "", "output file (default: the manifest's wasm path)")
	cmdutil.AddJSONFlag(c, &opts.JSON)
	return c
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
}

// Text implements cmdutil.Texter.
func (r BuildResult) Text(w io.Writer) error {
	_, err := fmt.Fprintf(w, "built %s (%s) in %s\n", cmdutil.TermText(r.Wasm), units.Bytes(r.Size), r.Took)
	return err
}

func buildRun(ctx context.Context, opts *BuildOptions) error {
	man, err := manifest.Load(opts.Dir)
	if err != nil {
		return err
	}
	out := opts.Output
	if out == "" {
		out = filepath.Join(opts.Dir, man.Wasm)
	}
	p := opts.StartProgress("building " + man.ID + "@" + man.Version)
	err = opts.Build(ctx, opts.Dir, out)
	took := cmdutil.Round(p.Stop())
	if err != nil {
		return fmt.Errorf("build %s: %w", man.ID, err)
	}
	return cmdutil.Print(opts.IO.Out, opts.JSON, BuildResult{ID: man.ID, Version: man.Version, Wasm: out, Size: fileSize(out), Took: took, DurationMS: took.Milliseconds()})
}
