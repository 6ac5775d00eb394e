package worker_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nomarr/nomarr/adapters/memstore"
	"github.com/nomarr/nomarr/core/event"
	"github.com/nomarr/nomarr/core/store"
	"github.com/nomarr/nomarr/core/worker"
)

const cp = `{"step":"tags"}`

// A fence on a claim still held extends its lease to now+lease_ttl, so the
// write that follows cannot outlive it; a fence with no running job refuses.
func TestFenceConfirmsAndExtendsTheClaim(t *testing.T) {
	r := newRig(t, nil)
	ttl := worker.DefaultConfig(comp, wid).LeaseTTL
	r.addFiles("a")
	if err := r.w.Fence(r.ctx, t0); err == nil {
		t.Fatal("fence without a running job confirmed")
	}
	s := r.startJob(t0)
	now := at(25 * time.Second) // the claim's own lease ends at 30 s
	if err := r.w.Fence(r.ctx, now); err != nil {
		t.Fatalf("fence on a held claim: %v", err)
	}
	c, held := r.st.ClaimOf(s.Job.FileKey)
	if !held || !c.LeaseUntil.Equal(now.Add(ttl)) {
		t.Fatalf("claim after the fence %+v (held %v), want its lease until %s", c, held, now.Add(ttl).Sub(t0))
	}
	r.w.JobDone(r.ctx, now, ok())
	if f := r.file("a"); !f.Tagged {
		t.Fatal("job not completed after a confirmed fence")
	}
}

