//go:build linux

package execgate

import "golang.org/x/sys/unix"

// currentSeccompTable: x86_64. x32 calls (numbers with bit 30 set) report
// the same architecture, so they are denied wholesale.
func currentSeccompTable() *seccompTable {
	return &seccompTable{
		arch:      unix.AUDIT_ARCH_X86_64,
		x32Bit:    0x40000000,
		utimensat: unix.SYS_UTIMENSAT,
		socket:    unix.SYS_SOCKET,
		ioctl:     unix.SYS_IOCTL,
		noop:      []uint32{unix.SYS_CHMOD, unix.SYS_FCHMOD, unix.SYS_FCHMODAT, 452}, // 452: fchmodat2
		denied: []uint32{
			unix.SYS_UTIME, unix.SYS_UTIMES, unix.SYS_FUTIMESAT, unix.SYS_CHOWN, unix.SYS_FCHOWN, unix.SYS_LCHOWN, unix.SYS_FCHOWNAT,
			unix.SYS_SETXATTR, unix.SYS_LSETXATTR, unix.SYS_FSETXATTR,
			unix.SYS_REMOVEXATTR, unix.SYS_LREMOVEXATTR, unix.SYS_FREMOVEXATTR,
			463, 466, // setxattrat, removexattrat
			469,                     // file_setattr
			unix.SYS_IO_URING_SETUP, // io_uring has setxattr operations
			// Kernel keyrings are not namespaced: a child would share the
			// station's session and user keyrings.
			unix.SYS_ADD_KEY, unix.SYS_REQUEST_KEY, unix.SYS_KEYCTL,
		},
	}
}
