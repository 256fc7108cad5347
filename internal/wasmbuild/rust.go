package wasmbuild

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// rustTargets are the names of the WASI preview 1 target, newest first:
// rustc 1.78 added wasm32-wasip1, and 1.84 removed wasm32-wasi (Debian's
// rustc 1.63 knows only wasm32-wasi).
var rustTargets = []string{"wasm32-wasip1", "wasm32-wasi"}

// rustInstallHint says what to install when no rustc can build modules.
const rustInstallHint = "install Debian's with `apt-get install rustc libstd-rust-dev-wasm32`, " +
	"or add the target to a rustup toolchain with `rustup target add wasm32-wasip1`; " +
	"STATION_RUSTC names the rustc to use"

// rustToolchain is a rustc that has the standard library for a WASI target.
type rustToolchain struct {
	rustc   string // the command, as run
	target  string // "wasm32-wasi" or "wasm32-wasip1"
	version string // "rustc 1.63.0"
	sysroot string // rustc --print sysroot: its standard libraries, which the build reads
}

func (tc *rustToolchain) String() string {
	return fmt.Sprintf("%s (%s, %s)", tc.version, tc.rustc, tc.target)
}

// RustToolchain finds the rustc that builds Rust modules and describes it
// in one line, e.g. "rustc 1.63.0 (/usr/bin/rustc, wasm32-wasi)": the one
// STATION_RUSTC names, else the first of /usr/bin/rustc and the rustc on
// PATH whose wasm32-wasip1 or wasm32-wasi target directory
// (`rustc --print target-libdir --target T`) holds a libstd-*.rlib. A
// rustup toolchain without the target is passed over, not used to fail a
// build. The answer is found once per process.
//
// The error says what was tried and what to install.
func RustToolchain() (string, error) {
	tc, err := findRustToolchain()
	if err != nil {
		return "", err
	}
	return tc.String(), nil
}

var findRustToolchain = sync.OnceValues(func() (*rustToolchain, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if env := os.Getenv("STATION_RUSTC"); env != "" {
		return lookRust(ctx, []string{env})
	}
	candidates := []string{"/usr/bin/rustc"}
	if p, err := exec.LookPath("rustc"); err == nil {
		candidates = append(candidates, p)
	}
	return lookRust(ctx, candidates)
})

// lookRust returns the first of candidates (rustc commands) that has the
// standard library for a WASI target.
func lookRust(ctx context.Context, candidates []string) (*rustToolchain, error) {
	var tried []string
	seen := map[string]bool{}
	for _, rustc := range candidates {
		if seen[rustc] {
			continue
		}
		seen[rustc] = true
		tc, err := probeRustc(ctx, rustc)
		if err == nil {
			return tc, nil
		}
		tried = append(tried, err.Error())
	}
	return nil, fmt.Errorf("no rustc with the WebAssembly standard library (%s): tried %s; %s",
		strings.Join(rustTargets, " or "), strings.Join(tried, "; "), rustInstallHint)
}

// probeRustc reports whether rustc has the standard library for one of
// rustTargets, and for which.
func probeRustc(ctx context.Context, rustc string) (*rustToolchain, error) {
	out, err := rustOutput(ctx, rustc, "--version")
	if err != nil {
		return nil, fmt.Errorf("%s: %v", rustc, err)
	}
	f := strings.Fields(out)
	version := strings.Join(f[:min(2, len(f))], " ")
	var missing []string
	for _, target := range rustTargets {
		libdir, err := rustOutput(ctx, rustc, "--print", "target-libdir", "--target", target)
		if err != nil {
			missing = append(missing, target+": unknown target")
			continue
		}
		libdir = strings.TrimSpace(libdir)
		if std, _ := filepath.Glob(filepath.Join(libdir, "libstd-*.rlib")); len(std) > 0 {
			sysroot, err := rustOutput(ctx, rustc, "--print", "sysroot")
			if err != nil {
				return nil, fmt.Errorf("%s: %v", rustc, err)
			}
			sysroot = strings.TrimSpace(sysroot)
			// Build with the toolchain's own rustc, not a rustup shim in
			// front of it: the shim reads rustup's settings in the home
			// directory, which the confined build cannot.
			if bin := filepath.Join(sysroot, "bin", "rustc"); sysroot != "" && rustFileExists(bin) {
				rustc = bin
			}
			return &rustToolchain{rustc: rustc, target: target, version: version, sysroot: sysroot}, nil
		}
		missing = append(missing, fmt.Sprintf("%s: no libstd in %s", target, libdir))
	}
	return nil, fmt.Errorf("%s (%s): %s", rustc, version, strings.Join(missing, ", "))
}

