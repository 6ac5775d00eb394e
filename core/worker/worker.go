// Package worker is the worker loop of docs/design.md §8 as a state machine. A driver
// (the worker process, or a simulated process) asks it for the next Step,
// carries the step out, and reports back (ModelsLoaded, Progress, JobDone). A
// separate frame writer reads Frame on its own schedule, so a long job keeps
// framing. The machine talks to the store through the store port and never
// blocks, sleeps or reads a clock: every call gets `now`.
//
// Invariants:
//   - at most one claim is held at a time, and only between a successful
//     claim and the write that completes or releases it; a claim whose
//     insert got no answer (it may have been made) is released before
//     anything else, as a pending result write is;
//   - a stop or main death while the models load releases the claimed file
//     at once (LeaveLoading);
//   - after MainDied or StopRequested no new claim is made, and the current
//     job is finished (completed or released) before Exit(0); a result or
//     release the store does not take is given up after MaxPendingWrites
//     tries (LeaveLoading: after one), its lease then returning the file;
//   - after MainDied the worker keeps the lease of the claim it holds
//     (KeepLease), as no owner renews it any more;
//   - a job result is written to the store at most once;
//   - only Transient errors count toward MaxConsecutiveErrors;
//   - a job of a kind that runs no model (a retag) never loads the
//     models, and the failure of a job other than tagging leaves its
//     file tagged and not failed, with a skip time (kinds.go; a worker's
//     crash counts against the file as for a tagging);
//   - an idle worker discovers on its adaptive poll (IdlePollMin ×
//     IdlePollFactor up to IdlePollMax) and reads the pause flag at least
//     every PausedPoll in between: a pause shows within PausedPoll however
//     long the poll has grown, and the reads between discoveries query
//     nothing else;
//   - a worker backing off for a dependency other than the store reads
//     the pause flag at least every PausedPoll and shows paused while it
//     says so, its backoff deadline and breakers untouched; one backing
//     off for the store reads nothing until its deadline (backoffpause.go).
package worker

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/nomarr/nomarr/core/breaker"
	"github.com/nomarr/nomarr/core/claim"
	"github.com/nomarr/nomarr/core/event"
	"github.com/nomarr/nomarr/core/frame"
	"github.com/nomarr/nomarr/core/gpu"
	"github.com/nomarr/nomarr/core/health"
	"github.com/nomarr/nomarr/core/store"
)

// ConflictRetry is how soon a worker that lost every candidate of its
// discovery looks again.
const ConflictRetry = 100 * time.Millisecond

// Worker is one worker's loop state.
type Worker struct {
	cfg     Config
	store   store.Store
	claimer *claim.Claimer
	sink    event.Sink

	phase        health.Phase
	modelsLoaded bool
	job          *store.File // the claimed file, nil when none
	jobKind      store.JobKind
	running      bool // a Run step is in progress
	jobStart     time.Time
	progress     int64

	mainDead bool
	stopping bool
	renewAt  time.Time // next own-lease renewal after main death (lease.go)
	// The orphan's own stall watch (lease.go): the progress last seen and
	// since when; abandoned once it stood still for StallAfter.
	orphanProgress int64
	orphanSince    time.Time
	abandoned      bool
	abandonWhy     string // set once the job must be abandoned (OrphanAbandons)
	abandonCode    int

	idleSince time.Time
	// onCPUSince: when a job first reported that a GPU failure moved the
	// loaded models to the CPU (Result.FellBack); zero while they are
	// where they were loaded. Cleared when they are unloaded.
	onCPUSince time.Time
	// modelsChanged: a job reported that the model files changed since
	// the loaded models were read (Result.ModelsChanged); they are
	// unloaded before the next claim. Cleared when they are unloaded.
	modelsChanged bool
	unloadReason  string // why the pending UnloadModels step was asked for
	idlePoll      time.Duration
	waitUntil     time.Time // backing off until then
	waitDep       string    // the dependency waitUntil is about
	svcFails      int       // consecutive failures of svcDep (service backoff exponent)
	svcDep        string    // the dependency the current backoff is about
	// flagReadAt: the earliest pause flag read of a worker backing off
	// for a dependency other than the store (backoffpause.go); a failed
	// read puts it at the backoff's deadline.
	flagReadAt time.Time

	// discoverAt: the next discovery of a worker whose last one found
	// nothing (zero: discover at the next step). Until then a step reads
	// only the pause flag (idleCheck).
	discoverAt time.Time

	breakers map[string]*breaker.Breaker
	pending  *pendingWrite

	seq uint64
	tel Telemetry
	// vectorsUnstored counts the track vectors the store did not take
	// after their file's completion (VectorsUnstored).
	vectorsUnstored int64
}

