package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMissingAndForget: files a rescan no longer finds are listed by
// `nomarr missing` (an empty file, not valid but there, is not); `nomarr
// forget DIR` deletes from the store only those under DIR; a file that is
// back on disk is neither listed nor forgotten, and a forgotten file that
// comes back is scanned in as a new one.
func TestMissingAndForget(t *testing.T) {
	bin := nomarrBinary(t)
	lib, data := t.TempDir(), t.TempDir()
	paths := audioFiles(t, lib, "a/gone.mp3", "a/kept.mp3", "b/gone.mp3", "b/back.mp3")
	empty := filepath.Join(lib, "a", "empty.mp3")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	nomarr := cli(t, bin, data)
	nomarr(0, "scan", lib)
	for _, i := range []int{0, 2, 3} {
		if err := os.Remove(paths[i]); err != nil {
			t.Fatal(err)
		}
	}
	nomarr(0, "scan", lib)
	audioFiles(t, lib, "b/back.mp3") // back, not yet scanned

	lines := func(s string) []string { return strings.Fields(s) }
	out, errb := nomarr(0, "missing")
	if got := lines(out); len(got) != 2 || got[0] != paths[0] || got[1] != paths[2] {
		t.Errorf("missing = %q, want %s and %s", got, paths[0], paths[2])
	}
	if !strings.HasPrefix(errb, "2 files no longer on disk; once they left for good, `nomarr forget --data-dir "+data+"` deletes them") {
		t.Errorf("missing stderr: %s", errb)
	}
	if out, _ := nomarr(0, "missing", filepath.Join(lib, "b")); strings.TrimSpace(out) != paths[2] {
		t.Errorf("missing under b: %q", out)
	}

	out, _ = nomarr(0, "forget", filepath.Join(lib, "a"))
	if want := "1 file no longer on disk under " + filepath.Join(lib, "a") + " forgotten\n"; out != want {
		t.Errorf("forget a: %q, want %q", out, want)
	}
	if out, _ := nomarr(0, "missing"); strings.TrimSpace(out) != paths[2] {
		t.Errorf("missing after forgetting a: %q", out)
	}
	if out, _ := nomarr(0, "forget"); out != "1 file no longer on disk forgotten\n" {
		t.Errorf("forget: %q", out)
	}
	if out, errb := nomarr(0, "missing"); out != "" || !strings.HasPrefix(errb, "0 files no longer on disk\n") {
		t.Errorf("missing after forgetting everything: %q %q", out, errb)
	}
	// The forgotten file comes back: scanned in again, as a new one (beside
	// b/back.mp3, written again since it was marked missing: changed).
	audioFiles(t, lib, "a/gone.mp3")
	if out, _ := nomarr(0, "scan", lib); !strings.HasSuffix(out, ": 4 audio files (1 new, 1 changed, 2 unchanged)\n") {
		t.Errorf("scan after forget: %q", out)
	}
	if out, _ := nomarr(0, "missing"); out != "" {
		t.Errorf("missing after the scan: %q", out)
	}
	nomarr(2, "forget", "a", "b")
}
