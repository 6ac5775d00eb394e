package library

import (
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"
)

// Links below the root: a link to a regular file is an audio file with its
// target's size and mtime (the link's own never change when the target's
// content is replaced, so a new content was never tagged again); a
// dangling link, a link loop, a link to a folder named like audio, and a
// FIFO are no files (a dangling link used to be recorded valid on every
// scan while every job found it gone); links to folders are not followed.
func TestScanSymlinkedFiles(t *testing.T) {
	base := t.TempDir()
	root, outside := filepath.Join(base, "music"), filepath.Join(base, "elsewhere")
	for _, d := range []string{root, filepath.Join(outside, "album.flac")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	target := filepath.Join(outside, "track.flac")
	if err := os.WriteFile(target, make([]byte, 1234), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := os.Chtimes(target, old, old); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "album.flac", "in-linked-folder.flac"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, to := range map[string]string{
		"linked.flac":   target,
		"dangling.flac": filepath.Join(outside, "deleted.flac"),
		"loop.flac":     filepath.Join(root, "loop.flac"),
		"folder.flac":   filepath.Join(outside, "album.flac"),
		"folder":        filepath.Join(outside, "album.flac"),
	} {
		if err := os.Symlink(to, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(root, "fifo.mp3"), 0o644); err != nil {
		t.Fatal(err)
	}
	files, unread, err := Scan(root)
	if err != nil || len(unread) != 0 {
		t.Fatal(err, unread)
	}
	link := filepath.Join(root, "linked.flac")
	if len(files) != 1 || files[0].Path != link {
		t.Fatalf("found %+v, want only linked.flac", files)
	}
	if f := files[0]; f.Size != 1234 || f.MtimeMs != old.UnixMilli() || !f.IsValid {
		t.Fatalf("linked.flac recorded as %+v, want its target's size 1234 and mtime %d", f, old.UnixMilli())
	}
	var onDisk []string
	for _, n := range []string{"linked.flac", "dangling.flac", "loop.flac", "folder.flac", "fifo.mp3", "absent.flac"} {
		if OnDisk(filepath.Join(root, n)) {
			onDisk = append(onDisk, n)
		}
	}
	if !slices.Equal(onDisk, []string{"linked.flac"}) {
		t.Fatalf("on disk: %v, want only linked.flac", onDisk)
	}
}
