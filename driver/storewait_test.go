package driver

// How a stop that waits on the store is reported, and what a forced stop
// that never took effect leaves behind.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/nomarr/nomarr/adapters/memstore"
	"github.com/nomarr/nomarr/adapters/process"
	"github.com/nomarr/nomarr/core/node"
	"github.com/nomarr/nomarr/core/store"
	"github.com/nomarr/nomarr/core/supervisor"
	"github.com/nomarr/nomarr/internal/eventually"
	"github.com/nomarr/nomarr/internal/syncbuf"
)

// waitingStop brings m's node, without its loop, to a stop that waits on
// the store alone: its one worker ("true") exited and the store refuses
// the release of its claims.
func waitingStop(t *testing.T, m *Main, clk *clock.Mock) {
	t.Helper()
	ctx := context.Background()
	m.Node.Start(ctx, clk.Now())
	for timeout := time.After(10 * time.Second); ; {
		select {
		case ev := <-m.events:
			m.handle(ctx, ev)
			if ev.Kind != process.Exited {
				continue
			}
		case <-timeout:
			t.Fatal("the worker did not exit")
		}
		break
	}
	m.Spawner.Wait()
	m.Node.Stop(clk.Now())
	if w, ok := m.Node.WaitingOnStore(); !ok || len(w.Releases) != 1 {
		t.Fatalf("WaitingOnStore = %+v, %v; want the worker's release", w, ok)
	}
}

// A stop that waits on the store is reported when the wait begins, then
// at most every StoreWaitLogEvery, with how long it has waited; through
// OnStoreWait when set, else as a WARN line.
func TestStoreWaitReportedWhenItBeginsThenEvery30s(t *testing.T) {
	for _, hook := range []bool{true, false} {
		t.Run(fmt.Sprintf("OnStoreWait %v", hook), func(t *testing.T) {
			clk := clock.NewMock()
			logs := &syncbuf.Buffer{}
			m, err := NewMain(node.DefaultConfig("i:1:1", "n", 1), &lockedReleases{Store: memstore.New(1)}, clk,
				slog.New(slog.NewTextHandler(logs, nil)), nil, func(string, uint64) (string, []string) { return "true", nil }, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			var waited []time.Duration
			if hook {
				m.OnStoreWait = func(w supervisor.StoreWait, d time.Duration) { waited = append(waited, d) }
			}
			waitingStop(t, m, clk)
			t0 := clk.Now()
			for _, d := range []time.Duration{0, 10 * time.Second, 29 * time.Second, 35 * time.Second, 40 * time.Second, 66 * time.Second} {
				m.noteStoreWait(t0.Add(d))
			}
			warns := strings.Count(logs.String(), "waiting for the store")
			if !hook {
				if warns != 3 || !strings.Contains(logs.String(), "claim_releases=1") {
					t.Fatalf("%d WARN lines, want 3 (at 0, 35 and 66 s) naming the release:\n%s", warns, logs.String())
				}
				return
			}
			want := []time.Duration{0, 35 * time.Second, 66 * time.Second}
			if fmt.Sprint(waited) != fmt.Sprint(want) {
				t.Fatalf("OnStoreWait with waited %v, want %v", waited, want)
			}
			if warns != 0 {
				t.Fatalf("WARN lines beside OnStoreWait:\n%s", logs.String())
			}
		})
	}
}

// heldHistory holds a history write, once held is set, until release is
// closed, whatever its context; then, as the store adapters do, it fails
// a write whose context has ended.
type heldHistory struct {
	*memstore.Store
	held    atomic.Bool
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

func (h *heldHistory) AppendHistory(ctx context.Context, rows []store.HistoryRow) error {
	if h.held.Load() {
		h.once.Do(func() { close(h.entered) })
		<-h.release
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("append history: %w", err)
	}
	return h.Store.AppendHistory(ctx, rows)
}

// A ForceStop whose caller gave up before the loop took it (the loop held
// in a store call) forced nothing: the loop's store calls work again once
// that call returns, rather than failing as cut short for good.
func TestForceStopGivenUpLeavesTheStoreCalls(t *testing.T) {
	st := &heldHistory{Store: memstore.New(1), entered: make(chan struct{}), release: make(chan struct{})}
	l := runLoop(t, st, "exec sleep 60", nil, func(c *node.Config) { c.Monitor.HistoryInterval = 50 * time.Millisecond })
	defer func() {
		l.cancel()
		l.end(t, 20*time.Second)
	}()
	waitAllRunning(t, l.m, 1)
	st.held.Store(true)
	select {
	case <-st.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the loop never wrote history")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := l.m.ForceStop(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("ForceStop while the loop is held = %v, want its caller's deadline", err)
	}
	st.held.Store(false)
	close(st.release)
	rows := func() int {
		n := 0
		if err := l.m.Do(context.Background(), func(context.Context, time.Time) { n = len(st.History()) }); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := rows()
	eventually.True(t, 5*time.Second, "history written after the given-up ForceStop (the loop's store calls fail no more)",
		func() bool { return rows() > before })
}
