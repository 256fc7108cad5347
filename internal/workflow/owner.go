package workflow

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/station-dev/station/internal/store"
)

// A run records its owner: "pid:start:nonce", the process id, the
// process's start time (in clock ticks since boot, from /proc, so a reused
// pid is not mistaken for the owner) and a random nonce for this process.

var (
	ownerOnce sync.Once
	owner     string
)

// ProcessOwner returns the owner name of this process.
func ProcessOwner() string {
	ownerOnce.Do(func() {
		var nonce [8]byte
		rand.Read(nonce[:])
		pid := os.Getpid()
		owner = fmt.Sprintf("%d:%s:%s", pid, processStart(pid), hex.EncodeToString(nonce[:]))
	})
	return owner
}

// active holds the runs this process is executing.
var active = runSet{m: map[int64]int{}}

type runSet struct {
	mu sync.Mutex
	m  map[int64]int
}

func (s *runSet) add(id int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[id]++
}

func (s *runSet) remove(id int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m[id]--; s.m[id] <= 0 {
		delete(s.m, id)
	}
}

func (s *runSet) has(id int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[id] > 0
}

// Alive reports whether the process that owns a running run is still
// running it: this process only while it executes the run; another process
// while one with the same pid and start time exists.
func Alive(r store.WorkflowRun) bool {
	if r.Owner == ProcessOwner() {
		return active.has(r.ID)
	}
	parts := strings.Split(r.Owner, ":")
	if len(parts) != 3 {
		return false
	}
	pid, err := strconv.Atoi(parts[0])
	if err != nil || pid <= 0 {
		return false
	}
	if start := processStart(pid); start != "" || parts[1] != "" {
		return start == parts[1]
	}
	err = syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// processStart returns the start time of process pid (field 22 of
// /proc/PID/stat), or "" when it cannot be read.
func processStart(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return ""
	}
	fields := strings.Fields(string(b[i+1:]))
	if len(fields) < 20 {
		return ""
	}
	return fields[19] // field 22 overall: 3 is fields[0]
}
