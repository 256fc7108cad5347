package host

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"
)

// childAttr makes the compile child die with the station.
func childAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// cpuExceeded reports whether the child was stopped by its CPU time limit.
func cpuExceeded(ps *os.ProcessState) bool {
	if ps == nil {
		return false
	}
	ws, ok := ps.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGXCPU
}

// limitSelf bounds the compile child itself, before it reads the module:
// its address space may grow by at most memory bytes beyond what the Go
// runtime has reserved by now (RLIMIT_AS, so every mapping the compiler
// makes counts, not only the heap), its CPU time is bounded as a backstop
// to the parent's timer, and it writes no core file. Under the race
// detector, whose shadow memory is mapped as the heap grows, the address
// space is not limited.
func limitSelf(memory uint64, cpu time.Duration) error {
	if err := syscall.Setrlimit(syscall.RLIMIT_CORE, &syscall.Rlimit{}); err != nil {
		return fmt.Errorf("RLIMIT_CORE: %w", err)
	}
	secs := uint64(cpu/time.Second) + 2
	if err := syscall.Setrlimit(syscall.RLIMIT_CPU, &syscall.Rlimit{Cur: secs, Max: secs + 5}); err != nil {
		return fmt.Errorf("RLIMIT_CPU: %w", err)
	}
	if raceEnabled {
		return nil
	}
	size, err := vmSize()
	if err != nil {
		return err
	}
	lim := size + memory
	var cur syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_AS, &cur); err == nil && cur.Max < lim {
		lim = cur.Max
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: lim, Max: lim}); err != nil {
		return fmt.Errorf("RLIMIT_AS: %w", err)
	}
	return nil
}

// vmSize returns this process's address space size (VmSize), in bytes.
func vmSize() (uint64, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if rest, ok := bytes.CutPrefix(sc.Bytes(), []byte("VmSize:")); ok {
			f := bytes.Fields(rest)
			if len(f) == 2 && string(f[1]) == "kB" {
				kb, err := strconv.ParseUint(string(f[0]), 10, 64)
				if err == nil {
					return kb << 10, nil
				}
			}
		}
	}
	return 0, fmt.Errorf("no VmSize in /proc/self/status")
}
