// Package library finds audio files on disk and describes them as store
// documents. It reads the file system and decides nothing about tagging.
package library

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/nomarr/nomarr/adapters/tagwrite/tempcopy"
	"github.com/nomarr/nomarr/core/store"
)

// Extensions are the audio formats Nomarr looks at.
var Extensions = map[string]bool{
	".mp3": true, ".flac": true, ".ogg": true, ".oga": true, ".opus": true, ".m4a": true,
	".mp4": true, ".aac": true, ".wav": true, ".aif": true, ".aiff": true, ".wma": true, ".wv": true, ".ape": true,
}

// Key is a file's stable document key: a hash of its absolute path, so it is
// a valid key in every store (ArangoDB's _key included).
func Key(absPath string) string {
	sum := sha256.Sum256([]byte(absPath))
	return hex.EncodeToString(sum[:16])
}

// Scan walks dir and returns one document per audio file. What could not
// be read is reported in unread and does not stop the scan.
func Scan(dir string) (files []store.File, unread []Unread, err error) {
	unread, err = Walk(context.Background(), dir, func(f store.File) error {
		files = append(files, f)
		return nil
	})
	if err != nil {
		return nil, unread, err
	}
	return files, unread, nil
}

// Unread is a folder (or an audio file) under a walk's root that could
// not be read (permissions, an I/O error): the files in or at Path were
// not seen, though they may well be there. Path is named as the walk names
// its files (under the root as given).
type Unread struct {
	Path string
	Err  error
}

// CheckRoot says whether dir can be scanned: a folder (or a link to one),
// or one audio file. Commands ask it before they open or create a store,
// so that a mistyped path creates nothing.
func CheckRoot(dir string) error {
	root, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("library: %w", err)
	}
	return checkRoot(dir, root, root)
}

// checkRoot is CheckRoot for dir, as an absolute path (root) and as walked
// (through a link).
func checkRoot(dir, root, walkRoot string) error {
	fi, err := os.Stat(walkRoot)
	if err != nil {
		return fmt.Errorf("library: scan %s: %w", dir, err)
	}
	// A root that is a file is scanned as itself when it is an audio file
	// (one track); anything else is a mistake to say, not an empty library.
	if !fi.IsDir() && !Extensions[strings.ToLower(filepath.Ext(root))] {
		return fmt.Errorf("library: scan %s: not a folder (nor an audio file)", dir)
	}
	return nil
}

// Walk walks dir and calls visit with one document per audio file, in
// lexical order, without holding them: a library of a million files is
// never in memory at once. A folder or file that cannot be read is
// reported in unread and does not stop the walk; an error from visit stops
// it and is returned, and so does ctx's end, checked at every entry (a
// stop signal must not wait for the next audio file or store write).
//
// A dir that is a symbolic link (/music -> /mnt/nas/music) is walked
// through its target, and its files are named under dir as given, so
// their keys stay put when the link is pointed elsewhere. Links to folders
// below dir are not followed. A link below dir to a regular file is an
// audio file described by its target (Stat); a dangling link, or one to
// anything else, is no file, as a FIFO or a folder named like audio is not.
//
// A dir that is an audio file is scanned as a library of that one file;
// any other file is an error.
//
// Hidden entries under dir (names beginning with ".") are not library
// files: the tag writer's temporary copies (".nomarr-tmp-*.flac", which
// keep the audio extension), macOS's "._*" resource forks beside each
// track on shared drives, ".Trash" folders. dir itself may be hidden.
//
// The walk removes the tag writer's temporary copies that no live write
// holds (left by a writer killed or crashed mid-write: full-size copies of
// the audio) as it meets them, and nothing else (removeStaleCopy).
func Walk(ctx context.Context, dir string, visit func(store.File) error) (unread []Unread, err error) {
	root, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("library: %w", err)
	}
	walkRoot := root
	if fi, err := os.Lstat(root); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		if target, err := filepath.EvalSymlinks(root); err == nil {
			walkRoot = target
		}
	}
	if err := checkRoot(dir, root, walkRoot); err != nil {
		return nil, err
	}
	err = filepath.WalkDir(walkRoot, func(walked string, d fs.DirEntry, err error) error {
		if ctx.Err() != nil {
			return fmt.Errorf("library: scan %s: %w", dir, context.Cause(ctx))
		}
		path := walked
		if walkRoot != root { // named under root, as the user gave it
			path = root + strings.TrimPrefix(walked, walkRoot)
		}
		if err != nil {
			if path == root {
				return fmt.Errorf("library: scan %s: %w", dir, err)
			}
			unread = append(unread, Unread{Path: path, Err: err})
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if path != root && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return fs.SkipDir
			}
			removeStaleCopy(walked, path, d)
			return nil
		}
		if d.IsDir() || !Extensions[strings.ToLower(filepath.Ext(path))] {
			return nil
		}
		info, err := Stat(walked)
		switch {
		case errors.Is(err, ErrNotFile):
			return nil // gone since the folder was read, a dangling link, a FIFO
		case err != nil:
			unread = append(unread, Unread{Path: path, Err: err})
			return nil
		}
		return visit(store.File{Key: Key(path), Path: path, Size: info.Size(), MtimeMs: info.ModTime().UnixMilli(),
			NeedsTagging: true, IsValid: info.Size() > 0})
	})
	return unread, err
}

// removeStaleCopy removes the entry d, at walked (named path under the
// root), when it is a temporary copy of the tag writer's naming that no
// live write holds (tempcopy.Remove: a write holds a lock on its copy for
// as long as it uses it, and the kernel drops it when the writer dies).
// A copy it cannot check or remove is logged and left for the next scan
// or write in the folder.
func removeStaleCopy(walked, path string, d fs.DirEntry) {
	if !tempcopy.Is(d.Name()) || !d.Type().IsRegular() {
		return
	}
	removed, err := tempcopy.Remove(walked)
	switch {
	case err != nil:
		slog.Warn("library: stale temporary copy left in place", "path", path, "err", err)
	case removed:
		slog.Info("library: removed a stale temporary copy of an interrupted tag write", "path", path)
	}
}
