package wasmbuild

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/tetratelabs/wazero"
)

// wazeroModule is the module whose build the compiled code is of.
const wazeroModule = "github.com/tetratelabs/wazero"

// CacheForTest returns the wazero compilation cache every test of this
// process shares: pass it as host.Options.Cache, station.Options.Cache or
// RuntimeConfig.WithCompilationCache, so that each guest module is compiled
// once and not once per test, package or run.
//
// It is kept on disk, across test processes and packages, in a directory of
// the current user's under os.TempDir() (station-test-wazero-cache-<uid>),
// in a subdirectory per build of wazero (its version and checksum, and the
// Go version: see wazeroBuild). The entries are wazero's own: it keys each
// by the module's bytes, the runtime settings that change the compiled
// code (WithCloseOnContextDone, listeners) and the CPU's features, and
// writes each to a temporary file renamed into place, so test binaries
// running at once share the directory safely and a runtime configured
// otherwise never reads another's entry.
//
// The cache is in memory only (per process) if the directory is not one
// this user owns and only this user may write (another user made it in a
// shared /tmp). A replacement of wazero by a local directory (the
// station's patched copy) is told apart by a hash of its sources.
func CacheForTest() wazero.CompilationCache { return testCache() }

var testCache = sync.OnceValue(func() wazero.CompilationCache {
	dir, err := testCacheDir()
	if err == nil {
		var c wazero.CompilationCache
		if c, err = wazero.NewCompilationCacheWithDir(dir); err == nil {
			return c
		}
	}
	return wazero.NewCompilationCache()
})

// testCacheDir is CacheForTest's directory, made if needed.
func testCacheDir() (string, error) {
	build, err := wazeroBuild()
	if err != nil {
		return "", err
	}
	root := filepath.Join(os.TempDir(), fmt.Sprintf("station-test-wazero-cache-%d", os.Getuid()))
	if err := privateDir(root); err != nil {
		return "", err
	}
	return filepath.Join(root, build), nil
}

// wazeroBuild names the build of wazero the tests link: its version and a
// hash of its go.sum checksum (its replacement's, if replaced) and of the
// Go version. wazero's own cache directory cannot tell: a test binary
// carries no dependency versions, so wazero calls itself "dev" in every
// one of them.
func wazeroBuild() (string, error) {
	cmd := exec.Command(goTool(), "list", "-m", "-json", wazeroModule)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go list -m %s: %w: %s", wazeroModule, err, strings.TrimSpace(stderr.String()))
	}
	return buildName(out)
}

// buildName is wazeroBuild's name for the module `go list -m -json` printed.
// A replacement by a local directory (the station's patched copy,
// third_party/wazero) has no checksum: its sources are hashed instead.
func buildName(listed []byte) (string, error) {
	var m struct {
		Path, Version, Sum string
		Replace            *struct{ Path, Version, Sum, Dir string }
	}
	if err := json.Unmarshal(listed, &m); err != nil {
		return "", fmt.Errorf("go list -m %s: %w", wazeroModule, err)
	}
	key := m.Path + "\x00" + m.Version + "\x00" + m.Sum
	if r := m.Replace; r != nil && r.Version == "" && r.Dir != "" {
		sum, err := treeSum(r.Dir)
		if err != nil {
			return "", fmt.Errorf("%s: hash its replacement %s: %w", wazeroModule, r.Dir, err)
		}
		key += "\x00" + r.Path + "\x00" + sum
		m.Version, m.Sum = m.Version+"+local", sum
	} else if r != nil {
		key += "\x00" + r.Path + "\x00" + r.Version + "\x00" + r.Sum
		m.Version, m.Sum = r.Version, r.Sum
	}
	if m.Sum == "" || m.Version == "" {
		return "", fmt.Errorf("%s has no version and checksum (a replacement by a local directory)", wazeroModule)
	}
	h := sha256.Sum256([]byte(key + "\x00" + runtime.Version()))
	v := strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == os.PathListSeparator {
			return '_'
		}
		return r
	}, m.Version)
	return v + "-" + hex.EncodeToString(h[:6]), nil
}

// privateDir makes dir (mode 0700) if it does not exist and checks that it
// is a directory, not a symbolic link, owned by the current user and
// writable by no one else: a cache another user could have written is
// never read.
func privateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("%s is writable by others (%v)", dir, fi.Mode().Perm())
	}
	if !ownedBySelf(fi) {
		return fmt.Errorf("%s belongs to another user", dir)
	}
	return nil
}

// treeSum hashes the Go and assembly sources under dir (names and
// contents, tests excluded): what a build of the module there compiles.
func treeSum(dir string) (string, error) {
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		name := d.Name()
		if strings.HasSuffix(name, "_test.go") || !strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, ".s") {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s\x00", filepath.ToSlash(rel))
		return hashFile(h, p)
	})
	return hex.EncodeToString(h.Sum(nil)), err
}
