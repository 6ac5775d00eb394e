package worker

import (
	"context"
	"time"
)

// Orphan lease keeping. While the main process lives, it renews the leases of
// its workers (DESIGN §7). Once it is gone, nobody does, yet the worker goes
// on with its current job (DESIGN §8): without a renewal the claim would
// expire after lease_ttl, periodic cleanup (of a restarted main process or
// another host) would delete it, and the file could be claimed and analyzed a
// second time while the first run is still writing tags into it.
//
// So after MainDied, a worker that still holds a claim (a job running, not
// yet started, or finished with its result write pending) renews its own
// lease: at once, then every LeaseTTL/3, in one write keyed by its worker
// id; a failed renewal is retried after ServiceBackoff. Drivers call
// KeepLease periodically (the frame interval is fine) from the moment the
// main process is gone, including while a Run step is in progress; it does
// nothing in any other state.

// KeepLease renews the worker's own lease when it is orphaned, holds a claim
// and the renewal is due. It reports whether it wrote to the store.
func (w *Worker) KeepLease(ctx context.Context, now time.Time) bool {
	if !w.mainDead || (w.job == nil && w.pending == nil) || now.Before(w.renewAt) {
		return false
	}
	if _, err := w.store.RenewLeases(ctx, []string{w.cfg.WorkerID}, now.Add(w.cfg.LeaseTTL)); err != nil {
		w.renewAt = now.Add(w.cfg.ServiceBackoff)
		return true
	}
	w.renewAt = now.Add(w.cfg.LeaseTTL / 3)
	return true
}