// Telemetry is the worker's counters, carried in its frames.
type Telemetry struct {
	FilesProcessed    int64
	Errors            int64
	ConsecutiveErrors int64
	DiscoveryAttempts int64
	ClaimConflicts    int64
	AvgProcessingMs   float64
}

// pendingWrite is a finished job whose store write failed; it is retried
// before anything else so no result is lost while the store is down.
type pendingWrite struct {
	ref        store.Ref
	completion *store.Completion
	// vector, with completion: the file's track vector, put after the
	// completion is written (putVector).
	vector []float32
	// info, with completion: the file's info, put after the completion
	// (putInfo).
	info   *store.FileInfo
	update *store.FileUpdate
	// vectorOnly: the result of a vector job, vector of modelSet: put,
	// then the claim released without a completion.
	vectorOnly bool
	modelSet   string
	kind       string // event to emit when written
	path       string // the file's path, named in file_failed and file_retry
	reason     string
	tries      int
	// doubtful: the release of a claim whose insert got no answer
	// (claim.Result.Doubtful). The claim may not exist; when it does not,
	// the release is a no-op and no event is emitted.
	doubtful bool
}

// New returns a worker in phase initializing.
func New(cfg Config, st store.Store, sink event.Sink) (*Worker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if sink == nil {
		sink = event.Discard
	}
	w := &Worker{
		cfg:      cfg,
		store:    st,
		claimer:  claim.NewClaimer(st, cfg.WorkerID, cfg.LeaseTTL, cfg.DiscoverBatch),
		sink:     sink,
		phase:    health.Initializing,
		idlePoll: cfg.IdlePollMin,
		breakers: make(map[string]*breaker.Breaker, len(dependencies)),
	}
	for _, d := range dependencies {
		w.breakers[d] = breaker.New(cfg.Breaker)
	}
	w.claimer.Take(!cfg.SkipTagging, cfg.Retag, cfg.VectorModelSet)
	return w, nil
}

// Phase returns the current phase.
func (w *Worker) Phase() health.Phase { return w.phase }

// Holding returns the key of the claimed file, if any.
func (w *Worker) Holding() (string, bool) {
	if w.job == nil {
		return "", false
	}
	return w.job.Key, true
}

// Telemetry returns the counters.
func (w *Worker) Telemetry() Telemetry { return w.tel }

// ModelsCached reports whether models are loaded.
func (w *Worker) ModelsCached() bool { return w.modelsLoaded }

// Frame builds the next health frame. Each call advances seq.
func (w *Worker) Frame() frame.Frame {
	w.seq++
	f := frame.Frame{
		ComponentID:       w.cfg.Component,
		Status:            "ok",
		Phase:             w.phase,
		Seq:               w.seq,
		PID:               w.cfg.PID,
		FilesProcessed:    w.tel.FilesProcessed,
		Errors:            w.tel.Errors,
		ConsecutiveErrors: w.tel.ConsecutiveErrors,
		DiscoveryAttempts: w.tel.DiscoveryAttempts,
		ClaimConflicts:    w.tel.ClaimConflicts,
		AvgProcessingMs:   w.tel.AvgProcessingMs,
		CacheLoaded:       w.modelsLoaded,
	}
	if w.running && w.job != nil {
		f.CurrentJob = w.job.Key
		f.Progress = w.progress
	}
	return f
}

// MainDied records that the main process is gone (control EOF or a failed
// frame write). The current job is finished; no new claim is made.
func (w *Worker) MainDied() { w.mainDead = true }

// StopRequested records a graceful stop (SIGTERM): finish the current job,
// claim nothing new, exit 0.
func (w *Worker) StopRequested() {
	w.stopping = true
	w.phase = health.Stopping
}

// Progress records the current job's monotonic work counter.
func (w *Worker) Progress(p int64) {
	if p > w.progress {
		w.progress = p
	}
}

