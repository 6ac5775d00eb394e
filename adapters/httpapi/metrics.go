package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// scrapeTimeout bounds the Backend.Info call of one scrape (Collect has no
// request context).
const scrapeTimeout = 10 * time.Second

// workerStatuses are the statuses nomarr_worker_status always reports.
var workerStatuses = []string{"pending", "healthy", "unhealthy", "failed"}

// collector turns Backend.Info into metrics at scrape time.
type collector struct {
	s *Server

	status, restarts, files, errs, conflicts, dropped, frameAge, avgProc *prometheus.Desc
	library, claimed, enabled, storeUp, storeCorrupt, build              *prometheus.Desc
	storeErrs, phase                                                     *prometheus.Desc
	kills, deaths, quarantined, released                                 *prometheus.Desc
	clockOffset                                                          *prometheus.Desc
}

func newCollector(s *Server) *collector {
	c := []string{"component"}
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, nil)
	}
	return &collector{
		s:         s,
		status:    d("nomarr_worker_status", "1 for the worker's current status (pending, healthy, unhealthy, failed), 0 for the others.", "component", "status"),
		restarts:  d("nomarr_worker_restarts", "Restarts counted by the worker's restart policy.", c...),
		files:     d("nomarr_worker_files_processed_total", "Files the worker has processed.", c...),
		errs:      d("nomarr_worker_errors_total", "Job errors of the worker.", c...),
		conflicts: d("nomarr_worker_claim_conflicts_total", "Claims the worker lost to another worker.", c...),
		dropped:   d("nomarr_worker_frames_dropped_total", "Health frames of the worker that were dropped.", c...),
		frameAge:  d("nomarr_worker_last_frame_age_seconds", "Age of the worker's last health frame (absent before the first frame).", c...),
		avgProc:   d("nomarr_worker_avg_processing_seconds", "Average processing time per file of the worker.", c...),
		library:   d("nomarr_library_files", "Library files by state; the states partition the files (sum() is the total; a file gone at the last scan is invalid whatever its tags).", "state"),
		claimed:   d("nomarr_library_files_claimed", "Files claimed by a worker now (in progress): counted in their state in nomarr_library_files too, pending as a rule."),
		enabled:   d("nomarr_workers_enabled", "1 when workers are enabled (not paused), else 0 (absent while the store is unreachable)."),
		storeUp: d("nomarr_store_up", "1 when the store answered this scrape's reads, the main process's last store write succeeded "+
			"and no call found the database damaged, "+
			"else 0 (when the reads failed, the library and enabled gauges are absent, not 0)."),
		storeCorrupt: d("nomarr_store_corrupt", "1 once the main process found the database damaged (a SQLite file cut short or "+
			"with malformed pages: no retry mends it; restore it, or recover it with sqlite3 FILE .recover), else 0."),
		storeErrs: d("nomarr_store_errors_total", "Store calls of the main process that failed as a store fault, by operation (absent until one failed).", "op"),
		phase:     d("nomarr_worker_phase", "1 for the phase a running worker's last health frame gave (absent with no process or no frame yet).", "component", "phase"),
		build:     d("nomarr_build_info", "Always 1; the version label is the running build.", "version"),
		kills: d("nomarr_worker_kills_total", "Kills of the worker's processes by the supervisor since the main process started, by cause "+
			"(pipe_closed, startup_timeout, hang, cold_start_max, stall, stop_grace, forced_stop).", "component", "cause"),
		deaths: d("nomarr_worker_deaths_total", "Ends of the worker's processes the supervisor handled since the main process started "+
			"(crashes, exits, kills, a stop's exits).", c...),
		quarantined: d("nomarr_files_quarantined_total", "Files quarantined as poison (a worker holding them died quarantine_after times) "+
			"by the main process since it started."),
		released: d("nomarr_claims_released_total", "Claims removed by the main process since it started, by cause: worker_died "+
			"(a dead worker's), lease_expired, not_work (the claim cleanup's: any host's claims); not the workers' own releases.", "cause"),
		clockOffset: d("nomarr_clock_offset_seconds", "The store server's clock minus this host's, as last measured (positive: this host's clock is behind); "+
			"absent when the store has no server clock (SQLite) or has not answered yet."),
	}
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.status, c.restarts, c.files, c.errs, c.conflicts,
		c.dropped, c.frameAge, c.avgProc, c.library, c.claimed, c.enabled, c.storeUp, c.storeCorrupt, c.build, c.storeErrs, c.phase,
		c.kills, c.deaths, c.quarantined, c.released, c.clockOffset} {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(c.build, prometheus.GaugeValue, 1, c.s.version)

	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	info, err := c.s.b.Info(ctx)
	if err != nil {
		// An invalid metric makes the gather fail: promhttp answers 500.
		// The cause is logged, not exposed (store errors can carry URLs).
		c.s.log.Error("http api: metrics: backend info failed", "err", err)
		ch <- prometheus.NewInvalidMetric(c.enabled, errors.New("backend info failed (see server log)"))
		return
	}

	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	b2f := func(b bool) float64 {
		if b {
			return 1
		}
		return 0
	}

	// Unknown is not zero: with the store unreachable the counts and the
	// pause flag could not be read, and a dashboard must not show an empty
	// library or running workers for it.
	gauge(c.storeUp, b2f(info.StoreError == "" && info.StoreWritesFailing == nil && info.StoreCorrupt == nil))
	gauge(c.storeCorrupt, b2f(info.StoreCorrupt != nil))
	for op, n := range info.StoreErrors {
		counter(c.storeErrs, float64(n), op)
	}
	// The main process's own counts: known whatever the store does.
	counter(c.quarantined, float64(info.FilesQuarantined))
	for reason, n := range info.ClaimsReleased {
		counter(c.released, float64(n), reason)
	}
	if info.ClockOffsetMs != nil {
		gauge(c.clockOffset, float64(*info.ClockOffsetMs)/1000)
	}
	if info.StoreError == "" {
		gauge(c.enabled, b2f(info.WorkerEnabled))
		l := info.Library
		// A partition (store.ClassOf): sum() over the states is the
		// total. The claims overlap the states, so they are a gauge of
		// their own.
		gauge(c.library, float64(l.Tagged), "tagged")
		gauge(c.library, float64(l.Failed), "failed")
		gauge(c.library, float64(l.Pending), "pending")
		gauge(c.library, float64(l.Invalid()), "invalid")
		gauge(c.claimed, float64(l.Claimed))
	}

	for _, w := range info.Workers {
		known := false
		for _, st := range workerStatuses {
			known = known || st == w.Status
			gauge(c.status, b2f(st == w.Status), w.Component, st)
		}
		if !known && w.Status != "" { // a status this code does not know yet
			gauge(c.status, 1, w.Component, w.Status)
		}
		if w.Phase != "" {
			gauge(c.phase, 1, w.Component, w.Phase)
		}
		gauge(c.restarts, float64(w.Restarts), w.Component)
		counter(c.files, float64(w.FilesProcessed), w.Component)
		counter(c.errs, float64(w.Errors), w.Component)
		counter(c.conflicts, float64(w.ClaimConflicts), w.Component)
		counter(c.dropped, float64(w.FramesDropped), w.Component)
		counter(c.deaths, float64(w.Deaths), w.Component)
		for reason, n := range w.Kills {
			counter(c.kills, float64(n), w.Component, reason)
		}
		if w.LastFrameAgeMs >= 0 {
			gauge(c.frameAge, float64(w.LastFrameAgeMs)/1000, w.Component)
		}
		gauge(c.avgProc, w.AvgProcessingMs/1000, w.Component)
	}
}

