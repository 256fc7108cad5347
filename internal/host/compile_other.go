//go:build !linux

package host

import (
	"os"
	"os/exec"
	"time"
)

// childAttr: outside Linux the compile child is bounded by the parent's
// timer alone.
func childAttr(*exec.Cmd) {}

func cpuExceeded(*os.ProcessState) bool { return false }

// limitSelf: outside Linux the compile child does not bound its memory.
func limitSelf(uint64, time.Duration) error { return nil }
