//go:build unix

package secrets

import (
	"os"

	"golang.org/x/sys/unix"
)

// lockFile takes an exclusive lock on STATION_HOME/secrets.lock, so that
// two processes changing secrets one after the other each see the
// other's change (each rewrites secrets.json whole).
func (s *Store) lockFile() (unlock func(), err error) {
	if err := os.MkdirAll(s.home, 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(s.path(LockFile), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() { unix.Flock(int(f.Fd()), unix.LOCK_UN); f.Close() }, nil
}
