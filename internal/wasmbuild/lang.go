package wasmbuild

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/station-dev/station/internal/atomicfile"
	"github.com/station-dev/station/internal/config"
	"github.com/station-dev/station/internal/execgate"
	"github.com/station-dev/station/internal/gosdk"
)

// Options configure BuildWith.
type Options struct {
	// GoProxy is the directory the Go SDK's proxy is kept in (gosdk); ""
	// means STATION_HOME/goproxy (~/.station/goproxy).
	GoProxy string
}

// Build is BuildWith with the default Options.
func Build(ctx context.Context, dir, out string) error {
	return BuildWith(ctx, dir, out, Options{})
}

// BuildWith compiles the module in dir to a WASI reactor at out, in the
// module's language (Lang): Go with the stock toolchain (buildGo), C with
// clang and wasi-libc (buildC), Rust with rustc alone (buildRust), the C
// and Rust SDKs from this station's copy of sdk/ unless the module has its
// own. The compiler's output is included in the error.
func BuildWith(ctx context.Context, dir, out string, o Options) error {
	lang, err := Lang(dir)
	if err != nil {
		return err
	}
	switch lang {
	case LangC, LangRust:
		// The SDK this station carries, unless the module has its own
		// copy (station module new puts one in; buildC and buildRust
		// prefer it).
		sdkDir, err := os.MkdirTemp("", "station-sdk-")
		if err != nil {
			return fmt.Errorf("build %s: %w", dir, err)
		}
		defer os.RemoveAll(sdkDir)
		if _, err := gosdk.CopyDir(lang, sdkDir); err != nil {
			return fmt.Errorf("build %s: %w", dir, err)
		}
		if lang == LangC {
			return buildC(ctx, dir, out, sdkDir)
		}
		return buildRust(ctx, dir, out, sdkDir)
	default:
		env, err := goSDKEnv(ctx, dir, o)
		if err != nil {
			return fmt.Errorf("build %s: %w", dir, err)
		}
		return buildGo(ctx, dir, out, nil, env)
	}
}

// The languages Lang reports.
const (
	LangGo   = "go"
	LangC    = "c"
	LangRust = "rust"
)

// Lang reports the language of the module in dir: Go when it holds a
// go.mod or a .go file, Rust when it holds a Cargo.toml or src/lib.rs, C
// when it holds a .c file.
func Lang(dir string) (string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", fmt.Errorf("build %s: %w", dir, err)
	}
	has := func(suffix string) bool {
		for _, e := range entries {
			if !e.IsDir() && filepath.Ext(e.Name()) == suffix {
				return true
			}
		}
		return false
	}
	exists := func(name string) bool {
		_, err := os.Stat(filepath.Join(dir, name))
		return err == nil
	}
	switch {
	case exists("go.mod") || has(".go"):
		return LangGo, nil
	case exists("Cargo.toml") || exists(filepath.Join("src", "lib.rs")):
		return LangRust, nil
	case has(".c"):
		return LangC, nil
	}
	return "", fmt.Errorf("build %s: no module source here: a Go module has a go.mod or .go files, a Rust one src/lib.rs, a C one .c files (start one with: station module new DIR --lang go|c|rust)", dir)
}

// goSDKEnv prepares the Go SDK's proxy for a module whose own go.mod
// requires the SDK (a module outside this repository) and returns the
// environment that points the go command at it; nil for any other module.
func goSDKEnv(ctx context.Context, dir string, o Options) ([]string, error) {
	mod, err := findGoMod(dir)
	if err != nil || mod == nil || declaresModule(mod, modulePath) || !bytes.Contains(mod, []byte(gosdk.ModulePath)) || replacesSDK(mod) {
		return nil, nil // no go.mod (go build says so), this repository, no SDK, or a local one
	}
	proxy := o.GoProxy
	if proxy == "" {
		home, err := config.Home()
		if err != nil {
			return nil, err
		}
		proxy = filepath.Join(home, "goproxy")
	}
	if err := gosdk.WriteProxy(proxy); err != nil {
		return nil, err
	}
	goEnv, err := gosdk.GoEnv(ctx, goTool(), os.Environ())
	if err != nil {
		return nil, err
	}
	return gosdk.Env(proxy, goEnv), nil
}

// replacesSDK reports whether the go.mod text b replaces the SDK's module
// (with a directory, as this repository's bench module does): the proxy
// would not be asked for it.
func replacesSDK(b []byte) bool {
	inBlock := false
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		switch {
		case len(f) == 0:
		case f[0] == "replace" && len(f) >= 2 && f[1] == "(":
			inBlock = true
		case inBlock && f[0] == ")":
			inBlock = false
		case f[0] == "replace" && len(f) >= 2 && strings.Trim(f[1], `"`) == gosdk.ModulePath,
			inBlock && strings.Trim(f[0], `"`) == gosdk.ModulePath:
			return true
		}
	}
	return false
}

// findGoMod returns the go.mod of the Go module dir belongs to: the nearest
// at or above dir; nil if there is none.
func findGoMod(dir string) ([]byte, error) {
	d, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil {
			return b, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return nil, nil
		}
		d = parent
	}
}

// Tidy runs go mod tidy in the Go module dir with the SDK's proxy
// (BuildWith's), offline: for a new module, it writes go.sum.
func Tidy(ctx context.Context, dir string, o Options) error {
	env, err := goSDKEnv(ctx, dir, o)
	if err != nil {
		return err
	}
	_, err = goCommandEnv(ctx, dir, env, "mod", "tidy")
	return err
}

// runTool runs cmd, a compiler building a module, confined to reading the
// system's trees, programs and reads, running programs from the system's
// trees and programs, and writing writes (execgate.RunTool): a
// module's source cannot pull a file of the builder's into the module
// (C's #include and .incbin, Rust's include_bytes!), nor reach the network.
// Where the kernel cannot confine it, the build is refused, unless
// STATION_UNCONFINED_BUILD=1 says to run the compiler as the user.
func runTool(cmd *exec.Cmd, programs, reads, writes []string) error {
	err := execgate.RunTool(cmd, programs, reads, writes)
	if errors.Is(err, execgate.ErrToolUnconfined) {
		if os.Getenv("STATION_UNCONFINED_BUILD") == "1" {
			return cmd.Run()
		}
		return fmt.Errorf("%w: a module's source could read any of your files into what it builds; "+
			"set STATION_UNCONFINED_BUILD=1 to build it anyway, with the compiler reading what you can", err)
	}
	return err
}

// compilerEnv is the environment clang and rustc run a module's build in:
// only what they need to find themselves and a temporary directory. A
// module's source can read the environment while it compiles (Rust's env!
// and option_env!), so the builder's tokens and keys stay out of it.
func compilerEnv() []string {
	var env []string
	for _, k := range []string{"PATH", "HOME", "TMPDIR", "LANG", "LC_ALL", "SystemRoot", "RUSTUP_HOME", "RUSTUP_TOOLCHAIN", "CARGO_HOME"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// replaceFile puts the file at src in place of out (atomicfile.Write), so
// that out — which a module directory names, and may have made a symbolic
// link — is replaced, never written through.
func replaceFile(src, out string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return atomicfile.Write(out, b, 0o644)
}

// compilerOutput is a compiler's output as an error carries it: trimmed,
// and with tabs as spaces (the go command indents with tabs, which a
// terminal's error line would show escaped).
func compilerOutput(s string) string {
	return strings.ReplaceAll(strings.TrimSpace(s), "\t", "    ")
}
