package httpapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"strings"
	"syscall"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/nomarr/nomarr/core/store"
)

// scrape GETs /metrics and parses the text exposition.
func scrape(t *testing.T, f *fakeBackend, opt Options) map[string]*dto.MetricFamily {
	t.Helper()
	ts := newTest(t, f, opt)
	r := do(t, ts, "GET", "/metrics", "")
	if r.code != 200 {
		t.Fatalf("metrics: %d %s", r.code, r.body)
	}
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Fatalf("Content-Type %q", ct)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(r.body))
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, r.body)
	}
	return fams
}

// series flattens a family into "label=value,..." → value.
func series(t *testing.T, fams map[string]*dto.MetricFamily, name string, typ dto.MetricType) map[string]float64 {
	t.Helper()
	fam, ok := fams[name]
	if !ok {
		t.Fatalf("no family %s", name)
	}
	if fam.GetType() != typ {
		t.Errorf("%s: type %v, want %v", name, fam.GetType(), typ)
	}
	out := map[string]float64{}
	for _, m := range fam.Metric {
		var ls []string
		for _, l := range m.Label {
			ls = append(ls, l.GetName()+"="+l.GetValue())
		}
		sort.Strings(ls)
		var v float64
		switch typ {
		case dto.MetricType_COUNTER:
			v = m.GetCounter().GetValue()
		default:
			v = m.GetGauge().GetValue()
		}
		out[strings.Join(ls, ",")] = v
	}
	return out
}

func wantSeries(t *testing.T, name string, got, want map[string]float64) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) { // fmt sorts map keys
		t.Errorf("%s:\n got %v\nwant %v", name, got, want)
	}
}

func TestMetrics(t *testing.T) {
	f := newFake()
	f.info.Workers[1].Status = "failed"
	fams := scrape(t, f, Options{Version: "v9"})
	const w0, w1 = "component=worker:discovery:0", "component=worker:discovery:1"
	G, C := dto.MetricType_GAUGE, dto.MetricType_COUNTER

	wantSeries(t, "status", series(t, fams, "nomarr_worker_status", G), map[string]float64{
		w0 + ",status=pending": 0, w0 + ",status=healthy": 1, w0 + ",status=unhealthy": 0, w0 + ",status=failed": 0,
		w1 + ",status=pending": 0, w1 + ",status=healthy": 0, w1 + ",status=unhealthy": 0, w1 + ",status=failed": 1,
	})
	wantSeries(t, "restarts", series(t, fams, "nomarr_worker_restarts", G), map[string]float64{w0: 2, w1: 20})
	wantSeries(t, "files", series(t, fams, "nomarr_worker_files_processed_total", C), map[string]float64{w0: 17, w1: 0})
	wantSeries(t, "errors", series(t, fams, "nomarr_worker_errors_total", C), map[string]float64{w0: 3, w1: 0})
	wantSeries(t, "conflicts", series(t, fams, "nomarr_worker_claim_conflicts_total", C), map[string]float64{w0: 1, w1: 0})
	wantSeries(t, "dropped", series(t, fams, "nomarr_worker_frames_dropped_total", C), map[string]float64{w0: 4, w1: 0})
	// Worker 1 never sent a frame: no age series for it.
	wantSeries(t, "frame age", series(t, fams, "nomarr_worker_last_frame_age_seconds", G), map[string]float64{w0: 1.5})
	wantSeries(t, "avg", series(t, fams, "nomarr_worker_avg_processing_seconds", G), map[string]float64{w0: 2.5, w1: 0})
	// The states partition the files: their sum is the total (100); the
	// claims, which overlap them, are a gauge of their own.
	library := series(t, fams, "nomarr_library_files", G)
	wantSeries(t, "library", library, map[string]float64{
		"state=tagged": 60, "state=failed": 5, "state=pending": 33, "state=invalid": 2,
	})
	if sum := library["state=tagged"] + library["state=failed"] + library["state=pending"] + library["state=invalid"]; sum != 100 {
		t.Errorf("sum of nomarr_library_files = %v, want the total 100", sum)
	}
	wantSeries(t, "claimed", series(t, fams, "nomarr_library_files_claimed", G), map[string]float64{"": 2})
	wantSeries(t, "enabled", series(t, fams, "nomarr_workers_enabled", G), map[string]float64{"": 1})
	wantSeries(t, "build", series(t, fams, "nomarr_build_info", G), map[string]float64{"version=v9": 1})

	// Go and process collectors are registered.
	for _, name := range []string{"go_goroutines", "go_memstats_alloc_bytes", "process_start_time_seconds"} {
		if _, ok := fams[name]; !ok && (name != "process_start_time_seconds" || hasProcFS()) {
			t.Errorf("no %s", name)
		}
	}
}

