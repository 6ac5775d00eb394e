package driver

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/nomarr/nomarr/core/frame"
	"github.com/nomarr/nomarr/core/worker"
)

// WorkerIO is what a worker process is connected to.
type WorkerIO struct {
	Frames  io.Writer       // frame pipe (fd 3)
	Control io.Reader       // control pipe (fd 4): EOF = main process gone
	Term    <-chan struct{} // closed or signalled on SIGTERM
}

// RunWorker runs the worker loop until the core says Exit, and returns the
// exit code. A model load, like a job, runs beside the loop: a stop or the
// main process's death while it runs releases the claimed file and returns
// at once (worker.LeaveLoading), the load still running. The frame writer runs on its own goroutine every frameInterval,
// independent of the job, so a long job keeps framing; a failed frame write or
// EOF on the control pipe tells the core the main process died, and the core
// finishes the current job before exiting 0, renewing its own lease on the
// same ticker meanwhile (worker.KeepLease). An orphan's job whose progress
// stands still for stall_after is abandoned (worker.OrphanAbandons):
// RunWorker returns its exit code at once, the job still running, for the
// caller to exit the process.
//
// The frame writer never waits for a call into the core: such a call may be
// waiting on a slow store (up to the store's own timeout), and a worker that
// is alive must not look hung for it. While the loop is inside one, the
// writer sends the last frame it built again (same seq: the state was not
// read again). The first frame is built before the loop starts.
func RunWorker(ctx context.Context, w *worker.Worker, an worker.Analyzer, models worker.Models, wio WorkerIO,
	clk clock.Clock, frameInterval time.Duration, log *slog.Logger) int {
	if clk == nil {
		clk = clock.New()
	}
	r := &workerRun{ctx: ctx, w: w, an: an, models: models, clk: clk, log: log,
		wake: make(chan struct{}, 1), abandon: make(chan worker.Step, 1),
		stopFrames: make(chan struct{}), framesDone: make(chan struct{})}
	r.last = w.Frame() // the first frame; nothing else runs yet
	go r.writeFrames(wio.Frames, frameInterval)
	if wio.Control != nil {
		go r.watchControl(wio.Control)
	}
	if wio.Term != nil {
		go r.watchTerm(wio.Term) // ends with RunWorker when no stop comes
	}
	for {
		var s worker.Step
		r.locked(func() { s = w.Step(ctx, clk.Now()) })
		var ex worker.Step
		left := false
		switch s.Kind {
		case worker.Wait:
			r.wait(s.Until)
		case worker.LoadModels:
			ex, left = r.loadModels()
		case worker.UnloadModels:
			models.Unload()
			r.locked(func() { w.ModelsUnloaded(clk.Now()) })
		case worker.Run:
			ex, left = r.runJob(s.Job)
		case worker.Exit:
			ex, left = s, true
		}
		if left {
			return r.exit(ex)
		}
	}
}

// workerRun is one RunWorker: the core's worker, what it drives, and the
// goroutines beside the loop. mu serialises every call into w.
type workerRun struct {
	ctx    context.Context
	w      *worker.Worker
	an     worker.Analyzer
	models worker.Models
	clk    clock.Clock
	log    *slog.Logger

	mu         sync.Mutex
	wake       chan struct{} // a fact the loop must see now (stop, main death)
	diedOnce   sync.Once
	orphaned   atomic.Bool      // the core has been told the main process died
	abandon    chan worker.Step // an orphan's stalled job (worker.OrphanAbandons)
	stopFrames chan struct{}
	framesDone chan struct{}
	last       frame.Frame // the last frame built; the writer's own
}

// locked runs f holding the lock on the core's worker.
func (r *workerRun) locked(f func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f()
}

// poke wakes the loop without blocking.
func (r *workerRun) poke() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// mainDied tells the core, once, that the main process is gone.
func (r *workerRun) mainDied(why string) {
	r.diedOnce.Do(func() {
		r.locked(r.w.MainDied)
		r.orphaned.Store(true)
		r.log.Warn("main process gone: finishing the current job, then exiting", "why", why)
		r.poke()
	})
}