// rustOutput runs rustc with args and returns its standard output; the
// error carries its standard error.
func rustOutput(ctx context.Context, rustc string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, rustc, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			return "", fmt.Errorf("%w: %s", err, rustFirstLine(msg))
		}
		return "", err
	}
	return stdout.String(), nil
}

// rustFirstLine is s up to its first newline.
func rustFirstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// rustOptFlags are the code generation flags of both crates: small code
// (a module's size is its install and load time), one codegen unit for
// the best of it, and abort on panic (the only strategy the WASI targets'
// standard library supports).
var rustOptFlags = []string{"-C", "opt-level=s", "-C", "codegen-units=1", "-C", "panic=abort"}

// buildRust compiles the Rust module crate in dir (dir/src/lib.rs, a
// cdylib) to a WASI reactor module at out, with rustc alone (no cargo):
// first the SDK crate at sdkDir (sdkDir/src/lib.rs, crate station) to an
// rlib in a temporary directory, then the module against it, with
// link-time optimization and without symbols. A copy of the SDK at
// dir/station (dir/station/src/lib.rs) is used instead of sdkDir. The
// module may depend on no crate but station and std; build scripts,
// features and CARGO_* variables do not exist here.
//
// The compiler's output is included in the error.
func buildRust(ctx context.Context, dir, out, sdkDir string) error {
	if err := rustBuild(ctx, dir, out, sdkDir); err != nil {
		return fmt.Errorf("build %s: %w", dir, err)
	}
	return nil
}

func rustBuild(ctx context.Context, dir, out, sdkDir string) error {
	tc, err := findRustToolchain()
	if err != nil {
		return err
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return err
	}
	if out, err = filepath.Abs(out); err != nil {
		return err
	}
	if vendored := filepath.Join(dir, "station"); rustFileExists(filepath.Join(vendored, "src", "lib.rs")) {
		sdkDir = vendored
	}
	if sdkDir, err = filepath.Abs(sdkDir); err != nil {
		return err
	}
	sdkSrc := filepath.Join(sdkDir, "src", "lib.rs")
	if !rustFileExists(sdkSrc) {
		return fmt.Errorf("the Rust SDK is not at %s", sdkSrc)
	}
	modSrc := filepath.Join(dir, "src", "lib.rs")
	if !rustFileExists(modSrc) {
		return fmt.Errorf("no %s: a Rust module is a library crate (src/lib.rs)", filepath.Join("src", "lib.rs"))
	}
	edition, err := rustManifest(dir)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "station-rust-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	rlibDir, err := rustSDK(ctx, tc, dir, sdkDir, tmp)
	if err != nil {
		return err
	}
	wasm := filepath.Join(tmp, "module.wasm")
	modArgs := append([]string{
		"--crate-name", "module", "--crate-type=cdylib", "--edition", edition, "--target", tc.target,
		"--remap-path-prefix", dir + string(filepath.Separator) + "=",
	}, rustOptFlags...)
	modArgs = append(modArgs,
		"-C", "lto", "-C", "strip=symbols",
		"--extern", "station="+filepath.Join(rlibDir, "libstation.rlib"), "-L", "dependency="+rlibDir,
		"-o", wasm, modSrc)
	if err := runRustc(ctx, tc, dir, "the module", modArgs, []string{dir, rlibDir}, tmp); err != nil {
		return err
	}
	return replaceFile(wasm, out)
}

// rustSDK compiles the SDK crate at sdkDir to libstation.rlib and returns
// the directory holding it: a directory of this user's cache keyed by the
// crate's files and the compiler, so that a rebuild compiles only the
// module, or tmp when there is no usable cache.
func rustSDK(ctx context.Context, tc *rustToolchain, dir, sdkDir, tmp string) (string, error) {
	// Paths in panic messages name the crate's files, not this machine's.
	args := append([]string{
		"--crate-name", "station", "--crate-type=rlib", "--edition", "2021", "--target", tc.target,
		"--remap-path-prefix", sdkDir + string(filepath.Separator) + "=station" + string(filepath.Separator),
	}, rustOptFlags...)
	compile := func(outDir string) error {
		return runRustc(ctx, tc, dir, "the station SDK", append(args, "--out-dir", outDir, filepath.Join(sdkDir, "src", "lib.rs")), []string{sdkDir}, outDir)
	}
	key, err := rustSDKKey(tc, sdkDir)
	cache, cerr := os.UserCacheDir()
	if err != nil || cerr != nil {
		return tmp, compile(tmp)
	}
	root := filepath.Join(cache, "station", "rust-sdk")
	if privateDir(root) != nil {
		return tmp, compile(tmp)
	}
	final := filepath.Join(root, key)
	if rustFileExists(filepath.Join(final, "libstation.rlib")) {
		return final, nil
	}
	staging, err := os.MkdirTemp(root, key+"-*.tmp")
	if err != nil {
		return tmp, compile(tmp)
	}
	defer os.RemoveAll(staging)
	if err := compile(staging); err != nil {
		return "", err
	}
	if err := os.Rename(staging, final); err != nil && !rustFileExists(filepath.Join(final, "libstation.rlib")) {
		return "", err
	}
	return final, nil
}

