package node_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/nomarr/nomarr/adapters/memstore"
	"github.com/nomarr/nomarr/core/node"
)

// A stop that waits on a store that is down says so (WaitingOnStore); a
// forced stop is then done at once, leaves the dead worker's claim
// release and the hand-back of the node name (ReleaseName writes nothing,
// even with the store back), and says so (Abandoned). The next main
// process on this host, which sees this one gone, takes the name at once.
func TestForceStopLeavesReleasesAndTheName(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(1)
	a, pa, _ := nameNode(t, st, "a", nil)
	a.Start(ctx, t0)
	if pa.spawns != 1 {
		t.Fatalf("spawns %d", pa.spawns)
	}
	if !a.Abandoned().Empty() {
		t.Fatalf("Abandoned before any force = %+v", a.Abandoned())
	}
	a.Stop(at(time.Second))
	st.SetFault(memstore.Down)
	in, _ := a.Sup.Info("worker:discovery:0")
	a.Sup.Exited(ctx, "worker:discovery:0", in.Gen, 0, at(2*time.Second))
	a.Tick(ctx, at(3*time.Second))
	if w, ok := a.WaitingOnStore(); !ok || !slices.Equal(w.Releases, []string{"worker:discovery:0"}) {
		t.Fatalf("WaitingOnStore = %+v %v", w, ok)
	}
	if a.Sup.Done() {
		t.Fatal("stop done with the release unwritten")
	}
	held, _ := st.MetaValue(node.NameKeyPrefix + "shared")

	a.ForceStop(at(4 * time.Second))
	a.ForceStop(at(5 * time.Second)) // idempotent
	if !a.Sup.Done() {
		t.Fatal("forced stop not done")
	}
	if _, ok := a.WaitingOnStore(); ok {
		t.Fatal("still waiting on the store after the force")
	}
	st.SetFault(memstore.Healthy)
	if err := a.ReleaseName(ctx, at(6*time.Second)); err != nil {
		t.Fatal(err)
	}
	if now, _ := st.MetaValue(node.NameKeyPrefix + "shared"); now != held {
		t.Fatalf("the name was written after a forced stop: %q -> %q", held, now)
	}
	ab := a.Abandoned()
	if !slices.Equal(ab.Releases, []string{"worker:discovery:0"}) || !ab.Name || ab.Empty() {
		t.Fatalf("Abandoned = %+v, want the release of worker:discovery:0 and the name", ab)
	}

	b, pb, _ := nameNode(t, st, "b", liveness(node.Gone))
	b.Start(ctx, at(7*time.Second))
	if pb.spawns != 1 {
		t.Fatalf("the next main process, seeing a gone, spawned %d", pb.spawns)
	}
}

// A node forced before it holds its name (waiting for another holder's to
// lapse) stops at once and has nothing to leave.
func TestForceStopBeforeNameHeld(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(1)
	a, _, _ := nameNode(t, st, "a", nil)
	a.Start(ctx, t0)
	b, pb, _ := nameNode(t, st, "b", nil)
	b.Start(ctx, at(time.Second))
	b.ForceStop(at(2 * time.Second))
	if pb.spawns != 0 || !b.Sup.Done() || !b.Abandoned().Empty() {
		t.Fatalf("forced while waiting: spawns %d, done %v, abandoned %+v", pb.spawns, b.Sup.Done(), b.Abandoned())
	}
}