// writeFrames is the frame writer and, after main death, the keeper of the
// job's lease. It never waits for the lock: while the loop holds it, the
// last frame is sent again.
func (r *workerRun) writeFrames(out io.Writer, interval time.Duration) {
	defer close(r.framesDone)
	t := r.clk.Ticker(interval)
	defer t.Stop()
	var buf []byte
	writing := true
	for first := true; ; first = false {
		if !first && r.mu.TryLock() {
			r.last = r.w.Frame()
			r.mu.Unlock()
		}
		if writing {
			buf = frame.Append(buf[:0], &r.last)
			if _, err := out.Write(buf); err != nil {
				writing = false
				r.mainDied("frame write failed: " + err.Error())
			}
		}
		if r.orphaned.Load() { // KeepLease is a no-op until then; no frame waits for it
			r.keepLease()
		}
		select {
		case <-t.C:
		case <-r.stopFrames:
			return
		}
	}
}

// keepLease renews an orphan's lease and hands a stalled job to the loop.
func (r *workerRun) keepLease() {
	var s worker.Step
	var stalled bool
	r.locked(func() {
		r.w.KeepLease(r.ctx, r.clk.Now())
		s, stalled = r.w.OrphanAbandons(r.clk.Now())
	})
	if stalled {
		select {
		case r.abandon <- s:
		default:
		}
	}
}

// watchControl reads the control pipe until EOF: the main process died.
func (r *workerRun) watchControl(control io.Reader) {
	_, _ = io.Copy(io.Discard, control)
	r.mainDied("control pipe closed")
}

// watchTerm tells the core of a stop request, until the run ends.
func (r *workerRun) watchTerm(term <-chan struct{}) {
	select {
	case <-term:
	case <-r.stopFrames:
		return
	}
	r.locked(r.w.StopRequested)
	r.log.Info("stop requested: finishing the current job")
	r.poke()
}

// exit stops the frame writer and returns s's exit code.
func (r *workerRun) exit(s worker.Step) int {
	close(r.stopFrames)
	select { // a frame write blocked on a stopped parent must not keep us
	case <-r.framesDone:
	case <-r.clk.After(time.Second):
	}
	r.log.Info("worker exiting", "code", s.Code, "reason", s.Reason)
	return s.Code
}

// wait sleeps until the core's deadline, or until a fact wakes the loop.
func (r *workerRun) wait(until time.Time) {
	d := until.Sub(r.clk.Now())
	if d <= 0 {
		return
	}
	t := r.clk.Timer(d)
	select {
	case <-t.C:
	case <-r.wake:
		t.Stop()
	}
}

// loadModels runs the load beside the loop: a stop or the main process's
// death meanwhile releases the file at once (worker.LeaveLoading), whatever
// the load does. left: the worker must exit with ex.
func (r *workerRun) loadModels() (ex worker.Step, left bool) {
	loaded := make(chan error, 1)
	go func() { loaded <- r.models.Load(r.ctx) }()
	for {
		select {
		case err := <-loaded:
			r.locked(func() { r.w.ModelsLoaded(r.ctx, r.clk.Now(), err) })
			return worker.Step{}, false
		case <-r.wake:
			r.locked(func() { ex, left = r.w.LeaveLoading(r.ctx, r.clk.Now()) })
			if left {
				r.log.Warn("leaving while the models load", "reason", ex.Reason)
				return ex, true
			}
		}
	}
}

// runJob runs the job beside the loop, so that an orphan can leave a job
// that will never return (a hung inference call): the process's exit ends
// it. left: the worker must exit with ex.
func (r *workerRun) runJob(job worker.Job) (ex worker.Step, left bool) {
	job.Fence = func() error { // worker.Fence: the claim is still ours
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.w.Fence(r.ctx, r.clk.Now())
	}
	progress := func(p int64) { r.locked(func() { r.w.Progress(p) }) }
	done := make(chan worker.Result, 1)
	go func() { done <- r.an.Analyze(r.ctx, job, progress) }()
	select {
	case res := <-done:
		r.locked(func() { r.w.JobDone(r.ctx, r.clk.Now(), res) })
		return worker.Step{}, false
	case ex := <-r.abandon:
		r.log.Error("abandoning the current job", "reason", ex.Reason)
		return ex, true
	}
}
