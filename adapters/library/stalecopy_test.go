package library

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/nomarr/nomarr/adapters/tagwrite/tempcopy"
	"github.com/nomarr/nomarr/internal/killedwriter"
)

// writerEnv makes the test binary a tag writer that makes its temporary
// copy (tempcopy.Create, as tagwrite.Write does) in the folder it names
// and is killed holding it (killedwriter).
const writerEnv = "NOMARR_LIBRARY_WRITER"

func TestMain(m *testing.M) {
	killedwriter.Child(writerEnv, func(dir string) error {
		c, err := tempcopy.Create(dir, ".flac")
		if err != nil {
			return err
		}
		c.Write(make([]byte, 1<<20))
		killedwriter.Hold(c.Name())
		return nil
	})
	os.Exit(m.Run())
}

func present(t *testing.T, path string) bool {
	t.Helper()
	_, err := os.Lstat(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return err == nil
}

// A scan removes the full-size copy a writer killed mid-write left beside
// the audio, and leaves a live writer's copy and a user's file that merely
// looks like one.
func TestScanRemovesStaleCopies(t *testing.T) {
	root := t.TempDir()
	album := filepath.Join(root, "album")
	if err := os.Mkdir(album, 0o755); err != nil {
		t.Fatal(err)
	}
	song := filepath.Join(album, "song.flac")
	if err := os.WriteFile(song, make([]byte, 100), 0o644); err != nil {
		t.Fatal(err)
	}
	killed, stale := killedwriter.Start(t, writerEnv, album)
	_, live := killedwriter.Start(t, writerEnv, album)
	lookalikes := []string{
		filepath.Join(album, ".nomarr-tmp-notes.flac"),
		filepath.Join(album, ".nomarr-tmp-12.flac.bak"),
	}
	for _, p := range lookalikes {
		if err := os.WriteFile(p, []byte("the user's"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	killedwriter.Kill(t, killed)

	files, unread, err := Scan(root)
	if err != nil || len(unread) != 0 {
		t.Fatal(err, unread)
	}
	if len(files) != 1 || files[0].Path != song {
		t.Errorf("scan found %+v, want only %s", files, song)
	}
	if present(t, stale) {
		t.Errorf("the killed writer's copy %s is still there", stale)
	}
	if !present(t, live) {
		t.Errorf("the live writer's copy %s was removed", live)
	}
	for _, p := range append(lookalikes, song) {
		if !present(t, p) {
			t.Errorf("%s was removed", p)
		}
	}
}
