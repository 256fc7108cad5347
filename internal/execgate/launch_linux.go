package execgate

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// The launcher: every child starts as the station binary itself, re-executed
// inside the child's new namespaces with argv[0] = launcherArg0. Before
// anything else runs (init, below) it confines its own process — no_new_privs,
// no capabilities, the Landlock ruleset the gate prepared, the seccomp filter —
// and then execs the granted program, which inherits all of it. The station's
// threads are never confined, so the thread that writes a child's uid and gid
// maps (Go does that from the parent) needs no rule that the child would
// inherit. See RATIONALE.md, "Why does every child start as a launcher?".
//
// Protocol, version 1 (argv of the launcher; its environment is empty):
//
//	argv[0]  launcherArg0
//	argv[1]  flags: a comma-separated subset of "landlock", "caps"
//	argv[2]  the absolute path of the program to exec
//	argv[3]  n, the number of environment entries that follow
//	argv[4:4+n]   the program's environment, "NAME=value"
//	argv[4+n:]    the program's argv, argv[0] first
//
// Descriptors: 0-2 are the program's; launcherReportFD is the write end of a
// pipe, made close-on-exec by the launcher, on which a launcher that cannot
// confine itself or exec the program writes a launchError as JSON, then
// exits with launcherFailed (the pipe closing empty means the program
// runs); launcherRulesFD, with flag "landlock", is the Landlock ruleset to
// enforce. "caps" empties the bounding and inheritable capability sets.
const (
	launcherArg0     = "station-execgate-launcher/1"
	launcherReportFD = 3
	launcherRulesFD  = 4
	launcherFailed   = 125
	maxReport        = 4096
)

func init() {
	if len(os.Args) > 0 && os.Args[0] == launcherArg0 {
		launch(os.Args[1:]) // never returns
	}
}

// launch runs in the child: it confines this process and execs the program.
// On any failure it reports on launcherReportFD and exits; it never runs the
// program unconfined.
func launch(args []string) {
	runtime.LockOSThread()
	report := os.NewFile(launcherReportFD, "report")
	fail := func(stage string, err error) {
		le := &launchError{Stage: stage, Message: err.Error()}
		if errno := syscall.Errno(0); errors.As(err, &errno) {
			le.Errno = errno
		}
		if report != nil {
			json.NewEncoder(report).Encode(le)
		}
		os.Exit(launcherFailed)
	}
	if _, err := unix.FcntlInt(launcherReportFD, unix.F_SETFD, unix.FD_CLOEXEC); err != nil {
		report = nil
		fail("launcher", fmt.Errorf("no report pipe: %w", err))
	}
	flags, path, env, argv, err := parseLaunch(args)
	if err != nil {
		fail("launcher", err)
	}
	rules := -1
	if flags["landlock"] {
		rules = launcherRulesFD
	}
	if err := confineSelf(rules, flags["caps"]); err != nil {
		fail("confine", err)
	}
	err = unix.Exec(path, argv, env)
	fail("exec", fmt.Errorf("%s: %w", path, err))
}

// launchError is why the launcher did not run the program.
type launchError struct {
	Stage   string        `json:"stage"` // "rules", "launcher", "confine" or "exec"
	Errno   syscall.Errno `json:"errno,omitempty"`
	Message string        `json:"message"`
}

func (e *launchError) Error() string {
	if e.Stage == "exec" {
		return "exec " + e.Message
	}
	return "could not be confined (" + e.Stage + "): " + e.Message
}

// launchArgs is the launcher's argv for a program (see the protocol above).
func launchArgs(flags []string, path string, env, argv []string) []string {
	out := make([]string, 0, 4+len(env)+len(argv))
	out = append(out, launcherArg0, strings.Join(flags, ","), path, strconv.Itoa(len(env)))
	out = append(out, env...)
	return append(out, argv...)
}

