package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nomarr/nomarr/adapters/analyzer"
	"github.com/nomarr/nomarr/adapters/arangodb"
	"github.com/nomarr/nomarr/adapters/inference"
	"github.com/nomarr/nomarr/adapters/library"
	"github.com/nomarr/nomarr/adapters/process"
	"github.com/nomarr/nomarr/core/event"
	"github.com/nomarr/nomarr/core/health"
	"github.com/nomarr/nomarr/core/inventory"
	"github.com/nomarr/nomarr/core/node"
	"github.com/nomarr/nomarr/core/store"
	"github.com/nomarr/nomarr/driver"
)

// exitUsage is the exit code for invalid configuration or usage.
const exitUsage = 2

func newLogger(s *settings, w io.Writer) *slog.Logger {
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(s.get("log_level")))
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: lvl}))
}

// haveCgo is builtWithCgo (cgo.go, nocgo.go); a variable for the tests.
var haveCgo = builtWithCgo

// errNoCgoBuild is checkAnalyzer's answer for the MusiCNN analyzer in a
// binary built without cgo. Its workers would fail every model load
// (inference.ErrNoCgo) and crash-loop until failed, and that failure persists
// past the rebuild that fixes the cause, so the check comes before anything
// is spawned or written.
var errNoCgoBuild = errors.New("this nomarr binary was built without cgo (CGO_ENABLED=0, as Go builds when it finds " +
	"no C compiler), and the musicnn analyzer needs cgo for ONNX Runtime and TagLib: install a C compiler " +
	"(Debian: apt-get install gcc, or `make deps`), then rebuild with CGO_ENABLED=1 (`make build`)")

// checkAnalyzer says whether the configured analyzer can run, with one clear
// message on how to fix what is missing.
func checkAnalyzer(s *settings) error {
	name := s.get("analyzer")
	switch {
	case name == "noop", strings.HasPrefix(name, "script:"):
		return nil
	case name == "musicnn":
		if !haveCgo {
			return errNoCgoBuild
		}
		if err := inference.CheckLibrary(s.get("onnxruntime_lib")); err != nil {
			if looked := s.searched["onnxruntime_lib"]; len(looked) > 1 && errors.Is(err, inference.ErrLibraryNotFound) {
				return inference.LibraryNotFoundIn(looked)
			}
			return err
		}
		for _, f := range inference.ModelFiles() {
			if _, err := os.Stat(filepath.Join(s.get("models_dir"), f)); err != nil {
				if looked := s.searched["models_dir"]; len(looked) > 1 {
					return fmt.Errorf("model %s not found: looked in %s; put the shared folder (with models/musicnn) "+
						"beside the checkout, or set models_dir (NOMARR_MODELS_DIR) to the folder holding the MusiCNN ONNX models",
						f, strings.Join(looked, ", "))
				}
				return fmt.Errorf("model %s not found in %s: set models_dir (NOMARR_MODELS_DIR) to the folder "+
					"holding the MusiCNN ONNX models", f, s.get("models_dir"))
			}
		}
		if _, err := exec.LookPath("ffmpeg"); err != nil {
			return fmt.Errorf("ffmpeg not found on PATH: install it (Debian: apt-get install ffmpeg, or `make deps`)")
		}
		return nil
	}
	return fmt.Errorf("analyzer: unknown analyzer %q (musicnn, noop, script:SCENARIO)", name)
}

// eventLevel is the log level of an event kind: WARN for what an operator
// must see (a worker failed or killed, a file failed for good, …), INFO
// for the life of workers and a file's retry, DEBUG for the rest.
func eventLevel(kind string) slog.Level {
	switch kind {
	case event.Failed, event.Kill, event.Quarantined, event.StoreError, event.NodeName, event.FileFailed, event.MainPaused:
		return slog.LevelWarn
	case event.RestartScheduled, event.Restart, event.Status, event.Exit, event.Reset, event.Stop, event.FileRetry:
		return slog.LevelInfo
	}
	return slog.LevelDebug
}

// logSink turns core events into structured log lines with component ids.
func logSink(log *slog.Logger) event.Sink { return logSinkWith(log, nil) }

