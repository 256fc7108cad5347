// Package launch is the first thing a child of a granted program runs: the
// station binary, re-executed by internal/execgate inside the child's new
// namespaces, which confines its own process and then execs the program,
// which inherits all of it. Everything it applies — the Landlock ruleset,
// the seccomp program, whether to drop capabilities — was prepared by the
// gate in the station; the launcher only applies it, in a fixed order, and
// reports a failure instead of running anything unconfined.
//
// It imports only syscall and unsafe, so that Go initializes it (and it
// execs away) before nearly every other package of the station binary:
// the launcher's cost is the Go runtime's start, not the station's
// package initializers. See RATIONALE.md, "Why does every child start as a
// launcher?".
//
// # Protocol, version 1
//
// The launcher's environment is Env=1 (and GOGC=off); nothing else. Its
// descriptors besides 0-2, the program's:
//
//	3 (ReportFD)  the write end of a pipe; the launcher makes it close-on-exec.
//	              A launcher that does not run the program writes a report,
//	              Stage NUL errno NUL message, and exits with Failed. The pipe
//	              closing empty means the program runs.
//	4 (SpecFD)    the spec, read to its end: a 4-byte little-endian length n,
//	              n bytes of seccomp program (struct sock_filter[]), then
//	              NUL-terminated strings: the flags ("landlock", "caps",
//	              comma-separated), the program's path, its environment
//	              entries, an empty string, and its argv.
//	5 (RulesFD)   with flag "landlock": the Landlock ruleset to enforce.
//
// "caps" empties the bounding and inheritable capability sets (for a child
// that is uid 0 in its namespace). no_new_privs is always set and the
// ambient set always cleared; the seccomp program is required.
package launch

import (
	"syscall"
	"unsafe"
)

// The protocol's constants (see the package doc).
const (
	Env      = "STATION_EXECGATE_LAUNCH"
	ReportFD = 3
	SpecFD   = 4
	RulesFD  = 5
	Failed   = 125
)

// Linux constants the syscall package lacks (the same on amd64 and arm64).
const (
	prSetNoNewPrivs      = 38
	prCapAmbient         = 47
	prCapAmbientClearAll = 4
	prCapbsetDrop        = 24
	prSetSeccomp         = 22
	seccompModeFilter    = 2
	sysLandlockRestrict  = 446
	sysCloseRange        = 436
	closeRangeCloexec    = 4
	capVersion3          = 0x20080522
	maxSpec              = 1 << 20 // the gate's request limits are far below
)

func init() {
	if v, _ := syscall.Getenv(Env); v == "1" {
		run() // never returns
	}
}

// run confines this process and execs the program; it never returns.
func run() {
	stage := "launcher"
	if _, _, e := syscall.RawSyscall(syscall.SYS_FCNTL, ReportFD, syscall.F_SETFD, syscall.FD_CLOEXEC); e != 0 {
		syscall.Exit(Failed) // no way to report
	}
	fail := func(errno syscall.Errno, msg string) {
		report(stage, errno, msg)
		syscall.Exit(Failed)
	}
	spec, errno := readAll(SpecFD)
	syscall.Close(SpecFD)
	if errno != 0 {
		fail(errno, "read the spec")
	}
	filter, flags, path, env, argv, ok := parse(spec)
	if !ok {
		fail(0, "malformed spec")
	}

	stage = "confine"
	// Nothing the station holds without close-on-exec reaches the program:
	// not a descriptor its own parent left open, nor one another goroutine
	// of the station had open at the fork (Go opens a child's uid_map
	// without close-on-exec while it writes it).
	if e := closeOnExecFrom(3); e != 0 {
		fail(e, "mark inherited descriptors close-on-exec")
	}
	if e := prctl(prSetNoNewPrivs, 1); e != 0 {
		fail(e, "no_new_privs")
	}
	if e := prctl(prCapAmbient, prCapAmbientClearAll); e != 0 && e != syscall.EINVAL {
		fail(e, "clear ambient capabilities")
	}
	if flags.caps {
		for c := uintptr(0); ; c++ {
			e := prctl(prCapbsetDrop, c)
			if e == syscall.EINVAL {
				break // past the last capability
			}
			if e != 0 {
				fail(e, "drop a capability from the bounding set")
			}
		}
		hdr := struct{ version, pid uint32 }{capVersion3, 0}
		var data [2]struct{ effective, permitted, inheritable uint32 }
		if _, _, e := syscall.RawSyscall(syscall.SYS_CAPGET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); e != 0 {
			fail(e, "capget")
		}
		data[0].inheritable, data[1].inheritable = 0, 0
		if _, _, e := syscall.RawSyscall(syscall.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); e != 0 {
			fail(e, "capset")
		}
	}
	if flags.landlock {
		_, _, e := syscall.RawSyscall(sysLandlockRestrict, RulesFD, 0, 0)
		syscall.Close(RulesFD)
		if e != 0 {
			fail(e, "landlock_restrict_self")
		}
	}
	if len(filter) == 0 || len(filter)%8 != 0 || len(filter)/8 > 0xffff {
		fail(0, "no valid seccomp program in the spec")
	}
	prog := struct {
		len    uint16
		_      [6]byte
		filter unsafe.Pointer
	}{len: uint16(len(filter) / 8), filter: unsafe.Pointer(&filter[0])}
	if e := prctl(prSetSeccomp, seccompModeFilter, uintptr(unsafe.Pointer(&prog))); e != 0 {
		fail(e, "seccomp")
	}

	stage = "exec"
	err := syscall.Exec(path, argv, env)
	errno, _ = err.(syscall.Errno)
	fail(errno, path)
}

