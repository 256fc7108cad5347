package fsgate

import (
	"encoding/binary"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/sys"
	"golang.org/x/sys/unix"
)

// file is a regular file or directory the gate opened for an instance. The
// checks that apply to the path were made when it was opened; the
// descriptor refers to what was checked, whatever happens to the path
// since. Changes through it (write, set size, set times) need it to have
// been opened for writing; writes count against the quota.
type file struct {
	experimentalsys.UnimplementedFile
	m         *mountFS
	f         *os.File // owns fd; closes it at Close (or, as a safety net, when collected)
	fd        int
	rel       string // relative to the mount root, as resolved at open
	glob      string // the write glob that allowed opening it for writing
	write     bool   // opened with write access
	isDir     bool
	dev, ino  uint64
	appending bool
	closed    bool

	// directory reading: entries read from the kernel but not returned yet
	buf     []byte
	pending []experimentalsys.Dirent
	eof     bool
}

var _ experimentalsys.File = (*file)(nil)

func newFile(m *mountFS, fd int, rel, glob string, st *unix.Stat_t, flag experimentalsys.Oflag) *file {
	return &file{
		m:         m,
		f:         os.NewFile(uintptr(fd), m.host(rel)),
		fd:        fd,
		rel:       rel,
		glob:      glob,
		write:     flag&(experimentalsys.O_RDWR|experimentalsys.O_WRONLY) != 0,
		isDir:     st.Mode&unix.S_IFMT == unix.S_IFDIR,
		dev:       uint64(st.Dev),
		ino:       st.Ino,
		appending: flag&experimentalsys.O_APPEND != 0,
	}
}

// Dev implements experimentalsys.File.
func (f *file) Dev() (uint64, errno) { return f.dev, 0 }

// Ino implements experimentalsys.File.
func (f *file) Ino() (sys.Inode, errno) { return f.ino, 0 }

// IsDir implements experimentalsys.File.
func (f *file) IsDir() (bool, errno) { return f.isDir, 0 }

// IsAppend implements experimentalsys.File.
func (f *file) IsAppend() bool { return f.appending }

// SetAppend implements experimentalsys.File. Appending does not make a
// read-only descriptor writable, so it needs no decision.
func (f *file) SetAppend(enable bool) errno {
	switch {
	case f.closed:
		return experimentalsys.EBADF
	case f.isDir:
		return experimentalsys.EISDIR
	}
	fl, err := unix.FcntlInt(uintptr(f.fd), unix.F_GETFL, 0)
	if err != nil {
		return experimentalsys.UnwrapOSError(err)
	}
	if enable {
		fl |= unix.O_APPEND
	} else {
		fl &^= unix.O_APPEND
	}
	if _, err := unix.FcntlInt(uintptr(f.fd), unix.F_SETFL, fl); err != nil {
		return experimentalsys.UnwrapOSError(err)
	}
	f.appending = enable
	return 0
}

// Stat implements experimentalsys.File.
func (f *file) Stat() (sys.Stat_t, errno) {
	if f.closed {
		return sys.Stat_t{}, experimentalsys.EBADF
	}
	var st unix.Stat_t
	if err := unix.Fstat(f.fd, &st); err != nil {
		return sys.Stat_t{}, experimentalsys.UnwrapOSError(err)
	}
	return toStat(&st), 0
}

// Read implements experimentalsys.File.
func (f *file) Read(b []byte) (int, errno) {
	if e := f.readable(); e != 0 || len(b) == 0 {
		return 0, e
	}
	for {
		n, err := unix.Read(f.fd, b)
		if err != unix.EINTR {
			return max(n, 0), experimentalsys.UnwrapOSError(err)
		}
	}
}

// Pread implements experimentalsys.File.
func (f *file) Pread(b []byte, off int64) (int, errno) {
	if e := f.readable(); e != 0 || len(b) == 0 {
		return 0, e
	}
	if off < 0 {
		return 0, experimentalsys.EINVAL
	}
	for {
		n, err := unix.Pread(f.fd, b, off)
		if err != unix.EINTR {
			return max(n, 0), experimentalsys.UnwrapOSError(err)
		}
	}
}

func (f *file) readable() errno {
	switch {
	case f.closed:
		return experimentalsys.EBADF
	case f.isDir:
		return experimentalsys.EISDIR
	}
	return 0
}

