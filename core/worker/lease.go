package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nomarr/nomarr/core/store"
)

// Orphan lease keeping. While the main process lives, it renews the leases of
// its workers (docs/design.md §7). Once it is gone, nobody does, yet the worker goes
// on with its current job (docs/design.md §8): without a renewal the claim would
// expire after lease_ttl, periodic cleanup (of a restarted main process or
// another host) would delete it, and the file could be claimed and analyzed a
// second time while the first run is still writing tags into it.
//
// So after MainDied, a worker that still holds a claim (a job running, not
// yet started, or finished with its result write pending) renews its own
// lease: at once, then every LeaseTTL/3, in one conditional write of that
// claim (KeepClaim); a failed renewal is retried after ServiceBackoff.
// Drivers call KeepLease periodically (the frame interval is fine) from the moment the
// main process is gone, including while a Run step is in progress; it does
// nothing in any other state.

// KeepLease renews the worker's own lease when it is orphaned, holds a claim
// and the renewal is due. It reports whether it wrote to the store. An
// abandoned job's lease is never renewed.
func (w *Worker) KeepLease(ctx context.Context, now time.Time) bool {
	// A claim is held exactly while w.job is set: a pending result write
	// keeps the job until it is written (flushPending).
	if !w.mainDead || w.abandoned || w.job == nil || now.Before(w.renewAt) {
		return false
	}
	err := w.store.KeepClaim(ctx, store.Ref{FileKey: w.job.Key, WorkerID: w.cfg.WorkerID}, now.Add(w.cfg.LeaseTTL))
	if err != nil && !errors.Is(err, store.ErrClaimLost) {
		w.renewAt = now.Add(w.cfg.ServiceBackoff)
		return true
	}
	if err != nil && w.running && w.abandonWhy == "" {
		// Its renewals failed for lease_ttl (a store outage) and cleanup
		// took the claim: the job goes on for nobody (OrphanAbandons).
		w.abandonWhy = fmt.Sprintf("claim of %s lost while the main process was gone (its lease ran out during a store outage): job abandoned",
			w.job.Key)
		w.abandonCode = 0
	}
	w.renewAt = now.Add(w.cfg.LeaseTTL / 3)
	return true
}

// The orphan's stall watch. While the main process lives, its owner kills a
// job whose progress stands still for stall_after (docs/design.md §4): a hung
// inference call, a decoder that never returns. An orphan has no owner, and
// renewing its own lease for a job that will never end would hold the file
// for good. So drivers call OrphanAbandons next to KeepLease: once the
// job's progress has stood still for StallAfter, counted from the first
// call after the main process died (earlier progress is unknown to the
// worker), the worker abandons it. It stops renewing the lease, so the
// lease expires and claim cleanup returns the file, and it answers an Exit
// step (code 1) that the driver carries out at once, job still running:
// the process's end ends the job. Main death alone never ends a job; a job
// without progress does.
//
// A job whose claim is gone is abandoned too, at once and with code 0: an
// orphan's renewal that finds no claim of its own (KeepLease) means its
// lease ran out while the store was unreachable and cleanup (a restarted
// main process, another host) deleted it; the file may be another worker's
// now, and its fence (fence.go) would hold the write back anyway.

// OrphanAbandons reports whether an orphaned worker must leave its running
// job (no progress for StallAfter, or its claim gone), with the Exit step
// to carry out. Once it has said so, it says so on every later call.
func (w *Worker) OrphanAbandons(now time.Time) (Step, bool) {
	if !w.mainDead || !w.running {
		return Step{}, false
	}
	if w.abandonWhy == "" {
		if w.cfg.StallAfter <= 0 {
			return Step{}, false
		}
		if w.orphanSince.IsZero() || w.progress != w.orphanProgress {
			w.orphanProgress, w.orphanSince = w.progress, now
			return Step{}, false
		}
		if now.Sub(w.orphanSince) < w.cfg.StallAfter {
			return Step{}, false
		}
		w.abandonWhy = fmt.Sprintf("job %s made no progress for %s after the main process died: abandoned, its lease left to expire",
			w.job.Key, w.cfg.StallAfter)
		w.abandonCode = 1
	}
	w.abandoned = true
	return w.exit(w.abandonCode, w.abandonWhy), true
}
