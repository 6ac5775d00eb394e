package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nomarr/nomarr/adapters/library"
	"github.com/nomarr/nomarr/adapters/sqlite"
	"github.com/nomarr/nomarr/core/store"
)

// A symbolic link to a track, below the library root, is scanned as its
// target: (a) a target replaced by new content is work again (the scan
// used to record the link's own size and mtime, which never change, so the
// new content was never tagged); (b) once the target is deleted the link
// is marked missing and stays so, and `nomarr missing` and `forget` take
// it as gone (the scan used to make it valid again at every rescan, and a
// job find it gone, for ever; their on-disk check saw the link).
func TestScanSymlinkedTrack(t *testing.T) {
	base := t.TempDir()
	lib, outside := filepath.Join(base, "music"), filepath.Join(base, "downloads")
	for _, d := range []string{lib, outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	db := "sqlite:" + filepath.Join(base, "nomarr.db")
	target, link := filepath.Join(outside, "track.flac"), filepath.Join(lib, "track.flac")
	write := func(size int, at time.Time) {
		t.Helper()
		if err := os.WriteFile(target, make([]byte, size), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(target, at, at); err != nil {
			t.Fatal(err)
		}
	}
	nomarr := func(want string, args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		if code := run(append(args, "--db", db), &out, &errb); code != 0 {
			t.Fatalf("nomarr %s: exit %d: %s", strings.Join(args, " "), code, errb.String())
		}
		if !strings.Contains(out.String(), want) {
			t.Fatalf("nomarr %s printed %q, want %q", strings.Join(args, " "), out.String(), want)
		}
		return out.String()
	}
	stored := func() store.File {
		t.Helper()
		st, err := sqlite.Open(strings.TrimPrefix(db, "sqlite:"))
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		f, err := st.File(context.Background(), library.Key(link))
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	first := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	write(100, first)
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	nomarr("1 audio file (1 new)\n", "scan", lib)
	if f := stored(); f.Size != 100 || f.MtimeMs != first.UnixMilli() {
		t.Fatalf("stored %+v, want the target's size 100 and mtime %d", f, first.UnixMilli())
	}

	// (a) New content behind the link.
	second := first.Add(time.Hour)
	write(200, second)
	nomarr("1 audio file (1 changed)\n", "scan", lib)
	if f := stored(); f.Size != 200 || f.MtimeMs != second.UnixMilli() || !f.NeedsTagging {
		t.Fatalf("after the target's new content: stored %+v, want size 200, mtime %d", f, second.UnixMilli())
	}

	// (b) The target deleted: a dangling link is no file.
	if err := os.Remove(target); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(lib, "other.flac"), []byte("x"), 0o644); err != nil {
		t.Fatal(err) // a scan that finds nothing marks nothing
	}
	nomarr("1 audio file (1 new), 1 known file no longer there (marked missing)", "scan", lib)
	nomarr("1 audio file (1 unchanged)\n", "scan", lib)
	if f := stored(); f.IsValid {
		t.Fatalf("a dangling link is valid after a rescan: %+v", f)
	}
	if out := nomarr(link, "missing"); strings.TrimSpace(out) != link {
		t.Fatalf("nomarr missing: %q, want %s", out, link)
	}
	nomarr("1 file no longer on disk forgotten", "forget")
}
