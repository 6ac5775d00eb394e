package driver

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/nomarr/nomarr/adapters/sqlite"
	"github.com/nomarr/nomarr/core/node"
	"github.com/nomarr/nomarr/core/store"
	"github.com/nomarr/nomarr/internal/eventually"
)

// TestStopEndsWhenTheDatabaseFileWasMoved: the SQLite file of a running
// main process is moved away, noticed (its writes fail as store.ErrDetached)
// and moved back; a graceful stop then ends by itself, without a second
// signal, leaving the worker's claim to its lease (Abandoned names it and
// says why). It used to wait for the release for good, the store refusing
// every write of this process even with the same file back.
func TestStopEndsWhenTheDatabaseFileWasMoved(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "nomarr.db")
	st, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	cfg := node.DefaultConfig("i:1:1", "n", 1)
	cfg.Monitor.CheckInterval = 50 * time.Millisecond
	m, err := NewMain(cfg, st, nil, slog.New(slog.NewTextHandler(io.Discard, nil)), nil,
		func(string, uint64) (string, []string) { return "sleep", []string{"60"} }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	ran := make(chan error, 1)
	go func() { ran <- m.Run(runCtx, nil) }()
	waitAllRunning(t, m, 1)
	const comp = "worker:discovery:0"
	wid := m.View().Workers[0].Info.WorkerID
	if _, err := st.UpsertFiles(ctx, []store.File{{Key: "f0", Path: "/m/f0.mp3", Size: 1, MtimeMs: 1, NeedsTagging: true, IsValid: true}}); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if _, err := st.Claim(ctx, store.Claim{FileKey: "f0", WorkerID: wid, ClaimedAt: now, LeaseUntil: now.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}

	moved := filepath.Join(dir, "moved.db")
	if err := os.Rename(path, moved); err != nil {
		t.Fatal(err)
	}
	// The store looks at its path at most once a second, and announces
	// nothing: its writes are tried until one fails as detached.
	eventually.True(t, 10*time.Second, "a write with the file moved away to fail with store.ErrDetached", func() bool {
		err := st.SetMeta(ctx, "probe", "1")
		if err != nil && !store.IsDetached(err) {
			t.Fatalf("a write with the file moved away: %v, want store.ErrDetached", err)
		}
		return err != nil
	})
	if err := os.Rename(moved, path); err != nil {
		t.Fatal(err)
	}

	cancel() // the first signal: SIGTERM ends the sleep; its release fails
	select {
	case err := <-ran:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		w, _ := m.Node.WaitingOnStore()
		t.Fatalf("the stop still waits on a detached store after 20 s, for %+v", w)
	}
	if m.Node.Sup.Forced() {
		t.Fatal("the stop counts as forced")
	}
	a := m.Abandoned()
	if !slices.Equal(a.Releases, []string{comp}) || a.Detached == "" {
		t.Fatalf("Abandoned = %+v, want the release of %s, given up on a detached store", a, comp)
	}
	// The claim is still in the file back at the path, and the claim
	// cleanup of the next process returns it once its lease expires.
	again, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if gone, err := again.CleanupClaims(ctx, now.Add(2*time.Minute)); err != nil || len(gone) != 1 || gone[0].WorkerID != wid {
		t.Fatalf("claims cleaned up past their lease: %+v %v, want the one of %s", gone, err, wid)
	}
}