func parseLaunch(args []string) (flags map[string]bool, path string, env, argv []string, err error) {
	if len(args) < 3 {
		return nil, "", nil, nil, errors.New("malformed arguments")
	}
	flags = map[string]bool{}
	for _, f := range strings.Split(args[0], ",") {
		switch f {
		case "":
		case "landlock", "caps":
			flags[f] = true
		default:
			return nil, "", nil, nil, fmt.Errorf("unknown flag %q", f)
		}
	}
	path = args[1]
	n, err := strconv.Atoi(args[2])
	rest := args[3:]
	if err != nil || n < 0 || n > len(rest) {
		return nil, "", nil, nil, errors.New("malformed environment count")
	}
	env, argv = rest[:n], rest[n:]
	if len(argv) == 0 {
		return nil, "", nil, nil, errors.New("no program argv")
	}
	return flags, path, env, argv, nil
}

// confineSelf applies, to the calling thread (the launcher execs from it
// next, so the program inherits exactly this): no_new_privs, no ambient
// capabilities, with dropCaps an empty bounding and inheritable set, the
// Landlock ruleset on descriptor rules (if >= 0), and the seccomp filter.
func confineSelf(rules int, dropCaps bool) error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("clear ambient capabilities: %w", err)
	}
	if dropCaps {
		for capability := uintptr(0); ; capability++ {
			err := unix.Prctl(unix.PR_CAPBSET_DROP, capability, 0, 0, 0)
			if errors.Is(err, unix.EINVAL) {
				break // past the last capability
			}
			if err != nil {
				return fmt.Errorf("drop capability %d from the bounding set: %w", capability, err)
			}
		}
		hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
		var data [2]unix.CapUserData
		if err := unix.Capget(&hdr, &data[0]); err != nil {
			return fmt.Errorf("capget: %w", err)
		}
		data[0].Inheritable, data[1].Inheritable = 0, 0
		if err := unix.Capset(&hdr, &data[0]); err != nil {
			return fmt.Errorf("capset: %w", err)
		}
	}
	if rules >= 0 {
		_, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(rules), 0, 0)
		unix.Close(rules)
		if errno != 0 {
			return fmt.Errorf("landlock_restrict_self: %w", errno)
		}
	}
	return applySeccomp()
}

// launcherPath is what the station execs as the launcher: its own binary.
// /proc/self/exe names the running file even if it was replaced or removed
// on disk since (an upgrade must not change what confines children).
func launcherPath() string {
	if _, err := os.Stat("/proc/self/exe"); err == nil {
		return "/proc/self/exe"
	}
	if exe, err := os.Executable(); err == nil {
		return exe
	}
	return "/proc/self/exe"
}

// readReport waits until the launcher has exec'd the program (the report
// pipe closes empty) or failed (it wrote a launchError), and returns that
// failure.
func readReport(r *os.File) error {
	b, err := io.ReadAll(io.LimitReader(r, maxReport))
	if err != nil {
		return &launchError{Stage: "launcher", Message: "read its report: " + err.Error()}
	}
	if len(b) == 0 {
		return nil
	}
	le := &launchError{}
	if err := json.Unmarshal(b, le); err != nil || le.Stage == "" {
		return &launchError{Stage: "launcher", Message: "malformed report " + strconv.Quote(string(b))}
	}
	le.Message = strings.ToValidUTF8(le.Message, "?")
	return le
}

// launcherFiles returns the descriptors the launcher gets after 0-2 (the
// report pipe's write end and, with a ruleset, a copy of it) and the report
// pipe's read end. The caller closes all of them once the launcher started.
func launcherFiles(r *ruleset) (extra []*os.File, report *os.File, err error) {
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, nil, fmt.Errorf("report pipe: %w", err)
	}
	extra = []*os.File{pw}
	if r != nil {
		extra = append(extra, os.NewFile(uintptr(r.fd), "landlock-ruleset"))
	}
	return extra, pr, nil
}
