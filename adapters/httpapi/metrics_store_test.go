package httpapi

import (
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// A store that answers reads but refuses the main process's writes is not
// up: nomarr_store_up 0 while store_writes_failing is set, the library and
// the pause flag still shown (they were read); the failed store calls are
// counted by operation, and each running worker's phase is a series.
func TestMetricsStoreWritesFailing(t *testing.T) {
	f := newFake()
	f.info.StoreWritesFailing = &StoreWriteFailure{Since: time.Now(), Op: "renew_leases", Error: "database is locked"}
	f.info.StoreErrors = map[string]int64{"renew_leases": 3, "swap_meta": 1}
	fams := scrape(t, f, Options{})
	G := dto.MetricType_GAUGE
	wantSeries(t, "store up", series(t, fams, "nomarr_store_up", G), map[string]float64{"": 0})
	wantSeries(t, "enabled", series(t, fams, "nomarr_workers_enabled", G), map[string]float64{"": 1})
	if _, ok := fams["nomarr_library_files"]; !ok {
		t.Error("no library counts while only the writes fail")
	}
	wantSeries(t, "store errors", series(t, fams, "nomarr_store_errors_total", dto.MetricType_COUNTER),
		map[string]float64{"op=renew_leases": 3, "op=swap_meta": 1})
	// Worker 1 has no process (failed): no phase series for it.
	wantSeries(t, "phase", series(t, fams, "nomarr_worker_phase", G),
		map[string]float64{"component=worker:discovery:0,phase=processing": 1})

	f.info.StoreWritesFailing = nil
	fams = scrape(t, f, Options{})
	wantSeries(t, "store up", series(t, fams, "nomarr_store_up", G), map[string]float64{"": 1})
}

// A damaged database is not up, and says so: nomarr_store_corrupt 1 and
// nomarr_store_up 0, even while reads of pages the damage missed still
// answer; 0 for a whole one.
func TestMetricsStoreCorrupt(t *testing.T) {
	f := newFake()
	G := dto.MetricType_GAUGE
	fams := scrape(t, f, Options{})
	wantSeries(t, "store corrupt", series(t, fams, "nomarr_store_corrupt", G), map[string]float64{"": 0})
	f.info.StoreCorrupt = &StoreCorruption{Since: time.Now(), Op: "claim", Error: "database file is corrupt"}
	fams = scrape(t, f, Options{})
	wantSeries(t, "store corrupt", series(t, fams, "nomarr_store_corrupt", G), map[string]float64{"": 1})
	wantSeries(t, "store up", series(t, fams, "nomarr_store_up", G), map[string]float64{"": 0})
}
