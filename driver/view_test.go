package driver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nomarr/nomarr/adapters/httpapi"
	"github.com/nomarr/nomarr/adapters/memstore"
	"github.com/nomarr/nomarr/core/health"
	"github.com/nomarr/nomarr/core/node"
	"github.com/nomarr/nomarr/core/store"
	"github.com/nomarr/nomarr/internal/eventually"
)

// blockingHistory holds every AppendHistory call until released, as a
// store whose write lock another process holds does.
type blockingHistory struct {
	*memstore.Store
	once    sync.Once
	blocked chan struct{} // closed when a call is held
	release chan struct{}
}

func (b *blockingHistory) AppendHistory(ctx context.Context, rows []store.HistoryRow) error {
	b.once.Do(func() { close(b.blocked) })
	<-b.release
	return b.Store.AppendHistory(ctx, rows)
}

// TestInfoAnswersWhileLoopHeldUp: while the main loop waits in a store
// call, /api/v1/info (and so /metrics) still answers at once, from the
// loop's last published view.
func TestInfoAnswersWhileLoopHeldUp(t *testing.T) {
	st := &blockingHistory{Store: memstore.New(1), blocked: make(chan struct{}), release: make(chan struct{})}
	cfg := node.DefaultConfig("i:1:1", "n", 1)
	cfg.Monitor.HistoryInterval = 50 * time.Millisecond
	m, err := NewMain(cfg, st, nil, slog.New(slog.NewTextHandler(io.Discard, nil)), nil,
		func(string, uint64) (string, []string) { return "sleep", []string{"60"} }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- m.Run(ctx, nil) }()
	select {
	case <-st.blocked:
	case <-time.After(10 * time.Second):
		t.Fatal("the loop never wrote history")
	}
	api := &API{Main: m}
	ictx, icancel := context.WithTimeout(context.Background(), time.Second)
	defer icancel()
	start := time.Now()
	info, err := api.Info(ictx)
	if err != nil || len(info.Workers) != 1 || info.Instance != "i:1:1" {
		t.Fatalf("Info while the loop is held up = %+v, %v (after %s)", info, err, time.Since(start))
	}
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Errorf("Info took %s while the loop was held up", d)
	}
	close(st.release)
	cancel()
	select {
	case <-ran:
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not end")
	}
}

// TestResetUnavailableWhileWaitingForName: a main process waiting for its
// node name (held by a main process elsewhere) answers a reset with
// "unavailable" (HTTP 503) and writes no restart state.
func TestResetUnavailableWhileWaitingForName(t *testing.T) {
	st := memstore.New(1)
	held := fmt.Sprintf(`{"instance":"n:other:1","until_ms":%d}`, time.Now().Add(time.Hour).UnixMilli())
	if err := st.SetMeta(context.Background(), node.NameKeyPrefix+"n", held); err != nil {
		t.Fatal(err)
	}
	m, err := NewMain(node.DefaultConfig("i:1:1", "n", 1), st, nil, slog.New(slog.NewTextHandler(io.Discard, nil)), nil,
		func(string, uint64) (string, []string) { return "sleep", []string{"60"} }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- m.Run(ctx, nil) }()
	api := &API{Main: m}
	err = api.Reset(context.Background(), "worker:discovery:0")
	if !errors.Is(err, httpapi.ErrUnavailable) || !strings.Contains(err.Error(), "waiting for its node name") {
		t.Errorf("reset while waiting for the name = %v, want unavailable", err)
	}
	if _, ok, _ := st.LoadRestart(context.Background(), "n/worker:discovery:0"); ok {
		t.Error("a reset while waiting for the name wrote restart state")
	}
	cancel()
	select {
	case <-ran:
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not end")
	}
}

// The published view carries the node's status of each worker: while the
// node cannot read its name because the store fails, its workers, which
// cannot be started, are unhealthy, not pending.
func TestViewShowsWorkersUnhealthyWhileTheNameCannotBeRead(t *testing.T) {
	st := memstore.New(1)
	st.SetFault(memstore.Down)
	l := runLoop(t, st, "exec sleep 60", nil, nil)
	defer func() {
		l.cancel()
		l.end(t, 20*time.Second)
	}()
	var v *View
	eventually.True(t, 10*time.Second, "a view with the worker published", func() bool {
		v = l.m.View()
		return v != nil && len(v.Workers) == 1
	})
	if s := v.Workers[0].Status; s != health.Unhealthy {
		t.Fatalf("worker status %q with the store down before the name was taken, want unhealthy", s)
	}
}
