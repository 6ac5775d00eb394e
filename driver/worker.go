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
	var mu sync.Mutex // serialises every call into w
	wake := make(chan struct{}, 1)
	poke := func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	}
	var diedOnce sync.Once
	var orphaned atomic.Bool // the core has been told the main process died
	mainDied := func(why string) {
		diedOnce.Do(func() {
			mu.Lock()
			w.MainDied()
			mu.Unlock()
			orphaned.Store(true)
			log.Warn("main process gone: finishing the current job, then exiting", "why", why)
			poke()
		})
	}
	abandon := make(chan worker.Step, 1) // an orphan's stalled job (worker.OrphanAbandons)
	stopFrames := make(chan struct{})
	framesDone := make(chan struct{})
	last := w.Frame() // the first frame; nothing else runs yet
	// The frame writer; after main death, the keeper of the job's lease.
	go func() {
		defer close(framesDone)
		t := clk.Ticker(frameInterval)
		defer t.Stop()
		var buf []byte
		writing := true
		for first := true; ; first = false {
			if !first && mu.TryLock() {
				last = w.Frame()
				mu.Unlock()
			}
			if writing {
				buf = frame.Append(buf[:0], &last)
				if _, err := wio.Frames.Write(buf); err != nil {
					writing = false
					mainDied("frame write failed: " + err.Error())
				}
			}
			if orphaned.Load() { // KeepLease is a no-op until then; no frame waits for it
				mu.Lock()
				w.KeepLease(ctx, clk.Now())
				s, stalled := w.OrphanAbandons(clk.Now())
				mu.Unlock()
				if stalled {
					select {
					case abandon <- s:
					default:
					}
				}
			}
			select {
			case <-t.C:
			case <-stopFrames:
				return
			}
		}
	}()
	if wio.Control != nil {
		go func() { // control watcher
			_, _ = io.Copy(io.Discard, wio.Control)
			mainDied("control pipe closed")
		}()
	}
	if wio.Term != nil {
		go func() { // ends with RunWorker when no stop comes
			select {
			case <-wio.Term:
			case <-stopFrames:
				return
			}
			mu.Lock()
			w.StopRequested()
			mu.Unlock()
			log.Info("stop requested: finishing the current job")
			poke()
		}()
	}
	exit := func(s worker.Step) int {
		close(stopFrames)
		select { // a frame write blocked on a stopped parent must not keep us
		case <-framesDone:
		case <-clk.After(time.Second):
		}
		log.Info("worker exiting", "code", s.Code, "reason", s.Reason)
		return s.Code
	}
	progress := func(p int64) {
		mu.Lock()
		w.Progress(p)
		mu.Unlock()
	}
	for {
		mu.Lock()
		s := w.Step(ctx, clk.Now())
		mu.Unlock()
		switch s.Kind {
		case worker.Wait:
			d := s.Until.Sub(clk.Now())
			if d > 0 {
				t := clk.Timer(d)
				select {
				case <-t.C:
				case <-wake:
					t.Stop()
				}
			}
		case worker.LoadModels:
			// The load runs beside the loop too: a stop or the main
			// process's death meanwhile releases the file at once
			// (worker.LeaveLoading), whatever the load does.
			loaded := make(chan error, 1)
			go func() { loaded <- models.Load(ctx) }()
			for waiting := true; waiting; {
				select {
				case err := <-loaded:
					mu.Lock()
					w.ModelsLoaded(ctx, clk.Now(), err)
					mu.Unlock()
					waiting = false
				case <-wake:
					mu.Lock()
					ex, leave := w.LeaveLoading(ctx, clk.Now())
					mu.Unlock()
					if leave {
						log.Warn("leaving while the models load", "reason", ex.Reason)
						return exit(ex)
					}
				}
			}
		case worker.UnloadModels:
			models.Unload()
			mu.Lock()
			w.ModelsUnloaded(clk.Now())
			mu.Unlock()
		case worker.Run:
			// The job runs beside the loop, so that an orphan can leave a job
			// that will never return (a hung inference call): the process's
			// exit ends it.
			job := s.Job
			job.Fence = func() error { // worker.Fence: the claim is still ours
				mu.Lock()
				defer mu.Unlock()
				return w.Fence(ctx, clk.Now())
			}
			done := make(chan worker.Result, 1)
			go func() { done <- an.Analyze(ctx, job, progress) }()
			select {
			case res := <-done:
				mu.Lock()
				w.JobDone(ctx, clk.Now(), res)
				mu.Unlock()
			case ex := <-abandon:
				log.Error("abandoning the current job", "reason", ex.Reason)
				return exit(ex)
			}
		case worker.Exit:
			return exit(s)
		}
	}
}
