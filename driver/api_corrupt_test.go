package driver

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/nomarr/nomarr/adapters/httpapi"
	"github.com/nomarr/nomarr/adapters/memstore"
	"github.com/nomarr/nomarr/core/node"
	"github.com/nomarr/nomarr/core/store"
)

// damagedMeta answers its meta reads and writes with a corrupt database's
// error while damaged, as SQLite does for a page it finds malformed; the
// library counts still answer (their pages are whole).
type damagedMeta struct {
	*memstore.Store
	damaged atomic.Bool
}

func (d *damagedMeta) GetMeta(ctx context.Context, key string) (string, bool, error) {
	if d.damaged.Load() {
		return "", false, fmt.Errorf("get meta: %w", store.ErrCorrupt)
	}
	return d.Store.GetMeta(ctx, key)
}

func (d *damagedMeta) SetMeta(ctx context.Context, key, value string) error {
	if d.damaged.Load() {
		return fmt.Errorf("set meta: %w", store.ErrCorrupt)
	}
	return d.Store.SetMeta(ctx, key, value)
}

// A database found damaged under a running main process is reported as
// such, not as an outage that passes: /api/v1/info carries store_corrupt
// and /metrics nomarr_store_corrupt 1 and nomarr_store_up 0, and both
// stay after the reads answer again (they read pages the damage missed).
func TestInfoReportsADamagedStore(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewMock()
	clk.Set(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	st := &damagedMeta{Store: memstore.New(1)}
	m, err := NewMain(node.DefaultConfig("i:1:1", "n", 1), st, clk, slog.New(slog.NewTextHandler(io.Discard, nil)), nil,
		func(string, uint64) (string, []string) { return "true", nil }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	m.publish(clk.Now())
	api := &API{Main: m, StoreID: "sqlite:/x.db"}
	if info, err := api.Info(ctx); err != nil || info.StoreCorrupt != nil {
		t.Fatalf("Info of a whole store = %+v, %v", info, err)
	}
	srv, err := httpapi.New(api, httpapi.Options{Addr: "127.0.0.1:0", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	metrics := func() string {
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		req.Host = "127.0.0.1"
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, req)
		return rec.Body.String()
	}
	if body := metrics(); !strings.Contains(body, "\nnomarr_store_corrupt 0\n") {
		t.Fatalf("/metrics of a whole store, want nomarr_store_corrupt 0:\n%s", body)
	}

	st.damaged.Store(true)
	info, err := api.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if c := info.StoreCorrupt; c == nil || !strings.Contains(c.Error, store.ErrCorrupt.Error()) || !c.Since.Equal(clk.Now()) {
		t.Fatalf("Info of a damaged store: store_corrupt %+v, want the damage and since when", c)
	}
	st.damaged.Store(false)
	clk.Add(time.Minute)
	if info, _ := api.Info(ctx); info.StoreCorrupt == nil {
		t.Fatal("store_corrupt cleared by reads that answered again")
	}
	if body := metrics(); !strings.Contains(body, "\nnomarr_store_corrupt 1\n") || !strings.Contains(body, "\nnomarr_store_up 0\n") {
		t.Fatalf("/metrics after the damage, want nomarr_store_corrupt 1 and nomarr_store_up 0:\n%s", body)
	}
}

// A node write that finds the database damaged sets store_corrupt as well.
func TestInfoReportsDamageFoundByTheNode(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewMock()
	st := &damagedMeta{Store: memstore.New(1)}
	m, err := NewMain(node.DefaultConfig("i:1:1", "n", 1), st, clk, slog.New(slog.NewTextHandler(io.Discard, nil)), nil,
		func(string, uint64) (string, []string) { return "true", nil }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	m.publish(clk.Now())
	st.damaged.Store(true)
	if err := m.Node.SetEnabled(ctx, false); err == nil {
		t.Fatal("pause written to a damaged store")
	}
	st.damaged.Store(false)
	info, err := (&API{Main: m}).Info(ctx)
	if err != nil || info.StoreCorrupt == nil || info.StoreCorrupt.Op != "set_meta" {
		t.Fatalf("Info after a damaged write = %+v, %v; want store_corrupt from set_meta", info.StoreCorrupt, err)
	}
}
