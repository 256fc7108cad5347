// Package atomicfile writes a file whole or not at all: into a new file in
// the same directory, synced, then renamed over the name. A reader sees the
// old contents or the new, never part of either, and a name that is a
// symbolic link is replaced, never written through.
package atomicfile

import (
	"os"
	"path/filepath"
)

// Write replaces name with data, with permissions mode.
func Write(name string, data []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(name), "."+filepath.Base(name)+"-*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after a failure; renamed away otherwise
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), name)
}