// Step decides what the driver does next. It must not be called while a
// LoadModels, UnloadModels or Run step is being carried out.
func (w *Worker) Step(ctx context.Context, now time.Time) Step {
	if w.running {
		panic("worker: Step called while a job is running")
	}
	// 1. A finished job whose write failed comes first (or the release of
	// a claim whose insert got no answer).
	if w.pending != nil {
		if !w.flushPending(ctx, now) {
			if (w.mainDead || w.stopping) && w.pending.tries >= w.cfg.MaxPendingWrites {
				what := "the result write"
				if w.pending.doubtful {
					what = "the release of a claim made without an answer"
				}
				w.sink.Emit(event.Event{T: now, Event: event.StoreError, Component: w.cfg.Component, File: w.pending.ref.FileKey,
					Reason: "giving up " + what + "; the lease expiry returns the file"})
				w.pending, w.job = nil, nil
				return w.exit(0, "main process gone")
			}
			return w.backOff(now, DepStore)
		}
	}
	// 2. A claimed file: load models if needed, then run it (unless leaving).
	if w.job != nil {
		if w.mainDead || w.stopping {
			w.releaseHeld(ctx, now, "stopping before the job started")
			if w.job == nil {
				return w.exit(0, w.leaveReason())
			}
			return w.backOff(now, DepStore)
		}
		if !w.modelsLoaded && needsModels(w.jobKind) {
			w.setPhase(now, health.LoadingModels)
			return Step{Kind: LoadModels}
		}
		return w.run(now)
	}
	// 3. Leaving.
	if w.mainDead || w.stopping {
		return w.exit(0, w.leaveReason())
	}
	if w.tel.ConsecutiveErrors >= int64(w.cfg.MaxConsecutiveErrors) {
		return w.exit(1, fmt.Sprintf("%d consecutive errors", w.tel.ConsecutiveErrors))
	}
	// 4. Backing off after a dependency failure (reading the pause flag
	// meanwhile unless the store is the one that failed).
	if now.Before(w.waitUntil) {
		return w.backingOff(ctx, now, "")
	}
	for _, d := range dependencies {
		if b := w.breakers[d]; !b.Allow(now) {
			w.waitUntil, w.waitDep = b.RetryAt(), d
			return w.backingOff(ctx, now, d+" circuit open")
		}
	}
	// 5. Pause is a cluster-wide flag in meta.
	enabled, err := w.enabled(ctx)
	if err != nil {
		return w.storeFault(ctx, now, err)
	}
	if !enabled {
		w.setPhase(now, health.Paused)
		w.discoverAt = time.Time{} // a resume looks for work at once
		if s, ok := w.maybeEvict(now); ok {
			return s
		}
		return Step{Kind: Wait, Until: now.Add(w.cfg.PausedPoll)}
	}
	// 5b. An idle worker between two discoveries has read the flag; it
	// waits for the next discovery or the next read, whichever is first.
	if now.Before(w.discoverAt) {
		return w.idleCheck(now)
	}
	// 6. GPU preflight.
	if w.cfg.UseGPU {
		v, ok, err := w.store.GetMeta(ctx, w.cfg.GPUHealthKey)
		if err != nil {
			return w.storeFault(ctx, now, err)
		}
		if avail, why := gpu.Available(v, ok, now, w.cfg.GPUStaleAfter); !avail {
			w.breakers[DepGPU].Failure(now)
			return w.backOffReason(now, DepGPU, why)
		}
		w.breakers[DepGPU].Success()
		if w.svcDep == DepGPU {
			w.svcFails = 0
		}
		if s, ok := w.maybeReturnToGPU(now); ok {
			return s
		}
	}
	// 7. Models whose files changed are unloaded before the next claim,
	// so that it loads the new set; idle eviction.
	if w.modelsChanged && w.modelsLoaded {
		w.unloadReason = "model files changed"
		return Step{Kind: UnloadModels, Reason: w.unloadReason}
	}
	if w.phase == health.Idle {
		if s, ok := w.maybeEvict(now); ok {
			return s
		}
	}
	// 8. Claim.
	res, err := w.claimer.Next(ctx, now)
	w.tel.DiscoveryAttempts += int64(res.Discoveries)
	w.tel.ClaimConflicts += int64(len(res.Conflicts))
	for _, f := range res.Conflicts {
		w.sink.Emit(event.Event{T: now, Event: event.ClaimConflict, Component: w.cfg.Component, File: f, Worker: w.cfg.WorkerID})
	}
	if err != nil {
		if res.Doubtful != "" {
			// Released before anything else, as a result write is.
			w.pending = &pendingWrite{ref: store.Ref{FileKey: res.Doubtful, WorkerID: w.cfg.WorkerID}, kind: event.Release,
				reason: "claim made without an answer from the store: released", doubtful: true}
		}
		return w.storeFault(ctx, now, err)
	}
	w.storeOK()
	if !res.Found && len(res.Conflicts) > 0 {
		// Every candidate went to someone else: there may well be more work.
		// Look again soon, without entering idle or growing the idle poll.
		w.discoverAt = time.Time{}
		return Step{Kind: Wait, Until: now.Add(min(w.cfg.IdlePollMin, ConflictRetry))}
	}
	if !res.Found {
		w.enterIdle(now)
		w.discoverAt = now.Add(w.idlePoll)
		next := time.Duration(float64(w.idlePoll) * w.cfg.IdlePollFactor)
		w.idlePoll = min(next, w.cfg.IdlePollMax)
		return w.idleWait(now)
	}
	w.idlePoll, w.discoverAt = w.cfg.IdlePollMin, time.Time{}
	f := res.File
	w.job, w.jobKind = &f, res.Kind
	claimed := event.Event{T: now, Event: event.Claim, Component: w.cfg.Component, File: f.Key, Worker: w.cfg.WorkerID}
	if res.Kind != store.JobTag {
		claimed.Reason = string(res.Kind)
	}
	w.sink.Emit(claimed)
	if !w.modelsLoaded && needsModels(res.Kind) {
		w.setPhase(now, health.LoadingModels)
		return Step{Kind: LoadModels}
	}
	return w.run(now)
}

