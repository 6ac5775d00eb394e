package tempcopy

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/nomarr/nomarr/internal/killedwriter"
)

// childEnv makes the test binary a writer that creates a copy in the
// folder it names and is killed holding it (killedwriter).
const childEnv = "NOMARR_TEMPCOPY_CHILD"

func TestMain(m *testing.M) {
	killedwriter.Child(childEnv, func(dir string) error {
		c, err := Create(dir, ".flac")
		if err != nil {
			return err
		}
		c.Write(make([]byte, 1<<16))
		killedwriter.Hold(c.Name())
		return nil
	})
	os.Exit(m.Run())
}

func exists(t *testing.T, path string) bool {
	t.Helper()
	_, err := os.Lstat(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return err == nil
}

func TestIs(t *testing.T) {
	for name, want := range map[string]bool{
		".nomarr-tmp-1234567890.flac":            true,
		".nomarr-tmp-42":                         true,
		".nomarr-tmp-7.m4a":                      true,
		".nomarr-tmp-.flac":                      false, // no digits
		".nomarr-tmp-notes.txt":                  false,
		".nomarr-tmp-12.flac.bak":                false,
		".nomarr-tmp-12 copy.flac":               false,
		".nomarr-tmp-12.":                        false,
		".nomarr-tmp-12.waytoolongextension":     false,
		"nomarr-tmp-12.flac":                     false,
		".nomarr-tmp-123456789012345678901.flac": false,
	} {
		if Is(name) != want {
			t.Errorf("Is(%q) = %v, want %v", name, !want, want)
		}
	}
}

// A copy left by a writer killed mid-write is stale and removed; one held
// by a live writer, in another process or in this one, is not.
func TestKilledWriterCopyRemovedLiveKept(t *testing.T) {
	dir := t.TempDir()
	killed, stale := killedwriter.Start(t, childEnv, dir)
	_, live := killedwriter.Start(t, childEnv, dir)
	own, err := Create(dir, ".mp3")
	if err != nil {
		t.Fatal(err)
	}
	defer own.Release()

	for _, p := range []string{stale, live, own.Name()} {
		if st, err := Check(p); st != Live || err != nil {
			t.Fatalf("Check(%s) = %v, %v before the kill, want live", p, st, err)
		}
	}
	killedwriter.Kill(t, killed)
	if st, err := Check(stale); st != Stale || err != nil {
		t.Fatalf("Check(killed writer's copy) = %v, %v, want stale", st, err)
	}
	removed, err := RemoveIn(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 1 || removed[0] != filepath.Base(stale) {
		t.Errorf("RemoveIn removed %v, want only %s", removed, filepath.Base(stale))
	}
	if exists(t, stale) {
		t.Error("the killed writer's copy is still there")
	}
	if !exists(t, live) || !exists(t, own.Name()) {
		t.Error("a live writer's copy was removed")
	}
	// Released (renamed or removed by its writer, or the writer gone), a
	// copy still there is stale.
	own.Release()
	if ok, err := Remove(own.Name()); !ok || err != nil {
		t.Errorf("Remove(released copy) = %v, %v", ok, err)
	}
}

// What merely looks like a copy is never removed: another name, a folder
// or a link named like one, the original a copy was renamed over.
func TestLookalikesKept(t *testing.T) {
	dir := t.TempDir()
	keep := map[string]func(string) error{
		".nomarr-tmp-notes.txt":   func(p string) error { return os.WriteFile(p, []byte("mine"), 0o644) },
		".nomarr-tmp-12.flac.bak": func(p string) error { return os.WriteFile(p, []byte("mine"), 0o644) },
		".nomarr-tmp-.flac":       func(p string) error { return os.WriteFile(p, []byte("mine"), 0o644) },
		".nomarr-tmp-99.flac":     func(p string) error { return os.Mkdir(p, 0o755) },
		".nomarr-tmp-98.flac":     func(p string) error { return os.Symlink("song.flac", p) },
		"song.flac":               func(p string) error { return os.WriteFile(p, []byte("audio"), 0o644) },
	}
	for name, mk := range keep {
		if err := mk(filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	removed, err := RemoveIn(dir)
	if err != nil || len(removed) != 0 {
		t.Fatalf("RemoveIn = %v, %v; want nothing removed", removed, err)
	}
	for name := range keep {
		if !exists(t, filepath.Join(dir, name)) {
			t.Errorf("%s removed", name)
		}
	}
	// A copy renamed over its original: the name is the original's now.
	c, err := Create(dir, ".flac")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(c.Name(), filepath.Join(dir, "song.flac")); err != nil {
		t.Fatal(err)
	}
	c.Release()
	if st, _ := Check(c.Name()); st != NotCopy {
		t.Errorf("Check(renamed copy's old name) = %v", st)
	}
	if !exists(t, filepath.Join(dir, "song.flac")) {
		t.Error("the original was removed")
	}
}
