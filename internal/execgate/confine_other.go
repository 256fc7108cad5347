//go:build !linux

package execgate

import (
	"runtime"
	"sync"
	"syscall"
)

// platform is what this system lets the gate do. Outside Linux there are no
// namespaces and no Landlock: children cannot be cut off from the network,
// so a gate exists only where the operator set AllowNetwork.
type platform struct {
	nsErr string
}

var currentPlatform = sync.OnceValue(func() platform {
	return platform{nsErr: "no network namespaces on " + runtime.GOOS}
})

type confinement struct{ platform }

type ruleset struct{}

func newConfinement(set *settings, workDirs, readDirs, programDirs []string) confinement {
	return confinement{platform: currentPlatform()}
}

func (c confinement) isolated() bool      { return false }
func (c confinement) unavailable() string { return c.nsErr }

func (c confinement) String() string {
	return "network: the host's (operator allowed it; " + c.nsErr + "); processes: own session and process group, killed with the call; files: not confined"
}

func (c confinement) sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true}
}

func (c confinement) prepare(string) (*ruleset, error) { return nil, nil }
func (c confinement) apply(*ruleset) error             { return nil }

func lockThread() {}

// waitExited cannot wait without reaping here; spawn kills the group after
// reaping instead.
func waitExited(int) bool { return false }

func (c confinement) landlockABI() int { return 0 }
func (c confinement) dropsCaps() bool  { return false }
