//go:build wasip1

package main

import (
	"os"
	"syscall"

	"github.com/station-dev/station/internal/probe"
)

// openat opens a.Path, then a.To (or a.RawPath) from it with one path_open.
func openat(a probe.Action) error {
	d, err := os.Open(a.Path)
	if err != nil {
		return err
	}
	defer d.Close()
	rel := a.To
	if a.RawPath != nil {
		rel = string(a.RawPath)
	}
	mode := syscall.O_RDONLY
	if a.Create {
		mode = syscall.O_WRONLY | syscall.O_CREAT
	}
	fd, err := syscall.Openat(int(d.Fd()), rel, mode, 0o644)
	if err != nil {
		return &os.PathError{Op: "openat", Path: rel, Err: err}
	}
	return syscall.Close(fd)
}
