package module

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/modnew"
	"github.com/station-dev/station/internal/shellquote"
	"github.com/station-dev/station/internal/wasmbuild"
)

// NewOptions are what `station module new` was asked to do.
type NewOptions struct {
	IO *cmdutil.IOStreams
	// Tidy completes a new Go module's go.sum (wasmbuild.Tidy), offline.
	Tidy func(ctx context.Context, dir string) error

	Dir  string
	Lang string // --lang
	ID   string // --id
	JSON bool
}

// NewCmdNew returns `station module new`.
func NewCmdNew(f *cmdutil.Factory, runF func(*NewOptions) error) *cobra.Command {
	opts := &NewOptions{IO: &f.IO, Tidy: func(ctx context.Context, dir string) error {
		return wasmbuild.Tidy(ctx, dir, buildOptions(f))
	}}
	c := &cobra.Command{
		Use:   "new DIR",
		Short: "Start a module: a manifest, one command, a test and a README",
		Long: `New writes a module into DIR (which must not exist, or be empty) that
builds and runs as it is: module.yaml (the module's id, its command and
the permissions it asks for: none yet), a greet command, tests.yaml (sample
calls for station module test), a README and a .gitignore. It fetches
nothing from the network.

--lang chooses the language:

  go    main.go and main_test.go with the Station Go SDK; go.mod requires
        github.com/station-dev/station/sdk, which station module build
        serves to the Go toolchain from this station (no network needed;
        once the SDK is public the same go.mod builds with the real proxy).
        Needs Go 1.25 or later.
  c     hello.c with station.h and station.c, the C SDK, copied in.
        Needs clang, lld and wasi-libc (Debian: apt-get install clang lld
        wasi-libc libclang-rt-14-dev-wasm32).
  rust  src/lib.rs and Cargo.toml, with the station crate (the Rust SDK,
        std only) copied into station/. Needs rustc with the wasm32-wasi
        standard library (Debian: apt-get install rustc
        libstd-rust-dev-wasm32; rustup: rustup target add wasm32-wasip1).

The id is owner/slug (lower-case letters, digits, hyphens); by default the
slug is DIR's name and the owner your login name. Publishing needs the
owner to be your hub account.`,
		Example: "  station module new hello\n" +
			"  station module new hello --lang rust --id ada/hello\n" +
			"  cd hello && station module build . && station module test .",
		Args: cmdutil.ExactArgs(1, "DIR"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Dir = args[0]
			if runF != nil {
				return runF(opts)
			}
			return newRun(cmd.Context(), opts)
		},
	}
	c.Flags().StringVar(&opts.Lang, "lang", wasmbuild.LangGo, "the module's language: "+strings.Join(modnew.Langs, ", "))
	c.Flags().StringVar(&opts.ID, "id", "", "the module's id, owner/slug (default: $USER/DIR)")
	cmdutil.AddJSONFlag(c, &opts.JSON)
	return c
}

// NewResult is what new wrote.
type NewResult struct {
	modnew.Result
	Next []string `json:"next"` // the commands to run next
	// Note says what to install when the toolchain is missing.
	Note string `json:"note,omitempty"`
}

// Text implements cmdutil.Texter.
func (r NewResult) Text(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "created %s: module %s in %s\n", cmdutil.TermText(r.Dir), cmdutil.TermText(r.ID), r.Lang)
	for _, f := range r.Files {
		fmt.Fprintf(&b, "  %s\n", cmdutil.TermText(f))
	}
	if r.Note != "" {
		fmt.Fprintf(&b, "note: %s\n", cmdutil.TermText(r.Note))
	}
	b.WriteString("next:\n")
	for _, n := range r.Next {
		fmt.Fprintf(&b, "  %s\n", cmdutil.TermText(n))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func newRun(ctx context.Context, opts *NewOptions) error {
	res, err := modnew.New(modnew.Options{Dir: opts.Dir, Lang: opts.Lang, ID: opts.ID})
	if err != nil {
		return err
	}
	out := NewResult{Result: *res}
	if _, err := wasmbuild.Toolchain(res.Lang); err != nil {
		out.Note = err.Error()
	} else if res.Lang == wasmbuild.LangGo && opts.Tidy != nil {
		if err := opts.Tidy(ctx, opts.Dir); err != nil {
			out.Note = "go.sum is not written (go mod tidy failed: " + strings.ReplaceAll(strings.TrimSpace(err.Error()), "\n", "; ") +
				"); fix that and run go mod tidy in " + opts.Dir + " (station module build needs go.sum, unless GOFLAGS has -mod=mod)"
		} else {
			out.Files = append(out.Files, "go.sum")
		}
	}
	dir := shellDir(opts.Dir)
	out.Next = []string{
		"station module build " + dir,
		"station module test " + dir,
		"station module install " + dir,
		"station run " + res.ID + ` greet --input '{"name": "Ada"}'`,
	}
	if abs, err := filepath.Abs(opts.Dir); err == nil {
		out.Dir = abs
	}
	return cmdutil.Print(opts.IO.Out, opts.JSON, out)
}

// shellDir is dir as a word of the commands new prints: quoted for a shell
// (shellquote), and a name that starts with "-" made a path (./-x), which
// no command takes for a flag.
func shellDir(dir string) string {
	if strings.HasPrefix(dir, "-") {
		dir = "./" + dir
	}
	return shellquote.Quote(dir)
}

// buildOptions are the wasmbuild options of the Factory's station: the Go
// SDK's proxy is kept in its home (goproxy/).
func buildOptions(f *cmdutil.Factory) wasmbuild.Options {
	home, err := f.HomeDir()
	if err != nil {
		return wasmbuild.Options{} // wasmbuild's default, which says what is wrong
	}
	return wasmbuild.Options{GoProxy: filepath.Join(home, "goproxy")}
}
