package library

import (
	"os"
	"path/filepath"
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
