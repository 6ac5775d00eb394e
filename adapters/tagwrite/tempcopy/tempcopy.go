// Package tempcopy names, creates and removes the tag writer's temporary
// copies: the file a write edits beside the original before it renames it
// over the original (tagwrite's crash safety).
//
// A copy is owned by the write that made it through a lock: Create takes an
// exclusive flock(2) on the copy, through a descriptor of its own, and the
// writer holds it until the copy is renamed or removed. The kernel drops
// the lock when its holder exits, however it exits (a SIGKILL, a crash), so
// a copy whose lock can be taken belongs to no live write: it is stale,
// and Remove deletes it. A copy is recognised by its whole name (Is), not
// its prefix alone, so a user's ".nomarr-tmp-notes.txt" is never touched.
//
// Invariants:
//   - Remove deletes a file only while it holds the file's lock and after
//     it found the name still naming the locked file: a live write, which
//     holds the lock from before it uses its copy until after the rename,
//     never loses its copy, and the original a copy was renamed over is
//     never removed.
//   - Create hands out a copy only once it holds its lock and has found
//     its name still naming it: a copy removed between its creation and
//     the lock (a Remove found it unlocked in that instant) is created
//     anew under another name.
//
// Where flock is not available, no lock is held and Remove falls back to
// age: a copy is stale once unmodified for StaleAfter.
package tempcopy

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Prefix starts every copy's name: Prefix, the decimal digits os.CreateTemp
// puts in, then the original's extension (at most 16 bytes, dot included)
// or nothing.
const Prefix = ".nomarr-tmp-"

// maxExt is the longest extension a copy keeps.
const maxExt = 16

// StaleAfter is, where flock is not available, the age (since its last
// modification) from which a copy is taken for stale.
var StaleAfter = 15 * time.Minute

// createTries bounds Create's attempts (each lost only to a Remove that
// found the new copy unlocked in the instant before its lock).
const createTries = 5

// Ext is the extension a copy of the file at path carries: the original's,
// for whoever looks at a stale copy, or none when it is longer than 16
// bytes.
func Ext(path string) string {
	ext := filepath.Ext(path)
	if len(ext) > maxExt {
		return ""
	}
	return ext
}

// Is reports whether name (a base name) is of a copy's naming: Prefix, one
// to twenty decimal digits, and an extension of at most 16 bytes ("." and
// no further dot) or none.
func Is(name string) bool {
	rest, ok := strings.CutPrefix(name, Prefix)
	if !ok {
		return false
	}
	digits := len(rest) - len(strings.TrimLeft(rest, "0123456789"))
	if digits == 0 || digits > 20 {
		return false
	}
	ext := rest[digits:]
	return ext == "" || len(ext) >= 2 && len(ext) <= maxExt && ext[0] == '.' && !strings.ContainsAny(ext[1:], "./")
}

// Copy is a temporary copy being written: File is open read-write, and the
// lock is held until Release.
type Copy struct {
	*os.File
	held *os.File // the descriptor holding the lock; nil where flock is unavailable
}

// Release drops the copy's lock (after the copy was renamed or removed).
// It does not close File.
func (c *Copy) Release() {
	if c.held != nil {
		c.held.Close()
		c.held = nil
	}
}

// Create creates a new copy in dir named for a file with extension ext
// (Ext), locked for the caller.
func Create(dir, ext string) (*Copy, error) {
	for range createTries {
		f, err := os.CreateTemp(dir, Prefix+"*"+ext)
		if err != nil {
			return nil, err
		}
		c, err := own(f)
		if err == nil {
			return c, nil
		}
		f.Close()
		if !errors.Is(err, errTaken) {
			os.Remove(f.Name())
			return nil, err
		}
	}
	return nil, fmt.Errorf("create a temporary copy in %s: each new copy was removed as stale before it could be locked", dir)
}

// errTaken: a new copy was locked or removed by a Remove before Create
// could lock it.
var errTaken = errors.New("copy taken before it was locked")

// own locks f, a copy just created, through a descriptor of its own, and
// checks that its name still names it.
func own(f *os.File) (*Copy, error) {
	held, err := os.Open(f.Name())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errTaken
	}
	if err != nil {
		return nil, err
	}
	ok, err := tryLock(held)
	switch {
	case errors.Is(err, errNoLocks):
		held.Close()
		return &Copy{File: f}, nil
	case err != nil:
		held.Close()
		return nil, fmt.Errorf("lock %s: %w", filepath.Base(f.Name()), err)
	case !ok:
		held.Close()
		return nil, errTaken
	}
	if !stillNamed(f.Name(), held) {
		held.Close()
		return nil, errTaken
	}
	return &Copy{File: f, held: held}, nil
}

// stillNamed reports whether path names the file f has open.
func stillNamed(path string, f *os.File) bool {
	st, err := f.Stat()
	if err != nil {
		return false
	}
	cur, err := os.Lstat(path)
	return err == nil && os.SameFile(st, cur)
}

// State is what Check finds of a directory entry.
type State int

const (
	// NotCopy: not a copy (another name, not a regular file, gone).
	NotCopy State = iota
	// Live: a copy that a live write holds.
	Live
	// Stale: a copy that no live write holds.
	Stale
)

func (s State) String() string {
	return [...]string{"not a copy", "live", "stale"}[s]
}

// Check says whether the entry at path is a copy, and whether a live write
// holds it. It changes nothing.
func Check(path string) (State, error) {
	st, f, err := check(path)
	if f != nil {
		f.Close()
	}
	return st, err
}

// check is Check; for Stale it returns the copy open, its lock held (or
// nil where locks are unavailable), for the caller to close.
func check(path string) (State, *os.File, error) {
	if !Is(filepath.Base(path)) {
		return NotCopy, nil, nil
	}
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return NotCopy, nil, nil
	}
	if err != nil {
		return NotCopy, nil, err
	}
	if !fi.Mode().IsRegular() {
		return NotCopy, nil, nil
	}
	f, err := openNoFollow(path)
	if errors.Is(err, fs.ErrNotExist) {
		return NotCopy, nil, nil
	}
	if err != nil {
		return NotCopy, nil, err
	}
	ok, err := tryLock(f)
	switch {
	case errors.Is(err, errNoLocks):
		f.Close()
		if time.Since(fi.ModTime()) < StaleAfter {
			return Live, nil, nil
		}
		return Stale, nil, nil
	case err != nil:
		f.Close()
		return NotCopy, nil, fmt.Errorf("lock %s: %w", path, err)
	case !ok:
		f.Close()
		return Live, nil, nil
	}
	if !stillNamed(path, f) { // renamed over its original, or replaced
		f.Close()
		return NotCopy, nil, nil
	}
	return Stale, f, nil
}

// Remove deletes the entry at path when it is a stale copy, and reports
// whether it did.
func Remove(path string) (bool, error) {
	st, f, err := check(path)
	if f != nil {
		defer f.Close() // the lock is held until the name is gone
	}
	if err != nil || st != Stale {
		return false, err
	}
	if err := os.Remove(path); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		return false, err
	}
	return true, nil
}

// RemoveIn deletes the stale copies in dir (not below it) and returns the
// names of those it removed. A copy it cannot check or remove is left for
// a later call; the first such error is returned with the names removed.
func RemoveIn(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var removed []string
	var first error
	for _, e := range entries {
		if !Is(e.Name()) || !e.Type().IsRegular() {
			continue
		}
		ok, err := Remove(filepath.Join(dir, e.Name()))
		if ok {
			removed = append(removed, e.Name())
		}
		if err != nil && first == nil {
			first = err
		}
	}
	return removed, first
}
