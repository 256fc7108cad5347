package execgate

import (
	"errors"

	"golang.org/x/sys/unix"
)

// The seccomp filter closes what Landlock leaves open: Landlock confines
// writes to file contents and directory entries, not metadata, so without it
// a granted program (touch, chmod, chown, setfattr) could change the times,
// mode, owner or extended attributes of any file the station's user owns.
// The filter makes the time, owner and xattr calls fail with EPERM
// everywhere, work dirs included. The chmod calls instead return 0 and do
// nothing: git (and other programs) chmod every file they write, through a
// lock file, and stop when that fails; a file keeps the mode it was created
// with. See docs/subprocess.md, "Confinement".

// Offsets in struct seccomp_data: nr, arch, then args[6] from byte 16; the
// low 32 bits of args[1] (little-endian on every architecture we support).
const (
	seccompDataNr    = 0
	seccompDataArch  = 4
	seccompDataArg0L = 16
	seccompDataArg1L = 16 + 8
)

// errNoSeccompTable is returned on architectures whose system call numbers
// the gate does not know: the child is refused rather than left unfiltered.
var errNoSeccompTable = errors.New("no seccomp system call table for this architecture; refusing to start children")

// metadataIoctls are the ioctl commands that change inode flags or fsxattr
// (chattr) on a file opened for reading.
var metadataIoctls = []uint32{unix.FS_IOC_SETFLAGS, 0x40046602 /* FS_IOC32_SETFLAGS */, 0x401c5820 /* FS_IOC_FSSETXATTR */}

