package app

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"github.com/nomarr/nomarr/app/service"
	"github.com/nomarr/nomarr/core/health"
	"github.com/nomarr/nomarr/core/inventory"
	"github.com/nomarr/nomarr/core/store"
	"github.com/nomarr/nomarr/core/tags"
	"github.com/nomarr/nomarr/driver"
)

// RetagScope chooses the files a retag run marks.
type RetagScope struct {
	// Match reports whether a stored path is in scope; nil: every file.
	Match func(path string) bool
	// All marks every file of the model set in use in scope; otherwise
	// only those whose stored tags a retag would change (tags.NeedsRetag:
	// thresholds, calibration, top-tag count). A change of standard
	// fields or write mode shows in no stored tag: it needs All.
	All bool
}

// RetagView is what a retag run shows while it goes; the command prints
// it. Marked comes first, then, when the workers run, any number of
// Progress.
type RetagView interface {
	// Marked: this run marked marked files; total are marked in all
	// (earlier runs' marks not yet done included).
	Marked(marked, total int)
	// Progress: done of total marked files are retagged.
	Progress(done, total int)
}

// RetagEnd is how a retag run ended.
type RetagEnd struct {
	Marked int // files this run marked
	Total  int // files marked when the workers started (0: none ran)
	Left   int // files still marked at the end
	// Reanalyze: files a retag found changed since they were tagged, sent
	// back to a full analysis (the pending files the run added).
	Reanalyze int
	// Signal is the first stop signal, nil when none came.
	Signal os.Signal
	// AllFailed: every worker failed. Paused: the workers are paused
	// (at start: none was started).
	AllFailed, Paused bool
	// Deferred: another main process holds the node name (a daemon),
	// whose workers retag the marked files; this run started none. It
	// says why.
	Deferred string
	Took     time.Duration
}

// Retag runs `nomarr retag`: it marks the tagged files of scope for a
// retag (store.Jobs.MarkRetag) and runs workers that take retags only:
// each re-derives a file's stored scores under the configuration's tag
// options and writes them, without decoding the file or loading a model
// (docs/decisions/tag-writing.md). It ends when no marked file is left,
// when nothing is in progress or claimable (files waiting after a failed
// retag), when every worker failed, when the workers are paused, or on
// SIGINT or SIGTERM (a second one forces the stop).
func Retag(s *Settings, scope RetagScope, log *slog.Logger, view RetagView) (RetagEnd, error) {
	if a := s.Get("analyzer"); a != "musicnn" {
		return RetagEnd{}, &ConfigError{fmt.Errorf("retag re-derives the tags of the musicnn analyzer, and the analyzer is %s", a)}
	}
	version := ModelSetVersion(s)
	if version == "" {
		return RetagEnd{}, &ConfigError{fmt.Errorf("the model files in %s cannot be read: the model set in use is unknown", s.Get("models_dir"))}
	}
	st, err := openForStart(s)
	if err != nil {
		return RetagEnd{}, err
	}
	defer st.Close()
	var forcing atomic.Pointer[driver.Main]
	ctx, interrupted, release := stopSignals(forceOnSignal(log, &forcing))
	defer release()
	opt, err := s.WorkerTagOptions(ctx, st, version, log)
	if err != nil {
		return RetagEnd{}, &ConfigError{err}
	}
	var end RetagEnd
	if end.Marked, err = MarkRetag(ctx, st, version, opt, scope); err != nil {
		return end, err
	}
	c, err := st.CountJobs(ctx, version)
	if err != nil {
		return end, fmt.Errorf("store: %w", err)
	}
	view.Marked(end.Marked, c.Retag)
	if c.Retag == 0 {
		return end, nil
	}
	// The node's main process (a daemon) is running: its workers retag
	// the marked files; this run starts none.
	if why := nodeRefusal(ctx, st, s); why != "" {
		end.Left, end.Deferred = c.Retag, why
		return end, nil
	}
	if end.Paused = WorkersPaused(ctx, st); end.Paused {
		end.Left = c.Retag
		return end, nil
	}
	end.Total = c.Retag
	before, err := st.Counts(ctx)
	if err != nil {
		return end, fmt.Errorf("store: %w", err)
	}
	m, err := newMainFor(s, st, log, logSinkWith(log, nil), JobsRetag)
	if err != nil {
		return end, &ConfigError{err}
	}
	m.OnStoreWait = logStoreWait(log)
	forcing.Store(m)
	start := time.Now()
	stop := make(chan struct{})
	services := []service.Service{mainLoop(m, stop, log, s.Core.LeaseTTL), clockWatch(m, s.Core.LeaseTTL)}
	if s.Core.GPU {
		services = append(services, gpuProbe(s, m))
	}
	run := (&service.Supervisor{Log: log}).Start(ctx, services...)
	r := retagRun{s: s, st: st, m: m, version: version, view: view}
	r.watch(run, stop, &end)
	if err := run.Stop(); err != nil {
		return end, err
	}
	end.Took, end.Signal = time.Since(start), interrupted()
	if c, err := st.CountJobs(context.Background(), version); err == nil {
		end.Left = c.Retag
	}
	if after, err := st.Counts(context.Background()); err == nil {
		end.Reanalyze = max(after.Pending-before.Pending, 0)
	}
	return end, nil
}

