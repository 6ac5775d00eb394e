package app

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"github.com/nomarr/nomarr/adapters/library"
	"github.com/nomarr/nomarr/app/service"
	"github.com/nomarr/nomarr/core/health"
	"github.com/nomarr/nomarr/core/store"
	"github.com/nomarr/nomarr/driver"
)

// TagView is what a tag run shows a person while it goes; the command
// prints it. Its methods are called on the run's goroutine, in this order:
// Found, then (when there is something to tag) Pending, Tagging, any
// number of Progress and Paused, and Tagged.
type TagView interface {
	// Found: the scan of dir found r.
	Found(r ScanResult)
	// Pending: before files are pending in the store, fromDir of them
	// found by this run's scan.
	Pending(before store.Counts, fromDir int)
	// Tagging: the workers start on total files.
	Tagging(total int)
	// Progress: done of total files are done; c are the library's
	// counts, failed the files failed since the start.
	Progress(done, total int, c store.Counts, failed int)
	// Paused: the workers were paused during the run, which stops.
	Paused()
	// Tagged: the workers have stopped; the run's last log lines follow.
	Tagged()
}

// TagStage is where a tag run ended.
type TagStage int

const (
	// TagRan: the workers ran; Before, After and Took say what they did.
	TagRan TagStage = iota
	// TagScanInterrupted: a stop signal came during the scan.
	TagScanInterrupted
	// TagPausedAtStart: the workers are paused; none was started.
	TagPausedAtStart
	// TagNothing: nothing was pending (Before); no worker was started.
	TagNothing
)

// TagEnd is how a tag run ended.
type TagEnd struct {
	Stage TagStage
	// Signal is the first stop signal, nil when none came (or when the
	// run failed before its end).
	Signal        os.Signal
	Before, After store.Counts
	Took          time.Duration
	// AllFailed: every worker failed. Paused: a pause stopped the run.
	AllFailed, Paused bool
	// NextRetry is when the first file waiting for a retry can be claimed
	// again (zero when none waits or the store cannot say); only looked
	// up when files are left.
	NextRetry time.Time
	// VectorsBefore and VectorsAfter count the files tagged by the model
	// set in use that have no track vector of it (store.JobCounts.Vector),
	// before and after the run; zero when the analyzer makes no vectors.
	VectorsBefore, VectorsAfter int
}

// Tag runs `nomarr tag DIR`: it scans dir, then tags every pending file of
// the store (discovery is store-wide: dir's and earlier scans') with the
// configured number of worker processes. When nothing is left to tag, the
// workers make the track vectors the store lacks for files tagged by the
// model set in use (a backfill, docs/decisions/similarity.md), without
// writing their tags again; a run with nothing to tag and no vector to
// make starts no worker.
//
// It ends when nothing is left, when every worker failed, when the workers
// are paused (at start or during the run), or when nothing is in progress
// and nothing can be claimed now: the files left wait for a retry after a
// transient error (60 s, 120 s, … up to 30 min apart), which a one-shot
// run does not sit through. SIGINT or SIGTERM ends it too, gracefully
// (TagEnd.Signal); a second signal forces the stop (forcestop.go). An
// error of the configuration, and a damaged store, is a *ConfigError.
func Tag(s *Settings, dir string, log *slog.Logger, view TagView) (TagEnd, error) {
	if err := library.CheckRoot(dir); err != nil {
		return TagEnd{}, err
	}
	st, err := openForStart(s)
	if err != nil {
		return TagEnd{}, err
	}
	defer st.Close()
	// The first SIGINT or SIGTERM stops the run gracefully (the workers
	// finish their current job within stop_grace); a second one, once the
	// workers run, forces the stop (forcestop.go).
	var forcing atomic.Pointer[driver.Main]
	ctx, interrupted, release := stopSignals(forceOnSignal(log, &forcing))
	defer release()
	t := &tagRun{s: s, st: st, dir: dir, log: log, view: view}
	if end, err := t.prepare(ctx, interrupted); err != nil || end.Stage != TagRan {
		return end, refuseDamaged(err) // damage the scan found is refused as at the open
	}
	// The file lines still waiting for their path are logged before the
	// summary, and in any case before the store closes and the process
	// exits (the quarantine of the last file).
	t.paths = newPathLogger(log, st)
	defer t.paths.close(pathDrainTimeout)
	if t.m, err = newMain(s, st, log, logSinkWith(log, t.paths)); err != nil {
		return TagEnd{}, &ConfigError{err}
	}
	t.m.OnStoreWait = logStoreWait(log)
	forcing.Store(t.m)
	start := time.Now()
	end, err := t.work(ctx)
	if err != nil {
		return TagEnd{}, err
	}
	t.view.Tagged()
	t.paths.close(pathDrainTimeout)
	end.Before, end.Took = t.before, time.Since(start)
	return t.finish(end, interrupted())
}

