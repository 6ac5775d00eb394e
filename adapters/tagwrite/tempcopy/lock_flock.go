//go:build linux || darwin || freebsd || openbsd || netbsd || dragonfly

package tempcopy

import (
	"errors"
	"os"
	"syscall"
)

// errNoLocks: this system has no flock (lock_other.go).
var errNoLocks = errors.New("no flock on this system")

// tryLock takes an exclusive flock on f without waiting: false when
// another open file description holds one.
func tryLock(f *os.File) (bool, error) {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, syscall.EWOULDBLOCK):
			return false, nil
		case errors.Is(err, syscall.EINTR):
			continue
		}
		return false, err
	}
}

// openNoFollow opens path read-only, never following a symbolic link nor
// blocking on a FIFO put in its place.
func openNoFollow(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
}
