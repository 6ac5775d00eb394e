package sim

import (
	"time"

	"github.com/nomarr/nomarr/core/health"
	"github.com/nomarr/nomarr/core/store"
)

// Pause shown: an idle worker, or one backing off for anything but the
// store, shows paused within pauseShownWithin of a pause (docs/design.md §8: "if
// worker_enabled is false → paused"; the flag is polled, and a poll takes
// effect in under 2 s).
//
// The rule in the code: a worker reads worker_enabled at every step before
// it would claim, and an idle one steps at least every paused_poll (1 s)
// between the discoveries of its idle poll, however long that has grown
// (worker.Step). Every other way into idle steps at once: a worker that
// finishes a job, boots or unloads its models reads the flag in that same
// instant, and one that leaves a backoff reads it before it is idle again.
// A read the store does not answer backs the worker off (backing_off, not
// idle). A worker backing off for a dependency other than the store (the
// GPU, the decoder, its models) reads the flag at least every paused_poll
// too, until a read fails; one backing off for the store reads nothing
// until its backoff ends, at most storeBackoffMax after the failed call.
//
// Property: from the first event at which the store's worker_enabled reads
// false with no fault since (c.faultAt: the store down or slow or just
// back, an operation failed by injection or whose answer was lost, any
// host cut off, a hung worker holding the store's lock), as long as it
// reads false, no worker sits in phase idle more than pauseShownWithin
// later, nor in phase backing_off once the last fault is also more than
// storeBackoffMax + pauseShownWithin past (every store backoff, and every
// non-store backoff that stopped reading after a failed read, has ended
// by then), counting only workers that step: the process alive, booted,
// not stopped (SIGSTOP), neither running a job nor loading models, not
// told of its main process's death, of a main process alive and not
// stopping. The phase is the core's, which each frame carries. A worker
// that reads the flag only at its discoveries shows idle for up to
// idle_poll_max; one that reads it only when a GPU backoff ends shows
// backing_off for up to the breaker's cool-down.
type pauseWatch struct {
	since   time.Time // the start of the current window (zero: none)
	flagged bool      // the current window was reported
}

// pauseShownWithin is how soon after a pause an idle worker shows paused.
const pauseShownWithin = 2 * time.Second

// pauseAfterEvent checks the window; called after c.faultAt is brought up
// to date.
func (c *checker) pauseAfterEvent() {
	w, p := c.w, &c.pause
	if v, ok := w.Store.MetaValue(store.MetaWorkerEnabled); store.Enabled(v, ok) {
		*p = pauseWatch{}
		return
	}
	if p.since.IsZero() || !c.faultAt.Before(p.since) {
		p.since, p.flagged = w.now, false
		return
	}
	if p.flagged || w.now.Sub(p.since) <= pauseShownWithin {
		return
	}
	if idle := c.idleWorker(); idle != "" {
		p.flagged = true
		c.violate("%s still idle %s after the cluster was paused (since %s, no fault), want paused within %s",
			idle, w.now.Sub(p.since), p.since.Sub(w.start), pauseShownWithin)
		return
	}
	if w.now.Sub(c.faultAt) <= c.storeBackoffMax()+pauseShownWithin {
		return
	}
	if b := c.firstIn(health.BackingOff, false); b != "" {
		p.flagged = true
		last := "none"
		if !c.faultAt.IsZero() {
			last = c.faultAt.Sub(w.start).String()
		}
		c.violate("%s still backing off %s after the cluster was paused (since %s, last store fault: %s), want paused within %s",
			b, w.now.Sub(p.since), p.since.Sub(w.start), last, pauseShownWithin)
	}
}

// idleWorker names a worker that steps (see pauseWatch) and shows idle,
// or "": readyWorker without the GPU preflight, which a pause precedes.
func (c *checker) idleWorker() string { return c.firstIdle(false) }

// storeBackoffMax is the longest a worker backs off after a failed store
// call: its service backoff's cap or its breaker's cool-down, whichever is
// longer (the configuration the world gives its workers).
func (c *checker) storeBackoffMax() time.Duration {
	wc := c.w.cfg.Worker("", "", "", 0)
	return max(wc.ServiceMax, wc.Breaker.Cooldown)
}
