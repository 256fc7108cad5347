//go:build !linux

package fsgate

import (
	"errors"
	"fmt"
	"os"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
)

// openRoot is not used outside Linux.
type openRoot struct{}

func (*openRoot) close() error { return nil }

// identify reports whether p is a directory; outside Linux the gate cannot
// mount anything, so the identity is not needed.
func identify(p string) (dev, ino uint64, isDir bool, err error) {
	fi, err := os.Stat(p)
	if err != nil {
		return 0, 0, false, err
	}
	return 0, 0, fi.IsDir(), nil
}

// FS returns nil for a module without globs. Outside Linux the gate has no
// race-free way to resolve paths (it needs openat2 and O_PATH), so a module
// with globs cannot be linked.
func (g *Gate) FS(h Hooks) (experimentalsys.FS, error) {
	if len(g.roots) == 0 {
		return nil, nil
	}
	return nil, fmt.Errorf("fsgate: module %s: %w", g.module, errors.ErrUnsupported)
}
