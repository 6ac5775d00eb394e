package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nomarr/nomarr/core/event"
	"github.com/nomarr/nomarr/core/store"
)

// The write fence. A job ends by writing tags into the user's file: the one
// step no later write to the store can take back. A worker may only take it
// while it holds the file's claim, and a claim can be taken away behind a
// worker's back: nobody renewed its lease for lease_ttl (its host cut off
// from the store, or its main process gone and its own renewals failing),
// claim cleanup on another host deleted it, and another worker may have
// claimed the file since. The completion that follows the write would be
// refused (store.ErrClaimLost), but by then the file is written twice.
//
// So right before that step the analyzer calls the job's fence
// (Job.Fence, which drivers bind to Worker.Fence). It extends the claim's
// lease to now+LeaseTTL with one conditional store write (KeepClaim), done
// only if the worker still holds it:
//   - done: the claim is still this worker's, and stays so for a whole
//     lease_ttl (30 s by default; a tag write takes well under a second on
//     a local disk) as long as the hosts' clocks agree; the step goes
//     ahead. A write that outlasts lease_ttl is not covered;
//   - refused: the claim is gone (an error wrapping store.ErrClaimLost); the
//     step must not happen, and the job ends with FenceFailed's result,
//     class Lost: the file is left untouched to its new holder and nothing
//     is written to the store;
//   - a store error: whether the claim is still held is unknown, so the
//     step must not happen either; the job ends service_down (store) with
//     its checkpoint, so that the retry resumes at the write.
//
// A lease that ran out but whose claim cleanup has not deleted yet is still
// this worker's (a claim's key is unique: nobody else can have claimed the
// file meanwhile), so renewing it is right.

// Fence confirms that the worker still holds the claim of its running job
// and extends the claim's lease to now+LeaseTTL (see the comment above). It
// writes to the store only while a job runs and has not been abandoned.
func (w *Worker) Fence(ctx context.Context, now time.Time) error {
	if !w.running || w.job == nil {
		return errors.New("worker: fence without a running job")
	}
	key := w.job.Key
	if w.abandoned {
		return fmt.Errorf("job %s abandoned, its lease left to expire: %w", key, store.ErrClaimLost)
	}
	err := w.store.KeepClaim(ctx, store.Ref{FileKey: key, WorkerID: w.cfg.WorkerID}, now.Add(w.cfg.LeaseTTL))
	if errors.Is(err, store.ErrClaimLost) {
		return fmt.Errorf("claim of %s no longer held by %s: %w", key, w.cfg.WorkerID, err)
	}
	if err != nil {
		// Reported like every failed store call (the operation first, the
		// file apart: logs hold back repeats per operation); the breaker
		// hears of it from the job's result (JobDone).
		w.sink.Emit(event.Event{T: now, Event: event.StoreError, Component: w.cfg.Component, File: key, Reason: "confirm claim: " + err.Error()})
		return fmt.Errorf("confirm the claim of %s: %w", key, err)
	}
	if w.mainDead { // the orphan's own renewal (lease.go) is done for now
		w.renewAt = now.Add(w.cfg.LeaseTTL / 3)
	}
	return nil
}

// FenceFailed is the result of a job that its fence stopped before the
// write: class Lost for a claim that is gone, else service_down (store)
// keeping checkpoint (the steps done so far) for the retry.
func FenceFailed(err error, checkpoint string) Result {
	if errors.Is(err, store.ErrClaimLost) {
		return Result{Class: Lost, Reason: err.Error()}
	}
	return Result{Class: ServiceDown, Dependency: DepStore, Reason: "tag write held back: " + err.Error(), Checkpoint: checkpoint}
}
