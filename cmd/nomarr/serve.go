package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nomarr/nomarr/adapters/gpu"
	"github.com/nomarr/nomarr/adapters/httpapi"
	gpuhealth "github.com/nomarr/nomarr/core/gpu"
	"github.com/nomarr/nomarr/core/inventory"
	"github.com/nomarr/nomarr/driver"
)

// runServe implements `nomarr serve`: scan + periodic rescan of
// library_root, the workers, the HealthMonitor and the HTTP API, until
// SIGINT/SIGTERM, then a graceful stop; a second signal forces it
// (forcestop.go), and it exits 0 either way. The API's socket is bound first:
// when http_addr cannot be bound, serve exits 1 before any worker starts.
func runServe(args []string, stdout, stderr io.Writer) int {
	s, _, log, code, ok := startCommand("serve", args, 0, stdout, stderr)
	if !ok {
		return code
	}
	// The store is opened on first use, once the address is bound: a serve
	// refused for its address creates nothing.
	st := lazyStore(s.get("db"))
	defer st.Close()
	// The file lines still waiting for their path are logged before the
	// store closes and the process exits (the quarantine of the last file).
	paths := newPathLogger(log, st)
	defer paths.close(pathDrainTimeout)
	m, err := newMain(s, st, log, logSinkWith(log, paths))
	if err != nil {
		fmt.Fprintln(stderr, "nomarr serve:", err)
		return exitUsage
	}
	api, err := httpapi.New(&driver.API{Main: m, StoreID: redact(s.get("db")), Version: buildVersion(), Node: s.get("node")},
		httpapi.Options{Addr: s.get("http_addr"), Token: s.get("api_token"), Logger: log, Version: buildVersion()})
	if err != nil {
		fmt.Fprintln(stderr, "nomarr serve:", err)
		return exitUsage
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
		fmt.Fprintln(stderr, "nomarr serve:", err)
		return 1
	}
	// Served at once: a store that hangs at start must not leave a bound
	// port that answers nothing (clients would wait out their timeout
	// instead of being refused or answered).
	httpDone := make(chan error, 1)
	httpCtx, stopHTTP := context.WithCancel(context.Background())
	defer stopHTTP()
	go func() { httpDone <- api.ListenAndServe(httpCtx) }()
	// The daemon starts even when the store is down (or its directory is not
	// there yet); it retries and its workers back off meanwhile. A stop
	// signal cuts the first look short.
	if err := ensureDataDir(s); err != nil {
		log.Error("cannot create the store's directory; retrying the store", "err", err)
	}
	if _, err := st.Counts(ctx); err != nil && ctx.Err() == nil {
		// A store that is the wrong kind of database is a configuration
		// error, refused as tag refuses it; any other failure is an
		// outage, retried.
		if wrongStore(err) {
			fmt.Fprintln(stderr, "nomarr serve:", strings.TrimPrefix(err.Error(), "store unavailable: "))
			stopHTTP()
			<-httpDone
			return 1
		}
		log.Error("store unavailable; retrying", "db", redact(s.get("db")), "err", err)
	}
	// A node name in use by another running main process is refused
	// before anything is said or spawned (the start refuses it all the same).
	if why := nodeRefusal(ctx, st, s); why != "" {
		fmt.Fprintln(stderr, "nomarr serve:", why)
		stopHTTP()
		<-httpDone
		return 1
	}
	log.Info("serving", servingAttrs(s, api.Addr())...)
	go logProgress(ctx, m, progressInterval, log)
	// This host's clock against the store server's, when it has one.
	go m.WatchClock(ctx, s.core.LeaseTTL)
	go keepRecorded(ctx, st, func() modelScan { return scanModels(s) }, inventory.ModelSetRenew, log) // this host's model set, kept fresh between scans
	if root := s.get("library_root"); root != "" {
		rescan, _ := time.ParseDuration(s.get("rescan_interval"))
		if rescan == 0 {
			log.Info("periodic rescan off (rescan_interval 0): the library is scanned once, at start", "dir", root)
		}
		go func() {
			failures := 0
			for {
				// The version of the model files as they are now: a rescan
				// after new models were put in place sends the files the
				// old ones tagged back to work (workers reload before their
				// next claim, Result.ModelsChanged).
				r, err := scanLibrary(ctx, st, root, scanModels(s), log)
				if err != nil && ctx.Err() != nil {
					return // stopping: the scan was cut short on purpose
				}
				next := rescan
				if err != nil {
					// A failed scan (the store down or locked, the library's
					// drive not mounted) is tried again soon, whatever the
					// rescan interval: the library would otherwise stay empty
					// or stale until the next rescan, or for good with
					// rescan_interval 0.
					failures++
					next = inventory.ScanRetry(failures, rescan)
					log.Error("scan failed; trying again", "dir", root, "in", next, "err", err)
				} else {
					failures = 0
					log.Info("scanned library", append([]any{"dir", root}, r.logAttrs()...)...)
				}
				if next <= 0 {
					return
				}
				select {
				case <-ctx.Done():
					return
				case <-time.After(next):
				}
			}
		}()
	}
	if s.core.GPU {
		go m.ProbeGPU(ctx, s.core.GPUProbeInterval, func(ctx context.Context) (bool, string) {
			return gpu.Probe(ctx, "nvidia-smi", gpuhealth.ProbeTimeout)
		})
	}
	runErr := m.Run(ctx, nil)
	reportForced(log, m, s.core.LeaseTTL)
	paths.close(pathDrainTimeout) // before the `stopped` line
	stopHTTP()
	if err := <-httpDone; err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(stderr, "nomarr serve: http:", err)
		return 1
	}
	if runErr != nil {
		fmt.Fprintln(stderr, "nomarr serve:", runErr)
		return 1
	}
	log.Info("stopped")
	return 0
}

// servingAttrs are the attributes of serve's `serving` line: what an
// operator reading the log weeks later needs to know it ran with — the
// address, workers, store and node, the analyzer and (musicnn) its models
// and their model-set version, the library and how tags are written.
func servingAttrs(s *settings, addr string) []any {
	attrs := []any{"http", addr, "workers", s.core.Workers, "store", redact(s.get("db")), "node", s.get("node"),
		"analyzer", s.get("analyzer")}
	if s.get("analyzer") == "musicnn" {
		attrs = append(attrs, "models_dir", s.get("models_dir"))
	}
	v := modelSetVersion(s)
	if v == "" {
		v = "unknown"
	}
	root := s.get("library_root")
	if root == "" {
		root = "none (nomarr scan DIR adds files)"
	}
	return append(attrs, "model_set", v, "library_root", root, "write_mode", s.get("write_mode"))
}
