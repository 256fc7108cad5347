// Package wasmbuild compiles Go guest modules to WebAssembly with the stock
// toolchain: Build for the CLI, ForTest for tests, which build their guest
// modules from source (nothing binary is committed) and cache the result
// across test processes. After a build, Describe asks the module for its
// commands' JSON Schemas (the Go SDK's station_describe), and AddSchemas
// writes them into its module.yaml.
package wasmbuild

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
)

// modulePath is the Go module whose repository root ForTest looks for.
const modulePath = "github.com/station-dev/station"

// buildGo compiles the Go main package in dir to a WASI reactor module at
// out, using the stock toolchain:
//
//	GOOS=wasip1 GOARCH=wasm GOTOOLCHAIN=local go build -buildmode=c-shared -trimpath -o out .
//
// with env added to the environment (the SDK's proxy, for a module outside
// this repository). The compiler's output is included in the error.
func buildGo(ctx context.Context, dir, out string, tags, env []string) error {
	abs, err := filepath.Abs(out)
	if err != nil {
		return fmt.Errorf("build %s: %w", dir, err)
	}
	args := []string{"build", "-buildmode=c-shared", "-trimpath"}
	if len(tags) > 0 {
		args = append(args, "-tags", strings.Join(tags, ","))
	}
	args = append(args, "-o", abs, ".")
	if _, err := goCommandEnv(ctx, dir, env, args...); err != nil {
		return fmt.Errorf("build %s: %w", dir, err)
	}
	return nil
}

// goCommand runs the go command in dir for wasip1/wasm and returns its
// standard output; on failure the error includes its standard error.
func goCommand(ctx context.Context, dir string, args ...string) ([]byte, error) {
	return goCommandEnv(ctx, dir, nil, args...)
}

// goCommandEnv is goCommand with env added to the environment.
func goCommandEnv(ctx context.Context, dir string, env []string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, goTool(), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "GOTOOLCHAIN=local", "CGO_ENABLED=0")
	cmd.Env = append(cmd.Env, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := compilerOutput(stderr.String())
		if msg == "" {
			return nil, fmt.Errorf("go %s: %w", args[0], err)
		}
		return nil, fmt.Errorf("go %s: %w\n%s", args[0], err, msg)
	}
	return stdout.Bytes(), nil
}

// goTool returns the go command: the one on PATH, else the one in GOROOT.
func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	if root := os.Getenv("GOROOT"); root != "" {
		return filepath.Join(root, "bin", "go")
	}
	return "go"
}

// cacheRoot is where ForTest's cache directory lives; tests change it.
var cacheRoot = os.TempDir()

// built is the per-process memo of ForTest: one entry per dir and tags.
var built sync.Map // string -> *testBuild

type testBuild struct {
	once sync.Once
	wasm []byte
	err  error
}

// ForTest builds the Go main package at dir (relative to the repository root,
// e.g. "internal/probe/guest" or "examples/hello") with the given build tags,
// once per test process, and returns the module's bytes. It fails the test
// if the build fails.
//
// Results are also cached across processes, in a directory of the current
// user's under os.TempDir() (station-wasmbuild-<uid>; one another user made
// is not used), keyed by a hash of everything the build reads: the source
// files of every package of this repository the guest imports, go.mod and
// go.sum, the Go version and the tags. A second go test run therefore does
// not rebuild, and parallel test binaries building the same key are safe
// (each builds to a temporary file and renames it into place). Compiling
// the module with wazero is cached by CacheForTest.
func ForTest(t testing.TB, dir string, tags ...string) []byte {
	t.Helper()
	tags = slices.Clone(tags)
	slices.Sort(tags)
	v, _ := built.LoadOrStore(dir+"\x00"+strings.Join(tags, ","), new(testBuild))
	b := v.(*testBuild)
	b.once.Do(func() { b.wasm, b.err = buildCached(context.Background(), dir, tags) })
	if b.err != nil {
		t.Fatalf("wasmbuild: %v", b.err)
	}
	return b.wasm
}