// tagRun is one tag run's state, from its scan to its summary.
type tagRun struct {
	s      *Settings
	st     Store
	dir    string
	log    *slog.Logger
	view   TagView
	before store.Counts // the library before the workers start
	paths  *pathLogger
	m      *driver.Main
	// vectorSet is the model set whose missing vectors the workers make
	// ("": the analyzer makes none); vectors, how many were missing.
	vectorSet string
	vectors   int
}

// prepare refuses a node name in use, scans dir and reads the library
// before the run: a run with nothing to tag, or under a pause, ends there.
func (t *tagRun) prepare(ctx context.Context, interrupted func() os.Signal) (TagEnd, error) {
	// A run beside another one under the same node name is refused before
	// the scan, not after it (the start refuses it all the same).
	if why := nodeRefusal(ctx, t.st, t.s); why != "" {
		return TagEnd{}, errors.New(why)
	}
	scanned, err := ScanLibrary(ctx, t.st, t.dir, ScanModels(t.s), t.log)
	if sig := interrupted(); sig != nil {
		return TagEnd{Stage: TagScanInterrupted, Signal: sig}, nil
	}
	if err != nil {
		return TagEnd{}, err
	}
	t.view.Found(scanned)
	if WorkersPaused(ctx, t.st) { // tagpause.go
		return TagEnd{Stage: TagPausedAtStart}, nil
	}
	// With nothing pending (every file tagged, failed or missing) no
	// worker is started, and loading the models for nothing is skipped.
	before, err := t.st.Counts(ctx)
	t.vectorsToMake(ctx)
	if err == nil && before.Pending == 0 && t.vectors == 0 {
		return TagEnd{Stage: TagNothing, Before: before}, nil
	}
	if err == nil {
		t.view.Pending(before, scanned.Pending)
	}
	t.before = before
	return TagEnd{Stage: TagRan}, nil
}

// work runs the workers and the services beside them until the run ends
// (watch), and stops them.
func (t *tagRun) work(ctx context.Context) (TagEnd, error) {
	stop := make(chan struct{})
	// This host's model set stays recorded while the workers tag with it.
	services := []service.Service{mainLoop(t.m, stop, t.log, t.s.Core.LeaseTTL),
		modelSetRecord(t.s, t.st, t.log), clockWatch(t.m, t.s.Core.LeaseTTL)}
	if t.s.Core.GPU {
		services = append(services, gpuProbe(t.s, t.m))
	}
	run := (&service.Supervisor{Log: t.log}).Start(ctx, services...)
	end := t.watch(run, stop)
	return end, run.Stop()
}

// watch follows the run's progress every tagPoll (or further apart on a
// store that counts slowly: driver.CountsFactor) until the main loop
// ends, or until nothing is left, every worker failed, the workers are
// paused, or nothing was in progress or claimable for idlePolls polls in
// a row; it then stops the main loop and waits for it.
func (t *tagRun) watch(run *service.Group, stop chan struct{}) (end TagEnd) {
	total := t.before.Pending
	t.view.Tagging(total)
	tick := time.NewTicker(tagPoll)
	defer tick.Stop()
	idle := 0
	for {
		select {
		case <-run.Ended():
			return end
		case <-tick.C:
		}
		c, fresh, err := t.m.LibraryCounts(context.Background())
		if !fresh {
			continue // a store that counts slowly is not asked at every tick
		}
		if err != nil {
			t.log.Warn("store unavailable", "err", err)
			continue
		}
		t.view.Progress(total-c.Pending, total, c, c.Failed-t.before.Failed)
		end.AllFailed = t.failedWorkers() == t.s.Core.Workers
		if end.Paused = WorkersPaused(context.Background(), t.st); end.Paused {
			t.view.Paused()
		}
		if idle = t.idle(idle, c); (c.Pending == 0 && c.Claimed == 0 && !t.vectorWork()) || end.AllFailed || end.Paused || idle >= idlePolls {
			close(stop)
			<-run.Ended()
			return end
		}
	}
}

