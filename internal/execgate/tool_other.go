//go:build !linux

package execgate

import (
	"errors"
	"os/exec"
)

// ErrToolUnconfined is RunTool's error where the system offers no way to
// confine a tool's files.
var ErrToolUnconfined = errors.New("this system offers no Landlock, so the tool cannot be confined to its files")

// RunTool runs nothing outside Linux: see the Linux version.
func RunTool(cmd *exec.Cmd, programDirs, readDirs, writeDirs []string) error {
	return ErrToolUnconfined
}