// buildCached is ForTest without the testing.TB.
func buildCached(ctx context.Context, dir string, tags []string) ([]byte, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	pkgDir := filepath.Join(root, filepath.FromSlash(dir))
	key, err := cacheKey(ctx, root, pkgDir, tags)
	if err != nil {
		return nil, fmt.Errorf("build %s: %w", dir, err)
	}
	cacheDir := filepath.Join(cacheRoot, fmt.Sprintf("station-wasmbuild-%d", os.Getuid()))
	if err := privateDir(cacheDir); err != nil {
		// Not a directory of this user's alone (another user made it):
		// build into one of this process's, read by no other.
		if cacheDir, err = os.MkdirTemp("", "station-wasmbuild-"); err != nil {
			return nil, fmt.Errorf("build %s: %w", dir, err)
		}
		defer os.RemoveAll(cacheDir)
	}
	final := filepath.Join(cacheDir, key+".wasm")
	if b, err := os.ReadFile(final); err == nil {
		return b, nil
	}
	tmp, err := os.CreateTemp(cacheDir, key+"-*.tmp")
	if err != nil {
		return nil, fmt.Errorf("build %s: %w", dir, err)
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	if err := buildGo(ctx, pkgDir, tmp.Name(), tags, nil); err != nil {
		return nil, err
	}
	b, err := os.ReadFile(tmp.Name())
	if err != nil {
		return nil, fmt.Errorf("build %s: %w", dir, err)
	}
	if err := os.Rename(tmp.Name(), final); err != nil {
		return nil, fmt.Errorf("build %s: cache the result: %w", dir, err)
	}
	return b, nil
}

// RepoRoot returns the root of the repository of module
// github.com/station-dev/station: the nearest directory at or above the
// working directory whose go.mod declares that module.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && declaresModule(b, modulePath) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod of module %s at or above the working directory", modulePath)
		}
		dir = parent
	}
}

// declaresModule reports whether the go.mod text b declares module path.
func declaresModule(b []byte, path string) bool {
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "module" && strings.Trim(f[1], `"`) == path {
			return true
		}
	}
	return false
}

// listedPackage is the part of `go list -json` output cacheKey reads.
type listedPackage struct {
	Dir        string
	Standard   bool
	Module     *struct{ Path, GoMod string }
	GoFiles    []string
	CgoFiles   []string
	EmbedFiles []string
}

// cacheKey hashes the inputs of building pkgDir for wasip1 with tags: the
// files of every package of this repository's modules in its import graph
// (the station's and the SDK's), their go.mod files, go.sum,
// the Go version and the tags. Dependencies outside the module are covered
// by go.sum.
func cacheKey(ctx context.Context, root, pkgDir string, tags []string) (string, error) {
	args := []string{"list", "-deps", "-json=Dir,Standard,Module,GoFiles,CgoFiles,EmbedFiles"}
	if len(tags) > 0 {
		args = append(args, "-tags", strings.Join(tags, ","))
	}
	out, err := goCommand(ctx, pkgDir, append(args, ".")...)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	fmt.Fprintf(h, "wasmbuild 1\x00%s\x00%s\x00", runtime.Version(), strings.Join(tags, ","))
	if v, err := goCommand(ctx, pkgDir, "env", "GOVERSION", "GOFLAGS", "GOWASM"); err == nil {
		h.Write(v) // the toolchain that builds, which may differ from the test binary's
	}
	for _, name := range []string{"go.mod", "go.sum"} {
		if err := hashFile(h, filepath.Join(root, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return "", err
		}
	}
	hashedMods := map[string]bool{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listedPackage
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			return "", fmt.Errorf("go list: %w", err)
		}
		if p.Standard || p.Module == nil || !ownModule(p.Module.Path) {
			continue
		}
		if p.Module.Path != modulePath && !hashedMods[p.Module.Path] {
			// The SDK's go.mod (the station's is hashed above).
			hashedMods[p.Module.Path] = true
			fmt.Fprintf(h, "%s\x00", p.Module.Path)
			if err := hashFile(h, p.Module.GoMod); err != nil {
				return "", err
			}
		}
		rel, err := filepath.Rel(root, p.Dir)
		if err != nil {
			return "", err
		}
		files := slices.Concat(p.GoFiles, p.CgoFiles, p.EmbedFiles)
		slices.Sort(files)
		for _, f := range files {
			fmt.Fprintf(h, "%s\x00", filepath.ToSlash(filepath.Join(rel, f)))
			if err := hashFile(h, filepath.Join(p.Dir, f)); err != nil {
				return "", err
			}
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:16]), nil
}

// ownModule reports whether path is this repository's module or one
// nested in it (the SDK's, github.com/station-dev/station/sdk, which the
// station's go.mod replaces with ./sdk).
func ownModule(path string) bool {
	return path == modulePath || strings.HasPrefix(path, modulePath+"/")
}

func hashFile(w io.Writer, name string) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	n, err := io.Copy(w, f)
	fmt.Fprintf(w, "\x00%d\x00", n)
	return err
}
