package config

import (
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// readWithin runs ReadFile(path) and fails the test if it has not returned
// within 3 s; unblock is then called so that the blocked call can end.
func readWithin(t *testing.T, path string, unblock func()) (map[string]string, error) {
	t.Helper()
	type result struct {
		m   map[string]string
		err error
	}
	done := make(chan result, 1)
	go func() {
		m, err := ReadFile(path)
		done <- result{m, err}
	}()
	select {
	case r := <-done:
		return r.m, r.err
	case <-time.After(3 * time.Second):
		if unblock != nil {
			unblock()
		}
		t.Fatalf("ReadFile(%s) had not returned after 3 s", path)
		return nil, nil
	}
}

// TestReadFileRefusesWhatIsNotARegularFile guards that --config naming a
// device, a FIFO or a directory, directly or through a symbolic link, is
// refused at once with an error naming the file: /dev/zero was read until
// memory ran out (about 160 MB/s), and a FIFO without a writer blocked the
// start for ever.
func TestReadFileRefusesWhatIsNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.yaml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	zeroLink := filepath.Join(dir, "zero.yaml")
	if err := os.Symlink("/dev/zero", zeroLink); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "sock.yaml")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	unblockFIFO := func() { // a writer lets a blocked open of the FIFO end; none blocks here
		if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	}
	for _, path := range []string{"/dev/zero", os.DevNull, fifo, dir, zeroLink, sock} {
		_, err := readWithin(t, path, unblockFIFO)
		if err == nil || !strings.Contains(err.Error(), "not a regular file") || !strings.Contains(err.Error(), path) {
			t.Errorf("ReadFile(%s) = %v, want an error naming the file and saying it is not a regular file", path, err)
		}
	}
}

// TestReadFileRefusesALargeFile guards that a config.yaml over MaxFileSize
// is refused with an error naming the file, and one of exactly MaxFileSize
// bytes is still read.
func TestReadFileRefusesALargeFile(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.yaml")
	body := "# " + strings.Repeat("x", 2<<20) + "\nworkers: 3\n"
	if err := os.WriteFile(big, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readWithin(t, big, nil); err == nil || !strings.Contains(err.Error(), "too large") || !strings.Contains(err.Error(), big) {
		t.Errorf("ReadFile of a %d-byte file = %v, want an error naming the file and saying it is too large", len(body), err)
	}
	edge := filepath.Join(dir, "edge.yaml")
	body = "workers: 3\n#"
	body += strings.Repeat("x", MaxFileSize-len(body)-1) + "\n"
	if err := os.WriteFile(edge, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if m, err := readWithin(t, edge, nil); err != nil || m["workers"] != "3" {
		t.Errorf("ReadFile of a %d-byte file (MaxFileSize) = %q, %v; want workers 3", len(body), m, err)
	}
	link := filepath.Join(dir, "link.yaml")
	if err := os.Symlink(edge, link); err != nil {
		t.Fatal(err)
	}
	if m, err := readWithin(t, link, nil); err != nil || m["workers"] != "3" {
		t.Errorf("ReadFile through a symbolic link to a regular file = %q, %v; want workers 3", m, err)
	}
}

// endless is a reader that never ends; it counts the bytes it handed out.
type endless struct{ n int64 }

func (e *endless) Read(p []byte) (int, error) {
	e.n += int64(len(p))
	return len(p), nil
}

// TestReadAtMostStopsAfterTheLimit guards that a file growing while it is
// read (past the size its status showed) is read no further than one byte
// over the limit.
func TestReadAtMostStopsAfterTheLimit(t *testing.T) {
	var r endless
	_, err := readAtMost(&r, "grow.yaml", 1000)
	if err == nil || !strings.Contains(err.Error(), "too large") || !strings.Contains(err.Error(), "grow.yaml") {
		t.Errorf("readAtMost of an endless reader: %v, want a too-large error naming the file", err)
	}
	if r.n > 1001 {
		t.Errorf("readAtMost(limit 1000) took %d bytes from the reader", r.n)
	}
	data, err := readAtMost(io.LimitReader(&r, 1000), "x", 1000)
	if err != nil || len(data) != 1000 {
		t.Errorf("readAtMost of exactly the limit: %d bytes, %v", len(data), err)
	}
}
