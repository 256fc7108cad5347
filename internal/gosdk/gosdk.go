// Package gosdk serves the Go SDK this station was built with to the Go
// toolchain, so that a module outside this repository builds with no
// network access: the module's go.mod requires
// github.com/station-dev/station/sdk at sdk.Version, and station module
// build runs go with a file-based GOPROXY holding exactly that version
// first (WriteProxy, Env). Once the SDK is published, the same go.mod
// resolves against the real proxy to the same bytes: the module zip holds
// the files of sdk/ in this repository, as a tag's would.
//
// The SDK's C and Rust parts (sdk/c, sdk/rust) come from the same source:
// CopyDir writes one out for a build or a new module.
package gosdk

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/station-dev/station/internal/atomicfile"
	"github.com/station-dev/station/sdk"
)

// ModulePath is the Go SDK's module path.
const ModulePath = "github.com/station-dev/station/sdk"

// Version is the SDK version this station carries (sdk.Version).
const Version = sdk.Version

// released is when Version was cut, the Time of its .info file. The Go
// toolchain shows it and sorts by it; it is part of no checksum.
var released = time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)

// Files lists the SDK's files as the module zip holds them, sorted by their
// slash-separated path relative to the module root (c/station.h, go.mod,
// sdk.go, ...).
func Files() ([]string, error) {
	var names []string
	err := fs.WalkDir(sdk.Source, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			names = append(names, p)
		}
		return nil
	})
	slices.Sort(names)
	return names, err
}

