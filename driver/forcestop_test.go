package driver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/nomarr/nomarr/adapters/memstore"
	"github.com/nomarr/nomarr/core/node"
	"github.com/nomarr/nomarr/core/store"
	"github.com/nomarr/nomarr/core/supervisor"
	"github.com/nomarr/nomarr/internal/eventually"
)

// lockedReleases fails every claim release after waiting out a busy
// timeout, as SQLite does while another process holds its write lock, and
// gives the wait up when its context ends, as the adapter does.
type lockedReleases struct {
	*memstore.Store
	busy time.Duration
}

func (l *lockedReleases) ReleaseWorker(ctx context.Context, _ string, _ store.Death, _ *store.Crash) ([]store.Released, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(l.busy):
		return nil, errors.New("database is locked")
	}
}

// waitAllRunning waits until the loop's view shows n workers, all running.
func waitAllRunning(t *testing.T, m *Main, n int) {
	t.Helper()
	eventually.True(t, 10*time.Second, fmt.Sprintf("the %d workers all running in the loop's view", n), func() bool {
		v := m.View()
		return v != nil && len(v.Workers) == n && !slices.ContainsFunc(v.Workers, func(w WorkerView) bool { return !w.Info.Running })
	})
}

// TestForceStopCutsTheStoreWaitShort: a stop whose only worker is gone
// but whose claim release the store keeps refusing (each try waiting 5 s)
// is reported through OnStoreWait; ForceStop then takes effect at once,
// not after the store call under way, and Run returns with the release
// (and the node name's hand-back) given up.
func TestForceStopCutsTheStoreWaitShort(t *testing.T) {
	st := &lockedReleases{Store: memstore.New(1), busy: 5 * time.Second}
	cfg := node.DefaultConfig("i:1:1", "n", 1)
	cfg.Monitor.CheckInterval = 50 * time.Millisecond
	m, err := NewMain(cfg, st, nil, slog.New(slog.NewTextHandler(io.Discard, nil)), nil,
		func(string, uint64) (string, []string) { return "sleep", []string{"60"} }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	waits := make(chan supervisor.StoreWait, 16)
	m.OnStoreWait = func(w supervisor.StoreWait, _ time.Duration) { waits <- w }
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ran := make(chan error, 1)
	go func() { ran <- m.Run(ctx, nil) }()
	waitAllRunning(t, m, 1)
	cancel() // the first signal: SIGTERM ends the sleep; its release waits on the store
	select {
	case w := <-waits:
		if !slices.Equal(w.Releases, []string{"worker:discovery:0"}) {
			t.Fatalf("OnStoreWait(%+v), want the release of worker:discovery:0", w)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the stop never reported waiting on the store")
	}
	start := time.Now()
	if err := m.ForceStop(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-ran:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not end after the forced stop")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("the forced stop took %s: it waited for the store call under way (5 s)", d)
	}
	a := m.Abandoned()
	if !slices.Equal(a.Releases, []string{"worker:discovery:0"}) || !a.Name {
		t.Errorf("Abandoned = %+v, want the release of worker:discovery:0 and the node name", a)
	}
	if err := m.ForceStop(context.Background()); err != nil {
		t.Errorf("a second ForceStop: %v, want nothing done", err)
	}
}
