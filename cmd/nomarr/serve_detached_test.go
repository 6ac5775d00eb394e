package main

import (
	"encoding/json"
	"github.com/nomarr/nomarr/internal/eventually"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nomarr/nomarr/adapters/httpapi"
	"github.com/nomarr/nomarr/internal/syncbuf"
)

// TestServeStopsAfterTheDatabaseFileWasMoved replays an operator's day:
// `serve` runs, its SQLite file is moved away (the daemon's status says
// the file was deleted or replaced and its store writes fail) and moved
// back, and a single SIGTERM stops it: the stop does not wait for the
// claim release the store can never take (it used to log "waiting for the
// store" every 30 s until a second signal), and says what it left.
func TestServeStopsAfterTheDatabaseFileWasMoved(t *testing.T) {
	bin := nomarrBinary(t)
	data, addr := t.TempDir(), freeAddr(t)
	var logs syncbuf.Buffer
	cmd, done := startServe(t, bin, &logs, "--data-dir", data, "--http-addr", addr,
		"--frame-interval", "200ms", "--check-interval", "100ms")
	defer func() { _ = cmd.Process.Kill() }()
	info := func() (httpapi.Info, bool) {
		var in httpapi.Info
		resp, err := (&http.Client{Timeout: 2 * time.Second}).Get("http://" + addr + "/api/v1/info")
		if err != nil {
			return in, false
		}
		defer resp.Body.Close()
		return in, json.NewDecoder(resp.Body).Decode(&in) == nil
	}
	waitUntil := func(what string, ok func(httpapi.Info) bool) httpapi.Info {
		t.Helper()
		var last httpapi.Info
		eventually.True(t, 30*time.Second, what, func() bool {
			in, got := info()
			last = in
			return got && ok(in)
		})
		return last
	}
	waitUntil("a healthy worker", func(in httpapi.Info) bool {
		return len(in.Workers) == 1 && in.Workers[0].Status == "healthy"
	})

	db, moved := filepath.Join(data, "nomarr.db"), filepath.Join(data, "moved.db")
	if err := os.Rename(db, moved); err != nil {
		t.Fatal(err)
	}
	in := waitUntil("the file noticed gone", func(in httpapi.Info) bool {
		return strings.Contains(in.StoreError, "deleted or replaced")
	})
	t.Logf("store_error: %s", in.StoreError)
	if err := os.Rename(moved, db); err != nil {
		t.Fatal(err)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve: %v; log:\n%s", err, logs.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("serve still running 20 s after one SIGTERM; log:\n%s", logs.String())
	}
	out := logs.String()
	for _, want := range []string{"stopping: the store can take none of this process's writes",
		"stop without the store: claims not released"} {
		if !strings.Contains(out, want) {
			t.Errorf("the log lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "waiting for the store") {
		t.Errorf("the stop waited on the store:\n%s", out)
	}
}
