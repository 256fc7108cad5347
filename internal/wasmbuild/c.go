package wasmbuild

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
)

// The C toolchain: clang targeting wasm32-wasi, with wasi-libc as its
// sysroot and compiler-rt's wasm32 builtins. These are the Debian packages;
// clangRTPackage is the last one's name for another clang version.
const (
	cPackages      = "clang lld wasi-libc"
	clangRTPackage = "libclang-rt-%s-dev-wasm32"
)

// cSysroots are the places wasi-libc is installed: Debian and Ubuntu put
// its headers in /usr/include/wasm32-wasi and its libraries in
// /usr/lib/wasm32-wasi (sysroot /usr, which clang's WASI driver searches
// with the triple), the upstream wasi-sdk layout and other distributions
// in /usr/share/wasi-sysroot.
var cSysroots = []struct{ root, probe string }{
	{"/usr/share/wasi-sysroot", "include/stdlib.h"},
	{"/usr/share/wasi-sysroot", "include/wasm32-wasi/stdlib.h"},
	{"/usr", "include/wasm32-wasi/stdlib.h"},
}

// cFlags are the flags of every C module build: a WASI reactor (no _start;
// _initialize runs the constructors), optimized for size, without debug
// information or names, warnings as errors. The stack comes first in
// memory, so that overflowing it traps instead of overwriting data, and
// has 1 MiB (wasm-ld's default is 64 KiB). Leaving fields of a struct
// initializer out is how a command table is written
// ({"greet", greet, "name"}), so it is not a warning.
var cFlags = []string{
	"--target=wasm32-wasi", "-mexec-model=reactor",
	"-Oz", "-g0",
	"-Wall", "-Wextra", "-Werror", "-Wno-missing-field-initializers",
	"-Wl,--strip-all", "-Wl,--stack-first", "-Wl,-z,stack-size=1048576",
}

// cToolchain is what CToolchain found, found once per process.
type cToolchain struct {
	clang, sysroot, desc string
}

var findC = sync.OnceValues(func() (cToolchain, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return lookC(ctx)
})

// CToolchain reports the C toolchain that builds C modules, as one line
// ("clang 14.0.6 (wasm32-wasi, sysroot /usr)"), or why there is none, with
// the Debian packages to install. The compiler is $STATION_CLANG if set,
// else clang on PATH, else the newest of clang-19 down to clang-14; it is
// checked once per process by compiling and linking a small reactor.
func CToolchain() (string, error) {
	tc, err := findC()
	if err != nil {
		return "", err
	}
	return tc.desc, nil
}

// lookC finds clang and a sysroot with which it links a reactor.
func lookC(ctx context.Context) (cToolchain, error) {
	clang, err := findClang()
	if err != nil {
		return cToolchain{}, fmt.Errorf("building C modules needs clang for wasm32-wasi: %w; install it with: %s", err, cInstallHint(""))
	}
	out, err := exec.CommandContext(ctx, clang, "--version").Output()
	if err != nil {
		return cToolchain{}, fmt.Errorf("building C modules needs clang for wasm32-wasi: %s --version: %w; install it with: %s", clang, err, cInstallHint(""))
	}
	version := clangVersion(string(out))
	hint := cInstallHint(version)

	tmp, err := os.MkdirTemp("", "station-cprobe-")
	if err != nil {
		return cToolchain{}, fmt.Errorf("check the C toolchain: %w", err)
	}
	defer os.RemoveAll(tmp)
	src := filepath.Join(tmp, "probe.c")
	// The probe needs what the SDK needs: wasi-libc's malloc and printf
	// (whose long double support links compiler-rt's builtins), an
	// import and an export.
	const probe = `#include <stdio.h>
#include <stdlib.h>
__attribute__((import_module("station"), import_name("buf_len"))) int buf_len(int);
__attribute__((export_name("probe"))) int probe(int n) {
	char *p = malloc((size_t)buf_len(n) + 32);
	if (p == NULL) return -1;
	int r = snprintf(p, 32, "%g %Lg", (double)n / 3, (long double)n);
	free(p);
	return r;
}
`
	if err := os.WriteFile(src, []byte(probe), 0o600); err != nil {
		return cToolchain{}, fmt.Errorf("check the C toolchain: %w", err)
	}
	var tried []string
	var lastErr error
	for _, s := range cSysroots {
		if _, err := os.Stat(filepath.Join(s.root, s.probe)); err != nil || slices.Contains(tried, s.root) {
			continue
		}
		tried = append(tried, s.root)
		out := filepath.Join(tmp, "probe.wasm")
		args := append(slices.Clone(cFlags), "--sysroot="+s.root, "-o", out, src)
		if lastErr = runClang(ctx, clang, tmp, args); lastErr == nil {
			name := "clang"
			if version != "" {
				name += " " + version
			}
			return cToolchain{clang: clang, sysroot: s.root, desc: fmt.Sprintf("%s (wasm32-wasi, sysroot %s)", name, s.root)}, nil
		}
	}
	if lastErr == nil {
		return cToolchain{}, fmt.Errorf("building C modules needs wasi-libc, which is not installed (no /usr/include/wasm32-wasi, no /usr/share/wasi-sysroot); install it with: %s", hint)
	}
	return cToolchain{}, fmt.Errorf("building C modules: %s cannot build a wasm32-wasi reactor with sysroot %s; install: %s\n%w", clang, strings.Join(tried, " or "), hint, lastErr)
}

