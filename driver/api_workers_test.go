package driver

// What the API says of workers as they run, die and are reset, and the
// errors it hands the HTTP layer, from a running Main.

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nomarr/nomarr/adapters/httpapi"
	"github.com/nomarr/nomarr/adapters/memstore"
	"github.com/nomarr/nomarr/adapters/sqlite"
	"github.com/nomarr/nomarr/core/event"
	"github.com/nomarr/nomarr/core/node"
	"github.com/nomarr/nomarr/core/store"
	"github.com/nomarr/nomarr/internal/eventually"
)

// frameLine is a frame of worker:discovery:0 working on file a, for a
// shell worker to print on fd 3.
const frameLine = `HEALTH|{"component_id":"worker:discovery:0","status":"healthy","phase":"processing","current_job":"a","progress":1}`

// sqliteWithA is a SQLite store (the API reads it beside the loop) holding
// file a.
func sqliteWithA(t *testing.T) store.Store {
	t.Helper()
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "nomarr.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if _, err := st.UpsertFiles(context.Background(), []store.File{{Key: "a", Path: "/music/a.mp3", Size: 1, MtimeMs: 1, NeedsTagging: true, IsValid: true}}); err != nil {
		t.Fatal(err)
	}
	return st
}

// infoUntil polls /api/v1/info's answer until ok holds for its only worker.
func infoUntil(t *testing.T, api *API, ok func(httpapi.WorkerInfo) bool) httpapi.WorkerInfo {
	t.Helper()
	var workers []httpapi.WorkerInfo
	defer func() {
		if t.Failed() {
			t.Logf("last info: %+v", workers)
		}
	}()
	eventually.True(t, 10*time.Second, "such a worker in /api/v1/info", func() bool {
		info, err := api.Info(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		workers = info.Workers
		return len(workers) == 1 && ok(workers[0])
	})
	return workers[0]
}

// A framing worker shows its process, phase and job, the job's path (a
// key says nothing to a person) and the age of its last frame.
func TestInfoOfAFramingWorker(t *testing.T) {
	l := runLoop(t, sqliteWithA(t), "while :; do printf '%s\\n' '"+frameLine+"' >&3; sleep 0.05; done", nil, nil)
	defer func() {
		l.cancel()
		l.end(t, 20*time.Second)
	}()
	api := &API{Main: l.m}
	w := infoUntil(t, api, func(w httpapi.WorkerInfo) bool { return w.CurrentJob == "a" })
	if w.PID <= 0 || w.Phase != "processing" || w.CurrentPath != "/music/a.mp3" || w.LastFrameAgeMs < 0 || w.LastFrameAgeMs > 5000 {
		t.Fatalf("framing worker = %+v; want its pid, phase processing, a's path and its last frame's age", w)
	}
}

// A worker that died and waits for its restart has no process, phase or
// job (its claim is released); the API says when it restarts and how often
// it has.
func TestInfoOfADeadWorker(t *testing.T) {
	l := runLoop(t, sqliteWithA(t), "printf '%s\\n' '"+frameLine+"' >&3; sleep 0.2; exit 1", nil, func(c *node.Config) {
		c.Supervisor.Restart.BackoffBase = time.Minute
		c.Supervisor.Restart.BackoffMax = time.Minute
	})
	defer func() {
		l.cancel()
		l.end(t, 20*time.Second)
	}()
	api := &API{Main: l.m}
	w := infoUntil(t, api, func(w httpapi.WorkerInfo) bool { return !w.RestartAt.IsZero() })
	if w.PID != 0 || w.Phase != "" || w.CurrentJob != "" || w.CurrentPath != "" || w.Restarts != 1 {
		t.Fatalf("dead worker = %+v; want no pid, phase or job, 1 restart", w)
	}
}

// A reset names an unknown worker "not found"; a reset of every worker
// resets the failed ones.
func TestResetThroughTheAPI(t *testing.T) {
	l := runLoop(t, memstore.New(1), "exit 1", nil, func(c *node.Config) {
		c.Supervisor.Restart.BackoffBase, c.Supervisor.Restart.BackoffMax = 10*time.Millisecond, 10*time.Millisecond
		c.Supervisor.Restart.WindowLimit = 1
	})
	defer func() {
		l.cancel()
		l.end(t, 20*time.Second)
	}()
	api := &API{Main: l.m}
	if err := api.Reset(context.Background(), "worker:nope"); !errors.Is(err, httpapi.ErrNotFound) {
		t.Fatalf("reset of an unknown worker = %v, want not found", err)
	}
	l.sink.wait(t, event.Failed, nil, 10*time.Second)
	if err := api.Reset(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	l.sink.wait(t, event.Reset, func(e event.Event) bool { return e.Component == "worker:discovery:0" }, time.Second)
}

// Before the loop's first step /api/v1/info waits for it (here it never
// comes), and gives up with its caller's context as "unavailable".
func TestInfoBeforeTheLoopRuns(t *testing.T) {
	m, err := NewMain(node.DefaultConfig("i:1:1", "n", 1), memstore.New(1), nil, nil, nil,
		func(string, uint64) (string, []string) { return "true", nil }, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := (&API{Main: m}).Info(ctx); !errors.Is(err, httpapi.ErrUnavailable) {
		t.Fatalf("Info before the loop ran = %v, want unavailable", err)
	}
}

// failingHistory fails its history reads.
type failingHistory struct{ *memstore.Store }

func (failingHistory) RecentHistory(context.Context, int) ([]store.HistoryRow, error) {
	return nil, errors.New("database is locked")
}

// A pause the store refuses, and history a store cannot read (or does not
// keep), are "unavailable" (503), not the API's own failure.
func TestAPIStoreRefusalsUnavailable(t *testing.T) {
	st := &lockedMeta{Store: memstore.New(1)}
	st.locked.Store(true)
	m, err := NewMain(node.DefaultConfig("i:1:1", "n", 1), st, nil, nil, nil,
		func(string, uint64) (string, []string) { return "true", nil }, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := (&API{Main: m}).SetEnabled(context.Background(), false); !errors.Is(err, httpapi.ErrUnavailable) {
		t.Errorf("pause refused by the store = %v, want unavailable", err)
	}
	if _, err := (&API{Main: m}).History(context.Background(), 10); !errors.Is(err, httpapi.ErrUnavailable) {
		t.Errorf("history of a store that keeps none = %v, want unavailable", err)
	}
	m.Store = failingHistory{memstore.New(1)}
	if _, err := (&API{Main: m}).History(context.Background(), 10); !errors.Is(err, httpapi.ErrUnavailable) {
		t.Errorf("history read failing = %v, want unavailable", err)
	}
}

// The GPU probe's result is recorded in the node's gpu:health (the
// workers' preflight reads it), and the probe ends with the loop.
func TestProbeGPURecordsAndEndsWithTheLoop(t *testing.T) {
	st := memstore.New(1)
	l := runLoop(t, st, "exec sleep 60", nil, nil)
	probed := make(chan struct{})
	go func() {
		l.m.ProbeGPU(context.Background(), 10*time.Millisecond, func(context.Context) (bool, string) { return false, "no device" })
		close(probed)
	}()
	eventually.True(t, 10*time.Second, "the probe's result in "+store.GPUHealthKey("n"), func() bool {
		var v string
		if err := l.m.Do(context.Background(), func(context.Context, time.Time) { v, _ = st.MetaValue(store.GPUHealthKey("n")) }); err != nil {
			t.Fatal(err)
		}
		return strings.Contains(v, "no device")
	})
	l.cancel()
	l.end(t, 20*time.Second)
	select {
	case <-probed:
	case <-time.After(5 * time.Second):
		t.Fatal("ProbeGPU still runs after the loop ended")
	}
}