// idleCheck is a step between two discoveries of an idle worker: the
// pause flag read answered enabled, so the store is answering (its breaker
// and backoff start over, as after a claim's answer) and the worker is
// idle, also when it comes back from a backoff (a failed read) before its
// next discovery. Nothing else is queried: the discovery keeps its
// adaptive poll.
func (w *Worker) idleCheck(now time.Time) Step {
	w.storeOK()
	w.enterIdle(now)
	return w.idleWait(now)
}

// idleWait waits for the next discovery, reading the pause flag at least
// every PausedPoll meanwhile.
func (w *Worker) idleWait(now time.Time) Step {
	until := now.Add(w.cfg.PausedPoll)
	if w.discoverAt.Before(until) {
		until = w.discoverAt
	}
	return Step{Kind: Wait, Until: until}
}

// enterIdle sets phase idle; a worker that was not idle is idle from now
// (the idle eviction counts from there).
func (w *Worker) enterIdle(now time.Time) {
	if w.phase != health.Idle {
		w.idleSince = now
		w.setPhase(now, health.Idle)
	}
}

func (w *Worker) leaveReason() string {
	if w.stopping {
		return "stop requested"
	}
	return "main process gone"
}

func (w *Worker) exit(code int, reason string) Step {
	if w.stopping || w.mainDead {
		w.phase = health.Stopping
	}
	return Step{Kind: Exit, Code: code, Reason: reason}
}

func (w *Worker) run(now time.Time) Step {
	w.running = true
	w.jobStart = now
	w.progress = 0
	if w.phase != health.Stopping {
		w.setPhase(now, health.Processing)
	}
	return Step{Kind: Run, Job: w.jobOf(w.job, w.jobKind)}
}

func (w *Worker) setPhase(now time.Time, p health.Phase) {
	if w.stopping {
		p = health.Stopping
	}
	if w.phase != p {
		w.phase = p
	}
}

// maybeEvict unloads the models after CacheIdleTimeout without work.
func (w *Worker) maybeEvict(now time.Time) (Step, bool) {
	if !w.modelsLoaded || w.cfg.CacheIdleTimeout <= 0 {
		return Step{}, false
	}
	if w.idleSince.IsZero() {
		w.idleSince = now
	}
	if now.Sub(w.idleSince) < w.cfg.CacheIdleTimeout {
		return Step{}, false
	}
	w.unloadReason = "idle"
	return Step{Kind: UnloadModels, Reason: w.unloadReason}, true
}

