package sqlite

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
	"time"

	"github.com/nomarr/nomarr/core/store"
)

// A database file deleted or replaced under a running process is not
// followed by SQLite: the open connections go on with the old file (an
// unlinked inode), while every process that opens the path later gets the
// new file, an empty database perhaps. Two stores then pass for one. So a
// store checks, before a write or a count and at most once a second, that
// the path still names the file it opened; once it does not, every such
// call fails (a store fault: workers back off, the API shows store_error)
// until the process is restarted. The fault wraps store.ErrDetached: a
// stop gives up the writes it owes rather than wait for them. It stays even
// if the same file comes back at the path: its -wal and -shm may not have
// (removed, or made anew by a process that opened the path meanwhile), and
// this process's connections would go on with the old ones.

// withFileCheck sets how often the path is looked at (tests).
func withFileCheck(d time.Duration) Option {
	return func(c *config) { c.fileCheck = d }
}

// fileID is a file's identity: its device and inode.
type fileID struct{ dev, ino uint64 }

// statID returns path's identity; the zero fileID when it cannot be known.
func statID(path string) (fileID, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileID{}, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, nil
	}
	return fileID{uint64(st.Dev), st.Ino}, nil
}

// checkFile fails when the path no longer names the opened file.
func (s *Store) checkFile() error {
	if s.id == (fileID{}) {
		return nil // identity unknown at open: nothing to compare
	}
	if !s.replaced.Load() {
		now := time.Now().UnixNano()
		if last := s.checkedAt.Load(); now-last < int64(s.cfg.fileCheck) || !s.checkedAt.CompareAndSwap(last, now) {
			return nil
		}
		id, err := statID(s.path)
		if errors.Is(err, fs.ErrNotExist) || err == nil && id != (fileID{}) && id != s.id {
			s.replaced.Store(true)
		}
	}
	if s.replaced.Load() {
		return fmt.Errorf("database file %s was deleted or replaced while this process had it open: "+
			"restart nomarr (it then opens the file now at that path): %w", s.path, store.ErrDetached)
	}
	return nil
}
