package execgate

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/station-dev/station/sdk/abi"
	"golang.org/x/sys/unix"
)

// TestRunMetadataConfined: Landlock does not cover metadata, the seccomp
// filter does. A granted touch, chown or chmod leaves a file outside the work
// dirs as it was: touch and chown fail, chmod returns success and does nothing.
func TestRunMetadataConfined(t *testing.T) {
	wd := t.TempDir()
	outside := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(outside, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	old := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
	if err := os.Chtimes(outside, old, old); err != nil {
		t.Fatal(err)
	}
	g := systemGate(t, nil, []string{"touch", "chmod", "chown"}, Options{WorkDirs: []string{wd}})
	if !strings.Contains(g.Confinement(), "metadata: no chmod/chown/utimes (seccomp)") {
		t.Errorf("Confinement() = %q, want the seccomp filter named", g.Confinement())
	}
	run := func(argv ...string) *abi.ProcessResponse {
		t.Helper()
		resp, err := g.Run(callCtx(t), &abi.ProcessRequest{Argv: argv, Dir: wd})
		if err != nil {
			t.Fatalf("%v: %v", argv, err)
		}
		return resp
	}
	check := func(what string) {
		t.Helper()
		fi, err := os.Stat(outside)
		if err != nil {
			t.Fatal(err)
		}
		if !fi.ModTime().Equal(old) || fi.Mode().Perm() != 0o600 {
			t.Errorf("after %s: mtime %v mode %v, want %v and -rw-------", what, fi.ModTime(), fi.Mode().Perm(), old)
		}
	}
	for _, argv := range [][]string{
		{"touch", outside},
		{"touch", "-d", "2020-01-01", outside},
		{"chown", "1:1", outside},
	} {
		if resp := run(argv...); resp.ExitCode == 0 {
			t.Errorf("%v: exit 0, want non-zero", argv)
		}
		check(strings.Join(argv, " "))
	}
	run("chmod", "0777", outside)
	check("chmod 0777")

	// Inside the work dir too: creating files works, changing their metadata does not.
	if resp := run("touch", "created"); resp.ExitCode != 0 {
		t.Fatalf("touch created: exit %d (stderr %q), want 0", resp.ExitCode, resp.Stderr)
	}
	run("chmod", "0700", "created")
	if fi, err := os.Stat(filepath.Join(wd, "created")); err != nil || fi.Mode().Perm()&0o100 != 0 {
		t.Errorf("chmod in the work dir: %v %v, want the mode it was created with", fi.Mode(), err)
	}
}

// runBPF evaluates a classic BPF program over a seccomp_data: the subset
// metadataFilter uses (absolute word loads, JEQ/JGE on constants, returns).
func runBPF(t *testing.T, prog []unix.SockFilter, arch, nr uint32, args [6]uint64) uint32 {
	t.Helper()
	var data [64]byte
	binary.LittleEndian.PutUint32(data[0:], nr)
	binary.LittleEndian.PutUint32(data[4:], arch)
	for i, a := range args {
		binary.LittleEndian.PutUint64(data[16+8*i:], a)
	}
	var acc uint32
	for pc := 0; pc < len(prog); pc++ {
		in := prog[pc]
		switch in.Code {
		case unix.BPF_LD | unix.BPF_W | unix.BPF_ABS:
			acc = binary.LittleEndian.Uint32(data[in.K:])
		case unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K:
			if acc == in.K {
				pc += int(in.Jt)
			} else {
				pc += int(in.Jf)
			}
		case unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K:
			if acc >= in.K {
				pc += int(in.Jt)
			} else {
				pc += int(in.Jf)
			}
		case unix.BPF_RET | unix.BPF_K:
			return in.K
		default:
			t.Fatalf("instruction %d: unexpected code %#x", pc, in.Code)
		}
	}
	t.Fatal("fell off the end of the program")
	return 0
}

// TestMetadataFilterDecisions walks every branch of the filter: a wrong jump
// offset silently allows what it should deny, so each decision is checked.
func TestMetadataFilterDecisions(t *testing.T) {
	tab := currentSeccompTable()
	if tab == nil {
		t.Skip("no table for this architecture")
	}
	prog := metadataFilter(tab)
	const (
		allow = unix.SECCOMP_RET_ALLOW
		deny  = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
		noop  = unix.SECCOMP_RET_ERRNO
		kill  = unix.SECCOMP_RET_KILL_PROCESS
	)
	cases := []struct {
		name string
		arch uint32
		nr   uint32
		args [6]uint64
		want uint32
	}{
		{"getpid", tab.arch, unix.SYS_GETPID, [6]uint64{}, allow},
		{"openat", tab.arch, unix.SYS_OPENAT, [6]uint64{1, 2, 3}, allow},
		{"other architecture", tab.arch ^ 1, unix.SYS_GETPID, [6]uint64{}, kill},
		{"fchownat", tab.arch, unix.SYS_FCHOWNAT, [6]uint64{}, deny},
		{"fchmodat", tab.arch, unix.SYS_FCHMODAT, [6]uint64{}, noop},
		{"utimensat with a path", tab.arch, tab.utimensat, [6]uint64{3, 0x7fff00001000}, deny},
		{"utimensat with a high-only path", tab.arch, tab.utimensat, [6]uint64{3, 1 << 32}, deny},
		{"futimens", tab.arch, tab.utimensat, [6]uint64{3, 0}, allow},
		{"socket AF_UNIX", tab.arch, tab.socket, [6]uint64{unix.AF_UNIX, unix.SOCK_STREAM}, deny},
		{"socket AF_INET", tab.arch, tab.socket, [6]uint64{unix.AF_INET, unix.SOCK_STREAM}, allow},
		{"socket AF_INET6", tab.arch, tab.socket, [6]uint64{unix.AF_INET6, unix.SOCK_DGRAM}, allow},
		{"socketpair AF_UNIX", tab.arch, unix.SYS_SOCKETPAIR, [6]uint64{unix.AF_UNIX}, allow},
		{"ioctl FS_IOC_SETFLAGS", tab.arch, tab.ioctl, [6]uint64{3, unix.FS_IOC_SETFLAGS}, deny},
		{"ioctl FS_IOC_FSSETXATTR", tab.arch, tab.ioctl, [6]uint64{3, 0x401c5820}, deny},
		{"ioctl FIONREAD", tab.arch, tab.ioctl, [6]uint64{3, 0x541b /* FIONREAD */}, allow},
		{"io_uring_setup", tab.arch, unix.SYS_IO_URING_SETUP, [6]uint64{}, deny},
		{"add_key", tab.arch, unix.SYS_ADD_KEY, [6]uint64{}, deny},
		{"request_key", tab.arch, unix.SYS_REQUEST_KEY, [6]uint64{}, deny},
		{"keyctl", tab.arch, unix.SYS_KEYCTL, [6]uint64{}, deny},
		{"prlimit64 self", tab.arch, unix.SYS_PRLIMIT64, [6]uint64{0, unix.RLIMIT_NOFILE}, allow},
		{"prlimit64 another", tab.arch, unix.SYS_PRLIMIT64, [6]uint64{1234, unix.RLIMIT_NOFILE}, deny},
		{"setpriority self", tab.arch, unix.SYS_SETPRIORITY, [6]uint64{unix.PRIO_PROCESS, 0, 10}, allow},
		{"setpriority another", tab.arch, unix.SYS_SETPRIORITY, [6]uint64{unix.PRIO_PROCESS, 1234, 10}, deny},
		{"setpriority a group", tab.arch, unix.SYS_SETPRIORITY, [6]uint64{unix.PRIO_PGRP, 0, 10}, deny},
		{"ioprio_set self", tab.arch, unix.SYS_IOPRIO_SET, [6]uint64{1, 0, 0}, allow},
		{"ioprio_set another", tab.arch, unix.SYS_IOPRIO_SET, [6]uint64{1, 1234, 0}, deny},
	}
	for _, c := range cases {
		if got := runBPF(t, prog, c.arch, c.nr, c.args); got != c.want {
			t.Errorf("%s: filter returns %#x, want %#x", c.name, got, c.want)
		}
	}
}