// Zip returns the module zip of the SDK: its files under
// "github.com/station-dev/station/sdk@VERSION/", in path order, with a
// fixed modification time, so that the same source gives the same bytes.
func Zip() ([]byte, error) {
	names, err := Files()
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	prefix := ModulePath + "@" + Version + "/"
	for _, name := range names {
		b, err := sdk.Source.ReadFile(name)
		if err != nil {
			return nil, err
		}
		w, err := zw.CreateHeader(&zip.FileHeader{Name: prefix + name, Method: zip.Deflate, Modified: released})
		if err != nil {
			return nil, err
		}
		if _, err := w.Write(b); err != nil {
			return nil, err
		}
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// ReadFile returns the SDK's file name ("c/station.h").
func ReadFile(name string) ([]byte, error) { return sdk.Source.ReadFile(name) }

// GoMod returns the SDK's go.mod.
func GoMod() ([]byte, error) { return sdk.Source.ReadFile("go.mod") }

// Hash returns the SDK's "h1:" hashes as go.sum records them: of the module's
// files, and of its go.mod alone (the "/go.mod" line).
func Hash() (module, goMod string, err error) {
	names, err := Files()
	if err != nil {
		return "", "", err
	}
	prefix := ModulePath + "@" + Version + "/"
	var sum strings.Builder
	for _, name := range names {
		b, err := sdk.Source.ReadFile(name)
		if err != nil {
			return "", "", err
		}
		fmt.Fprintf(&sum, "%x  %s\n", sha256.Sum256(b), prefix+name)
	}
	mod, err := GoMod()
	if err != nil {
		return "", "", err
	}
	return h1(sum.String()), h1(fmt.Sprintf("%x  go.mod\n", sha256.Sum256(mod))), nil
}

// h1 is dirhash.Hash1's last step: the SHA-256 of the summary of files.
func h1(summary string) string {
	s := sha256.Sum256([]byte(summary))
	return "h1:" + base64.StdEncoding.EncodeToString(s[:])
}

// WriteProxy makes dir a GOPROXY directory holding the SDK at Version (the
// layout of the module proxy protocol: MODULE/@v/list, VERSION.info,
// VERSION.mod, VERSION.zip). It only writes what is missing, each file
// atomically, and keeps the other versions a station of another release
// wrote there, so that modules built against them still build. A zip of
// Version with other contents is an error, never replaced.
func WriteProxy(dir string) error {
	at := filepath.Join(dir, filepath.FromSlash(ModulePath), "@v")
	if err := os.MkdirAll(at, 0o755); err != nil {
		return fmt.Errorf("the Go SDK proxy: %w", err)
	}
	z, err := Zip()
	if err != nil {
		return fmt.Errorf("the Go SDK proxy: %w", err)
	}
	mod, err := GoMod()
	if err != nil {
		return fmt.Errorf("the Go SDK proxy: %w", err)
	}
	info, _ := json.Marshal(struct {
		Version string
		Time    time.Time
	}{Version, released})
	// A version's bytes never change: go.sum files recorded them. Another
	// build of the station that carries other files under the same version
	// (a development build) must not replace them silently.
	if old, err := os.ReadFile(filepath.Join(at, Version+".zip")); err == nil && !bytes.Equal(old, z) {
		return fmt.Errorf("the Go SDK proxy: %s holds a %s %s with other contents than this station's (another build of the station wrote it), "+
			"and modules built against it recorded those in their go.sum; if it came from a development build, remove %s and rebuild",
			at, ModulePath, Version, filepath.Join(at, Version+".*"))
	}
	for _, f := range []struct {
		name string
		data []byte
	}{
		{Version + ".mod", mod},
		{Version + ".zip", z},
		{Version + ".info", info},
	} {
		if err := writeIfChanged(filepath.Join(at, f.name), f.data); err != nil {
			return fmt.Errorf("the Go SDK proxy: %w", err)
		}
	}
	// list: every version whose zip is there, this one included.
	entries, err := os.ReadDir(at)
	if err != nil {
		return fmt.Errorf("the Go SDK proxy: %w", err)
	}
	var versions []string
	for _, e := range entries {
		if v, ok := strings.CutSuffix(e.Name(), ".zip"); ok && strings.HasPrefix(v, "v") {
			versions = append(versions, v)
		}
	}
	slices.Sort(versions)
	if err := writeIfChanged(filepath.Join(at, "list"), []byte(strings.Join(versions, "\n")+"\n")); err != nil {
		return fmt.Errorf("the Go SDK proxy: %w", err)
	}
	return nil
}

// writeIfChanged writes data to name (atomicfile.Write), unless name
// already holds exactly data.
func writeIfChanged(name string, data []byte) error {
	if old, err := os.ReadFile(name); err == nil && bytes.Equal(old, data) {
		return nil
	}
	return atomicfile.Write(name, data, 0o644)
}

// defaultProxy is the Go toolchain's GOPROXY when none is set.
const defaultProxy = "https://proxy.golang.org,direct"

// Env returns the environment variables that point the go command at the
// proxy in dir (WriteProxy) for the SDK, given the settings the toolchain
// would otherwise use (goEnv: `go env GOPROXY GONOSUMDB`, which includes
// the user's go env file): GOPROXY is the proxy, then the user's list (so
// GOPROXY=off still means nothing else is fetched), and GONOSUMDB adds the
// SDK (the checksum database would be asked about it otherwise, which
// needs the network; the bytes come from this station's own binary).
func Env(dir string, goEnv map[string]string) []string {
	url := "file://" + filepath.ToSlash(dir)
	if !strings.HasPrefix(url, "file:///") {
		url = "file:///" + strings.TrimPrefix(url, "file://") // a Windows drive letter
	}
	proxy := goEnv["GOPROXY"]
	if proxy == "" {
		proxy = defaultProxy
	}
	if !strings.HasPrefix(proxy, url+",") && proxy != url {
		proxy = url + "," + proxy
	}
	nosum := goEnv["GONOSUMDB"]
	if !slices.Contains(strings.Split(nosum, ","), ModulePath) {
		if nosum != "" {
			nosum += ","
		}
		nosum += ModulePath
	}
	return []string{"GOPROXY=" + proxy, "GONOSUMDB=" + nosum}
}

// GoEnv reads GOPROXY and GONOSUMDB as the go command at goTool sees them.
func GoEnv(ctx context.Context, goTool string, environ []string) (map[string]string, error) {
	cmd := exec.CommandContext(ctx, goTool, "env", "-json", "GOPROXY", "GONOSUMDB")
	cmd.Env = environ
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go env: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	m := map[string]string{}
	if err := json.Unmarshal(out, &m); err != nil {
		return nil, fmt.Errorf("go env: %w", err)
	}
	return m, nil
}

// CopyDir writes the SDK's directory sub ("c", "rust") into dst, which must
// not exist yet or be empty, and returns the files written (relative to
// dst).
func CopyDir(sub, dst string) ([]string, error) {
	root, err := fs.Sub(sdk.Source, sub)
	if err != nil {
		return nil, err
	}
	if _, err := fs.Stat(root, "."); err != nil {
		return nil, fmt.Errorf("this station's SDK has no %s/: %w", sub, err)
	}
	var written []string
	err = fs.WalkDir(root, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		target := filepath.Join(dst, filepath.FromSlash(p))
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := fs.ReadFile(root, p)
		if err != nil {
			return err
		}
		if err := os.WriteFile(target, b, 0o644); err != nil {
			return err
		}
		written = append(written, path.Clean(p))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("copy the SDK's %s/: %w", sub, err)
	}
	if len(written) == 0 {
		return nil, errors.New("this station's SDK has no " + sub + "/ files")
	}
	return written, nil
}