// maybeReturnToGPU unloads models that a GPU failure moved to the CPU,
// once they have run there for CacheIdleTimeout and the GPU preflight
// passes again: the next job loads them on the GPU. It is asked only
// between jobs (no claim held). A GPU that fails them again moves them
// back to the CPU for another CacheIdleTimeout, so a flaky GPU costs one
// model load per period; CacheIdleTimeout 0 (no eviction) keeps them on
// the CPU until the worker restarts.
func (w *Worker) maybeReturnToGPU(now time.Time) (Step, bool) {
	if !w.modelsLoaded || w.onCPUSince.IsZero() || w.cfg.CacheIdleTimeout <= 0 {
		return Step{}, false
	}
	if now.Sub(w.onCPUSince) < w.cfg.CacheIdleTimeout {
		return Step{}, false
	}
	w.unloadReason = "back to the GPU after a fallback to the CPU"
	return Step{Kind: UnloadModels, Reason: w.unloadReason}, true
}

// ModelsLoaded reports the outcome of a LoadModels step. A load failure
// releases the claim and counts as an error (a worker that cannot load its
// models exits after MaxConsecutiveErrors and the restart policy applies).
func (w *Worker) ModelsLoaded(ctx context.Context, now time.Time, err error) {
	if err == nil {
		w.modelsLoaded = true
		w.sink.Emit(event.Event{T: now, Event: event.ModelsLoaded, Component: w.cfg.Component})
		return
	}
	w.tel.Errors++
	w.tel.ConsecutiveErrors++
	w.sink.Emit(event.Event{T: now, Event: event.ModelLoadFailed, Component: w.cfg.Component, Reason: err.Error()})
	w.releaseHeld(ctx, now, "model load failed")
	w.waitUntil, w.waitDep = now.Add(w.depFailed(depModels)), depModels
}

// ModelsUnloaded reports that an UnloadModels step is done.
func (w *Worker) ModelsUnloaded(now time.Time) {
	w.modelsLoaded, w.modelsChanged = false, false
	w.onCPUSince = time.Time{}
	w.idleSince = now
	w.sink.Emit(event.Event{T: now, Event: event.ModelsUnloaded, Component: w.cfg.Component, Reason: w.unloadReason})
	w.unloadReason = ""
}

// JobDone reports the outcome of a Run step and writes it to the store.
func (w *Worker) JobDone(ctx context.Context, now time.Time, r Result) {
	if !w.running || w.job == nil {
		panic("worker: JobDone without a running job")
	}
	w.running = false
	if r.FellBack && w.onCPUSince.IsZero() && w.modelsLoaded {
		w.onCPUSince = now
	}
	if r.ModelsChanged && w.modelsLoaded {
		w.modelsChanged = true
	}
	f := w.job
	ref := store.Ref{FileKey: f.Key, WorkerID: w.cfg.WorkerID}
	ms := float64(now.Sub(w.jobStart)) / float64(time.Millisecond)
	p := &pendingWrite{ref: ref, path: f.Path}
	switch {
	case w.jobKind != store.JobTag && r.Class != Lost && r.Class != ServiceDown:
		w.otherJobDone(now, f, r, ms, p)
	case r.Class == OK:
		w.jobOK(ms)
		p.completion = &store.Completion{Tags: r.Tags, Version: r.Version, At: now, Rewritten: r.Rewritten,
			Claimed: &store.Stat{Size: f.Size, MtimeMs: f.MtimeMs}}
		p.vector = r.Vector
		p.info = r.Info
		p.kind = event.Tagged
	case r.Class == Permanent:
		w.tel.Errors++
		if r.Missing {
			p.update = &store.FileUpdate{Attempts: f.Attempts, Missing: true, LastError: "missing: " + r.Reason, Checkpoint: r.Checkpoint}
			p.kind, p.reason = event.Release, "missing: "+r.Reason
			break
		}
		p.update = &store.FileUpdate{Failed: true, LastError: "permanent: " + r.Reason, Checkpoint: r.Checkpoint}
		p.kind, p.reason = event.FileFailed, "permanent: "+r.Reason
	case r.Class == Transient:
		w.tel.Errors++
		w.tel.ConsecutiveErrors++
		attempts := f.Attempts + 1
		upd := &store.FileUpdate{Attempts: attempts, LastError: "transient: " + r.Reason, Checkpoint: r.Checkpoint}
		if attempts >= w.cfg.TransientRetries {
			upd.Failed = true
			p.kind, p.reason = event.FileFailed, fmt.Sprintf("transient: %s (after %d attempts)", r.Reason, attempts)
		} else {
			upd.NextRetryAt = now.Add(w.retryDelay(attempts))
			p.kind, p.reason = event.FileRetry, "transient: "+r.Reason
		}
		p.update = upd
	case r.Class == ServiceDown:
		dep := r.Dependency
		if _, ok := w.breakers[dep]; !ok {
			dep = DepDecoder
		}
		w.breakers[dep].Failure(now)
		w.waitUntil, w.waitDep = now.Add(w.depFailed(dep)), dep
		if r.Checkpoint != "" {
			p.update = &store.FileUpdate{Attempts: f.Attempts, Checkpoint: r.Checkpoint, LastError: "service_down: " + r.Reason}
		}
		p.kind, p.reason = event.Release, "service_down: "+dep+": "+r.Reason
	case r.Class == Lost:
		// The claim is gone, and with it any right to the file: the fence
		// held the write back, and there is nothing to record. The release
		// (conditional: it changes nothing unless this worker holds the
		// claim) is only a guard against a store that answered wrongly: a
		// claim of this worker left behind would be renewed by its owner
		// for as long as the worker lives.
		w.sink.Emit(event.Event{T: now, Event: event.Release, Component: w.cfg.Component, File: f.Key, Worker: w.cfg.WorkerID,
			Reason: "claim lost before the tag write; result discarded, file untouched: " + r.Reason})
		_ = w.store.Release(ctx, ref, nil)
		p = nil
	default:
		w.tel.Errors++
		w.tel.ConsecutiveErrors++
		p.update = &store.FileUpdate{Attempts: f.Attempts + 1, LastError: "unknown error class " + string(r.Class)}
		p.kind, p.reason = event.Release, "unknown error class"
	}
	if p != nil {
		if p.update != nil {
			// The update describes the content the job claimed; a file a
			// scan found changed meanwhile does not take it.
			p.update.Claimed = &store.Stat{Size: f.Size, MtimeMs: f.MtimeMs}
		}
		w.pending = p
		w.flushPending(ctx, now)
	} else {
		w.job = nil
	}
	if w.phase != health.Stopping {
		w.idleSince = now
		w.setPhase(now, health.Idle)
	}
}