// A claim that cleanup took (nobody renewed its lease: the host was cut off
// from the store) and another worker holds now: the fence refuses with
// ErrClaimLost, and the job's Lost result writes nothing, to the file's
// record or to the other worker's claim, counts no error, and leaves the
// worker free for the next file.
func TestFenceRefusesALostClaim(t *testing.T) {
	r := newRig(t, nil)
	r.addFiles("a", "b")
	s := r.startJob(t0)
	if gone, err := r.st.CleanupClaims(r.ctx, at(31*time.Second)); err != nil || len(gone) != 1 {
		t.Fatalf("cleanup after the lease ran out: %v %v", gone, err)
	}
	other := "inst-b/worker:discovery:0"
	if _, err := r.st.Claim(r.ctx, store.Claim{FileKey: "a", WorkerID: other, ClaimedAt: at(32 * time.Second), LeaseUntil: at(62 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	now := at(40 * time.Second)
	err := r.w.Fence(r.ctx, now)
	if !errors.Is(err, store.ErrClaimLost) {
		t.Fatalf("fence on a claim taken by another worker = %v, want ErrClaimLost", err)
	}
	res := worker.FenceFailed(err, cp)
	if res.Class != worker.Lost {
		t.Fatalf("FenceFailed(claim lost) = %+v, want class Lost", res)
	}
	r.w.JobDone(r.ctx, now, res)
	if c, held := r.st.ClaimOf(s.Job.FileKey); !held || c.WorkerID != other || !c.LeaseUntil.Equal(at(62*time.Second)) {
		t.Fatalf("the other worker's claim = %+v (held %v), want it untouched", c, held)
	}
	if f := r.file("a"); f.Tagged || f.Checkpoint != "" || f.Attempts != 0 || f.LastError != "" {
		t.Fatalf("file after a lost claim: %+v, want it untouched", f)
	}
	rel := r.ev.of(event.Release)
	if len(rel) != 1 || !strings.Contains(rel[0].Reason, "claim lost before the tag write") {
		t.Fatalf("release events %+v, want one saying the claim was lost before the write", rel)
	}
	// A store that answered "lost" wrongly: the guard release frees the
	// claim this worker still held.
	r2 := newRig(t, nil)
	r2.addFiles("x")
	r2.startJob(t0)
	r2.w.JobDone(r2.ctx, at(time.Second), worker.FenceFailed(fmt.Errorf("wrong answer: %w", store.ErrClaimLost), ""))
	if _, held := r2.st.ClaimOf("x"); held {
		t.Fatal("a Lost result left its own claim behind")
	}
	if tel := r.w.Telemetry(); tel.Errors != 0 || tel.ConsecutiveErrors != 0 {
		t.Fatalf("telemetry %+v: a lost claim is not the worker's error", tel)
	}
	if next := r.startJob(now); next.Job.FileKey != "b" {
		t.Fatalf("next job %q, want b", next.Job.FileKey)
	}
}

// A store that cannot answer the fence holds the write back too: the job
// ends service_down (store), reported as a store error, and once the store
// is back the file is released keeping the derived tags as its checkpoint,
// its attempts unchanged, ready for a retry that resumes at the write.
func TestFenceStoreDownKeepsTheCheckpoint(t *testing.T) {
	r := newRig(t, nil)
	r.addFiles("a")
	r.startJob(t0)
	r.st.SetFault(memstore.Down)
	now := at(20 * time.Second)
	err := r.w.Fence(r.ctx, now)
	if err == nil || errors.Is(err, store.ErrClaimLost) {
		t.Fatalf("fence with the store down = %v, want a store error", err)
	}
	if se := r.ev.of(event.StoreError); len(se) != 1 || se[0].File != "a" || !strings.HasPrefix(se[0].Reason, "confirm claim: ") {
		t.Fatalf("store errors %+v, want one naming the file apart from its operation", se)
	}
	res := worker.FenceFailed(err, cp)
	if res.Class != worker.ServiceDown || res.Dependency != worker.DepStore || res.Checkpoint != cp {
		t.Fatalf("FenceFailed(store error) = %+v", res)
	}
	r.w.JobDone(r.ctx, now, res)
	r.st.SetFault(memstore.Healthy)
	for i := 0; ; i++ {
		if s := r.step(at(time.Duration(21+i*30) * time.Second)); s.Kind == worker.Run || i > 10 {
			break
		}
	}
	f := r.file("a")
	if f.Checkpoint != cp || f.Attempts != 0 || f.Tagged {
		t.Fatalf("file after the store came back: %+v, want checkpoint %s and no attempt counted", f, cp)
	}
}

// An orphan whose own renewal finds its claim gone (its renewals failed for
// lease_ttl and cleanup took it) abandons the job at once, with exit code
// 0, and renews nothing more; its fence refuses too.
func TestOrphanAbandonsALostClaim(t *testing.T) {
	r := newRig(t, nil)
	r.addFiles("a")
	r.startJob(t0)
	r.w.MainDied()
	r.st.SetFault(memstore.Down)
	r.w.KeepLease(r.ctx, at(5*time.Second))
	r.st.SetFault(memstore.Healthy)
	if _, gone := r.w.OrphanAbandons(at(5 * time.Second)); gone {
		t.Fatal("abandoned after one failed renewal")
	}
	if gone, err := r.st.CleanupClaims(r.ctx, at(31*time.Second)); err != nil || len(gone) != 1 {
		t.Fatalf("cleanup: %v %v", gone, err)
	}
	now := at(32 * time.Second)
	if !r.w.KeepLease(r.ctx, now) {
		t.Fatal("renewal not attempted")
	}
	s, gone := r.w.OrphanAbandons(now)
	if !gone || s.Kind != worker.Exit || s.Code != 0 || !strings.Contains(s.Reason, "claim of a lost") {
		t.Fatalf("OrphanAbandons = %+v %v, want Exit 0 saying the claim was lost", s, gone)
	}
	if r.w.KeepLease(r.ctx, now.Add(time.Hour)) {
		t.Fatal("an abandoned job's lease renewed")
	}
	if err := r.w.Fence(r.ctx, now); !errors.Is(err, store.ErrClaimLost) {
		t.Fatalf("fence of an abandoned job = %v, want ErrClaimLost", err)
	}
}

// An orphan that abandoned a stalled job (OrphanAbandons) still holds its
// claim until the lease runs out; the job, still running until the process
// ends, must not write then: its fence refuses with ErrClaimLost and makes
// no store call (a KeepClaim would extend the lease the worker let go).
func TestFenceRefusesAnAbandonedJob(t *testing.T) {
	r := newRig(t, nil)
	r.addFiles("a")
	r.startJob(t0)
	r.w.MainDied()
	stall := worker.DefaultConfig(comp, wid).StallAfter
	if _, gone := r.w.OrphanAbandons(at(time.Second)); gone {
		t.Fatal("abandoned at the first look")
	}
	now := at(time.Second + stall)
	s, gone := r.w.OrphanAbandons(now)
	if !gone || s.Kind != worker.Exit || s.Code != 1 {
		t.Fatalf("OrphanAbandons after stall_after = %+v %v, want Exit 1", s, gone)
	}
	before, _ := r.st.ClaimOf("a")
	ops := r.st.Ops
	if err := r.w.Fence(r.ctx, now); !errors.Is(err, store.ErrClaimLost) {
		t.Fatalf("fence of an abandoned job = %v, want ErrClaimLost", err)
	}
	if r.st.Ops != ops {
		t.Fatalf("fence of an abandoned job made %d store calls, want none", r.st.Ops-ops)
	}
	if c, held := r.st.ClaimOf("a"); !held || !c.LeaseUntil.Equal(before.LeaseUntil) {
		t.Fatalf("claim after the fence %+v (held %v), want its lease left at %s", c, held, before.LeaseUntil.Sub(t0))
	}
}