// findClang returns the clang to use.
func findClang() (string, error) {
	if c := os.Getenv("STATION_CLANG"); c != "" {
		p, err := exec.LookPath(c)
		if err != nil {
			return "", fmt.Errorf("STATION_CLANG=%s: %w", c, err)
		}
		return p, nil
	}
	if p, err := exec.LookPath("clang"); err == nil {
		return p, nil
	}
	for v := 19; v >= 14; v-- {
		if p, err := exec.LookPath(fmt.Sprintf("clang-%d", v)); err == nil {
			return p, nil
		}
	}
	return "", errors.New("no clang on PATH (nor clang-19 ... clang-14)")
}

var clangVersionRE = regexp.MustCompile(`clang version (\d+)\.(\d+)\.(\d+)`)

// clangVersion returns the version in clang --version's output, or "".
func clangVersion(out string) string {
	m := clangVersionRE.FindStringSubmatch(out)
	if m == nil {
		return ""
	}
	return m[1] + "." + m[2] + "." + m[3]
}

// cInstallHint is the command that installs the toolchain for a clang of
// version (major.minor.patch; "" for the Debian stable default).
func cInstallHint(version string) string {
	major := "14"
	if v, _, ok := strings.Cut(version, "."); ok && v != "" {
		major = v
	}
	return "apt-get install " + cPackages + " " + fmt.Sprintf(clangRTPackage, major)
}

// runClang runs clang in dir; on failure the error holds its output.
func runClang(ctx context.Context, clang, dir string, args []string) error {
	return runClangConfined(ctx, clang, dir, args, []string{dir}, dir)
}

// runClangConfined runs clang in dir, confined (runTool) to reading reads
// and writing tmp, which is its TMPDIR; on failure the error holds its
// output.
func runClangConfined(ctx context.Context, clang, dir string, args, reads []string, tmp string) error {
	cmd := exec.CommandContext(ctx, clang, args...)
	cmd.Dir = dir
	cmd.Env = append(compilerEnv(), "TMPDIR="+tmp)
	var output bytes.Buffer
	cmd.Stdout, cmd.Stderr = &output, &output
	if err := runTool(cmd, nil, reads, []string{tmp}); err != nil {
		if msg := compilerOutput(output.String()); msg != "" {
			return fmt.Errorf("clang: %w\n%s", err, msg)
		}
		return fmt.Errorf("clang: %w", err)
	}
	return nil
}

// buildC compiles the C module in dir to a WASI reactor at out: every *.c
// file in dir (not in its subdirectories) and the SDK's station.c from
// sdkDir, with sdkDir on the include path for station.h. A module that has
// its own station.c (a vendored copy of the SDK) is built with that one,
// and sdkDir is not used. The compiler's output is included in the error.
func buildC(ctx context.Context, dir, out, sdkDir string) error {
	tc, err := findC()
	if err != nil {
		return fmt.Errorf("build %s: %w", dir, err)
	}
	abs, err := filepath.Abs(out)
	if err != nil {
		return fmt.Errorf("build %s: %w", dir, err)
	}
	sources, err := cSources(dir)
	if err != nil {
		return fmt.Errorf("build %s: %w", dir, err)
	}
	args := append(slices.Clone(cFlags), "--sysroot="+tc.sysroot)
	if !slices.Contains(sources, "."+string(filepath.Separator)+"station.c") {
		if sdkDir == "" {
			return fmt.Errorf("build %s: no station.c in the module and no C SDK directory given", dir)
		}
		sdk, err := filepath.Abs(sdkDir)
		if err != nil {
			return fmt.Errorf("build %s: %w", dir, err)
		}
		if _, err := os.Stat(filepath.Join(sdk, "station.c")); err != nil {
			return fmt.Errorf("build %s: the C SDK: %w", dir, err)
		}
		args = append(args, "-I", sdk)
		sources = append(sources, filepath.Join(sdk, "station.c"))
	}
	// clang writes only into tmp (its temporary files too), and reads only
	// the module, the SDK and the system's trees; the module is then put
	// in place of out.
	tmp, err := os.MkdirTemp("", "station-cbuild-")
	if err != nil {
		return fmt.Errorf("build %s: %w", dir, err)
	}
	defer os.RemoveAll(tmp)
	wasm := filepath.Join(tmp, "module.wasm")
	args = append(args, "-o", wasm)
	args = append(args, sources...)
	reads := []string{dir, tc.sysroot}
	if sdkDir != "" {
		reads = append(reads, sdkDir)
	}
	if err := runClangConfined(ctx, tc.clang, dir, args, reads, tmp); err != nil {
		return fmt.Errorf("build %s: %w", dir, err)
	}
	if err := replaceFile(wasm, abs); err != nil {
		return fmt.Errorf("build %s: %w", dir, err)
	}
	return nil
}

// cSources lists the *.c files of dir, sorted, as paths relative to dir
// ("./hello.c").
func cSources(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".c") {
			continue
		}
		if !e.Type().IsRegular() {
			// Never followed: a link could name any file of the builder's.
			return nil, fmt.Errorf("%s is not a regular file (a link or a directory): a module's C sources are files in its directory", e.Name())
		}
		names = append(names, e.Name())
	}
	slices.Sort(names)
	for i, name := range names {
		names[i] = "." + string(filepath.Separator) + name // a name that starts with "-" is no flag
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("no .c files in %s", dir)
	}
	return names, nil
}