// logSinkWith is logSink whose lines about one file a person must find
// (quarantined; a release that counted a crash against the file, at
// INFO; a claim whose lease expired, taken back from a dead owner, at
// INFO) carry the file's path, read by paths (nil: without it), and the
// time of their event, though logged once the path is read.
//
// A worker that exits with code 0 during a graceful stop did what it was
// asked: the owner reports it unhealthy then (dead, DESIGN §4), and that
// status change is logged at DEBUG, not as an INFO healthy → unhealthy
// that reads like trouble; its `exit` line (INFO) says it ended.
func logSinkWith(log *slog.Logger, paths *pathLogger) event.Sink {
	quiet := storeErrorQuiet{}
	stopping := false
	stopped := map[string]bool{} // components that exited 0 during the stop
	return event.SinkFunc(func(e event.Event) {
		lvl := eventLevel(e.Event)
		byPath := false
		switch e.Event {
		case event.Stop:
			stopping = true
		case event.Exit:
			stopped[e.Component] = stopping && e.Code != nil && *e.Code == 0
		case event.Status:
			if stopped[e.Component] && e.To == string(health.Unhealthy) {
				lvl = slog.LevelDebug
			}
		}
		switch {
		case e.Event == event.Quarantined:
			byPath = true
		case e.Event == event.Release && e.Count > 0: // a crash counted against the file
			lvl, byPath = slog.LevelInfo, true
		case e.Event == event.LeaseExpired && e.Cause == node.CleanupLeaseExpired: // a dead owner's claim
			lvl, byPath = slog.LevelInfo, true
		}
		if !log.Enabled(context.Background(), lvl) {
			return
		}
		attrs := []any{}
		if e.Event == event.StoreError {
			n, show := quiet.admit(e)
			if !show {
				return
			}
			if n > 0 {
				attrs = append(attrs, "suppressed", n)
			}
		}
		add := func(k, v string) {
			if v != "" {
				attrs = append(attrs, k, v)
			}
		}
		add("component", e.Component)
		add("from", e.From)
		add("to", e.To)
		add("file", e.File)
		if byPath {
			add("worker", e.Worker)
		}
		add("reason", e.Reason)
		if e.BackoffMs > 0 {
			attrs = append(attrs, "backoff", time.Duration(e.BackoffMs)*time.Millisecond)
		}
		if e.PID > 0 {
			attrs = append(attrs, "pid", e.PID)
		}
		if byPath && e.Count > 0 {
			attrs = append(attrs, "crashes", e.Count)
		}
		if byPath && paths != nil && e.File != "" {
			paths.logf(lvl, e.Event, e.File, e.T, attrs)
			return
		}
		log.Log(context.Background(), lvl, e.Event, attrs...)
	})
}

// keepInherited keeps the descriptors this process inherited from its
// children (process.KeepInheritedFromChildren). Every main process (serve
// and tag through newMain, drill) calls it before it builds its spawner,
// so before any worker or probe is spawned. Where they cannot be listed,
// that is a warning, not a reason not to run.
func keepInherited(log *slog.Logger) {
	if err := process.KeepInheritedFromChildren(); err != nil {
		log.Warn("inherited file descriptors may pass into the workers", "err", err)
	}
}

// newMain builds the main process for the settings: store, node, spawner.
func newMain(s *settings, st closer, log *slog.Logger, sink event.Sink) (*driver.Main, error) {
	keepInherited(log)
	self, name, err := selfBinary()
	if err != nil {
		return nil, err
	}
	instance := fmt.Sprintf("%s:%d:%d", s.get("node"), os.Getpid(), time.Now().UnixMilli())
	var m *driver.Main
	command := func(component string, gen uint64) (string, []string) { // called once m is running
		return self, []string{"worker", "--component", component, "--worker-id", m.Node.Sup.WorkerID(component), "--node", s.get("node")}
	}
	m, err = driver.NewMain(holdingName(s.core.Node(instance, s.get("node"))), st, nil, log, sink, command, os.Stderr)
	if err != nil {
		return nil, err
	}
	threads, _ := strconv.Atoi(s.get("ort_threads"))
	batch, _ := strconv.Atoi(s.get("batch_size"))
	arena, _ := strconv.ParseBool(s.get("ort_cpu_arena"))
	reuse, _ := strconv.ParseBool(s.get("reuse_file_tags"))
	m.Spawner.Name = name
	m.Spawner.Env = workerEnvironment(workerSpec{DB: s.get("db"), Config: s.core.Values(), Analyzer: s.get("analyzer"),
		StateDir: filepath.Join(s.get("data_dir"), "analyzer-state"), ModelsDir: s.get("models_dir"),
		OrtLib: s.get("onnxruntime_lib"), WriteMode: s.get("write_mode"), Reuse: reuse, Threads: threads, BatchSize: batch, CPUArena: arena, UseGPU: s.core.GPU,
		LogLevel: s.get("log_level")})
	return m, nil
}

