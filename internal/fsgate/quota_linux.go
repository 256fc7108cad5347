package fsgate

import (
	"fmt"
	"math"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"golang.org/x/sys/unix"

	"github.com/station-dev/station/internal/units"
)

// The quota counts the logical size of regular files: what the module's
// writes and size changes add, less what its truncations, unlinks and
// renames over a file take away (never below zero). Everything that changes
// a size holds g.acct.mu from reading the size to changing it, so the count
// is exact for this module's own operations. See docs/filesystem.md.

// resize sets the size of the open regular file fd, within the quota.
// A non-empty over is the reason the quota refused it; nothing was changed
// then.
func (g *Gate) resize(fd int, size int64) (over string, e errno) {
	g.acct.mu.Lock()
	defer g.acct.mu.Unlock()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return "", experimentalsys.UnwrapOSError(err)
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		return "", experimentalsys.EISDIR
	}
	if grow := size - st.Size; grow > 0 && !g.fits(grow) {
		return g.quotaReason(), 0
	}
	if err := ftruncate(fd, size); err != nil {
		return "", experimentalsys.UnwrapOSError(err)
	}
	g.add(size - st.Size)
	return "", 0
}

// write writes b to the open regular file fd at off (or at the current
// offset when off < 0, or at the end when appending), within the quota.
// A non-empty over is the reason the quota refused it.
func (g *Gate) write(fd int, b []byte, off int64, appending bool) (n int, over string, e errno) {
	g.acct.mu.Lock()
	defer g.acct.mu.Unlock()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return 0, "", experimentalsys.UnwrapOSError(err)
	}
	start := off
	switch {
	case appending: // Linux appends even for pwrite on an O_APPEND descriptor
		start = st.Size
	case off < 0:
		cur, err := unix.Seek(fd, 0, 1)
		if err != nil {
			return 0, "", experimentalsys.UnwrapOSError(err)
		}
		start = cur
	}
	if start > math.MaxInt64-int64(len(b)) {
		return 0, "", experimentalsys.EINVAL
	}
	if grow := start + int64(len(b)) - st.Size; grow > 0 && !g.fits(grow) {
		return 0, g.quotaReason(), 0
	}
	var err error
	for {
		if off < 0 {
			n, err = unix.Write(fd, b)
		} else {
			n, err = unix.Pwrite(fd, b, off)
		}
		if err != unix.EINTR {
			break
		}
	}
	if n < 0 {
		n = 0
	}
	if grew := start + int64(n) - st.Size; grew > 0 {
		g.add(grew)
	}
	return n, "", experimentalsys.UnwrapOSError(err)
}

// credit returns to the quota the bytes of a regular file whose last link
// is gone. g.acct.mu must be held.
func (g *Gate) credit(st *unix.Stat_t) {
	if st.Mode&unix.S_IFMT == unix.S_IFREG && st.Nlink == 1 {
		g.add(-st.Size)
	}
}

// fits reports whether grow more bytes stay within the quota. g.acct.mu must
// be held.
func (g *Gate) fits(grow int64) bool { return grow <= g.quota-g.acct.used }

// add changes the bytes in use. g.acct.mu must be held.
func (g *Gate) add(n int64) {
	if n != 0 {
		g.acct.used = max(0, g.acct.used+n)
		g.acct.gen.Add(1)
	}
}

// quotaReason is the reason of a denial by the quota. g.acct.mu must be
// held.
func (g *Gate) quotaReason() string {
	return fmt.Sprintf("would exceed its disk quota of %s (%s in use)", units.Bytes(g.quota), units.Bytes(g.acct.used))
}

// ftruncate is unix.Ftruncate retried on EINTR.
func ftruncate(fd int, size int64) error {
	for {
		if err := unix.Ftruncate(fd, size); err != unix.EINTR {
			return err
		}
	}
}
