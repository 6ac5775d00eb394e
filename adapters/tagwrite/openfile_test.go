package tagwrite

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestFIFORefusedWithoutBlocking guards against opening anything but a
// regular file: a FIFO named like a track (open(2) of a FIFO waits for a
// writer) must make Write, Read and Detect fail at once with an error
// wrapping ErrUnsupported, not block; a character device is refused too.
func TestFIFORefusedWithoutBlocking(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "x.flac")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	calls := map[string]func(string) error{
		"Write":  func(p string) error { return Write(p, map[string]string{"nom_version": "x"}) },
		"Read":   func(p string) error { _, err := Read(p); return err },
		"Detect": func(p string) error { _, err := Detect(p); return err },
	}
	for _, path := range []string{fifo, os.DevNull} {
		for name, call := range calls {
			done := make(chan error, 1)
			go func() { done <- call(path) }()
			select {
			case err := <-done:
				if !errors.Is(err, ErrUnsupported) {
					t.Errorf("%s(%s) = %v, want ErrUnsupported", name, path, err)
				}
			case <-time.After(3 * time.Second):
				// Give the blocked open a writer so that the test can end.
				if f, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
					f.Close()
				}
				t.Fatalf("%s(%s) blocked for 3 s", name, path)
			}
		}
	}
}
