package library

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestScanFindsAudioOnly(t *testing.T) {
	dir := t.TempDir()
	must := func(p string, size int) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, make([]byte, size), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	must(filepath.Join(dir, "a", "one.MP3"), 10)
	must(filepath.Join(dir, "a", "two.flac"), 10)
	must(filepath.Join(dir, "b", "cover.jpg"), 10)
	must(filepath.Join(dir, "b", "empty.opus"), 0)
	files, skipped, err := Scan(dir)
	if err != nil || len(skipped) != 0 {
		t.Fatal(err, skipped)
	}
	if len(files) != 3 {
		t.Fatalf("found %d files: %+v", len(files), files)
	}
	for _, f := range files {
		if f.Key != Key(f.Path) || len(f.Key) != 32 || !f.NeedsTagging {
			t.Errorf("bad document %+v", f)
		}
		if filepath.Base(f.Path) == "empty.opus" && f.IsValid {
			t.Errorf("an empty file is valid: %+v", f)
		}
	}
	if _, _, err := Scan(filepath.Join(dir, "missing")); err == nil {
		t.Error("scanning a missing directory succeeded")
	}
}

// A root that is a file: an audio file is a library of one track; any
// other file is an error saying so, not an empty library.
func TestScanRootThatIsAFile(t *testing.T) {
	dir := t.TempDir()
	song, readme := filepath.Join(dir, "song.mp3"), filepath.Join(dir, "README.md")
	for _, p := range []string{song, readme} {
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	files, _, err := Scan(song)
	if err != nil || len(files) != 1 || files[0].Path != song {
		t.Fatalf("Scan(song.mp3) = %+v, %v; want the one file", files, err)
	}
	if _, _, err := Scan(readme); err == nil || !strings.Contains(err.Error(), "not a folder") {
		t.Fatalf("Scan(README.md) error = %v, want one saying it is not a folder", err)
	}
}

// Hidden entries are not library files: the tag writer's temporary copy
// of a track (which keeps the audio extension; a scan during a write or
// after a crash used to add it as a track), macOS resource forks, hidden
// folders. A hidden library root is still scanned.
func TestScanSkipsHiddenEntries(t *testing.T) {
	root := filepath.Join(t.TempDir(), ".music")
	for _, p := range []string{
		"a/one.flac",
		"a/.nomarr-tmp-123456.flac",
		"a/._one.flac",
		".Trash/old.mp3",
		"b/.hidden/deep.opus",
	} {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	files, skipped, err := Scan(root)
	if err != nil || len(skipped) != 0 {
		t.Fatal(err, skipped)
	}
	if len(files) != 1 || files[0].Path != filepath.Join(root, "a", "one.flac") {
		t.Fatalf("found %+v, want only a/one.flac", files)
	}
}

// A library root that is a symbolic link (/music -> /mnt/nas/music) is
// scanned through its target, its files named under the link as given.
// Before, the walk stopped at the link and found nothing, silently.
func TestScanThroughSymlinkedRoot(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "nas", "music")
	if err := os.MkdirAll(filepath.Join(target, "album"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(target, "album", "one.flac"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "music")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	for _, root := range []string{link, link + "/"} {
		files, skipped, err := Scan(root)
		if err != nil || len(skipped) != 0 {
			t.Fatal(err, skipped)
		}
		want := filepath.Join(link, "album", "one.flac")
		if len(files) != 1 || files[0].Path != want || files[0].Key != Key(want) {
			t.Fatalf("scan of %s found %+v, want %s", root, files, want)
		}
	}
}