// holdingName gives a main process's node config what the hold on its node
// name needs from the operating system: who this process is, and whether
// another holder still runs.
func holdingName(cfg node.Config) node.Config {
	cfg.Self, cfg.Liveness = process.Self(), process.Liveness
	return cfg
}

// selfBinary is the binary that workers run: the one this process runs,
// through /proc/self/exe where there is one, so that a binary replaced or
// deleted on disk while the main process runs (an upgrade) does not give it
// workers of another version; name is its path, for the workers' argv[0]
// (the kernel names a process started so `exe`: each worker renames itself
// after the binary, process.NameSelf).
func selfBinary() (path, name string, err error) {
	name, err = os.Executable()
	if err != nil {
		return "", "", fmt.Errorf("finding the nomarr binary: %w", err)
	}
	if _, err := os.Stat(procSelfExe); err == nil {
		return procSelfExe, name, nil
	}
	return name, name, nil
}

const procSelfExe = "/proc/self/exe"

// ensureDataDir creates the directory of a SQLite store.
func ensureDataDir(s *settings) error {
	if strings.HasPrefix(s.get("db"), "sqlite:") {
		if err := os.MkdirAll(filepath.Dir(strings.TrimPrefix(s.get("db"), "sqlite:")), 0o755); err != nil {
			return fmt.Errorf("data_dir: %w", err)
		}
	}
	return nil
}

// openExisting opens the store for a command that reads or changes it but
// must not create it (failed, retry, missing, forget, workers without a
// daemon): a store that is not there is an error (storeMissing).
func openExisting(s *settings) (closer, error) {
	if err := storeMissing(s); err != nil {
		return nil, err
	}
	return openForSettings(s)
}

// storeMissing says when the configured store is a SQLite file that is not
// there: most often a mistyped --db or another --data-dir than the one
// scanned, so looking creates nothing and says where it looked.
func storeMissing(s *settings) error {
	if path, ok := sqlitePath(s.get("db")); ok {
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("no store at %s (nothing scanned with this --db or --data-dir yet)", path)
		}
	}
	return nil
}

// openForSettings creates the data directory and opens the store.
func openForSettings(s *settings) (closer, error) {
	if err := ensureDataDir(s); err != nil {
		return nil, err
	}
	return openStore(context.Background(), s.get("db"))
}

// modelSetVersion is the version the configured analyzer records on the
// files it tags (store.File.TaggedVersion): the model files' hash for
// musicnn, NoopVersion for noop. A scan sends the files under its folder
// that were tagged under another version back to work
// (store.Inventory.Retag), so new models, or the models after a trial run
// with noop into the same store, tag the library again. "" sends nothing
// back: the drills' script analyzer, or model files that cannot be read
// (the run itself then fails on them, saying why).
func modelSetVersion(s *settings) string {
	switch s.get("analyzer") {
	case "musicnn":
		v, err := inference.Version(s.get("models_dir"))
		if err != nil {
			return ""
		}
		return v
	case "noop":
		return analyzer.NoopVersion
	}
	return ""
}

// modelScan is what a scan needs to send back to work the files another
// model set tagged: this host's node name and the version of its models
// (modelSetVersion; "": send nothing back).
type modelScan struct {
	node, version string
}

// scanModels is the modelScan of this host's settings.
func scanModels(s *settings) modelScan {
	return modelScan{node: s.get("node"), version: modelSetVersion(s)}
}

