package httpapi

import (
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
)

// nomarr_clock_offset_seconds is the measured offset, 0 and negative
// included, and absent while nothing was measured; /api/v1/info carries
// clock_offset_ms, clock_uncertainty_ms and clock_skew only then.
func TestMetricsClockOffset(t *testing.T) {
	f := newFake()
	if _, ok := scrape(t, f, Options{})["nomarr_clock_offset_seconds"]; ok {
		t.Fatal("nomarr_clock_offset_seconds without a measurement")
	}
	ts := newTest(t, f, Options{})
	if r := do(t, ts, "GET", "/api/v1/info", ""); strings.Contains(string(r.body), `"clock_`) {
		t.Fatalf("info without a measurement: %s", r.body)
	}
	for _, ms := range []int64{-12500, 0, 6000} {
		unc := int64(2)
		f.mu.Lock()
		f.info.ClockOffsetMs, f.info.ClockUncertaintyMs, f.info.ClockSkew = &ms, &unc, "warn"
		f.mu.Unlock()
		wantSeries(t, "clock offset", series(t, scrape(t, f, Options{}), "nomarr_clock_offset_seconds", dto.MetricType_GAUGE),
			map[string]float64{"": float64(ms) / 1000})
	}
	r := do(t, ts, "GET", "/api/v1/info", "")
	if !strings.Contains(string(r.body), `"clock_offset_ms":6000,"clock_uncertainty_ms":2,"clock_skew":"warn"`) {
		t.Fatalf("info with a measurement: %s", r.body)
	}
}
