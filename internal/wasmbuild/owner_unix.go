//go:build unix

package wasmbuild

import (
	"os"
	"syscall"
)

// ownedBySelf reports whether fi belongs to the current user.
func ownedBySelf(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Getuid()
}
