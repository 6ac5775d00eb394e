package driver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/nomarr/nomarr/adapters/memstore"
	"github.com/nomarr/nomarr/core/node"
)

// lockedMeta refuses meta writes while locked, as SQLite does while another
// process holds its write lock; reads still answer.
type lockedMeta struct {
	*memstore.Store
	locked atomic.Bool
}

func (l *lockedMeta) SetMeta(ctx context.Context, key, value string) error {
	if l.locked.Load() {
		return errors.New("set meta: database is locked")
	}
	return l.Store.SetMeta(ctx, key, value)
}

// While the main process's store writes fail and its reads do not, the API
// says since when and why (store_writes_failing), beside the counts it
// could read, and counts the failed calls by operation; the next write the
// store takes clears it, the counts stay.
func TestInfoShowsFailingStoreWrites(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewMock()
	clk.Set(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	st := &lockedMeta{Store: memstore.New(1)}
	m, err := NewMain(node.DefaultConfig("i:1:1", "n", 1), st, clk, slog.New(slog.NewTextHandler(io.Discard, nil)), nil,
		func(string, uint64) (string, []string) { return "true", nil }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	m.publish(clk.Now())
	api := &API{Main: m, StoreID: "sqlite:/x.db"}
	info, err := api.Info(ctx)
	if err != nil || info.StoreWritesFailing != nil || info.StoreErrors != nil {
		t.Fatalf("Info before any failure = %+v, %v", info, err)
	}

	st.locked.Store(true)
	since := clk.Now()
	for range 2 {
		if err := m.Node.SetEnabled(ctx, false); err == nil {
			t.Fatal("pause written with the store locked")
		}
		clk.Add(5 * time.Second)
	}
	info, err = api.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	f := info.StoreWritesFailing
	if f == nil || !f.Since.Equal(since) || f.Op != "set_meta" || !strings.Contains(f.Error, "database is locked") {
		t.Fatalf("store_writes_failing = %+v, want since %s, set_meta, the lock's error", f, since)
	}
	if info.StoreError != "" || !info.WorkerEnabled {
		t.Fatalf("reads answered, yet store_error %q, enabled %v", info.StoreError, info.WorkerEnabled)
	}
	if info.StoreErrors["set_meta"] != 2 || len(info.StoreErrors) != 1 {
		t.Fatalf("store_errors = %v, want set_meta: 2", info.StoreErrors)
	}

	st.locked.Store(false)
	if err := m.Node.SetEnabled(ctx, true); err != nil {
		t.Fatal(err)
	}
	info, _ = api.Info(ctx)
	if info.StoreWritesFailing != nil || info.StoreErrors["set_meta"] != 2 {
		t.Fatalf("after a write taken: store_writes_failing %+v, store_errors %v", info.StoreWritesFailing, info.StoreErrors)
	}
}

// hangingMeta holds every meta write until the call's context ends, as a
// store that waits for its write lock does, and fails it with the
// context's error.
type hangingMeta struct{ *memstore.Store }

func (h hangingMeta) SetMeta(ctx context.Context, key, value string) error {
	<-ctx.Done()
	return fmt.Errorf("set meta: %w", ctx.Err())
}

// A write that fails because its caller's context ended (an API client
// that hung up during a pause, or whose own deadline passed) is no store
// fault: nothing is counted and store_writes_failing stays unset. One cut
// short by the main process's own bound on its store calls (the store too
// slow to answer) is one.
func TestCallerGivingUpIsNoStoreFault(t *testing.T) {
	m, err := NewMain(node.DefaultConfig("i:1:1", "n", 1), hangingMeta{memstore.New(1)}, clock.New(),
		slog.New(slog.NewTextHandler(io.Discard, nil)), nil, func(string, uint64) (string, []string) { return "true", nil }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	gone, hangUp := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, hangUp)
	if err := m.Node.SetEnabled(gone, false); err == nil {
		t.Fatal("pause written though the store never answered")
	}
	late, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := m.Node.SetEnabled(late, false); err == nil {
		t.Fatal("pause written though the store never answered")
	}
	if h := m.StoreHealth(); h.WritesFailing != nil || len(h.Errors) != 0 {
		t.Fatalf("a caller that gave up counted as a store fault: failing %+v, errors %v", h.WritesFailing, h.Errors)
	}

	m.calls.resumeFor(20 * time.Millisecond) // the main process's own bound (ForceStop's budget)
	if err := m.Node.SetEnabled(m.calls.current(), false); err == nil {
		t.Fatal("pause written though the store never answered")
	}
	h := m.StoreHealth()
	if h.WritesFailing == nil || h.WritesFailing.Op != "set_meta" || h.Errors["set_meta"] != 1 {
		t.Fatalf("a store too slow for the main process's bound not counted: failing %+v, errors %v", h.WritesFailing, h.Errors)
	}
}
