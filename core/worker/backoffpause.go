package worker

import (
	"context"
	"time"

	"github.com/nomarr/nomarr/core/health"
)

// backingOff is a step of a worker backing off until waitUntil for
// waitDep (docs/design.md §8: "if worker_enabled is false → paused"; pause is
// cluster-wide).
//
// Invariants:
//   - a backoff for a dependency other than the store (the GPU preflight,
//     a service_down decoder or analyzer, a failed model load, an open
//     GPU or decoder breaker) reads the pause flag at each step and waits
//     at most PausedPoll before the next (backoffWait), so a pause shows
//     as phase paused within PausedPoll and a resume as backing_off again;
//     the read changes nothing else: the deadline, the backoff exponent
//     and the GPU and decoder breakers stay as they were, and the step at
//     the deadline is the one it would have been without the reads;
//   - a backoff for the store reads nothing until its deadline: the store
//     did not answer, and its backoff and breaker are there so that it is
//     not asked again meanwhile. Its open breaker is a store backoff too
//     (step 4 looks at it first);
//   - the flag read is a store read like any other: an answer closes the
//     store's breaker and starts the store's backoff over (storeOK), as
//     an idle worker's does; a failure is one store_error and one failure
//     of the store's breaker, the worker shows backing_off, and it reads
//     no more until the deadline, which stays as it was: the store is
//     asked again when the backoff ends, as without the reads, and the
//     GPU's (or decoder's) backoff is neither lengthened nor started over.
func (w *Worker) backingOff(ctx context.Context, now time.Time, why string) Step {
	phase := health.BackingOff
	if w.readsFlag(now) {
		enabled, err := w.enabled(ctx)
		if err != nil {
			w.storeFailure(now, err)
			w.flagReadAt = w.waitUntil
		} else {
			w.storeOK()
			if !enabled {
				phase = health.Paused
			}
		}
	}
	w.setPhase(now, phase)
	return w.backoffWait(now, why)
}

// readsFlag reports whether a worker backing off reads the pause flag at
// a step at now: not for the store, nor after a failed read in this
// backoff.
func (w *Worker) readsFlag(now time.Time) bool {
	return w.waitDep != DepStore && !now.Before(w.flagReadAt)
}

// backoffWait waits for the backoff's deadline, or for the next pause flag
// read when the worker reads it (readsFlag), whichever is first.
func (w *Worker) backoffWait(now time.Time, why string) Step {
	s := Step{Kind: Wait, Until: w.waitUntil, Reason: why}
	if next := now.Add(w.cfg.PausedPoll); w.readsFlag(now) && next.Before(s.Until) {
		s.Until = next
	}
	return s
}
