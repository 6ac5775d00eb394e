package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nomarr/nomarr/adapters/gpu"
	"github.com/nomarr/nomarr/adapters/httpapi"
	"github.com/nomarr/nomarr/adapters/reconnect"
	"github.com/nomarr/nomarr/app/service"
	gpuhealth "github.com/nomarr/nomarr/core/gpu"
	"github.com/nomarr/nomarr/core/inventory"
	"github.com/nomarr/nomarr/core/store"
	"github.com/nomarr/nomarr/driver"
)

// Serve runs the daemon (`nomarr serve`): scan and periodic rescan of
// library_root, the workers, the HealthMonitor and the HTTP API, until
// SIGINT/SIGTERM, then a graceful stop; a second signal forces it
// (forcestop.go), and it returns nil either way. The API's socket is bound
// first: when http_addr cannot be bound, Serve returns its error before any
// worker starts. version is the build's, for the API. An error of the
// configuration, and a damaged store, is a *ConfigError.
func Serve(s *Settings, log *slog.Logger, version string) error {
	// The store is opened on first use, once the address is bound: a serve
	// refused for its address creates nothing.
	st := LazyStore(s.Get("db"), atStart()...)
	defer st.Close()
	// The file lines still waiting for their path are logged before the
	// store closes and the process exits (the quarantine of the last file).
	paths := newPathLogger(log, st)
	defer paths.close(pathDrainTimeout)
	m, err := newMain(s, st, log, logSinkWith(log, paths))
	if err != nil {
		return &ConfigError{err}
	}
	sims := NewSimilarAPI(s, st, log) // the similarity routes' index, kept current by its service
	saver := &PlaylistSaver{Store: st, Dir: s.Get("playlists_dir"), ModelSet: func() string { return ModelSetVersion(s) }, Saved: sims.ForgetPlaylists}
	api, err := httpapi.New(&driver.API{Main: m, StoreID: Redact(s.Get("db")), Version: version, Node: s.Get("node"), Similarity: sims,
		Saver: saver, CalibrationState: calibrationState(s, st), ModelSet: func() string { return VectorModelSet(s) }},
		httpapi.Options{Addr: s.Get("http_addr"), Token: s.Get("api_token"), Logger: log, Version: version})
	if err != nil {
		return &ConfigError{err}
	}
	// A second signal during the stop forces it: the workers are killed
	// and the store writes the stop waits for are left (forcestop.go).
	var forcing atomic.Pointer[driver.Main]
	forcing.Store(m)
	m.OnStoreWait = logStoreWait(log)
	ctx, _, release := stopSignals(forceOnSignal(log, &forcing))
	defer release()
	// Bind before anything starts: a daemon whose address is taken would
	// otherwise run its workers without an API, and `nomarr status` or
	// `workers` would talk to whatever holds the port.
	if err := api.Listen(ctx); err != nil {
		return err
	}
	// Served at once, until the workers have stopped: a store that hangs at
	// start must not leave a bound port that answers nothing (clients
	// would wait out their timeout instead of being refused or answered).
	sup := &service.Supervisor{Log: log}
	http := sup.Start(context.Background(), service.Service{Name: "http", Essential: true, Run: api.ListenAndServe})
	if err := serveStart(ctx, s, st, log); err != nil {
		_ = http.Stop()
		return err
	}
	log.Info("serving", servingAttrs(s, api.Addr())...)
	run := sup.Start(ctx, append(serveServices(s, st, m, log), mainLoop(m, nil, log, s.Core.LeaseTTL), sims.Index.Service())...)
	<-run.Ended()
	runErr := run.Stop()
	paths.close(pathDrainTimeout) // before the `stopped` line
	if err := http.Stop(); err != nil {
		return fmt.Errorf("http: %w", err)
	}
	if runErr != nil {
		return runErr
	}
	log.Info("stopped")
	return nil
}

// ConfigError is an error of the configuration, found once the run began,
// or a store the run refuses to start on because it is damaged: what the
// operator must fix before any start can work (the command exits 2 for
// it, as for a bad flag).
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

// serveStart is serve's look at the store before it says it is serving:
// the daemon starts even when the store is down (or its directory is not
// there yet), retrying while its workers back off, but not on a store of
// the wrong kind, nor on a damaged one (*ConfigError: exit 2), nor under a
// node name another running main process holds. A stop signal cuts the look short.
func serveStart(ctx context.Context, s *Settings, st *reconnect.Store, log *slog.Logger) error {
	if err := ensureDataDir(s); err != nil {
		log.Error("cannot create the store's directory; retrying the store", "err", err)
	}
	if _, err := st.Counts(ctx); err != nil && ctx.Err() == nil {
		// A store that is the wrong kind of database is a configuration
		// error, refused as tag refuses it; any other failure is an
		// outage, retried.
		if WrongStore(err) {
			return errors.New(strings.TrimPrefix(err.Error(), "store unavailable: "))
		}
		// A damaged database is no outage either: no retry mends it.
		if store.IsCorrupt(err) {
			return refuseDamaged(err)
		}
		log.Error("store unavailable; retrying", "db", Redact(s.Get("db")), "err", err)
	}
	// A node name in use by another running main process is refused
	// before anything is said or spawned (the start refuses it all the same).
	if why := nodeRefusal(ctx, st, s); why != "" {
		return errors.New(why)
	}
	return nil
}

