//go:build !(linux || darwin || freebsd || openbsd || netbsd || dragonfly)

package tempcopy

import (
	"errors"
	"os"
)

// errNoLocks: this system has no flock; copies are judged by age.
var errNoLocks = errors.New("no flock on this system")

func tryLock(*os.File) (bool, error) { return false, errNoLocks }

func openNoFollow(path string) (*os.File, error) { return os.Open(path) }