// agree records this host's model-set version in the store and returns
// the version the scan sends files back to work under: ms.version, or ""
// when another host ran under another version within
// inventory.ModelSetFresh (inventory.ModelSets.Conflict decides; it is
// logged), or when the record cannot be read or written.
func (ms modelScan) agree(ctx context.Context, st store.Store, log *slog.Logger) string {
	if ms.version == "" {
		return ""
	}
	sets, err := ms.record(ctx, st)
	if err != nil {
		log.Warn("scan: cannot record this host's model set; no file is sent back to work for new models this time", "err", err)
		return ""
	}
	if other, set := sets.Conflict(ms.node, ms.version, time.Now()); other != "" {
		log.Warn("scan: another host sharing this store tags with another model set; files tagged by other models are "+
			"not sent back to work until every host runs the same ones", "version", ms.version, "other_node", other,
			"other_version", set.Version, "other_recorded_at", time.UnixMilli(set.AtMs).UTC().Format(time.RFC3339))
		return ""
	}
	return ms.version
}

// record writes this host's model-set version into the hosts' records
// (inventory.ModelSetsKey, by compare-and-set, read again when another
// host wrote meanwhile) and returns the records as they were before.
func (ms modelScan) record(ctx context.Context, st store.Store) (inventory.ModelSets, error) {
	for range 5 {
		raw, _, err := st.GetMeta(ctx, inventory.ModelSetsKey)
		if err != nil {
			return nil, err
		}
		sets, err := inventory.DecodeModelSets(raw)
		if err != nil {
			sets = inventory.ModelSets{} // damaged: written anew
		}
		ok, err := st.SwapMeta(ctx, inventory.ModelSetsKey, raw, sets.Record(ms.node, ms.version, time.Now()).Encode())
		if err != nil {
			return nil, err
		}
		if ok {
			return sets, nil
		}
	}
	return nil, errors.New("the hosts' model-set records kept changing")
}

// keepRecorded writes this host's model-set record every period
// (inventory.ModelSetRenew) until ctx ends, so that it stays fresh while
// the workers tag, between scans or without any (serve with no
// library_root or rescan_interval 0, a long tag run). current gives the
// version as the model files are at each write (scanModels): models
// replaced meanwhile are what the workers reload (Result.ModelsChanged),
// and a renewal must not write the old version back over a scan's.
func keepRecorded(ctx context.Context, st store.Store, current func() modelScan, every time.Duration, log *slog.Logger) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			ms := current()
			if ms.version == "" {
				continue
			}
			if _, err := ms.record(ctx, st); err != nil && ctx.Err() == nil {
				log.Warn("cannot record this host's model set (tried again later)", "err", err)
			}
		}
	}
}

// scanResult is what a scan did: audio files found, and what the store
// made of them (new, changed, back from missing, unchanged: kinds), stored
// files marked missing, files sent back to work because another model set
// tagged them, and how many of the files found are pending (valid,
// neither tagged nor failed, and needing tags: store.Counts' Pending; the
// re-tagged ones included).
type scanResult struct {
	missing, retagged, pending int
	kinds                      inventory.Found
}

// found is the audio files the walk found: every one of them is in
// exactly one of the kinds (store.UpsertOutcomeOf).
func (r scanResult) found() int { return r.kinds.Files() }

// summary is the scan's line for a person (`nomarr scan`): the audio
// files found, what they were to the store (kindsNote) and the known files
// no longer there (missingNote), e.g. "1204 audio files (12 new, 3
// changed, 1 back from missing, 1188 unchanged), 2 known files no longer
// there (marked missing)".
func (r scanResult) summary() string {
	return nFiles(r.found(), "audio ") + r.kindsNote() + r.missingNote()
}

// kindsNote is " (12 new, 3 changed, 1 back from missing, 1188
// unchanged)": the kinds of the files found that occurred, or "" when
// none was found.
func (r scanResult) kindsNote() string {
	var kinds []string
	for _, k := range []struct {
		n    int
		name string
	}{{r.kinds.New, "new"}, {r.kinds.Changed, "changed"}, {r.kinds.Back, "back from missing"}, {r.kinds.Unchanged, "unchanged"}} {
		if k.n > 0 {
			kinds = append(kinds, fmt.Sprintf("%d %s", k.n, k.name))
		}
	}
	if len(kinds) == 0 {
		return ""
	}
	return " (" + strings.Join(kinds, ", ") + ")"
}

