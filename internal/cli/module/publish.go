package module

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/tetratelabs/wazero"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/host"
	"github.com/station-dev/station/internal/hubsync"
	"github.com/station-dev/station/internal/learn"
	"github.com/station-dev/station/internal/moduletest"
)

// Publisher publishes a built module (*hubsync.Session).
type Publisher interface {
	Publish(ctx context.Context, dir, keyFile string) (*hubsync.Published, error)
}

// PublishOptions are what `station module publish` was asked to do.
type PublishOptions struct {
	IO        *cmdutil.IOStreams
	Publisher func(context.Context) (Publisher, error)

	Dir    string
	Key    string // --key: the signing key file, "" for the station's
	DryRun bool   // --dry-run: only the hub's check, no login, no upload
	// Check (--check) also makes the calls of DIR/tests.yaml in learn mode
	// and refuses a module whose calls reach what its manifest does not
	// declare.
	Check bool
	JSON  bool
	// Cache, if set, is the compilation cache of --check's throwaway
	// station.
	Cache wazero.CompilationCache
}

// NewCmdPublish returns `station module publish`.
func NewCmdPublish(f *cmdutil.Factory, runF func(*PublishOptions) error) *cobra.Command {
	opts := &PublishOptions{IO: &f.IO, Cache: f.IO.Cache, Publisher: func(ctx context.Context) (Publisher, error) {
		s, err := f.HubSession(ctx)
		if err != nil {
			return nil, err
		}
		return s, nil
	}}
	c := &cobra.Command{
		Use:   "publish DIR",
		Short: "Sign a built module and publish it to the hub",
		Long: `Publish reads the built module in DIR (module.yaml and its wasm), signs the
statement of its id, version and digests with your publisher key
(STATION_HOME/hub-signing-key.pem from 'station hub key create', or the file
--key PATH names, as 'station hub key create --key PATH' made it), and
uploads the bundle. Versions are immutable: publish a new version to change
anything. The manifest's owner must be the account you are logged in as.

Before it signs anything, publish checks the module as the hub does, and as
a station does at install: the manifest validates, the wasm is within the
install limits and compiles, exports what the guest ABI requires
(station_abi_1, station_call, memory) and imports only what the manifest
grants — process_run needs requires.subprocess, llm_complete requires.llm.
A module that fails is not uploaded, and every problem is listed. The hub
runs the same check and refuses the same modules (module_refused); it
compiles the module but never runs it.

--dry-run runs only that check: no login, no key, nothing uploaded; the exit
code is 1 when there are problems.

--check also makes the calls of DIR/tests.yaml as 'station module learn'
does — in a throwaway station whose gates allow nothing, requests refused,
writes never done, programs never started — and refuses the module if they
reached a host, a path, a program or the LLM its manifest does not declare.`,
		Example: `  station module build examples/hello
  station module publish --dry-run examples/hello
  station module publish --dry-run --check examples/hello
  station module publish examples/hello
  station module publish --key ~/keys/dave.pem examples/hello`,
		Args: cmdutil.ExactArgs(1, "DIR"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Dir = args[0]
			if runF != nil {
				return runF(opts)
			}
			if opts.DryRun {
				return checkRun(cmd.Context(), opts)
			}
			if opts.Check {
				if err := checkRun(cmd.Context(), opts); err != nil {
					return err
				}
			}
			return publishRun(cmd.Context(), opts)
		},
	}
	c.Flags().StringVar(&opts.Key, "key", "", "signing key file (default STATION_HOME/"+hubsync.SigningKeyFile+")")
	c.Flags().BoolVar(&opts.DryRun, "dry-run", false, "only check the module as the hub would: no login, nothing signed or uploaded")
	c.Flags().BoolVar(&opts.Check, "check", false, "also run tests.yaml's calls in learn mode and refuse access the manifest does not declare")
	cmdutil.AddJSONFlag(c, &opts.JSON)
	return c
}

// PublishResult is the version published: the hub's record of it, and
// the hub.
type PublishResult struct {
	hub.Version
	Hub string `json:"hub"`
}

// Text implements cmdutil.Texter. The hub supplied all of it.
func (r PublishResult) Text(w io.Writer) error {
	_, err := fmt.Fprintf(w, "published %s@%s (%s, signed by %s) to %s\n", cmdutil.TermText(r.Module), cmdutil.TermText(r.Version.Version),
		cmdutil.TermText(r.WasmDigest), cmdutil.TermText(r.KeyID), cmdutil.TermText(r.Hub))
	return err
}

