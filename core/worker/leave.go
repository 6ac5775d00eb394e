package worker

import (
	"context"
	"time"

	"github.com/nomarr/nomarr/core/event"
)

// Leaving during a model load. The first claim makes the worker load its
// models (a LoadModels step), which can take minutes on a cold start and
// may never return (a wedged GPU driver). The job has not started, so when
// the main process dies or a stop is requested meanwhile there is nothing
// to finish: the file is released at once rather than after the load. An
// orphan must not wait for the load anyway: no owner's cold_start_max
// bounds it any more, and its own lease keeping would hold the file for as
// long as the load hangs.
//
// Drivers carry a LoadModels step out beside their loop and call
// LeaveLoading when they learn of the main process's death or a stop while
// it runs; on true they carry the Exit step out at once, the load still
// running (the process's end ends it).

// LeaveLoading reports whether the worker leaves while its models load,
// with the Exit step to carry out. It releases the claimed file first; a
// release the store does not take is given up (the owner releases a dead
// worker's claims, and after main death nobody renews the lease, so it
// expires). It must be called only while a LoadModels step is being
// carried out; it answers false until MainDied or StopRequested.
func (w *Worker) LeaveLoading(ctx context.Context, now time.Time) (Step, bool) {
	if !w.mainDead && !w.stopping {
		return Step{}, false
	}
	w.releaseHeld(ctx, now, "leaving while the models loaded: the job never started")
	if w.job != nil {
		w.sink.Emit(event.Event{T: now, Event: event.StoreError, Component: w.cfg.Component, File: w.job.Key,
			Reason: "giving up the release; the lease expiry returns the file"})
		w.pending, w.job = nil, nil
	}
	return w.exit(0, w.leaveReason()), true
}
