package worker_test

import (
	"strings"
	"testing"
	"time"

	"github.com/nomarr/nomarr/adapters/memstore"
	"github.com/nomarr/nomarr/core/gpu"
	"github.com/nomarr/nomarr/core/health"
	"github.com/nomarr/nomarr/core/store"
	"github.com/nomarr/nomarr/core/worker"
)

// A success of a dependency closes its breaker and starts its backoff over:
// a later lone failure waits ServiceBackoff (1 s), never the breaker's
// cool-down nor the grown wait of the failures before the success.

// gpuAt records the host's GPU health as probed at now.
func (r *rig) gpuAt(now time.Time, up bool) {
	r.t.Helper()
	h := gpu.Health{OK: up, AtMs: now.UnixMilli()}
	if !up {
		h.Reason = "xid 79"
	}
	if err := r.st.SetMeta(r.ctx, store.MetaGPUHealth, h.Encode()); err != nil {
		r.t.Fatal(err)
	}
}

// untilPreflight steps the worker from now as a driver does, at the end
// of each wait, until a step makes a GPU preflight, and returns that step
// and its time. The steps between (a backoff's pause flag reads) must be
// waits.
func (r *rig) untilPreflight(cs *countingStore, now time.Time) (worker.Step, time.Time) {
	r.t.Helper()
	for limit := now.Add(time.Hour); now.Before(limit); {
		n := cs.preflights
		s := r.step(now)
		if cs.preflights != n {
			return s, now
		}
		if s.Kind != worker.Wait || !s.Until.After(now) {
			r.t.Fatalf("Step at %s = %v %+v, want a wait", now.Sub(t0), s.Kind, s)
		}
		now = s.Until
	}
	r.t.Fatalf("no GPU preflight before %s", now.Sub(t0))
	return worker.Step{}, now
}

// The result write that succeeds closes the store breaker. The worker is
// paused meanwhile, so that the step that writes makes no claim (whose
// success would close the breaker too).
func TestSuccessfulWriteClosesTheStoreBreaker(t *testing.T) {
	r := newRig(t, nil)
	r.addFiles("a")
	r.startJob(t0)
	if err := r.st.SetMeta(r.ctx, store.MetaWorkerEnabled, "false"); err != nil {
		t.Fatal(err)
	}
	r.st.SetFault(memstore.Down)
	now := at(time.Second)
	r.w.JobDone(r.ctx, now, ok()) // failure 1
	for i := 2; i <= 4; i++ {
		now = r.wantStep(now, worker.Wait).Until
	}
	r.st.SetFault(memstore.Healthy)
	s := r.wantStep(now, worker.Wait)
	if !r.file("a").Tagged || r.w.Phase() != health.Paused {
		t.Fatalf("after the store came back: file %+v, phase %s, want it tagged and the worker paused", r.file("a"), r.w.Phase())
	}
	r.st.SetFault(memstore.Down)
	now = s.Until
	s = r.wantStep(now, worker.Wait)
	if d := s.Until.Sub(now); d != time.Second || strings.Contains(s.Reason, "circuit open") {
		t.Fatalf("first store failure after a successful write: wait %s (%q), want 1s", d, s.Reason)
	}
}

// A GPU preflight that passes closes the GPU breaker and resets the backoff
// of the failed ones before it.
func TestGPUPreflightPassClosesTheBreaker(t *testing.T) {
	r, cs := countingRig(t, func(c *worker.Config) { c.UseGPU = true })
	r.gpuAt(t0, false)
	s, now := r.untilPreflight(cs, t0)
	for i := 2; i <= 4; i++ { // one short of the breaker's threshold
		s, now = r.untilPreflight(cs, s.Until)
	}
	r.gpuAt(now, true)
	s, _ = r.untilPreflight(cs, s.Until) // passes; no work
	if r.w.Phase() != health.Idle {
		t.Fatalf("phase after a passing preflight = %s, want idle", r.w.Phase())
	}
	now = s.Until
	r.gpuAt(now, false)
	s, _ = r.untilPreflight(cs, now)
	if _, next := r.untilPreflight(cs, s.Until); next.Sub(now) != time.Second {
		t.Fatalf("first gpu failure after a passing preflight: next preflight %s later, want 1s", next.Sub(now))
	}
}

// The backoff exponent is per dependency: a store failure after GPU
// failures waits 1 s, not the GPU's grown wait.
func TestBackoffStartsOverForAnotherDependency(t *testing.T) {
	r := newRig(t, func(c *worker.Config) { c.UseGPU = true })
	now := t0
	r.gpuAt(now, false)
	for i := 1; i <= 3; i++ {
		now = r.wantStep(now, worker.Wait).Until
	}
	r.st.SetFault(memstore.Down)
	s := r.wantStep(now, worker.Wait)
	if d := s.Until.Sub(now); d != time.Second || !strings.Contains(s.Reason, worker.DepStore) {
		t.Fatalf("first store failure after gpu failures: wait %s (%q), want 1s for the store", d, s.Reason)
	}
}

// A successful job closes the GPU and decoder breakers: a service_down after
// it, following four before it, backs off 1 s and then claims again; the
// breaker does not open.
func TestSuccessfulJobClosesTheServiceBreakers(t *testing.T) {
	r := newRig(t, nil)
	r.addFiles("a", "b")
	down := worker.Result{Class: worker.ServiceDown, Dependency: worker.DepDecoder, Reason: "ffmpeg gone"}
	now := t0
	s := r.startJob(now)
	for i := 1; i <= 4; i++ { // one short of the breaker's threshold
		r.w.JobDone(r.ctx, now, down)
		s, now = r.follow(now, now.Add(time.Minute))
	}
	if s.Kind != worker.Run || s.Job.FileKey != "a" {
		t.Fatalf("step after the backoff = %v %+v, want a run of a", s.Kind, s)
	}
	now = now.Add(time.Second)
	r.w.JobDone(r.ctx, now, ok())
	r.startJob(now)
	r.w.JobDone(r.ctx, now, down)
	s = r.wantStep(now, worker.Wait)
	if d := s.Until.Sub(now); d != time.Second {
		t.Fatalf("service_down after a successful job: wait %s, want 1s", d)
	}
	if s := r.step(s.Until); s.Kind != worker.Run {
		t.Fatalf("step after the wait = %v %+v, want run (breaker closed)", s.Kind, s)
	}
}
