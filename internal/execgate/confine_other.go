//go:build !linux

package execgate

import (
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
)

// platform is what this system lets the gate do. Outside Linux there are no
// namespaces and no Landlock: children cannot be cut off from the network
// or from files, so a gate exists only where the operator set AllowNetwork,
// and it starts children only where the operator set AllowUnconfinedFiles.
type platform struct {
	nsErr string
}

var currentPlatform = sync.OnceValue(func() platform {
	return platform{nsErr: "no network namespaces on " + runtime.GOOS}
})

func (p platform) isolated() bool      { return false }
func (p platform) unavailable() string { return p.nsErr }
func (p platform) filesState() (int, string) {
	return 0, "no Landlock on " + runtime.GOOS
}

type confinement struct {
	platform
	scratchRoot string // holds every call's scratch directory
}

func newConfinement(set *settings, workDirs, readDirs, programDirs []string) confinement {
	return confinement{platform: currentPlatform()}
}

func (c confinement) String() string {
	return "network: the host's (operator allowed it; " + c.nsErr + "); processes: own session and process group, killed with the call; files: NOT confined (no Landlock on " + runtime.GOOS + ")"
}

// launchError is why a program did not start.
type launchError struct {
	Stage   string
	Errno   syscall.Errno
	Message string
}

func (e *launchError) Error() string { return "could not be confined (" + e.Stage + "): " + e.Message }

func (c *confinement) build() error {
	root, err := os.MkdirTemp("", "station-exec-")
	c.scratchRoot = root
	return err
}

func (c *confinement) release() {
	if c.scratchRoot != "" {
		os.RemoveAll(c.scratchRoot)
	}
}

// start starts cmd in a session of its own; there is nothing else to apply.
func (c confinement) start(cmd *exec.Cmd) error {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	return cmd.Start()
}

// waitExited cannot wait without reaping here; spawn kills the group after
// reaping instead.
func waitExited(int) bool { return false }

func (c confinement) landlockABI() int { return 0 }
func (c confinement) dropsCaps() bool  { return false }
