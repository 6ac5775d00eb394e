package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nomarr/nomarr/adapters/library"
	"github.com/nomarr/nomarr/adapters/sqlite"
	"github.com/nomarr/nomarr/app"
	"github.com/nomarr/nomarr/core/inventory"
	"github.com/nomarr/nomarr/internal/unprivileged"
)

// TestScanMarksMissingAndBack: `nomarr scan` marks the known files that
// left the folder missing, makes them valid again when they come back
// unchanged, and marks nothing when the folder is empty (a drive that is
// not mounted); a sub-folder that cannot be read keeps only its own files
// from being marked. Its line counts the files found by what they were to
// the store: new, changed, back from missing, unchanged.
func TestScanMarksMissingAndBack(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(t.TempDir(), "nomarr.db")
	mtime := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	put := func(name string) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("not really audio, but scanned by name"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	scan := func(want string) {
		t.Helper()
		var out, errb bytes.Buffer
		if code := run([]string{"scan", dir, "--db", "sqlite:" + db}, &out, &errb); code != 0 {
			t.Fatalf("nomarr scan: exit %d: %s", code, errb.String())
		}
		if !strings.Contains(out.String(), want) {
			t.Fatalf("nomarr scan printed %q, want %q", out.String(), want)
		}
	}
	valid := func(name string) bool {
		t.Helper()
		st, err := sqlite.Open(db)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		f, err := st.File(context.Background(), library.Key(filepath.Join(dir, name)))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return f.IsValid
	}
	for _, n := range []string{"a.mp3", "b.flac", "sub/c.ogg"} {
		put(n)
	}
	scan("3 audio files (3 new)\n")

	if err := os.Remove(filepath.Join(dir, "b.flac")); err != nil {
		t.Fatal(err)
	}
	scan("2 audio files (2 unchanged), 1 known file no longer there (marked missing)")
	if valid("b.flac") || !valid("a.mp3") || !valid("sub/c.ogg") {
		t.Fatalf("after b.flac left: valid a %v, b %v, c %v", valid("a.mp3"), valid("b.flac"), valid("sub/c.ogg"))
	}

	put("b.flac") // back, unchanged
	scan("3 audio files (1 back from missing, 2 unchanged)\n")
	if !valid("b.flac") {
		t.Fatal("b.flac came back but is still marked missing")
	}
	later := mtime.Add(time.Minute) // b.flac edited
	if err := os.Chtimes(filepath.Join(dir, "b.flac"), later, later); err != nil {
		t.Fatal(err)
	}
	scan("3 audio files (1 changed, 2 unchanged)\n")
	put("b.flac")
	scan("3 audio files (1 changed, 2 unchanged)\n")

	// An unreadable sub-folder (an ext4 disk's lost+found, say) hides
	// c.ogg: c.ogg is not marked, but a.mp3, deleted elsewhere, is (before,
	// one unreadable folder kept every file of the library valid, for
	// good). Root reads every folder, so as root the whole test runs again
	// as nobody.
	if os.Geteuid() == 0 {
		unprivileged.Rerun(t, "^TestScanMarksMissingAndBack$")
	} else {
		if err := os.Chmod(filepath.Join(dir, "sub"), 0); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(filepath.Join(dir, "sub"), 0o755) }) // so TempDir can be removed
		if err := os.Remove(filepath.Join(dir, "a.mp3")); err != nil {
			t.Fatal(err)
		}
		scan("1 audio file (1 unchanged), 1 known file no longer there (marked missing)")
		if err := os.Chmod(filepath.Join(dir, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
		if !valid("sub/c.ogg") {
			t.Fatal("c.ogg marked missing while its folder could not be read")
		}
		if valid("a.mp3") {
			t.Fatal("a.mp3 left the disk but was not marked missing beside an unreadable folder")
		}
		put("a.mp3")
		scan("3 audio files (1 back from missing, 2 unchanged)\n")
	}

	// An empty folder (a drive not mounted): nothing is marked.
	for _, n := range []string{"a.mp3", "b.flac", "sub/c.ogg"} {
		if err := os.Remove(filepath.Join(dir, n)); err != nil {
			t.Fatal(err)
		}
	}
	scan("0 audio files\n")
	if !valid("a.mp3") || !valid("b.flac") || !valid("sub/c.ogg") {
		t.Fatal("files marked missing by a scan that found nothing")
	}
}

// A scan's summary (`nomarr scan`; `tag` says the same after "found N
// audio files in DIR") names the kinds of files found that occurred, and
// the `scanned library` log line of serve carries every count.
func TestScanSummary(t *testing.T) {
	r := app.ScanResult{Missing: 2, Kinds: inventory.Found{New: 12, Changed: 3, Back: 1, Unchanged: 1188}}
	for _, c := range []struct{ got, want string }{
		{scanSummary(r), "1204 audio files (12 new, 3 changed, 1 back from missing, 1188 unchanged), 2 known files no longer there (marked missing)"},
		{scanSummary(app.ScanResult{Kinds: inventory.Found{Back: 1}}), "1 audio file (1 back from missing)"},
		{scanSummary(app.ScanResult{Missing: 1, Kinds: inventory.Found{Changed: 2}}), "2 audio files (2 changed), 1 known file no longer there (marked missing)"},
		{scanSummary(app.ScanResult{}), "0 audio files"},
	} {
		if c.got != c.want {
			t.Errorf("summary %q, want %q", c.got, c.want)
		}
	}
	want := []any{"files", 1204, "new", 12, "changed", 3, "back", 1, "unchanged", 1188, "marked_missing", 2}
	if got := r.LogAttrs(); !slices.Equal(got, want) {
		t.Errorf("log attributes %v, want %v", got, want)
	}
}