func TestMetricsPausedAndUnknownStatus(t *testing.T) {
	f := newFake()
	f.info.WorkerEnabled = false
	f.info.Workers = f.info.Workers[:1]
	f.info.Workers[0].Status = "zombie"
	fams := scrape(t, f, Options{})
	wantSeries(t, "enabled", series(t, fams, "nomarr_workers_enabled", dto.MetricType_GAUGE), map[string]float64{"": 0})
	const w0 = "component=worker:discovery:0"
	wantSeries(t, "status", series(t, fams, "nomarr_worker_status", dto.MetricType_GAUGE), map[string]float64{
		w0 + ",status=pending": 0, w0 + ",status=healthy": 0, w0 + ",status=unhealthy": 0, w0 + ",status=failed": 0,
		w0 + ",status=zombie": 1,
	})
}

// While the store is unreachable the library counts and the pause flag are
// unknown: nomarr_store_up is 0 and those gauges are absent rather than 0
// (an empty library, running workers); the workers' own series stay.
func TestMetricsStoreDown(t *testing.T) {
	f := newFake()
	fams := scrape(t, f, Options{})
	wantSeries(t, "store up", series(t, fams, "nomarr_store_up", dto.MetricType_GAUGE), map[string]float64{"": 1})
	f.info.StoreError = "store unavailable: database is locked"
	f.info.Library = store.Counts{}
	fams = scrape(t, f, Options{})
	wantSeries(t, "store up", series(t, fams, "nomarr_store_up", dto.MetricType_GAUGE), map[string]float64{"": 0})
	for _, name := range []string{"nomarr_library_files", "nomarr_library_files_claimed", "nomarr_workers_enabled"} {
		if _, ok := fams[name]; ok {
			t.Errorf("%s reported while the store is down", name)
		}
	}
	if _, ok := fams["nomarr_worker_restarts"]; !ok {
		t.Error("worker series gone while the store is down")
	}
}

func TestMetricsBackendError(t *testing.T) {
	f := newFake()
	ts := newTest(t, f, Options{})
	f.setErr(errors.New("store down"))
	r := do(t, ts, "GET", "/metrics", "")
	if r.code != 500 {
		t.Fatalf("metrics with failing backend: %d, want 500\n%s", r.code, r.body)
	}
	if !strings.Contains(string(r.body), "backend info failed") || strings.Contains(string(r.body), "store down") {
		t.Errorf("body should name the failure, not its cause: %s", r.body)
	}
	// It recovers once the backend does.
	f.setErr(nil)
	if r := do(t, ts, "GET", "/metrics", ""); r.code != 200 {
		t.Errorf("after recovery: %d", r.code)
	}
}

func TestMetricsCallInfoPerScrape(t *testing.T) {
	f := newFake()
	ts := newTest(t, f, Options{})
	do(t, ts, "GET", "/metrics", "")
	do(t, ts, "GET", "/metrics", "")
	f.mu.Lock()
	n := f.infoCalls
	f.mu.Unlock()
	if n != 2 {
		t.Errorf("Info called %d times for 2 scrapes", n)
	}
}

// hasProcFS: the process collector only reports where /proc exists.
func hasProcFS() bool {
	_, err := os.Stat("/proc/self/stat")
	return err == nil
}

// A scrape whose client went away mid-answer is logged at DEBUG, not as
// the server's ERROR; any other failure of the metrics handler stays ERROR.
func TestMetricsClientGoneNotAnError(t *testing.T) {
	var buf bytes.Buffer
	p := promLogger{&Server{log: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))}}
	for _, err := range []error{context.Canceled, fmt.Errorf("write: %w", syscall.EPIPE), &os.SyscallError{Syscall: "write", Err: syscall.ECONNRESET}} {
		buf.Reset()
		p.Println("error encoding and sending metric family:", err)
		if !strings.Contains(buf.String(), "level=DEBUG") {
			t.Errorf("%v: logged %q, want DEBUG", err, buf.String())
		}
	}
	buf.Reset()
	p.Println("error gathering metrics:", errors.New("collector failed"))
	if !strings.Contains(buf.String(), "level=ERROR") {
		t.Errorf("a gather failure logged %q, want ERROR", buf.String())
	}
}
