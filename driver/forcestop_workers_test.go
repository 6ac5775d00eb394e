package driver

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/nomarr/nomarr/adapters/memstore"
	"github.com/nomarr/nomarr/core/event"
	"github.com/nomarr/nomarr/core/node"
)

// A forced stop with workers still running (the usual case: they are
// finishing their jobs) ends within ForcedStoreBudget of the force, however
// many workers it kills: their release tries share that budget. Before,
// each killed worker's try waited the store's whole busy timeout, one after
// the other: 9 s for 3 workers and a 3 s busy store.
func TestForceStopBoundsTheKilledWorkersReleases(t *testing.T) {
	st := &lockedReleases{Store: memstore.New(1), busy: 3 * time.Second}
	cfg := node.DefaultConfig("i:1:1", "n", 3)
	cfg.Monitor.CheckInterval = 50 * time.Millisecond
	sink := &events{}
	m, err := NewMain(cfg, st, nil, slog.New(slog.NewTextHandler(io.Discard, nil)), sink,
		func(string, uint64) (string, []string) {
			return "sh", []string{"-c", `trap "" TERM; exec sleep 60`}
		}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ran := make(chan error, 1)
	go func() { ran <- m.Run(ctx, nil) }()
	waitAllRunning(t, m, 3)
	cancel() // first signal: SIGTERM, which the workers ignore (finishing a long job)
	sink.wait(t, event.Stop, nil, 10*time.Second)
	start := time.Now()
	if err := m.ForceStop(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ran:
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not end")
	}
	if d := time.Since(start); d > ForcedStoreBudget+time.Second {
		t.Errorf("forced stop with 3 running workers took %s, want at most ForcedStoreBudget (%s) and a little", d.Round(100*time.Millisecond), ForcedStoreBudget)
	}
}
