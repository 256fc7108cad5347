package execgate

import (
	"errors"
	"os/exec"
	"path/filepath"
	"runtime"
)

// ErrToolUnconfined is RunTool's error where the kernel offers no Landlock:
// the tool cannot be kept to its trees, so it is not run.
var ErrToolUnconfined = errors.New("this kernel offers no Landlock, so the tool cannot be confined to its files")

// RunTool runs cmd — a program the station runs itself on a user's behalf,
// over input it did not write, such as a compiler building a stranger's
// module — confined as a granted program is: through the launcher, in new
// namespaces where the kernel offers them (no network), under seccomp, and
// with Landlock letting it read
// only the system's trees (/usr, /lib, /etc but what only root may read,
// /proc, ...), readDirs and programDirs, execute programs only from the
// system's trees, programDirs and the directory of cmd.Path, and write only
// writeDirs. A file it was not
// given — the user's home, their keys — cannot be opened, so cannot end up
// in what it makes. The process group is killed when the tool exits.
//
// cmd.Path must be absolute (exec.Command resolves it); cmd.Env is the
// tool's whole environment. RunTool returns ErrToolUnconfined where
// Landlock is missing, and a *launchError-wrapped failure where the
// confinement could not be applied; nothing runs unconfined.
func RunTool(cmd *exec.Cmd, programDirs, readDirs, writeDirs []string) error {
	p := currentPlatform()
	if p.landlock == 0 {
		return ErrToolUnconfined
	}
	programDirs = append(programDirs, filepath.Dir(cmd.Path))
	c := confinementFor(p, &settings{}, writeDirs, readDirs, programDirs)
	if err := c.build(); err != nil {
		return err
	}
	defer c.release()
	runtime.LockOSThread() // Pdeathsig is tied to the thread that forks
	defer runtime.UnlockOSThread()
	if err := c.start(cmd); err != nil {
		return err
	}
	pid := cmd.Process.Pid
	if waitExited(pid) {
		killGroup(pid)
		return cmd.Wait()
	}
	err := cmd.Wait()
	killGroup(pid)
	return err
}
