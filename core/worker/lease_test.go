package worker_test

import (
	"testing"
	"time"

	"github.com/nomarr/nomarr/adapters/memstore"
	"github.com/nomarr/nomarr/core/worker"
)

// After main death a worker with a running job keeps its own lease: at
// once, then every lease_ttl/3, retrying sooner when the store fails; a
// cleanup past the original lease removes nothing; and it stops renewing
// once the claim is gone. Before main death it never writes.
func TestKeepLeaseAfterMainDeath(t *testing.T) {
	r := newRig(t, nil)
	ttl := worker.DefaultConfig(comp, wid).LeaseTTL
	r.addFiles("a")
	s := r.startJob(t0)
	lease := func() time.Time {
		c, ok := r.st.ClaimOf(s.Job.FileKey)
		if !ok {
			t.Fatal("claim gone")
		}
		return c.LeaseUntil
	}
	if r.w.KeepLease(r.ctx, at(time.Second)) {
		t.Fatal("renewed while the main process lives (its owner renews)")
	}
	r.w.MainDied()
	now := at(2 * time.Second)
	if !r.w.KeepLease(r.ctx, now) || !lease().Equal(now.Add(ttl)) {
		t.Fatalf("first renewal: lease until %s, want %s", lease().Sub(t0), now.Add(ttl).Sub(t0))
	}
	if r.w.KeepLease(r.ctx, now.Add(ttl/3-time.Millisecond)) {
		t.Fatal("renewed before lease_ttl/3")
	}
	// The job runs for 10 lease periods; cleanup keeps finding a live lease.
	for i := 1; i <= 30; i++ {
		now = at(2*time.Second + time.Duration(i)*ttl/3)
		if !r.w.KeepLease(r.ctx, now) {
			t.Fatalf("renewal %d not due at %s", i, now.Sub(t0))
		}
		if gone, err := r.st.CleanupClaims(r.ctx, now.Add(ttl/2)); err != nil || len(gone) != 0 {
			t.Fatalf("cleanup at renewal %d removed %v (%v)", i, gone, err)
		}
	}
	// A failed renewal is retried after ServiceBackoff, not lease_ttl/3.
	r.st.SetFault(memstore.Down)
	now = now.Add(ttl / 3)
	if !r.w.KeepLease(r.ctx, now) {
		t.Fatal("renewal not attempted")
	}
	r.st.SetFault(memstore.Healthy)
	backoff := worker.DefaultConfig(comp, wid).ServiceBackoff
	if r.w.KeepLease(r.ctx, now.Add(backoff-time.Millisecond)) || !r.w.KeepLease(r.ctx, now.Add(backoff)) {
		t.Fatal("failed renewal not retried after ServiceBackoff")
	}
	if !lease().Equal(now.Add(backoff).Add(ttl)) {
		t.Fatalf("lease after retry until %s", lease().Sub(t0))
	}
	// Job done: the claim is completed, nothing left to keep.
	now = now.Add(time.Minute)
	r.w.JobDone(r.ctx, now, ok())
	if r.w.KeepLease(r.ctx, now.Add(ttl)) {
		t.Fatal("renewed with no claim held")
	}
	if e := r.wantStep(now, worker.Exit); e.Code != 0 {
		t.Fatalf("exit %d", e.Code)
	}
}

// A result whose write is pending after main death still holds the claim,
// so its lease is kept while the write is retried.
func TestKeepLeaseWhileResultPending(t *testing.T) {
	r := newRig(t, nil)
	r.addFiles("a")
	s := r.startJob(t0)
	r.w.MainDied()
	r.st.SetFault(memstore.Down)
	r.w.JobDone(r.ctx, at(10*time.Second), ok())
	r.st.SetFault(memstore.Healthy)
	now := at(40 * time.Second) // past the owner's last lease
	if !r.w.KeepLease(r.ctx, now) {
		t.Fatal("no renewal while the result write is pending")
	}
	c, ok := r.st.ClaimOf(s.Job.FileKey)
	if !ok || !c.LeaseUntil.After(now) {
		t.Fatalf("claim %+v (held %v) not renewed", c, ok)
	}
}

// An orphan watches its own job for stalls, since no owner is left to: a
// job whose progress keeps growing runs on however long it takes, one whose
// progress stands still for stall_after is abandoned — an Exit step with
// code 1, no more lease renewals, so cleanup returns the file once the
// lease has run out. While the main process lives the owner does this, and
// the orphan watch stays quiet.
func TestOrphanAbandonsStalledJob(t *testing.T) {
	r := newRig(t, nil)
	cfg := worker.DefaultConfig(comp, wid)
	r.addFiles("a")
	r.startJob(t0)
	now := t0
	tick := func(d time.Duration) (worker.Step, bool) {
		now = now.Add(d)
		r.w.KeepLease(r.ctx, now)
		return r.w.OrphanAbandons(now)
	}
	if _, stalled := tick(cfg.StallAfter + time.Minute); stalled {
		t.Fatal("stalled while the main process lives (its owner watches)")
	}
	r.w.MainDied()
	p := int64(0)
	var last time.Time           // the tick that first saw the last progress
	for i := 0; i < 12*25; i++ { // 25 min of a slow job that keeps progressing
		grew := i%12 == 0
		if grew {
			p++
			r.w.Progress(p)
		}
		if s, stalled := tick(5 * time.Second); stalled {
			t.Fatalf("a progressing job abandoned at %s: %+v", now.Sub(t0), s)
		}
		if grew {
			last = now
		}
	}
	// Now the progress stands still.
	var exit worker.Step
	for {
		s, stalled := tick(5 * time.Second)
		if stalled {
			exit = s
			break
		}
		if now.Sub(last) > cfg.StallAfter+2*time.Minute {
			t.Fatal("a job without progress never abandoned")
		}
	}
	if exit.Kind != worker.Exit || exit.Code != 1 {
		t.Fatalf("abandon step = %+v, want Exit code 1", exit)
	}
	if d := now.Sub(last); d < cfg.StallAfter || d > cfg.StallAfter+5*time.Second {
		t.Fatalf("abandoned %s after the last progress was seen, want stall_after (%s) after it", d, cfg.StallAfter)
	}
	if r.w.KeepLease(r.ctx, now.Add(time.Hour)) {
		t.Fatal("an abandoned job's lease renewed")
	}
	if gone, err := r.st.CleanupClaims(r.ctx, now.Add(cfg.LeaseTTL+time.Second)); err != nil || len(gone) != 1 {
		t.Fatalf("cleanup after the lease ran out removed %v (%v), want the abandoned claim", gone, err)
	}
}