// vectorsToMake sets the model set whose missing vectors the workers
// make (the musicnn analyzer's) and counts them; a store that cannot
// count leaves the count at 0.
func (t *tagRun) vectorsToMake(ctx context.Context) {
	if t.vectorSet = VectorModelSet(t.s); t.vectorSet == "" {
		return
	}
	if c, err := t.st.CountJobs(ctx, t.vectorSet); err == nil {
		t.vectors = c.Vector
	}
}

// vectorWork reports whether a file that needs a vector can be claimed
// now (a failed vector job waits for its skip time: not now); a store
// that does not answer counts as none, as the run is over otherwise.
func (t *tagRun) vectorWork() bool {
	if t.vectorSet == "" {
		return false
	}
	files, err := t.st.NeedsVector(context.Background(), time.Now(), t.vectorSet, "", 1)
	return err == nil && len(files) > 0
}

// failedWorkers counts the workers whose status is failed.
func (t *tagRun) failedWorkers() (failed int) {
	_ = t.m.Do(context.Background(), func(_ context.Context, now time.Time) {
		for _, id := range t.m.Node.Sup.Components() {
			if t.m.Node.Status(id, now) == health.Failed {
				failed++
			}
		}
	})
	return failed
}

// idle is the count of polls in a row, this one included, with nothing in
// progress and nothing claimable.
func (t *tagRun) idle(polls int, c store.Counts) int {
	if c.Pending == 0 || c.Claimed > 0 {
		return 0
	}
	if ready, err := t.st.Discover(context.Background(), time.Now(), "", 1); err != nil || len(ready) > 0 {
		return 0
	}
	return polls + 1
}

// finish reads the library after the run, and when files are left, when
// the first of them may be retried.
func (t *tagRun) finish(end TagEnd, sig os.Signal) (TagEnd, error) {
	end.Signal = sig
	c, err := t.st.Counts(context.Background())
	if err != nil {
		return TagEnd{Signal: sig}, err // the store down at the end of the run
	}
	end.After = c
	end.VectorsBefore = t.vectors
	if t.vectorSet != "" {
		if jc, err := t.st.CountJobs(context.Background(), t.vectorSet); err == nil {
			end.VectorsAfter = jc.Vector
		}
	}
	if c.Pending > 0 {
		end.NextRetry, _ = nextRetry(context.Background(), t.st, time.Now())
	}
	return end, nil
}

// tagPoll is how often a tag run looks at its progress.
const tagPoll = 500 * time.Millisecond

// nextRetry is when the first pending file that waits (next_retry_at or
// skip_until after now) can be claimed again; false when none waits or
// the store cannot tell. It looks at up to retryLookPages pages of the
// files claimable within a day (a transient retry waits 30 min at most).
func nextRetry(ctx context.Context, st store.Store, now time.Time) (time.Time, bool) {
	var first time.Time
	after := ""
	for range retryLookPages {
		page, err := st.Discover(ctx, now.Add(24*time.Hour), after, ListBatch)
		if err != nil {
			return time.Time{}, false
		}
		for _, f := range page {
			at := f.NextRetryAt
			if f.SkipUntil.After(at) {
				at = f.SkipUntil
			}
			if at.After(now) && (first.IsZero() || at.Before(first)) {
				first = at
			}
		}
		if len(page) < ListBatch {
			break
		}
		after = page[len(page)-1].Key
	}
	return first, !first.IsZero()
}

// retryLookPages bounds nextRetry's reads.
const retryLookPages = 2

// idlePolls is how many progress polls in a row (0.5 s apart, or further
// on a store that counts slowly: driver.CountsFactor) must find nothing in
// progress and nothing claimable before tag ends with files left: long
// enough for a worker between two jobs to claim the next.
const idlePolls = 4