// closeOnExecFrom marks every descriptor from first on close-on-exec:
// close_range(2) where the kernel has it (5.11, older than any Landlock),
// else one fcntl per descriptor below the limit; it fails where the limit
// is too high to walk, rather than let one through.
func closeOnExecFrom(first int) syscall.Errno {
	_, _, e := syscall.RawSyscall(sysCloseRange, uintptr(first), ^uintptr(0)>>32, closeRangeCloexec)
	if e == 0 || (e != syscall.ENOSYS && e != syscall.EINVAL) {
		return e
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return err.(syscall.Errno)
	}
	if lim.Cur > 1<<20 {
		return syscall.EMFILE
	}
	for fd := uintptr(first); fd < uintptr(lim.Cur); fd++ {
		syscall.RawSyscall(syscall.SYS_FCNTL, fd, syscall.F_SETFD, syscall.FD_CLOEXEC) // EBADF: not open
	}
	return 0
}

func prctl(option uintptr, args ...uintptr) syscall.Errno {
	var a [4]uintptr
	copy(a[:], args)
	_, _, e := syscall.RawSyscall6(syscall.SYS_PRCTL, option, a[0], a[1], a[2], a[3], 0)
	return e
}

// report writes stage NUL errno NUL message to the report pipe.
func report(stage string, errno syscall.Errno, msg string) {
	b := append([]byte(stage), 0)
	b = appendUint(b, uint64(errno))
	b = append(b, 0)
	b = append(b, msg...)
	syscall.Write(ReportFD, b)
}

func readAll(fd int) ([]byte, syscall.Errno) {
	var out []byte
	buf := make([]byte, 64<<10)
	for len(out) <= maxSpec {
		n, err := syscall.Read(fd, buf)
		switch {
		case err == syscall.EINTR:
			continue
		case err != nil:
			e, _ := err.(syscall.Errno)
			return nil, e
		case n == 0:
			return out, 0
		}
		out = append(out, buf[:n]...)
	}
	return nil, syscall.E2BIG
}

type flagSet struct{ landlock, caps bool }

// parse splits a spec (see the package doc).
func parse(b []byte) (filter []byte, flags flagSet, path string, env, argv []string, ok bool) {
	if len(b) < 4 {
		return
	}
	n := int(b[0]) | int(b[1])<<8 | int(b[2])<<16 | int(b[3])<<24
	if n < 0 || n > len(b)-4 {
		return
	}
	filter, b = b[4:4+n], b[4+n:]
	var strs []string
	for len(b) > 0 {
		i := 0
		for i < len(b) && b[i] != 0 {
			i++
		}
		if i == len(b) {
			return // not NUL-terminated
		}
		strs = append(strs, string(b[:i]))
		b = b[i+1:]
	}
	if len(strs) < 2 {
		return
	}
	for _, f := range split(strs[0]) {
		switch f {
		case "landlock":
			flags.landlock = true
		case "caps":
			flags.caps = true
		default:
			return
		}
	}
	path, strs = strs[1], strs[2:]
	end := -1
	for i, s := range strs {
		if s == "" {
			end = i
			break
		}
	}
	if end < 0 || end == len(strs)-1 || path == "" {
		return
	}
	return filter, flags, path, strs[:end], strs[end+1:], true
}

func split(s string) []string {
	var out []string
	for s != "" {
		i := 0
		for i < len(s) && s[i] != ',' {
			i++
		}
		out = append(out, s[:i])
		if i == len(s) {
			break
		}
		s = s[i+1:]
	}
	return out
}

// Encode builds a spec for the launcher (see the package doc).
func Encode(filter []byte, flags []string, path string, env, argv []string) []byte {
	n := len(filter)
	b := []byte{byte(n), byte(n >> 8), byte(n >> 16), byte(n >> 24)}
	b = append(b, filter...)
	fl := ""
	for i, f := range flags {
		if i > 0 {
			fl += ","
		}
		fl += f
	}
	for _, s := range append([]string{fl, path}, env...) {
		b = append(append(b, s...), 0)
	}
	b = append(b, 0)
	for _, s := range argv {
		b = append(append(b, s...), 0)
	}
	return b
}

// Report is a launcher's report: why it did not run the program.
type Report struct {
	Stage   string // "launcher", "confine" or "exec"
	Errno   syscall.Errno
	Message string
}

// ParseReport parses what a launcher wrote; ok is false for anything that is
// not a report.
func ParseReport(b []byte) (r Report, ok bool) {
	i := indexByte(b, 0)
	if i <= 0 {
		return r, false
	}
	r.Stage, b = string(b[:i]), b[i+1:]
	j := indexByte(b, 0)
	if j <= 0 {
		return r, false
	}
	var e uint64
	for _, c := range b[:j] {
		if c < '0' || c > '9' || e > 1<<20 {
			return r, false
		}
		e = e*10 + uint64(c-'0')
	}
	r.Errno, r.Message = syscall.Errno(e), string(b[j+1:])
	return r, true
}

func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return -1
}

func appendUint(b []byte, v uint64) []byte {
	var d [20]byte
	i := len(d)
	for {
		i--
		d[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			break
		}
	}
	return append(b, d[i:]...)
}