func publishRun(ctx context.Context, opts *PublishOptions) error {
	p, err := opts.Publisher(ctx)
	if err != nil {
		return err
	}
	res, err := p.Publish(ctx, opts.Dir, opts.Key)
	if err != nil {
		return err
	}
	return cmdutil.Print(opts.IO.Out, opts.JSON, PublishResult{Version: res.Version, Hub: res.Hub})
}

// CheckResult is what `station module publish --dry-run` found.
type CheckResult struct {
	hubsync.ModuleCheck
	// OK is set when the hub would accept the module (as far as it can be
	// told without the hub: its size limit, the namespace and the version
	// are the hub's to check).
	OK bool `json:"ok"`
}

// Text implements cmdutil.Texter.
func (r CheckResult) Text(w io.Writer) error {
	name := cmdutil.TermText(r.Module) + "@" + cmdutil.TermText(r.Version)
	if r.Module == "" {
		name = "the module"
	}
	if r.OK {
		_, err := fmt.Fprintf(w, "%s passes the publish check (%s, %d bytes): a station would install it; nothing was uploaded\n", name, cmdutil.TermText(r.WasmDigest), r.WasmSize)
		return err
	}
	fmt.Fprintf(w, "%s would be refused by the hub and by every station:\n", name)
	for _, p := range r.Problems {
		fmt.Fprintf(w, "  - %s: %s\n", cmdutil.TermText(p.Kind), cmdutil.TermText(p.Message))
	}
	return nil
}

// errRefused is the outcome of a dry run that found problems: exit code 1.
type errRefused struct{ n int }

func (e errRefused) Error() string {
	if e.n == 1 {
		return "the module would be refused: 1 problem (listed above)"
	}
	return fmt.Sprintf("the module would be refused: %d problems (listed above)", e.n)
}

func checkRun(ctx context.Context, opts *PublishOptions) error {
	mc, err := hubsync.CheckModule(ctx, opts.Dir)
	if err != nil {
		return err
	}
	if opts.Check && len(mc.Problems) == 0 {
		found, err := sampleProblems(ctx, opts)
		if err != nil {
			return err
		}
		mc.Problems = append(mc.Problems, found...)
	}
	res := CheckResult{ModuleCheck: *mc, OK: len(mc.Problems) == 0}
	if opts.Check && !opts.DryRun && res.OK {
		return nil // publishRun prints what was published
	}
	if err := cmdutil.Print(opts.IO.Out, opts.JSON, res); err != nil {
		return err
	}
	if !res.OK {
		return errRefused{len(mc.Problems)}
	}
	return nil
}

// sampleProblems makes the calls of DIR/tests.yaml in learn mode (offline:
// nothing reaches the network) and returns, as problems of kind
// "samples", every access they made that the manifest does not declare.
func sampleProblems(ctx context.Context, opts *PublishOptions) ([]host.Problem, error) {
	spec, err := moduletest.LoadSpec(opts.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, cmdutil.Usagef("--check makes the calls of %s, and there is none", filepath.Join(opts.Dir, moduletest.SpecFile))
	}
	if err != nil {
		return nil, err
	}
	r, err := learn.Learn(ctx, learn.Options{Dir: opts.Dir, Calls: learn.CallsOf(spec), Cache: opts.Cache})
	if err != nil {
		return nil, fmt.Errorf("--check: %w", err)
	}
	u := r.Undeclared
	var out []host.Problem
	add := func(what string, list []string) {
		for _, e := range list {
			out = append(out, host.Problem{Kind: "samples", Message: fmt.Sprintf("the calls of %s use %s %s, which the manifest does not declare (station module learn shows the requires block they need)", moduletest.SpecFile, what, e)})
		}
	}
	add("network", u.Network)
	if u.SubprocessAny {
		add("subprocess", []string{"(any program)"})
	}
	add("program", u.Programs)
	add("the program environment variable", u.Env)
	add("filesystem_writes", u.Writes)
	add("filesystem_reads", u.Reads)
	if u.LLM != nil {
		add("llm", []string{"(the station's LLM)"})
	}
	return out, nil
}
