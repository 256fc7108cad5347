//go:build !linux

package ocitest

import (
	"syscall"
	"time"
)

// grace is 0: without Pdeathsig, a registry left running when the test
// binary exits would outlive it, so it stops as soon as no test uses it.
const grace time.Duration = 0

func sysProcAttr() *syscall.SysProcAttr { return nil }
