//go:build unix

package hubserver

import "syscall"

// DefaultNodeStreams is the bound on a hub process's event streams that
// `station hub serve` sets unless told otherwise (Options.NodeStreams): its
// descriptor limit (which Go raises to the hard limit at start) less
// nodeReserve for everything else — database connections, the registry,
// requests that are not streams, the listener. 0 when the limit cannot be
// read or is unbounded.
func DefaultNodeStreams() int {
	var l syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l) != nil || l.Cur > 1<<30 {
		return 0
	}
	return max(int(l.Cur)-nodeReserve, minNodeStreams)
}
