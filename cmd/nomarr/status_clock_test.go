package main

import (
	"bytes"
	"context"
	"github.com/nomarr/nomarr/internal/eventually"
	"io"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/nomarr/nomarr/adapters/httpapi"
	"github.com/nomarr/nomarr/adapters/sqlite"
	"github.com/nomarr/nomarr/core/node"
	"github.com/nomarr/nomarr/core/store"
	"github.com/nomarr/nomarr/driver"
)

// status prints a line when the daemon's clock is not ok against the store
// server's, and exits 1 when it is dangerous, as for store writes failing;
// an ok or unmeasured clock prints nothing.
func TestStatusShowsClockSkew(t *testing.T) {
	ms := func(v int64) *int64 { return &v }
	for _, c := range []struct {
		name     string
		off, unc *int64
		skew     string
		rc       int
		line     string
	}{
		{"dangerous", ms(12000), ms(1), "dangerous", 1, "clock skew dangerous: the daemon's clock is 12s behind the store server's (±1ms); " +
			"claim leases and node-name holds are judged by each host's clock: synchronise every host's clock with NTP\n"},
		{"warn", ms(-6500), ms(0), "warn", 0, "clock skew warn: the daemon's clock is 6.5s ahead of the store server's (±0s)"},
		{"unknown", ms(300), ms(4000), "unknown", 0, "clock skew unknown: the store server answered too slowly to tell (the daemon's clock 300ms behind the server's, ±4s)\n"},
		{"ok", ms(20), ms(1), "ok", 0, ""},
		{"not measured", nil, nil, "", 0, ""},
		{"dangerous, measured long ago", ms(12000), ms(1), "dangerous", 1, "12s behind the store server's (±1ms) [measured 17m0s ago: " +
			"the store server has not answered since]; claim leases"},
	} {
		t.Run(c.name, func(t *testing.T) {
			at := time.Now().Add(-time.Minute)
			if strings.Contains(c.name, "long ago") {
				at = time.Now().Add(-17 * time.Minute)
			}
			rc, out := statusOf(t, httpapi.Info{Instance: "h:1:2", Store: "arangodb://h/db", WorkerEnabled: true,
				Library: store.Counts{Total: 1, Tagged: 1}, ClockOffsetMs: c.off, ClockUncertaintyMs: c.unc, ClockSkew: c.skew, ClockMeasuredAt: &at})
			if rc != c.rc || (c.line != "" && !strings.Contains(out, c.line)) || (c.line == "" && strings.Contains(out, "clock")) {
				t.Errorf("exit %d, %q; want exit %d and %q", rc, out, c.rc, c.line)
			}
		})
	}
}

// skewedStore is a SQLite store given a server clock (which SQLite has
// not: its hosts share one machine) off the test's clock by skew.
type skewedStore struct {
	*sqlite.Store
	clk  clock.Clock
	skew time.Duration
}

func (s skewedStore) ServerTime(context.Context) (time.Time, error) {
	return s.clk.Now().Add(s.skew), nil
}

// A daemon whose store's server clock is 12 s ahead of its own (a 30 s
// lease: dangerous) says so through its API, and status prints it and
// exits 1; --json carries clock_offset_ms and clock_skew.
func TestStatusClockFromTheDaemon(t *testing.T) {
	clk := clock.NewMock()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "nomarr.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	st := skewedStore{Store: db, clk: clk, skew: 12 * time.Second}
	m, err := driver.NewMain(node.DefaultConfig("h:1:2", "h", 1), st, clk, slog.New(slog.DiscardHandler), nil,
		func(string, uint64) (string, []string) { return "true", nil }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go m.WatchClock(ctx, 30*time.Second)
	eventually.True(t, 5*time.Second, "a clock reading", func() bool {
		_, ok := m.ClockSkew()
		return ok
	})
	ran := make(chan error, 1)
	go func() { ran <- m.Run(ctx, nil) }() // the API's workers come from the loop's view
	defer func() { cancel(); <-ran }()
	api, err := httpapi.New(&driver.API{Main: m, StoreID: "arangodb://h/db"}, httpapi.Options{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(api.Handler())
	defer ts.Close()
	addr := strings.TrimPrefix(ts.URL, "http://")
	var out, errb bytes.Buffer
	rc := run([]string{"status", "--http-addr", addr, "--data-dir", t.TempDir()}, &out, &errb)
	if want := "clock skew dangerous: the daemon's clock is 12s behind the store server's (±0s)"; rc != 1 || !strings.Contains(out.String(), want) {
		t.Fatalf("status: exit %d, %q %q; want exit 1 and %q", rc, out.String(), errb.String(), want)
	}
	out.Reset()
	rc = run([]string{"status", "--json", "--http-addr", addr, "--data-dir", t.TempDir()}, &out, &errb)
	if rc != 1 || !strings.Contains(out.String(), `"clock_offset_ms": 12000`) || !strings.Contains(out.String(), `"clock_skew": "dangerous"`) {
		t.Fatalf("status --json: exit %d, %s; want exit 1, clock_offset_ms 12000, clock_skew dangerous", rc, out.String())
	}
}