// MarkRetag marks for a retag the files of scope that tags.NeedsRetag
// (or, with scope.All, inventory.Retaggable alone) picks, reading the
// library and the stored tags page by page, and returns how many it
// marked.
func MarkRetag(ctx context.Context, st store.Store, version string, opt tags.Options, scope RetagScope) (int, error) {
	marked := 0
	for after := ""; ; {
		page, err := st.ListFiles(ctx, after, ListBatch)
		if err != nil {
			return marked, fmt.Errorf("store: %w", err)
		}
		var keys []string
		for _, f := range page {
			if !inventory.Retaggable(f, version) || scope.Match != nil && !scope.Match(f.Path) {
				continue
			}
			if !scope.All {
				stored, err := st.FileTags(ctx, f.Key)
				if err != nil {
					return marked, fmt.Errorf("store: %w", err)
				}
				if !tags.NeedsRetag(stored, opt) {
					continue
				}
			}
			keys = append(keys, f.Key)
		}
		n, err := st.MarkRetag(ctx, keys, version)
		marked += n
		if err != nil {
			return marked, fmt.Errorf("store: %w", err)
		}
		if len(page) < ListBatch {
			return marked, nil
		}
		after = page[len(page)-1].Key
	}
}

// retagRun is a retag run's workers, watched.
type retagRun struct {
	s       *Settings
	st      Store
	m       *driver.Main
	version string
	view    RetagView
}

// watch follows the run every tagPoll until the main loop ends, or until
// no marked file is left and none is claimed, every worker failed, the
// workers are paused, or nothing was claimed nor claimable for idlePolls
// polls in a row; it then stops the main loop and waits for it.
func (r *retagRun) watch(run *service.Group, stop chan struct{}, end *RetagEnd) {
	tick := time.NewTicker(tagPoll)
	defer tick.Stop()
	idle := 0
	ctx := context.Background()
	for {
		select {
		case <-run.Ended():
			return
		case <-tick.C:
		}
		jc, err := r.st.CountJobs(ctx, r.version)
		if err != nil {
			continue
		}
		c, err := r.st.Counts(ctx)
		if err != nil {
			continue
		}
		r.view.Progress(end.Total-jc.Retag, end.Total)
		end.AllFailed = r.failedWorkers() == r.s.Core.Workers
		end.Paused = WorkersPaused(ctx, r.st)
		idle++
		if c.Claimed > 0 {
			idle = 0
		} else if ready, err := r.st.DiscoverRetag(ctx, time.Now(), "", 1); err != nil || len(ready) > 0 {
			idle = 0
		}
		if (jc.Retag == 0 && c.Claimed == 0) || end.AllFailed || end.Paused || idle >= idlePolls {
			close(stop)
			<-run.Ended()
			return
		}
	}
}

// failedWorkers counts the workers whose status is failed.
func (r *retagRun) failedWorkers() (failed int) {
	_ = r.m.Do(context.Background(), func(_ context.Context, now time.Time) {
		for _, id := range r.m.Node.Sup.Components() {
			if r.m.Node.Status(id, now) == health.Failed {
				failed++
			}
		}
	})
	return failed
}
