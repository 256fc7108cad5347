// Package demo sets up the station's demo on embedded defaults, without
// touching the operator's own station or the internet: it builds the example
// modules from a checkout of the station repository, starts stand-ins for
// api.stripe.com, api.groq.com and an LLM provider on 127.0.0.1 (APIs),
// writes the operator configuration that routes module egress to them, and
// installs the examples into a station home of its own.
//
// Start sets the demo up and leaves it running (station serve --demo serves
// it); Run is the one-shot tour of station demo: Start, a call that succeeds,
// one that reaches the stand-in Stripe, one the sandbox denies, and the
// audit log.
package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tetratelabs/wazero"

	"github.com/station-dev/station/internal/station"
	"github.com/station-dev/station/internal/wasmbuild"
	"github.com/station-dev/station/manifest"
)

// Examples are the example modules the demo builds and installs: the
// directories under examples/ of the checkout.
var Examples = []string{"hello", "stripe-invoicing"}

// ErrNoCheckout is Start's error when the working directory is not in a
// checkout of the station repository, whose examples the demo builds.
var ErrNoCheckout = errors.New("demo: the working directory is not in a checkout of the station repository, whose example modules the demo builds from source")

// ErrNotDemoHome is Start's error for a station home that holds a
// configuration the demo did not write: the demo rewrites it, so it refuses
// to set up in an operator's own station.
var ErrNotDemoHome = errors.New("its config.yaml was not written by the demo, which rewrites it")

// configHeader starts every config.yaml the demo writes.
const configHeader = "# Written by station demo."

// CAFile is the file in the demo's home that holds the stand-ins' CA.
const CAFile = "demo-ca.pem"

// A StepKind names a step of the setup.
type StepKind string

// The steps of the setup, in order: a build per example, the stand-in APIs,
// an install per example.
const (
	StepBuild   StepKind = "build"
	StepAPIs    StepKind = "apis"
	StepInstall StepKind = "install"
)

// Step is one step of the setup, as Progress hears of it and Demo.Steps
// keeps it.
type Step struct {
	Kind StepKind
	// Module is the module built or installed; Dir the example's directory
	// relative to the checkout (examples/hello).
	Module, Dir string
	// Took is how long the step took (set when it ended).
	Took time.Duration
	// Plan is what an install approved: the module's digest, commands and
	// permissions (the demo approves; a person is normally asked).
	Plan *station.Plan
	// Addr and LLMAddr are where the stand-in APIs listen, Config the
	// configuration that routes to them (StepAPIs).
	Addr, LLMAddr, Config string
}

// Progress hears about each step of the setup: Begin before its work, End
// after it, with the error that ended it if any.
type Progress interface {
	Begin(Step)
	End(Step, error)
}

// Options say where and how to set the demo up.
type Options struct {
	// Home is the demo's station home (DefaultHome, or a temporary
	// directory). It must not hold a configuration the demo did not write.
	Home string
	// Root is the checkout of the station repository; "" finds it at or
	// above the working directory.
	Root string
	// Logger receives the station's log; nil discards it.
	Logger *slog.Logger
	// Cache, if set, replaces the station's on-disk compilation cache.
	Cache wazero.CompilationCache
	// Progress, if set, hears about each step.
	Progress Progress
	// Executable, if set, is copied to Home/bin/station, so that the
	// commands Try prints run the very binary that set the demo up (under
	// go run, a temporary file that is gone when go run exits).
	Executable string
	// Build compiles the Go module in dir to out; nil is wasmbuild.Build.
	Build func(ctx context.Context, dir, out string) error
}

// Demo is a demo station, set up and running.
type Demo struct {
	Home, Root string
	Station    *station.Station
	APIs       *APIs
	// Binary is the copy of Options.Executable, "" without one.
	Binary string
	Steps  []Step
}

// Close closes the station (flushing its audit log), then the stand-ins.
func (d *Demo) Close(ctx context.Context) error {
	err := d.Station.Close(context.WithoutCancel(ctx))
	return errors.Join(err, d.APIs.Close())
}

// DefaultHome is home when set (--home), else ~/.station-demo: never
// $STATION_HOME, the operator's own station, whose configuration the demo
// would rewrite.
func DefaultHome(home string) (string, error) {
	if home != "" {
		return home, nil
	}
	u, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("demo: %w (pass --home)", err)
	}
	return filepath.Join(u, ".station-demo"), nil
}

