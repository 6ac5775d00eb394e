package tagwrite

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// openRegular opens the regular file at path read-only and returns it with
// its status (fstat of the open file). Anything else — a FIFO, a device, a
// socket, a directory — is refused with an error wrapping ErrUnsupported,
// and is never opened in a way that can block: a FIFO's open(2) would wait
// for a writer forever. The path is checked with stat before the open; the
// open uses O_NONBLOCK, and the open file is checked again (regular, and the
// same file as the one checked), so a path swapped for a FIFO in between is
// refused too. O_NONBLOCK has no effect on reads of a regular file (and the
// cgo side puts the descriptor back in blocking mode through File.Fd).
func openRegular(path string) (*os.File, fs.FileInfo, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, nil, notRegular(st)
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	fst, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !fst.Mode().IsRegular() {
		f.Close()
		return nil, nil, notRegular(fst)
	}
	if !os.SameFile(st, fst) {
		f.Close()
		return nil, nil, fmt.Errorf("%w: replaced while being opened", ErrModified)
	}
	return f, fst, nil
}

func notRegular(st fs.FileInfo) error {
	return fmt.Errorf("%w: not a regular file (%v)", ErrUnsupported, st.Mode().Type())
}

// unchanged tells whether now (a stat of the path) is the file that was
// opened with status then, unmodified: the same inode, size, modification
// time and change time. The change time is what catches an in-place edit
// that keeps the size and sets the modification time back (a tag editor
// writing into ID3 padding and preserving timestamps): user space cannot set
// it. It moves at the file system's timestamp granularity, so an edit in the
// same clock tick as the previous change of the file can still go unseen.
func unchanged(then, now fs.FileInfo) bool {
	return os.SameFile(then, now) && stampOf(then) == stampOf(now) // SameFile: where stamps carry no inode
}