// metadataFilter builds the filter for the table of this architecture:
// another architecture (a 32-bit compatibility call) kills the process,
// the denied calls (and, on x86_64, any x32 call) fail with EPERM, the
// listed ioctls too, the no-op calls return 0, everything else is allowed.
func metadataFilter(t *seccompTable) []unix.SockFilter {
	const deny = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	stmt := func(code uint16, k uint32) unix.SockFilter { return unix.SockFilter{Code: code, K: k} }
	var prog []unix.SockFilter
	var toDeny []int  // indexes of jumps whose true branch goes to deny
	var toAllow []int // indexes of jumps whose false branch goes to allow
	var toNoop []int  // indexes of jumps whose true branch goes to noop
	prog = append(prog,
		stmt(unix.BPF_LD|unix.BPF_W|unix.BPF_ABS, seccompDataArch),
		unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: t.arch, Jt: 1},
		stmt(unix.BPF_RET|unix.BPF_K, unix.SECCOMP_RET_KILL_PROCESS),
		stmt(unix.BPF_LD|unix.BPF_W|unix.BPF_ABS, seccompDataNr),
	)
	if t.x32Bit != 0 {
		toDeny = append(toDeny, len(prog))
		prog = append(prog, unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K, K: t.x32Bit})
	}
	for _, nr := range t.denied {
		toDeny = append(toDeny, len(prog))
		prog = append(prog, unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: nr})
	}
	for _, nr := range t.noop {
		toNoop = append(toNoop, len(prog))
		prog = append(prog, unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: nr})
	}
	// utimensat(fd, NULL, ...) is futimens on a descriptor the program
	// opened (touch opens for writing, which Landlock confines): allowed.
	// With a path it is denied.
	prog = append(prog,
		unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: t.utimensat, Jf: 6},
		stmt(unix.BPF_LD|unix.BPF_W|unix.BPF_ABS, seccompDataArg1L),
		unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: 0, Jf: 2},
		stmt(unix.BPF_LD|unix.BPF_W|unix.BPF_ABS, seccompDataArg1L+4),
		unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: 0, Jt: 1},
		stmt(unix.BPF_RET|unix.BPF_K, deny),
		stmt(unix.BPF_RET|unix.BPF_K, unix.SECCOMP_RET_ALLOW),
		stmt(unix.BPF_LD|unix.BPF_W|unix.BPF_ABS, seccompDataNr),
	)
	// socket(AF_UNIX, ...) fails: a pathname socket (docker.sock, an SSH or
	// GPG agent, a D-Bus bus) is reached through the file system, not the
	// network namespace, and Landlock does not cover connect(2). Abstract
	// sockets are cut off by the network namespace and Landlock's scoping.
	// socketpair(2) stays: it connects only the two ends it creates.
	prog = append(prog,
		unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: t.socket, Jf: 4},
		stmt(unix.BPF_LD|unix.BPF_W|unix.BPF_ABS, seccompDataArg0L),
		unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: unix.AF_UNIX, Jf: 1},
		stmt(unix.BPF_RET|unix.BPF_K, deny),
		stmt(unix.BPF_RET|unix.BPF_K, unix.SECCOMP_RET_ALLOW),
	)
	// prlimit64 on another process, setpriority and ioprio_set on anything
	// but the caller (PRIO_PROCESS / IOPRIO_WHO_PROCESS, who 0) fail:
	// without a pid namespace (operator-allowed) they would reach the
	// station. The system call numbers are this architecture's, which the
	// arch check above guarantees.
	prog = append(prog,
		unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: unix.SYS_PRLIMIT64, Jf: 4},
		stmt(unix.BPF_LD|unix.BPF_W|unix.BPF_ABS, seccompDataArg0L),
		unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: 0, Jt: 1},
		stmt(unix.BPF_RET|unix.BPF_K, deny),
		stmt(unix.BPF_RET|unix.BPF_K, unix.SECCOMP_RET_ALLOW),
	)
	for _, c := range []struct{ nr, self uint32 }{{unix.SYS_SETPRIORITY, unix.PRIO_PROCESS}, {unix.SYS_IOPRIO_SET, 1 /* IOPRIO_WHO_PROCESS */}} {
		prog = append(prog,
			unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: c.nr, Jf: 6},
			stmt(unix.BPF_LD|unix.BPF_W|unix.BPF_ABS, seccompDataArg0L),
			unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: c.self, Jf: 3},
			stmt(unix.BPF_LD|unix.BPF_W|unix.BPF_ABS, seccompDataArg1L),
			unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: 0, Jf: 1},
			stmt(unix.BPF_RET|unix.BPF_K, unix.SECCOMP_RET_ALLOW),
			stmt(unix.BPF_RET|unix.BPF_K, deny),
		)
	}
	toAllow = append(toAllow, len(prog))
	prog = append(prog, unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: t.ioctl})
	prog = append(prog, stmt(unix.BPF_LD|unix.BPF_W|unix.BPF_ABS, seccompDataArg1L))
	for _, cmd := range metadataIoctls {
		toDeny = append(toDeny, len(prog))
		prog = append(prog, unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: cmd})
	}
	allow := len(prog)
	prog = append(prog, stmt(unix.BPF_RET|unix.BPF_K, unix.SECCOMP_RET_ALLOW))
	denyAt := len(prog)
	prog = append(prog, stmt(unix.BPF_RET|unix.BPF_K, deny))
	noopAt := len(prog)
	prog = append(prog, stmt(unix.BPF_RET|unix.BPF_K, unix.SECCOMP_RET_ERRNO)) // errno 0: returns 0
	for _, i := range toNoop {
		prog[i].Jt = uint8(noopAt - i - 1)
	}
	for _, i := range toDeny {
		prog[i].Jt = uint8(denyAt - i - 1)
	}
	for _, i := range toAllow {
		prog[i].Jf = uint8(allow - i - 1)
	}
	return prog
}

// seccompTable is what the filter needs to know about an architecture.
type seccompTable struct {
	arch      uint32   // AUDIT_ARCH_*
	x32Bit    uint32   // system call numbers at or above this are denied; 0 for none
	ioctl     uint32   // the ioctl system call
	utimensat uint32   // denied only with a path
	socket    uint32   // denied for AF_UNIX
	denied    []uint32 // system calls that fail with EPERM
	noop      []uint32 // system calls that return 0 without doing anything (chmod)
}
