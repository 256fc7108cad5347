package ocitest

import (
	"syscall"
	"time"
)

// grace is how long an unused registry keeps running for the next test.
// On Linux the registry dies with the test binary (Pdeathsig), so one
// left running at its end is no orphan.
const grace = 2 * time.Second

func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
