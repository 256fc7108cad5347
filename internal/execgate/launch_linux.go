package execgate

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/station-dev/station/internal/execgate/launch"
)

// Every child starts as the launcher (package launch): the station binary
// re-executed in the child's namespaces, which confines its own process
// with what the gate prepared here — the Landlock ruleset, the seccomp
// program, the capability drop — and then execs the program. The station's
// threads are never confined, so the thread that writes a child's uid and
// gid maps (Go does that from the parent) needs no rule that the child
// would inherit.

// maxReport bounds what the station reads from a launcher's report pipe.
const maxReport = 4096

// launchError is why the launcher did not run the program.
type launchError struct {
	Stage   string // "rules", "launcher", "confine" or "exec"
	Errno   syscall.Errno
	Message string
}

func (e *launchError) Error() string {
	msg := e.Message
	if e.Errno != 0 {
		msg += ": " + e.Errno.Error()
	}
	if e.Stage == "exec" {
		return "exec " + msg
	}
	return "could not be confined (" + e.Stage + "): " + msg
}

// launcherPath is what the station execs as the launcher: its own binary.
// /proc/self/exe names the running file even if it was replaced or removed
// on disk since (an upgrade must not change what confines children).
var launcherPath = sync.OnceValue(findLauncher)

func findLauncher() string {
	if _, err := os.Stat("/proc/self/exe"); err == nil {
		return "/proc/self/exe"
	}
	if exe, err := os.Executable(); err == nil {
		return exe
	}
	return "/proc/self/exe"
}

// launcherFiles returns the descriptors the launcher gets after 0-2 — the
// report pipe's write end, the spec, and with a ruleset the ruleset — and
// the report pipe's read end. It takes over rules. The caller closes all of
// them once the launcher started.
func launcherFiles(spec []byte, rules *os.File) (extra []*os.File, report *os.File, err error) {
	closeRules := func() {
		if rules != nil {
			rules.Close()
		}
	}
	fd, err := unix.MemfdCreate("station-launch", unix.MFD_CLOEXEC)
	if err != nil {
		closeRules()
		return nil, nil, &launchError{Stage: "launcher", Message: "spec: " + err.Error()}
	}
	specFile := os.NewFile(uintptr(fd), "launch-spec")
	if _, err := specFile.Write(spec); err != nil {
		specFile.Close()
		closeRules()
		return nil, nil, &launchError{Stage: "launcher", Message: "spec: " + err.Error()}
	}
	if _, err := specFile.Seek(0, io.SeekStart); err != nil {
		specFile.Close()
		closeRules()
		return nil, nil, &launchError{Stage: "launcher", Message: "spec: " + err.Error()}
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		specFile.Close()
		closeRules()
		return nil, nil, &launchError{Stage: "launcher", Message: "report pipe: " + err.Error()}
	}
	extra = []*os.File{pw, specFile} // descriptors 3 and 4
	if rules != nil {
		extra = append(extra, rules) // 5
	}
	return extra, pr, nil
}

// readReport waits until the launcher has exec'd the program (the report
// pipe closes empty) or failed (it wrote a report), and returns that
// failure.
func readReport(r *os.File) error {
	b, err := io.ReadAll(io.LimitReader(r, maxReport))
	if err != nil {
		return &launchError{Stage: "launcher", Message: "read its report: " + err.Error()}
	}
	if len(b) == 0 {
		return nil
	}
	rep, ok := launch.ParseReport(b)
	if !ok {
		return &launchError{Stage: "launcher", Message: fmt.Sprintf("malformed report %q", b)}
	}
	return &launchError{Stage: rep.Stage, Errno: rep.Errno, Message: strings.ToValidUTF8(rep.Message, "?")}
}

// seccompProgram is the metadata filter as the launcher loads it, built
// once per process.
var seccompProgram = sync.OnceValues(seccompBytes)

func seccompBytes() ([]byte, error) {
	t := currentSeccompTable()
	if t == nil {
		return nil, errNoSeccompTable
	}
	prog := metadataFilter(t)
	if len(prog) > 255 {
		return nil, fmt.Errorf("seccomp filter too long (%d)", len(prog))
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&prog[0])), len(prog)*int(unsafe.Sizeof(prog[0]))), nil
}