// promLogger adapts the server's slog logger to promhttp.Logger. A scrape
// whose client went away mid-answer (a cancelled request, a closed
// connection) is not the server's error: logged at DEBUG, not ERROR, so
// that a scraper's timeouts do not fill the log.
type promLogger struct{ s *Server }

func (p promLogger) Println(v ...any) {
	msg := "http api: metrics: " + fmt.Sprint(v...)
	for _, a := range v {
		if err, ok := a.(error); ok && clientGone(err) {
			p.s.log.Debug(msg)
			return
		}
	}
	p.s.log.Error(msg)
}

// clientGone reports whether err says the client went away.
func clientGone(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET)
}

// newMetricsHandler builds /metrics on a private registry: the nomarr
// collector plus the Go and process collectors.
func newMetricsHandler(s *Server) (http.Handler, error) {
	reg := prometheus.NewRegistry()
	for _, col := range []prometheus.Collector{
		newCollector(s),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	} {
		if err := reg.Register(col); err != nil {
			return nil, fmt.Errorf("httpapi: metrics: %w", err)
		}
	}
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		ErrorLog:          promLogger{s},
		ErrorHandling:     promhttp.HTTPErrorOnError,
		Registry:          reg, // promhttp_metric_handler_errors_total
		Timeout:           scrapeTimeout + 5*time.Second,
		EnableOpenMetrics: false,
	}), nil
}