// Start sets the demo up in opts.Home: it builds the examples, starts the
// stand-in APIs and writes the configuration that routes to them, opens the
// station and installs the examples, approving what they ask for. Close it.
func Start(ctx context.Context, opts Options) (d *Demo, err error) {
	if opts.Home == "" {
		return nil, errors.New("demo: no station home")
	}
	if opts.Root == "" {
		if opts.Root, err = wasmbuild.RepoRoot(); err != nil {
			return nil, ErrNoCheckout
		}
	}
	if opts.Build == nil {
		opts.Build = wasmbuild.Build
	}
	if err := checkHome(opts.Home); err != nil {
		return nil, err
	}
	d = &Demo{Home: opts.Home, Root: opts.Root}
	step := func(s Step, work func(*Step) error) error {
		if opts.Progress != nil {
			opts.Progress.Begin(s)
		}
		start := time.Now()
		err := work(&s)
		s.Took = time.Since(start)
		if opts.Progress != nil {
			opts.Progress.End(s, err)
		}
		if err == nil {
			d.Steps = append(d.Steps, s)
		}
		return err
	}

	dirs := map[string]string{}
	for _, ex := range Examples {
		src := filepath.Join(opts.Root, "examples", ex)
		man, err := manifest.Load(src)
		if err != nil {
			return nil, fmt.Errorf("demo: %w", err)
		}
		dst := filepath.Join(opts.Home, "build", ex)
		if err := step(Step{Kind: StepBuild, Module: man.ID, Dir: filepath.Join("examples", ex)}, func(*Step) error {
			return buildExample(ctx, opts.Build, src, dst, man)
		}); err != nil {
			return nil, err
		}
		dirs[ex] = dst
	}

	if err := step(Step{Kind: StepAPIs}, func(s *Step) error {
		if d.APIs, err = StartAPIs(); err != nil {
			return err
		}
		s.Addr, s.LLMAddr, s.Config = d.APIs.Addr(), d.APIs.LLMAddr(), d.APIs.Config(CAFile)
		if err := os.WriteFile(filepath.Join(opts.Home, CAFile), d.APIs.CAPEM(), 0o600); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(opts.Home, "config.yaml"), []byte(s.Config), 0o600)
	}); err != nil {
		if d.APIs != nil {
			d.APIs.Close()
		}
		return nil, err
	}

	// An empty environment: STATION_LLM_* would point the station's LLM
	// client away from the stand-in, to a provider on the internet.
	d.Station, err = station.Open(ctx, opts.Home, station.Options{Logger: opts.Logger, Cache: opts.Cache, Getenv: func(string) string { return "" }})
	if err != nil {
		d.APIs.Close()
		return nil, err
	}
	opened := d
	defer func() {
		if err != nil {
			opened.Close(ctx)
		}
	}()

	for _, ex := range Examples {
		if err := step(Step{Kind: StepInstall, Dir: filepath.Join("examples", ex)}, func(s *Step) error {
			p, err := d.Station.Install(ctx, dirs[ex], func(station.Plan) (bool, error) { return true, nil })
			if p != nil {
				s.Module, s.Plan = p.Manifest.ID, p
			}
			return err
		}); err != nil {
			return nil, err
		}
	}

	// The example's API keys are secrets bound to their hosts: the module
	// sends placeholders, the network gate puts these values in, and the
	// stand-in APIs accept only them.
	for name, value := range DemoSecrets {
		if err := d.Station.SetSecret(ctx, "dave/stripe-invoicing", name, []byte(value)); err != nil {
			return nil, fmt.Errorf("demo: %w", err)
		}
	}

	if opts.Executable != "" {
		d.Binary = filepath.Join(opts.Home, "bin", "station")
		if err := copyExecutable(opts.Executable, d.Binary); err != nil {
			return nil, fmt.Errorf("demo: copy the station binary into the demo home: %w", err)
		}
	}
	return d, nil
}

// DemoSecrets are the values the demo stores for dave/stripe-invoicing's
// secrets, the keys its stand-in APIs accept.
var DemoSecrets = map[string]string{"STRIPE_KEY": "sk_test_demo", "GROQ_KEY": "gsk_demo"}

// checkHome refuses a home whose config.yaml the demo did not write.
func checkHome(home string) error {
	b, err := os.ReadFile(filepath.Join(home, "config.yaml"))
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("demo: %w", err)
	case !strings.HasPrefix(string(b), configHeader):
		return fmt.Errorf("demo: will not set up in %s: %w", home, ErrNotDemoHome)
	}
	return nil
}

// buildExample builds the example in src into dst with its manifest, as
// station module build would leave it.
func buildExample(ctx context.Context, build func(context.Context, string, string) error, src, dst string, man *manifest.Manifest) error {
	if err := os.MkdirAll(dst, 0o700); err != nil {
		return err
	}
	if err := build(ctx, src, filepath.Join(dst, man.Wasm)); err != nil {
		return fmt.Errorf("demo: build %s: %w", man.ID, err)
	}
	raw, err := os.ReadFile(filepath.Join(src, manifest.FileName))
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dst, manifest.FileName), raw, 0o600)
}

// copyExecutable copies the program at src to dst, executable, replacing
// dst whole (never a half-written program under its name).
func copyExecutable(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".station-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, err = io.Copy(tmp, in)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o755)
	}
	if err != nil {
		return err
	}
	return os.Rename(tmp.Name(), dst)
}
