//go:build !unix

package secrets

// lockFile is a no-op where there is no flock: two processes changing
// secrets at the same moment may lose one change (docs/security.md).
func (s *Store) lockFile() (unlock func(), err error) { return func() {}, nil }
