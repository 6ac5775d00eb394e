package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nomarr/nomarr/adapters/library"
	"github.com/nomarr/nomarr/adapters/sqlite"
	"github.com/nomarr/nomarr/core/store"
)

// A library scanned through a symlinked root (/music -> /mnt/nas/music)
// stores its paths under the link. `nomarr failed DIR` and `nomarr retry
// DIR` find its files given the link, with or without a slash, or the
// link's target (the same folder).
func TestFailedUnderSymlinkTarget(t *testing.T) {
	base := t.TempDir()
	real := filepath.Join(base, "nas", "music")
	if err := os.MkdirAll(filepath.Join(real, "album"), 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(base, "music")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(base, "nomarr.db")
	st, err := sqlite.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	p := filepath.Join(link, "album", "bad.mp3") // as a scan of the link names it
	if _, err := st.UpsertFiles(ctx, []store.File{{Key: library.Key(p), Path: p, Size: 1, MtimeMs: 1, NeedsTagging: true, IsValid: true}}); err != nil {
		t.Fatal(err)
	}
	if err := st.Quarantine(ctx, library.Key(p), "crashed a worker"); err != nil {
		t.Fatal(err)
	}
	st.Close()
	for _, dir := range []string{link, link + "/", filepath.Join(real, "album")} {
		var out, errb bytes.Buffer
		code := runFailed([]string{dir, "--db", "sqlite:" + db, "--data-dir", base}, &out, &errb)
		if code != 0 || !strings.Contains(out.String(), p) {
			t.Errorf("nomarr failed %s: exit %d, out %q, err %q; want %s listed (the same folder)", dir, code, out.String(), errb.String(), p)
		}
	}
}

// A failed file that a later scan did not find is listed as such: a retry
// makes it work only once a scan finds it again.
func TestFailedListsMissingFiles(t *testing.T) {
	base := t.TempDir()
	db := filepath.Join(base, "nomarr.db")
	st, err := sqlite.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	p := filepath.Join(base, "gone.mp3")
	k := library.Key(p)
	if _, err := st.UpsertFiles(ctx, []store.File{{Key: k, Path: p, Size: 1, MtimeMs: 1, NeedsTagging: true, IsValid: true}}); err != nil {
		t.Fatal(err)
	}
	if err := st.Quarantine(ctx, k, "crashed a worker"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.MarkMissing(ctx, []string{k}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	var out, errb bytes.Buffer
	if code := runFailed([]string{"--db", "sqlite:" + db, "--data-dir", base}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if want := p + "\tcrashed a worker (not found at the last scan)\n"; out.String() != want {
		t.Errorf("failed = %q, want %q", out.String(), want)
	}
}
