package driver

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/nomarr/nomarr/adapters/httpapi"
	"github.com/nomarr/nomarr/adapters/memstore"
	"github.com/nomarr/nomarr/core/inventory"
	"github.com/nomarr/nomarr/core/node"
	"github.com/nomarr/nomarr/core/store"
)

// A paused cluster whose store goes down while the library counts are
// still served from their last read: the pause flag cannot be read, so
// /api/v1/info carries store_error with the flag and the counts unknown,
// and /metrics says nomarr_store_up 0 without nomarr_workers_enabled, never
// "store up, workers enabled".
func TestInfoStoreDownWhileCountsCached(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewMock()
	mem := memstore.New(1)
	if _, err := mem.UpsertFiles(ctx, []store.File{{Key: "a", NeedsTagging: true, IsValid: true}}); err != nil {
		t.Fatal(err)
	}
	if err := mem.SetMeta(ctx, store.MetaWorkerEnabled, "false"); err != nil {
		t.Fatal(err)
	}
	st := &slowCounts{Store: mem, clk: clk, cost: time.Second} // paced: the next read is due 20 s on
	m, err := NewMain(node.DefaultConfig("i:1:1", "n", 1), st, clk, slog.New(slog.NewTextHandler(io.Discard, nil)), nil,
		func(string, uint64) (string, []string) { return "true", nil }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	m.publish(clk.Now()) // the loop's first step, without the loop
	api := &API{Main: m, StoreID: "sqlite:/x.db"}
	for range 2 { // the first read does not pace (it may be the opening); the second does
		info, err := api.Info(ctx)
		if err != nil || info.StoreError != "" || info.WorkerEnabled || info.Library.Total != 1 {
			t.Fatalf("Info with the store up = %+v, %v; want paused, 1 file", info, err)
		}
	}

	mem.SetFault(memstore.Down)
	info, err := api.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if calls := st.calls; calls != 2 {
		t.Fatalf("%d count reads, want 2 (the third from the cache, as the scenario needs)", calls)
	}
	if !strings.Contains(info.StoreError, memstore.ErrDown.Error()) || info.WorkerEnabled || info.Library != (store.Counts{}) {
		t.Fatalf("Info with the store down = %+v; want store_error, the flag and counts unknown (zeros)", info)
	}
	if len(info.Workers) != 1 {
		t.Errorf("workers while the store is down = %+v, want them shown", info.Workers)
	}

	srv, err := httpapi.New(api, httpapi.Options{Addr: "127.0.0.1:0", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	req.Host = "127.0.0.1"
	rec := httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, req)
	body := rec.Body.String()
	if rec.Code != http.StatusOK || !strings.Contains(body, "\nnomarr_store_up 0\n") || strings.Contains(body, "\nnomarr_workers_enabled ") {
		t.Fatalf("/metrics with the store down: %d, want nomarr_store_up 0 and no nomarr_workers_enabled:\n%s", rec.Code, body)
	}
}

// /api/v1/info shows the hosts' model-set records as this host (API.Node)
// sees them at the main loop's clock: which host holds its re-tagging
// back, and until when; none when no host recorded one.
func TestInfoShowsModelSets(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewMock()
	clk.Set(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC))
	mem := memstore.New(1)
	m, err := NewMain(node.DefaultConfig("i:1:1", "n1", 1), mem, clk, slog.New(slog.NewTextHandler(io.Discard, nil)), nil,
		func(string, uint64) (string, []string) { return "true", nil }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	m.publish(clk.Now())
	api := &API{Main: m, StoreID: "sqlite:/x.db", Node: "n1"}
	if info, err := api.Info(ctx); err != nil || info.ModelSets != nil || info.Node != "n1" {
		t.Fatalf("Info without a record: model sets %+v, node %q, %v; want none, n1 (status names the daemon's node)", info.ModelSets, info.Node, err)
	}
	n2At := clk.Now().Add(-50 * time.Minute)
	sets := inventory.ModelSets{}.Record("n1", "0123456789ab", clk.Now().Add(-time.Minute)).Record("n2", "fedcba987654", n2At)
	if err := mem.SetMeta(ctx, inventory.ModelSetsKey, sets.Encode()); err != nil {
		t.Fatal(err)
	}
	info, err := api.Info(ctx)
	if err != nil || info.StoreError != "" {
		t.Fatalf("Info: %v %s", err, info.StoreError)
	}
	ms := info.ModelSets
	if ms == nil || ms.Node != "n1" || ms.Version != "0123456789ab" || !ms.HeldBack || len(ms.HeldBy) != 1 || ms.HeldBy[0] != "n2" ||
		!ms.HeldUntil.Equal(n2At.Add(inventory.ModelSetFresh)) || len(ms.Hosts) != 2 || ms.Hosts[1].AgeMs != (50*time.Minute).Milliseconds() {
		t.Errorf("model sets %+v; want n1 held back by n2 until %v", ms, n2At.Add(inventory.ModelSetFresh))
	}
}