// missingNote is ", 2 known files no longer there (marked missing)", or
// "" when the scan marked none.
func (r scanResult) missingNote() string {
	if r.missing == 0 {
		return ""
	}
	return fmt.Sprintf(", %s no longer there (marked missing)", nFiles(r.missing, "known "))
}

// logAttrs are the scan's counts as log attributes (serve's `scanned
// library` line).
func (r scanResult) logAttrs() []any {
	return []any{"files", r.found(), "new", r.kinds.New, "changed", r.kinds.Changed, "back", r.kinds.Back,
		"unchanged", r.kinds.Unchanged, "marked_missing", r.missing}
}

// scanLibrary scans dir, upserts what it finds, marks missing the stored
// files under dir that it did not find and sends back to work those
// tagged under another model-set version than ms's (core/inventory
// decides which). It counts what the store made of the files found
// (inventory.Found) and the pending files among them.
func scanLibrary(ctx context.Context, st store.Store, dir string, ms modelScan, log *slog.Logger) (r scanResult, err error) {
	root, err := filepath.Abs(dir)
	if err != nil {
		return r, fmt.Errorf("scan: %w", err)
	}
	// The walk streams: files go to the store a batch at a time and only
	// their keys are kept, to find the stored files that left. A stop
	// (ctx) ends the walk at its next entry, and an ended walk marks
	// nothing.
	//
	// Each batch carries a stat sequence number taken before the walk
	// reads the first of its stats (core/store/statseq.go): a job that
	// rewrites one of its files and records the new stat before the batch
	// is written keeps it, instead of the batch writing the stat from
	// before the rewrite back over it (the file was analysed again).
	scan := inventory.Scan{Root: root, Seen: map[string]bool{}, Unread: map[string]bool{}}
	batch := make([]store.File, 0, scanBatch)
	seq, err := st.NextStatSeq(ctx)
	if err != nil {
		return r, fmt.Errorf("scan: store: %w", err)
	}
	flush := func() error {
		did, err := st.UpsertFiles(ctx, batch)
		if err != nil {
			return fmt.Errorf("scan: store: %w", err)
		}
		r.kinds.Add(did)
		batch = batch[:0]
		return nil
	}
	unread, err := library.Walk(ctx, root, func(f store.File) error {
		scan.Seen[f.Key] = true
		f.StatSeq = seq
		if batch = append(batch, f); len(batch) < scanBatch {
			return nil
		}
		if err := flush(); err != nil {
			return err
		}
		if seq, err = st.NextStatSeq(ctx); err != nil { // before the next batch's first stat
			return fmt.Errorf("scan: store: %w", err)
		}
		return nil
	})
	if err == nil && len(batch) > 0 {
		err = flush()
	}
	if err != nil {
		return r, err
	}
	for _, u := range unread {
		log.Warn("scan: cannot read; the files stored at or under it are not marked missing", "path", u.Path, "err", u.Err)
		scan.Unread[u.Path] = true
	}
	version := ms.agree(ctx, st, log)
	for after := ""; ; {
		page, err := st.ListFiles(ctx, after, listBatch)
		if err != nil {
			return r, fmt.Errorf("scan: store: %w", err)
		}
		for _, f := range page {
			if scan.Seen[f.Key] && f.IsValid && f.NeedsTagging && !f.Tagged && !f.Failed {
				r.pending++
			}
		}
		if gone := scan.Missing(page, library.OnDisk); len(gone) > 0 {
			n, err := st.MarkMissing(ctx, gone)
			if err != nil {
				return r, fmt.Errorf("scan: store: %w", err)
			}
			r.missing += n
		}
		if stale := scan.Stale(page, version); len(stale) > 0 {
			n, err := st.Retag(ctx, stale, version)
			if err != nil {
				return r, fmt.Errorf("scan: store: %w", err)
			}
			r.retagged += n
			r.pending += n
		}
		if len(page) < listBatch {
			break
		}
		after = page[len(page)-1].Key
	}
	if r.missing > 0 {
		log.Info("scan: files no longer on disk marked missing (valid again, tags kept, when they come back)",
			"dir", root, "files", r.missing)
	}
	if r.retagged > 0 {
		log.Info("scan: files tagged by another model set sent back to work (their stored tags kept until replaced)",
			"dir", root, "files", r.retagged, "version", version)
	}
	return r, nil
}