// retryDelay is min(TransientBase·2^(attempts-1), TransientMax).
func (w *Worker) retryDelay(attempts int) time.Duration {
	d := float64(w.cfg.TransientBase) * math.Pow(2, float64(attempts-1))
	if d > float64(w.cfg.TransientMax) {
		return w.cfg.TransientMax
	}
	return time.Duration(d)
}

// flushPending writes the pending job result; true when nothing is pending.
func (w *Worker) flushPending(ctx context.Context, now time.Time) bool {
	p := w.pending
	if p == nil {
		return true
	}
	p.tries++
	var err error
	switch {
	case p.completion != nil:
		err = w.store.Complete(ctx, p.ref, *p.completion)
	case p.vectorOnly:
		// Put again on a retry: a vector replaces the one put before.
		if err = w.store.PutTrackVector(ctx, p.ref.FileKey, p.modelSet, p.vector); err == nil {
			err = w.store.Release(ctx, p.ref, nil)
		}
	default:
		err = w.store.Release(ctx, p.ref, p.update)
	}
	switch {
	case err == nil:
		w.storeOK()
		if p.completion != nil && p.vector != nil {
			w.putVector(ctx, now, p.ref.FileKey, p.completion.Version, p.vector)
		}
		if p.completion != nil && p.info != nil {
			w.putInfo(ctx, now, p.ref.FileKey, *p.info)
		}
		ev := event.Event{T: now, Event: p.kind, Component: w.cfg.Component, File: p.ref.FileKey, Worker: p.ref.WorkerID, Reason: p.reason}
		if p.kind == event.FileFailed || p.kind == event.FileRetry {
			ev.Path = p.path
		}
		w.sink.Emit(ev)
	case p.doubtful && errors.Is(err, store.ErrClaimLost):
		w.storeOK() // the claim was never made
	case errors.Is(err, store.ErrClaimLost):
		w.storeOK()
		w.sink.Emit(event.Event{T: now, Event: event.Release, Component: w.cfg.Component, File: p.ref.FileKey, Worker: p.ref.WorkerID,
			Reason: "claim lost, or the file changed under it, before the result was written; result discarded"})
	case errors.Is(err, store.ErrNotFound):
		// The file's record went (a scan that no longer found it was
		// forgotten) while the job ran; the store dropped the claim.
		w.storeOK()
		w.sink.Emit(event.Event{T: now, Event: event.Release, Component: w.cfg.Component, File: p.ref.FileKey, Worker: p.ref.WorkerID,
			Reason: "the file's record is gone from the store; result discarded"})
	default:
		w.storeFailure(now, err)
		return false
	}
	w.pending = nil
	w.job = nil
	return true
}

