package httpapi

import (
	"testing"

	dto "github.com/prometheus/client_model/go"
)

// The main process's event counters are counters with the backend's counts
// as they are: kills by component and reason, deaths by component, the
// quarantines (0 when none, so rate() has a series from the start) and the
// claims released by reason; they stay while the store is down, being the
// main process's own.
func TestMetricsEventCounters(t *testing.T) {
	f := newFake()
	const w0, w1 = "component=worker:discovery:0", "component=worker:discovery:1"
	C := dto.MetricType_COUNTER
	fams := scrape(t, f, Options{})
	wantSeries(t, "quarantined", series(t, fams, "nomarr_files_quarantined_total", C), map[string]float64{"": 0})
	wantSeries(t, "deaths", series(t, fams, "nomarr_worker_deaths_total", C), map[string]float64{w0: 0, w1: 0})

	f.info.Workers[0].Kills = map[string]int64{"hang": 2, "stall": 0}
	f.info.Workers[0].Deaths = 3
	f.info.Workers[1].Kills = map[string]int64{"hang": 0, "stall": 1}
	f.info.Workers[1].Deaths = 1
	f.info.FilesQuarantined = 4
	f.info.ClaimsReleased = map[string]int64{"worker_died": 5, "lease_expired": 1, "not_work": 0}
	f.info.StoreError = "store unavailable"
	fams = scrape(t, f, Options{})
	wantSeries(t, "kills", series(t, fams, "nomarr_worker_kills_total", C), map[string]float64{
		"cause=hang," + w0: 2, "cause=stall," + w0: 0, "cause=hang," + w1: 0, "cause=stall," + w1: 1,
	})
	wantSeries(t, "deaths", series(t, fams, "nomarr_worker_deaths_total", C), map[string]float64{w0: 3, w1: 1})
	wantSeries(t, "quarantined", series(t, fams, "nomarr_files_quarantined_total", C), map[string]float64{"": 4})
	wantSeries(t, "released", series(t, fams, "nomarr_claims_released_total", C),
		map[string]float64{"cause=worker_died": 5, "cause=lease_expired": 1, "cause=not_work": 0})
}
