package library

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nomarr/nomarr/adapters/tagwrite/tempcopy"
)

// writerEnv makes the test binary a tag writer that makes its temporary
// copy (tempcopy.Create, as tagwrite.Write does) in the folder it names,
// prints its path and waits to be killed.
const writerEnv = "NOMARR_LIBRARY_WRITER"

func TestMain(m *testing.M) {
	if dir := os.Getenv(writerEnv); dir != "" {
		c, err := tempcopy.Create(dir, ".flac")
		if err != nil {
			fmt.Println("ERR", err)
			os.Exit(3)
		}
		c.Write(make([]byte, 1<<20))
		fmt.Println("TMP", c.Name())
		time.Sleep(time.Hour) // killed here
	}
	os.Exit(m.Run())
}

// startWriter starts a child writer in dir; it returns once the child
// holds its copy, with the copy's path.
func startWriter(t *testing.T, dir string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), writerEnv+"="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(out).ReadString('\n')
		line <- s
	}()
	select {
	case s := <-line:
		tmp, ok := strings.CutPrefix(strings.TrimSpace(s), "TMP ")
		if !ok {
			t.Fatalf("writer said %q", s)
		}
		return cmd, tmp
	case <-time.After(30 * time.Second):
		t.Fatal("writer did not make its copy")
	}
	return nil, ""
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
	killed, stale := startWriter(t, album)
	_, live := startWriter(t, album)
	lookalikes := []string{
		filepath.Join(album, ".nomarr-tmp-notes.flac"),
		filepath.Join(album, ".nomarr-tmp-12.flac.bak"),
	}
	for _, p := range lookalikes {
		if err := os.WriteFile(p, []byte("the user's"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := killed.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed.Wait()

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