// offset is int64 under another name, so that go vet does not take Seek,
// which returns wazero's Errno, for a broken io.Seeker.
type offset = int64

// Seek implements experimentalsys.File. A directory can only be rewound.
func (f *file) Seek(off offset, whence int) (int64, errno) {
	if f.closed {
		return 0, experimentalsys.EBADF
	}
	if whence != io.SeekStart && whence != io.SeekCurrent && whence != io.SeekEnd {
		return 0, experimentalsys.EINVAL
	}
	if f.isDir {
		if off != 0 || whence != io.SeekStart {
			return 0, experimentalsys.EINVAL
		}
		f.pending, f.eof = nil, false
	}
	n, err := unix.Seek(f.fd, off, whence)
	return n, experimentalsys.UnwrapOSError(err)
}

// Readdir implements experimentalsys.File. It returns only the entries the
// module may see (see policy.visible); "." and ".." are left to wazero.
func (f *file) Readdir(n int) ([]experimentalsys.Dirent, errno) {
	if f.closed {
		return nil, experimentalsys.EBADF
	}
	if !f.isDir {
		return nil, experimentalsys.ENOTDIR
	}
	var out []experimentalsys.Dirent
	for n <= 0 || len(out) < n {
		if len(f.pending) == 0 {
			if f.eof {
				break
			}
			if e := f.fill(); e != 0 {
				return nil, e
			}
			continue
		}
		d := f.pending[0]
		f.pending = f.pending[1:]
		if d.Name == "." || d.Name == ".." || !f.m.g.pol.visible(f.m.host(path.Join(f.rel, d.Name))) {
			continue
		}
		out = append(out, d)
	}
	return out, 0
}

// fill reads the next batch of directory entries from the kernel.
func (f *file) fill() errno {
	if f.buf == nil {
		f.buf = make([]byte, 8<<10)
	}
	var n int
	var err error
	for {
		if n, err = unix.Getdents(f.fd, f.buf); err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return experimentalsys.UnwrapOSError(err)
	}
	if n <= 0 {
		f.eof = true
		return 0
	}
	// struct linux_dirent64 { u64 d_ino; s64 d_off; u16 d_reclen; u8 d_type; char d_name[]; }
	for b := f.buf[:n]; len(b) > 0; {
		if len(b) < 19 {
			return experimentalsys.EIO
		}
		reclen := int(binary.NativeEndian.Uint16(b[16:18]))
		if reclen < 19 || reclen > len(b) {
			return experimentalsys.EIO
		}
		name := string(b[19:reclen])
		if i := strings.IndexByte(name, 0); i >= 0 {
			name = name[:i]
		}
		d := experimentalsys.Dirent{Ino: binary.NativeEndian.Uint64(b[0:8]), Name: name, Type: direntType(b[18])}
		if b[18] == unix.DT_UNKNOWN {
			if st, e := fstatat(f.fd, name); e == 0 {
				d.Type = toMode(st.Mode).Type()
			}
		}
		f.pending = append(f.pending, d)
		b = b[reclen:]
	}
	return 0
}

func direntType(t uint8) fs.FileMode {
	switch t {
	case unix.DT_REG:
		return 0
	case unix.DT_DIR:
		return fs.ModeDir
	case unix.DT_LNK:
		return fs.ModeSymlink
	case unix.DT_FIFO:
		return fs.ModeNamedPipe
	case unix.DT_SOCK:
		return fs.ModeSocket
	case unix.DT_CHR:
		return fs.ModeDevice | fs.ModeCharDevice
	case unix.DT_BLK:
		return fs.ModeDevice
	}
	return fs.ModeIrregular
}

// Write implements experimentalsys.File, within the quota.
func (f *file) Write(b []byte) (int, errno) {
	return f.writeAt(b, -1)
}

// Pwrite implements experimentalsys.File, within the quota.
func (f *file) Pwrite(b []byte, off int64) (int, errno) {
	if off < 0 {
		return 0, experimentalsys.EINVAL
	}
	return f.writeAt(b, off)
}

