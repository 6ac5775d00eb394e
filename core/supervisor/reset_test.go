package supervisor_test

import (
	"testing"
	"time"

	"github.com/nomarr/nomarr/adapters/memstore"
	"github.com/nomarr/nomarr/core/event"
	"github.com/nomarr/nomarr/core/health"
	"github.com/nomarr/nomarr/core/restart"
	"github.com/nomarr/nomarr/core/supervisor"
)

// A reset of a running component clears its counters and nothing else: the
// process goes on, and no second one is spawned (it would run unsupervised,
// its generation replaced).
func TestResetOfARunningComponentSpawnsNothing(t *testing.T) {
	r := newRig(t, 1, nil)
	r.sup.Start(r.ctx, t0)
	r.frame(w0, at(time.Second), health.Idle, "", 0)
	if err := r.sup.Reset(r.ctx, w0, at(2*time.Second)); err != nil {
		t.Fatal(err)
	}
	for d := 2 * time.Second; d <= 10*time.Second; d += time.Second {
		r.frame(w0, at(d), health.Idle, "", 0)
		r.sup.Tick(r.ctx, at(d))
	}
	if n := r.procs.count("spawn", w0); n != 1 || r.gen(w0) != 1 || r.sup.PendingTimers(w0) != 0 {
		t.Fatalf("after a reset of a running component: %d spawns, gen %d, %d timers; want 1, 1, 0",
			n, r.gen(w0), r.sup.PendingTimers(w0))
	}
	r.wantStatus(w0, at(10*time.Second), health.Healthy)
}

// A reset while the restart state could not be loaded at start (store
// down) takes the load's place: its state is the one that counts, and the
// component is spawned once, by the reset or, its state write failing, by
// the tick that writes it. The state the load would have read is never
// read again.
func TestResetWhileTheLoadIsPending(t *testing.T) {
	t.Run("store back before the reset", func(t *testing.T) {
		st := memstore.New(1)
		st.SetFault(memstore.Down)
		r := newRigOn(t, st, 1, nil)
		r.sup.Start(r.ctx, t0)
		st.SetFault(memstore.Healthy)
		if err := r.sup.Reset(r.ctx, w0, at(time.Second)); err != nil {
			t.Fatal(err)
		}
		for d := 2 * time.Second; d <= 10*time.Second; d += time.Second {
			r.sup.Tick(r.ctx, at(d))
		}
		if n := r.procs.count("spawn", w0); n != 1 || r.gen(w0) != 1 {
			t.Fatalf("%d spawns (gen %d) after a reset during a pending load, want 1", n, r.gen(w0))
		}
	})
	t.Run("store still down at the reset", func(t *testing.T) {
		st := memstore.New(1)
		key := supervisor.RestartKey("node-a", w0)
		failed := restart.State{Component: key, RestartCount: 3, FailedAtWallMs: 1, FailureReason: "window limit"}
		if err := st.SaveRestart(t.Context(), key, failed); err != nil {
			t.Fatal(err)
		}
		st.SetFault(memstore.Down)
		r := newRigOn(t, st, 1, nil)
		r.sup.Start(r.ctx, t0)
		if err := r.sup.Reset(r.ctx, w0, at(time.Second)); err != nil {
			t.Fatal(err)
		}
		st.SetFault(memstore.Healthy)
		for d := 2 * time.Second; d <= 10*time.Second; d += time.Second {
			r.sup.Tick(r.ctx, at(d))
		}
		if n := r.procs.count("spawn", w0); n != 1 {
			t.Fatalf("%d spawns after the reset, want 1", n)
		}
		if in := r.info(w0); in.Failed || in.Policy.Failed() {
			t.Fatalf("component after the reset = %+v, want the persisted failure cleared", in)
		}
		if f := r.ev.of(event.Failed, w0); len(f) != 0 {
			t.Fatalf("failed events = %+v: the persisted failure was loaded over the reset", f)
		}
		if ps, ok := st.RestartState(key); !ok || ps.Failed() || ps.RestartCount != 0 {
			t.Fatalf("persisted state = %+v %v, want the reset", ps, ok)
		}
	})
}
