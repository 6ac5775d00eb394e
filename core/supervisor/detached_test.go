package supervisor_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/nomarr/nomarr/core/store"
	"github.com/nomarr/nomarr/core/supervisor"
)

// errDetached is a store's answer once its database file was replaced.
var errDetached = fmt.Errorf("database file /d/nomarr.db was deleted or replaced: %w", store.ErrDetached)

// A store that reports itself detached (store.ErrDetached: no write of this
// process can reach the database again) does not hold a stop: the claim
// release and the restart state the stop owes are given up at once, as
// after ForceStop, and Abandoned names them with the store's error. Before
// the stop, the same failures stay pending (the workers back off; nothing
// is decided only in memory).
func TestStopGivesUpWritesOnADetachedStore(t *testing.T) {
	ctx := context.Background()
	sup, ls, _, _ := forceRig(t, func(c *supervisor.Config) { c.Restart.WindowLimit = 1 })
	claimFor(t, ls, "f0", sup.WorkerID(w0))
	sup.Start(ctx, t0)
	sup.Exited(ctx, w1, 1, 1, at(time.Second)) // restart 1: granted and saved
	sup.Tick(ctx, at(2*time.Second))           // w1 generation 2
	ls.failure, ls.failSave = errDetached, true
	sup.Exited(ctx, w1, 2, 1, at(3*time.Second)) // given up on: its failed state is not saved
	_, saves := ls.attempts()
	for d := 4 * time.Second; d < 10*time.Second; d += time.Second {
		sup.Tick(ctx, at(d))
	}
	if _, s := ls.attempts(); s != saves+6 {
		t.Fatalf("restart-state saves %d -> %d over 6 ticks before any stop: want each tick to retry it", saves, s)
	}

	sup.Stop(at(10 * time.Second))
	ls.failRelease = true
	sup.Exited(ctx, w0, 1, 0, at(11*time.Second))
	if sup.Done() {
		t.Fatal("done before the tick that tries the restart state again")
	}
	sup.Tick(ctx, at(12*time.Second))
	if !sup.Done() {
		w, _ := sup.WaitingOnStore()
		t.Fatalf("stop not done on a detached store: waiting for %+v", w)
	}
	if sup.Forced() {
		t.Fatal("the stop counts as forced")
	}
	a := sup.Abandoned()
	if !slices.Equal(a.Releases, []string{w0}) || !slices.Equal(a.RestartStates, []string{w1}) || a.Detached != errDetached.Error() {
		t.Fatalf("Abandoned = %+v, want w0's release and w1's restart state, with the store's error", a)
	}
	if _, ok := ls.ClaimOf("f0"); !ok {
		t.Fatal("the left claim is gone: it should wait for its lease to expire")
	}
}

// Any other fault still holds the stop (TestWaitingOnStoreEndsWhenTheStoreAnswers):
// only a store that says it cannot come back is not waited for.
func TestStopWaitsOnALockedStore(t *testing.T) {
	ctx := context.Background()
	sup, ls, _, _ := forceRig(t, nil)
	sup.Start(ctx, t0)
	sup.Stop(at(time.Second))
	ls.failRelease = true
	sup.Exited(ctx, w0, 1, 0, at(2*time.Second))
	sup.Exited(ctx, w1, 1, 0, at(2*time.Second))
	sup.Tick(ctx, at(3*time.Second))
	if sup.Done() || !sup.Abandoned().Empty() {
		t.Fatalf("a locked store: done %v, abandoned %+v; want the stop to wait", sup.Done(), sup.Abandoned())
	}
}
