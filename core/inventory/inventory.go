// Package inventory decides, after a scan of a library root, which stored
// files have left the disk. library_files is the single source of truth for
// work (docs/design.md §7), so a file that is gone must stop being work; it is
// marked missing (not valid) rather than deleted, keeping its tagging state
// for when it comes back (store.Inventory).
package inventory

import (
	"path/filepath"
	"strings"
	"time"

	"github.com/nomarr/nomarr/core/store"
)

// Scan is what a scan of a library root found.
type Scan struct {
	// Root is the scanned directory: an absolute, clean path.
	Root string
	// Seen holds the keys of the files found under Root.
	Seen map[string]bool
	// Unread holds the folders (and files) under Root, named as the stored
	// paths are, that the scan could not read: the files at or under them
	// were not seen, though they may well be there. An ext4 disk's
	// lost+found (root's, mode 700) or a Windows drive's System Volume
	// Information is one on every scan.
	Unread map[string]bool
}

// Missing returns the keys of the files among stored that left the disk:
// valid, under the root, not seen, not at or under a folder the scan could
// not read, and not on disk now (onDisk reports whether a path is there as
// the scan counts files; it is asked of these candidates only).
//
// A scan that found nothing marks nothing: an empty root is far more often
// a drive that is not mounted than a library that was emptied. An
// unreadable folder keeps its own files from being marked, and only them:
// marking them only to make them valid again at the next scan would be
// churn for nothing, while one folder that is never readable (lost+found)
// must not keep every deleted track of the library valid for good. The
// store changes during a long walk: a file another process stored
// meanwhile (a `nomarr tag` of a new album during a daemon's rescan) is
// not in Seen, but it is on disk, so it is not marked.
func (s Scan) Missing(stored []store.File, onDisk func(path string) bool) []string {
	if len(s.Seen) == 0 {
		return nil
	}
	var out []string
	for _, f := range stored {
		if f.IsValid && Under(s.Root, f.Path) && !s.Seen[f.Key] && !s.unread(f.Path) && !onDisk(f.Path) {
			out = append(out, f.Key)
		}
	}
	return out
}

// unread reports whether path, under the root, is or lies under one of
// the paths the scan could not read: it looks up path and each of its
// parents below the root, so that the cost does not grow with Unread.
func (s Scan) unread(path string) bool {
	if len(s.Unread) == 0 {
		return false
	}
	for p := path; Under(s.Root, p); {
		if s.Unread[p] {
			return true
		}
		parent := filepath.Dir(p)
		if parent == p { // "/", under a root of "/"
			return false
		}
		p = parent
	}
	return false
}

// Under reports whether path lies under root (an absolute, clean path;
// "" or "/" holds every path).
func Under(root, path string) bool {
	if !strings.HasSuffix(root, "/") {
		root += "/"
	}
	return strings.HasPrefix(path, root)
}

// Failed returns the failed files among stored that lie under root: those
// an operator may send back to work (store.Inventory.RetryFailed) once
// their cause is fixed.
func Failed(stored []store.File, root string) []store.File {
	var out []store.File
	for _, f := range stored {
		if f.Failed && Under(root, f.Path) {
			out = append(out, f)
		}
	}
	return out
}

// Gone returns the files among stored that lie under root, are not valid
// and are not on disk now (onDisk reports whether a path is there): files
// a scan did not find, or a job found gone, and still absent. They are the
// files an operator may have the store forget once they left the library
// for good (store.Inventory.ForgetMissing). An empty file is not valid
// either, but it is on disk, so it is not gone; a file whose presence
// cannot be told (onDisk answers true on any doubt) is kept too.
func Gone(stored []store.File, root string, onDisk func(path string) bool) []store.File {
	var out []store.File
	for _, f := range stored {
		if !f.IsValid && Under(root, f.Path) && !onDisk(f.Path) {
			out = append(out, f)
		}
	}
	return out
}

// Stale returns the keys of the files among stored that this scan found
// on disk (Seen) and that another model set tagged: tagged, valid, not
// failed, with a tagged_version other than version, the current model
// set's (nom_version). They are the files the scan sends back to work
// (store.Inventory.Retag), so that a library is tagged again by new
// models, or by the models after a run with another analyzer. A file
// tagged without a version counts as tagged by another model set.
//
// Only files the walk found are sent back: one under a folder the scan
// could not read (Unread) stays as it is, as it stays valid — sent back,
// it would fail its job on the unreadable file. An empty version
// (unknown: the model files could not be read) gives nothing: a library
// is never sent back to work because a version could not be computed. A
// file that is not valid (missing, or empty) waits until a scan finds it
// again; a failed one until an operator retries it
// (store.Inventory.RetryFailed).
//
// It allocates nothing when no file is stale, the common case: every scan
// of a library tagged by the current models runs it over every stored
// file.
func (s Scan) Stale(stored []store.File, version string) []string {
	if version == "" {
		return nil
	}
	var out []string
	for i := range stored {
		f := &stored[i]
		if f.Tagged && f.IsValid && !f.Failed && f.TaggedVersion != version && s.Seen[f.Key] {
			out = append(out, f.Key)
		}
	}
	return out
}

// ScanRetry is the wait before the next scan after failures scans in a row
// failed (the store down or locked, the library's drive not mounted): 5 s,
// doubling up to 5 min, and never longer than the rescan interval (rescan
// <= 0: no periodic rescan, so a failed scan is still tried again). Without
// it a daemon whose first scan failed would keep an empty library until the
// next rescan, or for good.
func ScanRetry(failures int, rescan time.Duration) time.Duration {
	d := 5 * time.Second << min(max(failures-1, 0), 6)
	d = min(d, 5*time.Minute)
	if rescan > 0 {
		d = min(d, rescan)
	}
	return d
}

// Retaggable reports whether f is a file a retag may re-derive: tagged by
// version, the model set in use, valid and not failed. A file of another
// model set needs a full analysis (Stale), not a retag; an empty version
// (unknown) gives none.
func Retaggable(f store.File, version string) bool {
	return version != "" && f.Tagged && f.IsValid && !f.Failed && f.TaggedVersion == version
}
