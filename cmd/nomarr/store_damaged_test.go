package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nomarr/nomarr/adapters/sqlite"
	"github.com/nomarr/nomarr/core/store"
	"github.com/nomarr/nomarr/internal/syncbuf"
)

// damagedStores are SQLite store files a start must refuse: one cut to
// half its length (a copy interrupted, a full disk), one whose pages
// after the header are garbage, one with a page in the middle
// overwritten.
func damagedStores(t *testing.T) map[string]string {
	t.Helper()
	dir := t.TempDir()
	whole := filepath.Join(dir, "whole.db")
	st, err := sqlite.Open(whole)
	if err != nil {
		t.Fatal(err)
	}
	files := make([]store.File, 3000)
	for i := range files {
		files[i] = store.File{Key: fmt.Sprintf("k%05d", i), Path: fmt.Sprintf("/music/album %d/track.mp3", i), NeedsTagging: true, IsValid: true}
	}
	if _, err := st.UpsertFiles(context.Background(), files); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(whole)
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(dir, "cut.db")
	if err := os.WriteFile(cut, b[:len(b)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	garbage := filepath.Join(dir, "garbage.db")
	g := append([]byte("SQLite format 3\x00"), []byte(strings.Repeat("not a page of a database ", 2000))...)
	if err := os.WriteFile(garbage, g, 0o644); err != nil {
		t.Fatal(err)
	}
	// A page in the middle overwritten, header and schema whole: only a
	// check of every page (the start's integrity check) finds it before
	// a call reads that page.
	page := filepath.Join(dir, "page.db")
	p := append([]byte(nil), b...)
	at := len(p) / 2 / 4096 * 4096
	copy(p[at:at+4096], strings.Repeat("garbage!", 512))
	if err := os.WriteFile(page, p, 0o644); err != nil {
		t.Fatal(err)
	}
	return map[string]string{"cut short": cut, "garbage": garbage, "with a damaged page": page}
}

// TestStartRefusesADamagedStore: tag and serve on a damaged store file
// refuse to start (exit 2) with what to do — restore the file, or
// recover it with sqlite3 .recover — instead of failing the run later
// (tag) or retrying the open every 2 s for ever (serve).
func TestStartRefusesADamagedStore(t *testing.T) {
	bin := nomarrBinary(t)
	lib := t.TempDir()
	audioFiles(t, lib, "1.mp3")
	for name, db := range damagedStores(t) {
		for _, args := range [][]string{
			{"tag", lib, "--analyzer", "noop", "--workers", "1"},
			{"serve", "--analyzer", "noop", "--workers", "1", "--http-addr", "127.0.0.1:0"},
		} {
			t.Run(name+"/"+args[0], func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				var logs syncbuf.Buffer
				cmd := exec.CommandContext(ctx, bin, append(args, "--data-dir", t.TempDir(), "--db", "sqlite:"+db)...)
				cmd.Stdout, cmd.Stderr = &logs, &logs
				cmd.WaitDelay = 5 * time.Second // workers holding the output open must not hold the test
				_ = cmd.Run()
				out := logs.String()
				if code := cmd.ProcessState.ExitCode(); code != 2 {
					t.Fatalf("%s on a store %s: exit %d, want 2; log:\n%s", args[0], name, code, out)
				}
				for _, want := range []string{"nomarr " + args[0] + ": the store is damaged", "restore the file from a backup",
					"sqlite3 " + db + " .recover | sqlite3 new.db"} {
					if !strings.Contains(out, want) {
						t.Errorf("%s on a store %s: no %q in:\n%s", args[0], name, want, out)
					}
				}
				if strings.Contains(out, "retrying") || strings.Contains(out, "worker:discovery:0") {
					t.Errorf("%s retried the damaged store or started a worker:\n%s", args[0], out)
				}
			})
		}
	}
}