// mainLoop is the main process's loop as the run's essential service: it
// runs until the stop signal (ctx) or stop (nil: none), then logs what a
// forced stop left.
func mainLoop(m *driver.Main, stop <-chan struct{}, log *slog.Logger, leaseTTL time.Duration) service.Service {
	return service.Service{Name: "main loop", Essential: true, Run: func(ctx context.Context) error {
		err := m.Run(ctx, stop)
		reportForced(log, m, leaseTTL)
		return err
	}}
}

// serveServices are the daemon's services beside its main loop: the
// progress log, the clock watch, this host's model-set record, the scans
// of library_root and the GPU probe.
func serveServices(s *Settings, st Store, m *driver.Main, log *slog.Logger) []service.Service {
	services := []service.Service{
		{Name: "progress", Run: func(ctx context.Context) error { logProgress(ctx, m, progressInterval, log); return nil }},
		clockWatch(m, s.Core.LeaseTTL),
		modelSetRecord(s, st, log), // this host's model set, kept fresh between scans
	}
	if root := s.Get("library_root"); root != "" {
		services = append(services, rescans(s, st, root, log))
	}
	if s.Core.GPU {
		services = append(services, gpuProbe(s, m))
	}
	return services
}

// clockWatch compares this host's clock with the store server's, when it
// has one.
func clockWatch(m *driver.Main, leaseTTL time.Duration) service.Service {
	return service.Service{Name: "clock watch", Run: func(ctx context.Context) error { m.WatchClock(ctx, leaseTTL); return nil }}
}

// modelSetRecord keeps this host's model-set record fresh (KeepRecorded).
func modelSetRecord(s *Settings, st Store, log *slog.Logger) service.Service {
	return service.Service{Name: "model-set record", Run: func(ctx context.Context) error {
		KeepRecorded(ctx, st, func() ModelScan { return ScanModels(s) }, inventory.ModelSetRenew, log)
		return nil
	}}
}

// gpuProbe probes the GPU every gpu_probe_interval (nvidia-smi).
func gpuProbe(s *Settings, m *driver.Main) service.Service {
	return service.Service{Name: "gpu probe", Run: func(ctx context.Context) error {
		m.ProbeGPU(ctx, s.Core.GPUProbeInterval, func(ctx context.Context) (bool, string) {
			return gpu.Probe(ctx, "nvidia-smi", gpuhealth.ProbeTimeout)
		})
		return nil
	}}
}

// rescans scans root at start and every rescan_interval (once with
// rescan_interval 0). A failed scan (the store down or locked, the
// library's drive not mounted) is tried again soon, whatever the rescan
// interval (inventory.ScanRetry): the library would otherwise stay empty or
// stale until the next rescan, or for good with rescan_interval 0.
func rescans(s *Settings, st Store, root string, log *slog.Logger) service.Service {
	rescan, _ := time.ParseDuration(s.Get("rescan_interval"))
	if rescan == 0 {
		log.Info("periodic rescan off (rescan_interval 0): the library is scanned once, at start", "dir", root)
	}
	return service.Service{Name: "rescan", Run: func(ctx context.Context) error {
		failures := 0
		for {
			// The version of the model files as they are now: a rescan
			// after new models were put in place sends the files the old
			// ones tagged back to work (workers reload before their next
			// claim, Result.ModelsChanged).
			r, err := ScanLibrary(ctx, st, root, ScanModels(s), log)
			if err != nil && ctx.Err() != nil {
				return nil // stopping: the scan was cut short on purpose
			}
			next := rescan
			if err != nil {
				failures++
				next = inventory.ScanRetry(failures, rescan)
				log.Error("scan failed; trying again", "dir", root, "in", next, "err", err)
			} else {
				failures = 0
				log.Info("scanned library", append([]any{"dir", root}, r.LogAttrs()...)...)
			}
			if next <= 0 {
				return nil
			}
			t := time.NewTimer(next)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil
			case <-t.C:
			}
		}
	}}
}

// servingAttrs are the attributes of serve's `serving` line: what an
// operator reading the log weeks later needs to know it ran with — the
// address, workers, store and node, the analyzer and (musicnn) its models
// and their model-set version, the library and how tags are written.
func servingAttrs(s *Settings, addr string) []any {
	attrs := []any{"http", addr, "workers", s.Core.Workers, "store", Redact(s.Get("db")), "node", s.Get("node"),
		"analyzer", s.Get("analyzer")}
	if s.Get("analyzer") == "musicnn" {
		attrs = append(attrs, "models_dir", s.Get("models_dir"))
	}
	v := ModelSetVersion(s)
	if v == "" {
		v = "unknown"
	}
	root := s.Get("library_root")
	if root == "" {
		root = "none (nomarr scan DIR adds files)"
	}
	return append(attrs, "model_set", v, "library_root", root, "write_mode", s.Get("write_mode"))
}