// Batch sizes of a scan's store calls: short write transactions, pages of
// the library small enough to hold.
const (
	scanBatch = 1000
	listBatch = 5000
)

// redact hides the password of a store URL.
func redact(db string) string {
	if strings.HasPrefix(db, "arangodb") {
		return arangodb.Redacted(db)
	}
	scheme, rest, ok := strings.Cut(db, "://")
	if !ok {
		return db
	}
	cred, host, ok := strings.Cut(rest, "@")
	if !ok {
		return db
	}
	user, _, _ := strings.Cut(cred, ":")
	return scheme + "://" + user + ":***@" + host
}

// startCommand parses a job command's settings and positional arguments
// (exactly nargs) and checks its analyzer. When ok is false it has printed
// the help or the message: exit with code.
func startCommand(name string, args []string, nargs int, stdout, stderr io.Writer) (s *settings, rest []string, log *slog.Logger, code int, ok bool) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	s, rest, code, ok = commandSettings(name, fs, args, stdout, stderr)
	if !ok {
		return nil, nil, nil, code, false
	}
	if len(rest) != nargs {
		return nil, nil, nil, usageError(stderr, name), false
	}
	if err := checkAnalyzer(s); err != nil {
		fmt.Fprintf(stderr, "nomarr %s: %v\n", name, err)
		return nil, nil, nil, exitUsage, false
	}
	return s, rest, newLogger(s, stderr), 0, true
}

// stopSignals returns a context that SIGINT or SIGTERM cancels, and a
// function that returns that first signal (nil before it). Every later
// one calls again with its rank (2 for the second, …), from another
// goroutine: a second Ctrl-C during the graceful stop forces it
// (forceOnSignal), not ignored. again must not block. release stops
// listening.
func stopSignals(again func(n int)) (ctx context.Context, first func() os.Signal, release func()) {
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	var got atomic.Value
	done := make(chan struct{})
	go func() {
		n := 0
		for {
			select {
			case sig := <-ch:
				n++
				if got.CompareAndSwap(nil, sig) {
					cancel()
				} else {
					again(n)
				}
			case <-done:
				return
			}
		}
	}()
	first = func() os.Signal {
		sig, _ := got.Load().(os.Signal)
		return sig
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			signal.Stop(ch)
			close(done)
			cancel()
		})
	}
	return ctx, first, release
}

// signalExit is the exit code of a command stopped by sig: 128 + its
// number, as a shell reports a process killed by it (130 for SIGINT, 143
// for SIGTERM), so that a script sees the interruption.
func signalExit(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return 1
}

// storeErrorQuietFor is how long a store error is not logged again once it
// was: during an outage the main process retries its store writes every
// tick, and one line a second per operation drowns the log.
const storeErrorQuietFor = 30 * time.Second

// storeErrorQuiet logs a store error of one operation at most once per
// storeErrorQuietFor of event time, and counts the ones it held back. The
// operation is the reason's first two words: "renew leases:", "confirm
// claim:", or, for an error the store adapter named itself, "sqlite:
// complete" (its third word is the file key, left out so that one
// operation over many files counts once).
type storeErrorQuiet map[string]*quietOp

// quietOp is when an operation's store error was last logged, and how many
// of its errors were held back since.
type quietOp struct {
	at         time.Time
	suppressed int
}

// admit reports whether e is logged and how many were held back before it.
func (q storeErrorQuiet) admit(e event.Event) (int, bool) {
	words := strings.Fields(e.Reason)
	key := e.Component + "|" + strings.Join(words[:min(2, len(words))], " ")
	s := q[key]
	if s == nil {
		q[key] = &quietOp{at: e.T}
		return 0, true
	}
	if e.T.Sub(s.at) < storeErrorQuietFor {
		s.suppressed++
		return 0, false
	}
	n := s.suppressed
	s.at, s.suppressed = e.T, 0
	return n, true
}
