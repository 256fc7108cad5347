//go:build !unix

package hubserver

// DefaultNodeStreams is 0 (no bound) where the descriptor limit is not a
// unix rlimit.
func DefaultNodeStreams() int { return 0 }