// rustSDKKey hashes what the SDK's rlib is made of: its source files (the
// .rs files under sdkDir/src), the compiler and the flags.
func rustSDKKey(tc *rustToolchain, sdkDir string) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "rust-sdk 1\x00%s\x00%s\x00%s\x00", tc, tc.target, strings.Join(rustOptFlags, " "))
	src := filepath.Join(sdkDir, "src")
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s\x00", filepath.ToSlash(rel))
		return hashFile(h, p)
	})
	return hex.EncodeToString(h.Sum(nil)[:16]), err
}

// runRustc runs tc's rustc with args in dir, confined (runTool) to
// reading reads and its sysroot and writing only out, its TMPDIR; what
// names the crate in the error, which includes the compiler's output.
func runRustc(ctx context.Context, tc *rustToolchain, dir, what string, args, reads []string, out string) error {
	cmd := exec.CommandContext(ctx, tc.rustc, args...)
	cmd.Dir = dir
	cmd.Env = append(compilerEnv(), "TMPDIR="+out)
	var output bytes.Buffer
	cmd.Stdout, cmd.Stderr = &output, &output
	var programs []string // the sysroot holds rust-lld, and a rustup toolchain's rustc
	if tc.sysroot != "" {
		programs = append(programs, tc.sysroot)
	}
	if err := runTool(cmd, programs, append(reads, dir), []string{out}); err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		msg := compilerOutput(output.String())
		if msg == "" {
			return fmt.Errorf("rustc (%s): compile %s: %w", tc, what, err)
		}
		return fmt.Errorf("rustc (%s): compile %s: %w\n%s", tc, what, err, msg)
	}
	return nil
}

// rustFileExists reports whether name is a regular file (or a link to one).
func rustFileExists(name string) bool {
	fi, err := os.Stat(name)
	return err == nil && fi.Mode().IsRegular()
}

// rustManifest reads what of dir/Cargo.toml the rustc build honours — the
// edition (2021 when there is none) — and refuses what it cannot honour
// instead of ignoring it: dependencies other than station, and build
// scripts. It reads the file line by line, as much TOML as a Cargo.toml
// of a module needs.
func rustManifest(dir string) (edition string, err error) {
	const cargoToml = "Cargo.toml"
	edition = "2021"
	if rustFileExists(filepath.Join(dir, "build.rs")) {
		return "", errors.New("build.rs: station module build compiles Rust with rustc alone and runs no build script")
	}
	b, err := os.ReadFile(filepath.Join(dir, cargoToml))
	if errors.Is(err, fs.ErrNotExist) {
		return edition, nil
	} else if err != nil {
		return "", err
	}
	section := ""
	for n, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		for i := range len(line) { // a comment: a # outside a string
			if line[i] == '#' && strings.Count(line[:i], `"`)%2 == 0 {
				line = strings.TrimSpace(line[:i])
				break
			}
		}
		if line == "" {
			continue
		}
		if strings.HasPrefix(line, "[") {
			section = strings.Trim(line, "[] ")
			continue
		}
		key, value, _ := strings.Cut(line, "=")
		key, value = strings.TrimSpace(key), strings.Trim(strings.TrimSpace(value), `"'`)
		switch {
		case section == "package" && key == "edition":
			switch value {
			case "2015", "2018", "2021":
				edition = value
			default:
				return "", fmt.Errorf("%s:%d: edition %q: this rustc builds editions 2015, 2018 and 2021", cargoToml, n+1, value)
			}
		case section == "package" && key == "build":
			return "", fmt.Errorf("%s:%d: a build script: station module build compiles Rust with rustc alone and runs none", cargoToml, n+1)
		case (section == "dependencies" || strings.HasPrefix(section, "dependencies.") ||
			strings.HasSuffix(section, ".dependencies") || section == "build-dependencies") &&
			key != "station" && section != "dependencies.station":
			name := key
			if strings.HasPrefix(section, "dependencies.") {
				name = strings.TrimPrefix(section, "dependencies.")
			}
			return "", fmt.Errorf("%s:%d: depends on %s: station module build compiles Rust with rustc alone, "+
				"so a module depends on no crate but station (build it with cargo instead, or remove %s)", cargoToml, n+1, name, name)
		}
	}
	return edition, nil
}
