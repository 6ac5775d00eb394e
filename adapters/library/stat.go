package library

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// ErrNotFile says that a path is not a file a scan counts: nothing is
// there (or a parent is no longer a folder), a symbolic link is dangling
// or loops, or what is there is not a regular file (a folder, a FIFO, a
// link to either).
var ErrNotFile = errors.New("not a regular file")

// Stat is the file at path as a scan counts it: a regular file, or a
// symbolic link to one described by its target (size and mtime are the
// target's, which the decoder reads and the tag writer replaces; the
// link's own never change when the target does). An error wrapping
// ErrNotFile says path is no audio file of the library; any other error
// (permissions, I/O) says that whether it is one cannot be told.
//
// The scan, a job's record of its own write (analyzer.statAsScanned) and
// the on-disk checks of `nomarr missing` and `forget` all use it, so that
// they agree on what is on disk and on its stat.
func Stat(path string) (fs.FileInfo, error) {
	fi, err := os.Stat(path)
	switch {
	case err == nil && !fi.Mode().IsRegular():
		return nil, fmt.Errorf("library: %s: %w (%s)", path, ErrNotFile, fi.Mode().Type())
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR), errors.Is(err, syscall.ELOOP):
		return nil, fmt.Errorf("library: %w: %w", ErrNotFile, err)
	case err != nil:
		return nil, fmt.Errorf("library: %w", err)
	}
	return fi, nil
}

// OnDisk reports whether path is a file a scan would count (Stat). Only
// ErrNotFile says it is not: a path that cannot be looked at counts as
// there, so that a doubt never marks or forgets a file.
func OnDisk(path string) bool {
	_, err := Stat(path)
	return !errors.Is(err, ErrNotFile)
}
