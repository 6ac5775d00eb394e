package tagwrite

import (
	"encoding/json"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestWriteIfSameRefusesOtherContent guards the content stamp: tags
// computed from the content a caller stamped (StampOf) must not be written
// into another content at the same path. WriteIfSame fails with
// ErrModified and leaves the file as it is when the file was replaced
// (another inode), rewritten in place with the same bytes (modification and
// change time move), or rewritten with its modification time set back (the
// change time moves); the stamp of an unchanged file, through JSON and a
// symbolic link, lets the write through.
func TestWriteIfSameRefusesOtherContent(t *testing.T) {
	needTools(t)
	dir := t.TempDir()
	src := makeFile(t, dir, "mp3")
	orig, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	other, err := os.ReadFile(makeFile(t, dir, "flac"))
	if err != nil {
		t.Fatal(err)
	}
	tags := map[string]string{"nom_version": "v1", "mood-strict": "happy"}
	old := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)

	for _, c := range []struct {
		name   string
		change func(t *testing.T, path string)
	}{
		{"replaced by another file", func(t *testing.T, path string) {
			tmp := path + ".new"
			if err := os.WriteFile(tmp, other, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, path); err != nil {
				t.Fatal(err)
			}
		}},
		{"same bytes rewritten in place", func(t *testing.T, path string) {
			if err := os.WriteFile(path, orig, 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{"same bytes rewritten, modification time set back", func(t *testing.T, path string) {
			if err := os.WriteFile(path, orig, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(path, old, old); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "x.mp3")
			if err := os.WriteFile(path, orig, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(path, old, old); err != nil {
				t.Fatal(err)
			}
			stamp, err := StampOf(path)
			if err != nil {
				t.Fatal(err)
			}
			// Past the timestamp granularity of the stamped state.
			time.Sleep(50 * time.Millisecond)
			c.change(t, path)
			before := sha(t, path)
			err = WriteIfSame(path, tags, nil, stamp)
			if !errors.Is(err, ErrModified) {
				t.Fatalf("WriteIfSame = %v, want ErrModified", err)
			}
			if sha(t, path) != before {
				t.Error("the file changed")
			}
			noTemps(t, filepath.Dir(path))
		})
	}

	t.Run("unchanged", func(t *testing.T) {
		sub := t.TempDir()
		path := filepath.Join(sub, "x.mp3")
		if err := os.WriteFile(path, orig, 0o644); err != nil {
			t.Fatal(err)
		}
		link := filepath.Join(sub, "link.mp3")
		if err := os.Symlink("x.mp3", link); err != nil {
			t.Fatal(err)
		}
		stamp, err := StampOf(link)
		if err != nil {
			t.Fatal(err)
		}
		if direct, _ := StampOf(path); direct != stamp {
			t.Fatalf("stamp through the link %+v, of the file %+v", stamp, direct)
		}
		b, err := json.Marshal(stamp)
		if err != nil {
			t.Fatal(err)
		}
		var kept Stamp
		if err := json.Unmarshal(b, &kept); err != nil || kept != stamp {
			t.Fatalf("JSON round trip %s: %+v, %v", b, kept, err)
		}
		if err := WriteIfSame(link, tags, nil, kept); err != nil {
			t.Fatalf("WriteIfSame = %v", err)
		}
		if got, err := Read(path); err != nil || !maps.Equal(got, tags) {
			t.Errorf("Read = %v, %v; want %v", got, err, tags)
		}
	})
}

// The device is left out of Same: a checkpoint stamped on one NFS client,
// or before a drive was remounted, names the same file by its inode and
// times under another device number. Anything else that differs is
// another content.
func TestStampSameLeavesOutTheDevice(t *testing.T) {
	s := Stamp{Dev: 2049, Ino: 77, Size: 1000, MtimeNs: 5, CtimeNs: 6}
	other := s
	other.Dev = 48
	if !s.Same(other) {
		t.Error("a stamp under another device number is not the same content")
	}
	for name, change := range map[string]func(*Stamp){
		"inode": func(x *Stamp) { x.Ino++ }, "size": func(x *Stamp) { x.Size++ },
		"mtime": func(x *Stamp) { x.MtimeNs++ }, "ctime": func(x *Stamp) { x.CtimeNs++ },
	} {
		x := s
		change(&x)
		if s.Same(x) {
			t.Errorf("another %s is the same content", name)
		}
	}
}
