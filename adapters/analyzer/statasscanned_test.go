package analyzer

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nomarr/nomarr/adapters/library"
)

// A job that wrote through a symbolic link records what the next scan
// reads: the target's size and mtime (the file it replaced), not the
// link's own, or the scan takes the job's write for a change (and a scan
// that read the link's own missed every new content of the target).
func TestStatAsScannedFollowsLinks(t *testing.T) {
	dir := t.TempDir()
	target, link := filepath.Join(dir, "track.flac"), filepath.Join(dir, "link.flac")
	if err := os.WriteFile(target, make([]byte, 4321), 0o644); err != nil {
		t.Fatal(err)
	}
	when := time.Date(2021, 5, 6, 7, 8, 9, 0, time.UTC)
	if err := os.Chtimes(target, when, when); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	got := statAsScanned(link)
	if got == nil || got.Size != 4321 || got.MtimeMs != when.UnixMilli() {
		t.Fatalf("statAsScanned(link) = %+v, want the target's size 4321 and mtime %d", got, when.UnixMilli())
	}
	files, _, err := library.Scan(dir)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, f := range files {
		if f.Path == link {
			found = true
			if f.Size != got.Size || f.MtimeMs != got.MtimeMs {
				t.Fatalf("the scan records %+v, the job %+v", f, *got)
			}
		}
	}
	if !found {
		t.Fatalf("the scan did not find the link %s: %+v", link, files)
	}
	if err := os.Remove(target); err != nil {
		t.Fatal(err)
	}
	if got := statAsScanned(link); got != nil {
		t.Fatalf("statAsScanned(dangling link) = %+v, want nil", *got)
	}
}