// putVector stores a completed file's track vector. The tags are
// recorded already: a vector the store does not take fails nothing and is
// not retried (the file is left without a vector, as one tagged before
// vectors were kept); it is counted (VectorsUnstored) and reported as a
// store_error event, and the store's breaker is left alone.
func (w *Worker) putVector(ctx context.Context, now time.Time, key, modelSet string, vec []float32) {
	if err := w.store.PutTrackVector(ctx, key, modelSet, vec); err != nil {
		w.vectorsUnstored++
		w.sink.Emit(event.Event{T: now, Event: event.StoreError, Component: w.cfg.Component, File: key,
			Reason: "store track vector: " + err.Error()})
	}
}

// putInfo stores a completed file's info (artist, title, album,
// duration). As a vector, an info the store does not take fails nothing
// and is not retried: it is reported as a store_error event.
func (w *Worker) putInfo(ctx context.Context, now time.Time, key string, info store.FileInfo) {
	if err := w.store.PutFileInfo(ctx, key, info); err != nil {
		w.sink.Emit(event.Event{T: now, Event: event.StoreError, Component: w.cfg.Component, File: key,
			Reason: "store file info: " + err.Error()})
	}
}

// VectorsUnstored is how many track vectors the store did not take after
// their file's completion (putVector).
func (w *Worker) VectorsUnstored() int64 { return w.vectorsUnstored }

// releaseHeld releases the claimed file without changing it.
func (w *Worker) releaseHeld(ctx context.Context, now time.Time, reason string) {
	if w.job == nil {
		return
	}
	w.pending = &pendingWrite{ref: store.Ref{FileKey: w.job.Key, WorkerID: w.cfg.WorkerID}, kind: event.Release, reason: reason}
	w.flushPending(ctx, now)
}

func (w *Worker) enabled(ctx context.Context) (bool, error) {
	v, ok, err := w.store.GetMeta(ctx, store.MetaWorkerEnabled)
	if err != nil {
		return true, err
	}
	return store.Enabled(v, ok), nil
}

func (w *Worker) storeOK() {
	w.breakers[DepStore].Success()
	if w.svcDep == DepStore {
		w.svcFails = 0
	}
}

func (w *Worker) storeFailure(now time.Time, err error) {
	w.breakers[DepStore].Failure(now)
	w.sink.Emit(event.Event{T: now, Event: event.StoreError, Component: w.cfg.Component, Reason: err.Error()})
}

func (w *Worker) storeFault(ctx context.Context, now time.Time, err error) Step {
	w.storeFailure(now, err)
	return w.backOff(now, DepStore)
}

func (w *Worker) backOff(now time.Time, dep string) Step {
	return w.backOffReason(now, dep, dep+" unavailable")
}

func (w *Worker) backOffReason(now time.Time, dep, why string) Step {
	w.waitUntil, w.waitDep = now.Add(w.depFailed(dep)), dep
	if b := w.breakers[dep]; b != nil && !b.RetryAt().IsZero() && b.RetryAt().After(w.waitUntil) {
		w.waitUntil = b.RetryAt()
	}
	w.setPhase(now, health.BackingOff)
	return w.backoffWait(now, why)
}

// depFailed records one more failure of dep and returns how long to wait:
// min(ServiceBackoff·2^k, ServiceMax) for the k-th consecutive failure of the
// same dependency. Only a success of that dependency (or a successful job)
// resets k.
func (w *Worker) depFailed(dep string) time.Duration {
	if dep != w.svcDep {
		w.svcDep, w.svcFails = dep, 0
	}
	d := w.serviceWait()
	w.svcFails++
	return d
}

// serviceWait is min(ServiceBackoff·2^svcFails, ServiceMax).
func (w *Worker) serviceWait() time.Duration {
	d := w.cfg.ServiceBackoff
	for i := 0; i < w.svcFails && d < w.cfg.ServiceMax; i++ {
		d *= 2
	}
	return min(d, w.cfg.ServiceMax)
}
