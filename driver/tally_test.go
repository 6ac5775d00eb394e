package driver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/nomarr/nomarr/adapters/httpapi"
	"github.com/nomarr/nomarr/adapters/sqlite"
	"github.com/nomarr/nomarr/core/event"
	"github.com/nomarr/nomarr/core/node"
	"github.com/nomarr/nomarr/core/store"
	"github.com/nomarr/nomarr/core/supervisor"
	"github.com/nomarr/nomarr/internal/eventually"
)

// shWorker is the command line of a worker written in sh: it sends health
// frames (phase idle) on fd 3 while run says so, each 50 ms. Its sleeps
// do not hold the frame pipe.
func shWorker(component, run string) (string, []string) {
	frame := fmt.Sprintf(`printf 'HEALTH|{"component_id":"%s","status":"ok","phase":"idle"}\n' >&3`, component)
	return "sh", []string{"-c", fmt.Sprintf("%s\n%s", frame, strings.ReplaceAll(run, "FRAME", frame))}
}

// TestMetricsCountKillsDeathsQuarantinesAndCleanups drives a real main
// process (real worker processes, SQLite) through a hang kill, two crashes
// of a worker holding the same file (the second quarantines it) and a
// claim cleanup that finds one lease expired and one claim whose file is
// no longer work; /metrics and /api/v1/info then count exactly these
// events, every other known label set at 0.
func TestMetricsCountKillsDeathsQuarantinesAndCleanups(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := sqlite.Open(filepath.Join(dir, "nomarr.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Now()
	files := []store.File{
		{Key: "p", Path: "/m/p.mp3", Size: 1, MtimeMs: 1, NeedsTagging: true, IsValid: true}, // the poison file
		{Key: "e", Path: "/m/e.mp3", Size: 1, MtimeMs: 1, NeedsTagging: true, IsValid: true}, // its lease ran out
		{Key: "q", Path: "/m/q.mp3", Size: 1, MtimeMs: 1, NeedsTagging: true, IsValid: true}, // quarantined elsewhere
	}
	if _, err := st.UpsertFiles(ctx, files); err != nil {
		t.Fatal(err)
	}
	const gone = "gone:1:1/worker:discovery:0" // a main process that died with its claims
	for _, c := range []store.Claim{
		{FileKey: "e", WorkerID: gone, ClaimedAt: now.Add(-2 * time.Minute), LeaseUntil: now.Add(-time.Minute)},
		{FileKey: "q", WorkerID: gone, ClaimedAt: now, LeaseUntil: now.Add(time.Hour)},
	} {
		if _, err := st.Claim(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Quarantine(ctx, "q", "crashed a worker"); err != nil { // by another host: not counted here
		t.Fatal(err)
	}

	const w0, w1 = "worker:discovery:0", "worker:discovery:1"
	cfg := node.DefaultConfig("i:1:1", "n", 2)
	cfg.Monitor.CheckInterval = 50 * time.Millisecond
	cfg.CleanupPeriod = 200 * time.Millisecond
	cfg.Supervisor.StaleAfter, cfg.Supervisor.HangAfter = time.Second, 2*time.Second
	cfg.Supervisor.LeaseTTL = 2 * time.Second
	command := func(component string, gen uint64) (string, []string) {
		switch {
		case component == w0 && gen == 1: // one frame, then no other: a hang
			return shWorker(component, "exec sleep 60")
		case component == w1 && gen <= 2: // frames until told to crash
			return shWorker(component, fmt.Sprintf("while [ ! -e %s ]; do FRAME; sleep 0.05 3>&-; done; exit 3",
				filepath.Join(dir, fmt.Sprintf("crash-%d", gen))))
		default:
			return shWorker(component, "while :; do FRAME; sleep 0.05 3>&-; done")
		}
	}
	m, err := NewMain(cfg, st, nil, slog.New(slog.NewTextHandler(io.Discard, nil)), nil, command, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- m.Run(runCtx, nil) }()
	defer func() {
		cancel()
		select {
		case <-ran:
		case <-time.After(20 * time.Second):
			t.Error("Run did not end")
		}
	}()

	api := &API{Main: m, StoreID: "sqlite:x"}
	srv, err := httpapi.New(api, httpapi.Options{Addr: "127.0.0.1:0", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	// Before any event, every known label set is there at 0.
	waitAllRunning(t, m, 2)
	zeroKills := map[string]float64{}
	for _, c := range []string{w0, w1} {
		for _, k := range supervisor.KillCauses() {
			zeroKills["cause="+k+",component="+c] = 0
		}
	}
	fams := scrapeMetrics(t, srv)
	wantMetric(t, fams, "nomarr_worker_kills_total", zeroKills)
	wantMetric(t, fams, "nomarr_worker_deaths_total", map[string]float64{"component=" + w0: 0, "component=" + w1: 0})
	wantMetric(t, fams, "nomarr_files_quarantined_total", map[string]float64{"": 0})
	wantMetric(t, fams, "nomarr_claims_released_total", map[string]float64{"cause=worker_died": 0, "cause=lease_expired": 0, "cause=not_work": 0})

	// w1 crashes twice while it holds p: the second crash quarantines p.
	for gen := uint64(1); gen <= 2; gen++ {
		in := viewUntil(t, m, fmt.Sprintf("%s gen %d running", w1, gen), func(v *View, _ Tally) bool {
			return v.Workers[1].Info.Running && v.Workers[1].Info.Gen == gen
		}).Workers[1].Info
		if _, err := st.Claim(ctx, store.Claim{FileKey: "p", WorkerID: in.WorkerID, ClaimedAt: time.Now(), LeaseUntil: time.Now().Add(time.Minute)}); err != nil {
			t.Fatalf("claim of p for gen %d: %v", gen, err)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("crash-%d", gen)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		viewUntil(t, m, fmt.Sprintf("the crash of %s gen %d", w1, gen), func(_ *View, tl Tally) bool { return tl.Deaths[w1] == int64(gen) })
	}
	// Every event has come, and both workers run again, framing.
	viewUntil(t, m, "the hang kill, the cleanups and the restarts", func(v *View, tl Tally) bool {
		return tl.Kills[w0][supervisor.KillHang] == 1 && tl.Released[node.CleanupLeaseExpired] == 1 && tl.Released[node.CleanupNotWork] == 1 &&
			tl.Quarantined == 1 && v.Workers[0].Info.Running && v.Workers[0].Info.Gen == 2 && v.Workers[1].Info.Running && v.Workers[1].Info.Gen == 3
	})
	if f, err := st.File(ctx, "p"); err != nil || !f.Failed || f.CrashCount != 2 {
		t.Fatalf("p after two crashes: %+v, %v; want quarantined", f, err)
	}

	kills := zeroKills
	kills["cause=hang,component="+w0] = 1
	fams = scrapeMetrics(t, srv)
	wantMetric(t, fams, "nomarr_worker_kills_total", kills)
	wantMetric(t, fams, "nomarr_worker_deaths_total", map[string]float64{"component=" + w0: 1, "component=" + w1: 2})
	wantMetric(t, fams, "nomarr_files_quarantined_total", map[string]float64{"": 1})
	wantMetric(t, fams, "nomarr_claims_released_total", map[string]float64{"cause=worker_died": 2, "cause=lease_expired": 1, "cause=not_work": 1})

	// /api/v1/info shows the same counts.
	var info struct {
		FilesQuarantined int64            `json:"files_quarantined"`
		ClaimsReleased   map[string]int64 `json:"claims_released"`
		Workers          []struct {
			Kills  map[string]int64 `json:"kills"`
			Deaths int64            `json:"deaths"`
		} `json:"workers"`
	}
	body := get(t, srv, "/api/v1/info")
	if err := json.Unmarshal(body, &info); err != nil {
		t.Fatal(err)
	}
	if info.FilesQuarantined != 1 || fmt.Sprint(info.ClaimsReleased) != "map[lease_expired:1 not_work:1 worker_died:2]" ||
		len(info.Workers) != 2 || info.Workers[0].Deaths != 1 || info.Workers[1].Deaths != 2 ||
		info.Workers[0].Kills["hang"] != 1 || len(info.Workers[0].Kills) != len(supervisor.KillCauses()) || info.Workers[1].Kills["hang"] != 0 {
		t.Fatalf("/api/v1/info counts: %s", body)
	}
}

// viewUntil polls the loop's view and the tally until ok holds (10 s at
// most) and returns the view; a failure shows the last tally.
func viewUntil(t *testing.T, m *Main, what string, ok func(*View, Tally) bool) *View {
	t.Helper()
	defer func() {
		if t.Failed() {
			t.Logf("tally %+v", m.Tally())
		}
	}()
	var v *View
	eventually.True(t, 10*time.Second, what, func() bool {
		v = m.View()
		return v != nil && ok(v, m.Tally())
	})
	return v
}

// get answers a GET of path from srv, as a loopback client.
func get(t *testing.T, srv *httpapi.Server, path string) []byte {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	req.Host = "127.0.0.1"
	rec := httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, rec.Code, rec.Body)
	}
	return rec.Body.Bytes()
}

// scrapeMetrics GETs /metrics from srv and parses it.
func scrapeMetrics(t *testing.T, srv *httpapi.Server) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(get(t, srv, "/metrics")))
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

// wantMetric checks that the counter family name has exactly the series of
// want ("label=value,…" sorted → value).
func wantMetric(t *testing.T, fams map[string]*dto.MetricFamily, name string, want map[string]float64) {
	t.Helper()
	fam, ok := fams[name]
	if !ok {
		t.Fatalf("no %s", name)
	}
	if fam.GetType() != dto.MetricType_COUNTER {
		t.Errorf("%s is a %v, want a counter", name, fam.GetType())
	}
	got := map[string]float64{}
	for _, m := range fam.Metric {
		var ls []string
		for _, l := range m.Label {
			ls = append(ls, l.GetName()+"="+l.GetValue())
		}
		sort.Strings(ls)
		got[strings.Join(ls, ",")] = m.GetCounter().GetValue()
	}
	if fmt.Sprint(got) != fmt.Sprint(want) { // fmt sorts map keys
		t.Errorf("%s:\n got %v\nwant %v", name, got, want)
	}
}

// The tally counts the node's events by their causes, starts every known
// label set at 0, leaves the workers' own releases (no cause) out, and
// hands out copies.
func TestTallyCountsByCause(t *testing.T) {
	tl := newTally()
	tl.register([]string{"w0"})
	for _, e := range []event.Event{
		{Event: event.Kill, Component: "w0", Cause: supervisor.KillStall},
		{Event: event.Kill, Component: "w0", Cause: supervisor.KillStall},
		{Event: event.Exit, Component: "w0"},
		{Event: event.Release, Component: "w0", Cause: supervisor.ReleaseDied},
		{Event: event.Release, Component: "w0", Reason: "transient: x"}, // a worker's own
		{Event: event.Quarantined, File: "f"},
		{Event: event.LeaseExpired, Cause: node.CleanupLeaseExpired},
		{Event: event.Kill, Component: "w9", Cause: supervisor.KillHang}, // not registered: counted all the same
	} {
		tl.Emit(e)
	}
	got := tl.get()
	if got.Kills["w0"][supervisor.KillStall] != 2 || got.Kills["w0"][supervisor.KillHang] != 0 || len(got.Kills["w0"]) != len(supervisor.KillCauses()) ||
		got.Kills["w9"][supervisor.KillHang] != 1 || got.Deaths["w0"] != 1 || got.Quarantined != 1 ||
		fmt.Sprint(got.Released) != "map[lease_expired:1 not_work:0 worker_died:1]" {
		t.Fatalf("tally %+v", got)
	}
	got.Kills["w0"][supervisor.KillStall] = 99
	got.Released[supervisor.ReleaseDied] = 99
	if again := tl.get(); again.Kills["w0"][supervisor.KillStall] != 2 || again.Released[supervisor.ReleaseDied] != 1 {
		t.Fatalf("a copy's change reached the tally: %+v", again)
	}
}
