package sqlite

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nomarr/nomarr/core/store"
)

// corruptible writes a store of 10,000 files (about 1 MB, 240 pages) at
// path and closes it, its WAL checkpointed into the file.
func corruptible(t *testing.T, path string) []byte {
	t.Helper()
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		var files []store.File
		for j := range 500 {
			files = append(files, mkf(fmt.Sprintf("lib/%07d", i*500+j)))
		}
		if _, err := s.UpsertFiles(bg, files); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// garbage overwrites n bytes of b from off with a pattern no SQLite page
// holds.
func garbage(b []byte, off, n int) []byte {
	b = append([]byte(nil), b...)
	for i := off; i < off+n && i < len(b); i++ {
		b[i] = byte(i*7 + 13)
	}
	return b
}

func wantCorrupt(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, store.ErrCorrupt) || !store.IsCorrupt(err) {
		t.Fatalf("%s = %v, want store.ErrCorrupt", what, err)
	}
	if errors.Is(err, ErrWrongDatabase) {
		t.Errorf("%s = %v: a damaged store taken for another program's", what, err)
	}
	if msg := err.Error(); !strings.Contains(msg, "backup") || !strings.Contains(msg, ".recover | sqlite3 new.db") {
		t.Errorf("%s = %q: does not say how to repair it", what, msg)
	}
}

func TestOpenRefusesCorruptFile(t *testing.T) {
	dir := t.TempDir()
	data := corruptible(t, filepath.Join(dir, "good.db"))
	const page = 4096
	for _, c := range []struct {
		name string
		file []byte
		opts []Option
	}{
		{"truncated to half", data[:len(data)/2], nil},
		{"truncated to 3/4", data[:len(data)*3/4], nil},
		{"truncated to one page", data[:page], nil},
		{"truncated inside the header", data[:50], nil},
		{"truncated inside the magic", data[:10], nil},
		{"garbage after the header", garbage(data, 100, page-100), nil},
		{"garbage in the header", garbage(data, 16, 84), nil},
		{"garbage pages", garbage(data, len(data)/2/page*page, 3*page), []Option{WithIntegrityCheck()}},
		{"garbage page 2", garbage(data, page, page), []Option{WithIntegrityCheck()}},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "nomarr.db")
			if err := os.WriteFile(path, c.file, 0o644); err != nil {
				t.Fatal(err)
			}
			s, err := Open(path, c.opts...)
			if err == nil {
				s.Close()
			}
			wantCorrupt(t, "Open", err)
			if !strings.Contains(err.Error(), path) {
				t.Errorf("Open = %q: does not name the file", err)
			}
		})
	}
	// The check passes a sound file.
	s, err := Open(filepath.Join(dir, "good.db"), WithIntegrityCheck())
	if err != nil {
		t.Fatalf("Open of a sound file with the integrity check = %v", err)
	}
	s.Close()
}

// Damage that appears under a running store (a disk, a copy over it) is
// reported as corruption by the operations that meet it, not as an outage.
func TestCorruptionUnderRunningStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nomarr.db")
	data := corruptible(t, path)
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.ListFiles(bg, "", 10); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	const page = 4096
	if _, err := f.WriteAt(garbage(data, 0, len(data))[page:], page); err != nil {
		t.Fatal(err)
	}
	f.Close()
	_, err = s.ListFiles(bg, "", 100_000)
	wantCorrupt(t, "ListFiles", err)
	_, err = s.Discover(bg, t0, "", 8)
	wantCorrupt(t, "Discover", err)
	_, err = s.UpsertFiles(bg, []store.File{mkf("lib/new")})
	wantCorrupt(t, "UpsertFiles", err)
	_, err = s.Claim(bg, claim("lib/0000001", "i/w0", t0, 60e9))
	wantCorrupt(t, "Claim", err)
	if !store.IsFault(err) {
		t.Errorf("IsFault(%v) = false", err)
	}
}

func TestNotSQLiteIsWrongDatabaseNotCorrupt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(path, []byte(strings.Repeat("SQLite notes, not a database\n", 200)), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Open(path)
	if !errors.Is(err, ErrWrongDatabase) || errors.Is(err, store.ErrCorrupt) {
		t.Fatalf("Open of a text file = %v, want ErrWrongDatabase only", err)
	}
}