func (f *file) writeAt(b []byte, off int64) (int, errno) {
	switch {
	case f.closed:
		return 0, experimentalsys.EBADF
	case f.isDir:
		return 0, experimentalsys.EISDIR
	case !f.write:
		return 0, experimentalsys.EBADF // as write(2) on a read-only descriptor
	case len(b) == 0:
		return 0, 0
	}
	n, over, e := f.m.g.write(f.fd, b, off, f.appending)
	if over != "" {
		return 0, f.m.deny(f.m.host(f.rel), over, experimentalsys.EPERM)
	}
	return n, e
}

// Truncate implements experimentalsys.File: setting the size is a change,
// allowed only on a descriptor opened for writing, and growth counts
// against the quota.
func (f *file) Truncate(size int64) errno {
	switch {
	case f.closed:
		return experimentalsys.EBADF
	case size < 0:
		return experimentalsys.EINVAL
	case f.isDir:
		return experimentalsys.EISDIR
	}
	if e := f.changeable("set size"); e != 0 {
		return e
	}
	over, e := f.m.g.resize(f.fd, size)
	if over != "" {
		return f.m.deny(f.m.host(f.rel), over, experimentalsys.EPERM)
	}
	if e == 0 {
		f.m.allow(f.m.host(f.rel), fmt.Sprintf("set size to %d (allowed by %s)", size, f.glob))
	}
	return e
}

// Utimens implements experimentalsys.File: setting times is a change,
// allowed only on a descriptor opened for writing.
func (f *file) Utimens(atim, mtim int64) errno {
	if f.closed {
		return experimentalsys.EBADF
	}
	if e := f.changeable("set times"); e != 0 {
		return e
	}
	f.m.allow(f.m.host(f.rel), "set times (allowed by "+f.glob+")")
	return experimentalsys.UnwrapOSError(futimens(f.fd, []unix.Timespec{timespec(atim), timespec(mtim)}))
}

// changeable refuses a change through a descriptor not opened for writing.
// The denial returns EBADF, as the system call would, and not EPERM, on
// which wazero would retry the change by path.
func (f *file) changeable(verb string) errno {
	if f.write {
		return 0
	}
	reason := "was opened read-only; " + verb + " needs a descriptor opened for writing"
	if _, ok := f.m.g.pol.writable(f.m.host(f.rel)); !ok {
		reason = f.m.g.pol.notIn(kindWrite)
	}
	return f.m.deny(f.m.host(f.rel), reason, experimentalsys.EBADF)
}

// Sync implements experimentalsys.File.
func (f *file) Sync() errno {
	if f.closed {
		return experimentalsys.EBADF
	}
	return experimentalsys.UnwrapOSError(unix.Fsync(f.fd))
}

// Datasync implements experimentalsys.File.
func (f *file) Datasync() errno {
	if f.closed {
		return experimentalsys.EBADF
	}
	return experimentalsys.UnwrapOSError(unix.Fdatasync(f.fd))
}

// Close implements experimentalsys.File.
func (f *file) Close() errno {
	if f.closed {
		return 0
	}
	f.closed = true
	f.m.inst.untrack(f)
	f.m.putFD()
	return experimentalsys.UnwrapOSError(f.f.Close())
}

// toStat converts a system stat.
func toStat(st *unix.Stat_t) sys.Stat_t {
	return sys.Stat_t{
		Dev:   uint64(st.Dev),
		Ino:   st.Ino,
		Mode:  toMode(st.Mode),
		Nlink: uint64(st.Nlink),
		Size:  st.Size,
		Atim:  st.Atim.Nano(),
		Mtim:  st.Mtim.Nano(),
		Ctim:  st.Ctim.Nano(),
	}
}

// toMode converts a system mode to fs.FileMode.
func toMode(m uint32) fs.FileMode {
	mode := fs.FileMode(m & 0o777)
	switch m & unix.S_IFMT {
	case unix.S_IFDIR:
		mode |= fs.ModeDir
	case unix.S_IFLNK:
		mode |= fs.ModeSymlink
	case unix.S_IFIFO:
		mode |= fs.ModeNamedPipe
	case unix.S_IFSOCK:
		mode |= fs.ModeSocket
	case unix.S_IFCHR:
		mode |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		mode |= fs.ModeDevice
	}
	if m&unix.S_ISUID != 0 {
		mode |= fs.ModeSetuid
	}
	if m&unix.S_ISGID != 0 {
		mode |= fs.ModeSetgid
	}
	if m&unix.S_ISVTX != 0 {
		mode |= fs.ModeSticky
	}
	return mode
}
