package worker_test

import (
	"errors"
	"testing"
	"time"

	"github.com/nomarr/nomarr/adapters/memstore"
	"github.com/nomarr/nomarr/core/event"
	"github.com/nomarr/nomarr/core/health"
	"github.com/nomarr/nomarr/core/store"
	"github.com/nomarr/nomarr/core/worker"
)

// A worker backing off for a dependency other than the store (the GPU,
// the decoder, its models) reads the pause flag every paused_poll (1 s):
// a pause shows as paused within 1 s, a resume as backing_off again, and
// the backoff's deadline and breakers are those of a worker that was never
// paused. One backing off for the store reads nothing until its deadline.

// setFlag writes worker_enabled.
func (r *rig) setFlag(enabled bool) {
	r.t.Helper()
	v := "true"
	if !enabled {
		v = "false"
	}
	if err := r.st.SetMeta(r.ctx, store.MetaWorkerEnabled, v); err != nil {
		r.t.Fatal(err)
	}
}

// gpuOutage steps a GPU worker, with the GPU down from t0 and file a
// waiting, as a driver does until end, pausing the cluster right after
// the last step before pauseAt and resuming it right after the last step
// before resumeAt (never, for zero times). It returns the times of its
// GPU preflights, and the time the pause was written with that of the
// first step that showed paused.
func gpuOutage(t *testing.T, end, pauseAt, resumeAt time.Time) (preflights []time.Duration, paused, seen time.Time) {
	t.Helper()
	r, cs := countingRig(t, func(c *worker.Config) { c.UseGPU = true })
	r.addFiles("a")
	r.gpuAt(t0, false)
	for now := t0; now.Before(end); {
		n := cs.preflights
		s := r.wantStep(now, worker.Wait)
		if cs.preflights != n {
			preflights = append(preflights, now.Sub(t0))
		}
		ph := r.w.Phase()
		switch {
		case ph == health.Paused && seen.IsZero():
			seen = now
		case ph != health.BackingOff && ph != health.Paused:
			t.Fatalf("phase at %s = %s, want backing_off or paused", now.Sub(t0), ph)
		}
		if f := r.w.Frame(); f.Phase != ph {
			t.Fatalf("frame phase at %s = %s, want %s", now.Sub(t0), f.Phase, ph)
		}
		if len(r.st.Claims()) != 0 {
			t.Fatalf("claim at %s during the outage", now.Sub(t0))
		}
		if s.Until.Sub(now) > time.Second || !s.Until.After(now) {
			t.Fatalf("wait at %s until %s: want a step within paused_poll (1s)", now.Sub(t0), s.Until.Sub(t0))
		}
		if !pauseAt.IsZero() && paused.IsZero() && !s.Until.Before(pauseAt) {
			paused = now.Add(time.Millisecond)
			r.setFlag(false)
		}
		if !resumeAt.IsZero() && !s.Until.Before(resumeAt) && now.Before(resumeAt) {
			if ph != health.Paused {
				t.Fatalf("phase at %s, before the resume = %s, want paused", now.Sub(t0), ph)
			}
			r.setFlag(true)
		}
		if !resumeAt.IsZero() && !now.Before(resumeAt) && ph != health.BackingOff {
			t.Fatalf("phase at %s, after the resume = %s, want backing_off", now.Sub(t0), ph)
		}
		now = s.Until
	}
	return preflights, paused, seen
}

// The GPU's fifth failed preflight (15 s) opens its breaker: the next is
// the half-open one at 45 s. A pause at 20 s shows at the next step; the
// worker stays paused, without a preflight or a claim, until the resume at
// 30 s, then backs off again until the very deadline it had.
func TestGPUBackoffShowsAPauseWithinPausedPoll(t *testing.T) {
	end := at(50 * time.Second)
	want, _, _ := gpuOutage(t, end, time.Time{}, time.Time{})
	got, paused, seen := gpuOutage(t, end, at(20*time.Second), at(30*time.Second))
	if seen.IsZero() || seen.Sub(paused) > time.Second {
		t.Fatalf("pause written at %s, paused shown at %s: want within paused_poll (1s)", paused.Sub(t0), seen.Sub(t0))
	}
	wantAt := []time.Duration{0, time.Second, 3 * time.Second, 7 * time.Second, 15 * time.Second, 45 * time.Second}
	if len(want) != len(wantAt) || len(got) != len(want) {
		t.Fatalf("preflights at %v with a pause, %v without, want %v", got, want, wantAt)
	}
	for i := range want {
		if got[i] != want[i] || want[i] != wantAt[i] {
			t.Fatalf("preflights at %v with a pause, %v without, want %v", got, want, wantAt)
		}
	}
}

// A decoder that is down (service_down) and a model load that fails back
// the worker off just as the GPU does, also right after a store backoff:
// it shows a pause within 1 s, a resume as backing_off, and claims at the
// deadline it had.
func TestServiceBackoffShowsAPause(t *testing.T) {
	for _, tc := range []struct {
		name  string
		start func(r *rig) // backs the worker off at t0 for 10 s
		want  worker.StepKind
	}{
		{"decoder", func(r *rig) {
			r.startJob(t0)
			r.w.JobDone(r.ctx, t0, worker.Result{Class: worker.ServiceDown, Dependency: worker.DepDecoder, Reason: "ffmpeg gone"})
		}, worker.Run},
		{"models", func(r *rig) {
			r.wantStep(t0, worker.LoadModels)
			r.w.ModelsLoaded(r.ctx, t0, errors.New("model file unreadable"))
		}, worker.LoadModels},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, func(c *worker.Config) { c.ServiceBackoff = 10 * time.Second })
			r.addFiles("a")
			// A store backoff first, from -10 s to t0: the one that
			// follows names its own dependency.
			r.st.SetFault(memstore.Down)
			if s := r.wantStep(at(-10*time.Second), worker.Wait); !s.Until.Equal(t0) {
				t.Fatalf("store backoff until %s, want t0", s.Until.Sub(t0))
			}
			r.st.SetFault(memstore.Healthy)
			tc.start(r)
			var paused, seen, resumed time.Time
			now := t0
			for now.Before(at(10 * time.Second)) {
				s := r.wantStep(now, worker.Wait)
				ph := r.w.Phase()
				if ph == health.Paused && seen.IsZero() {
					seen = now
				}
				if !resumed.IsZero() && ph != health.BackingOff {
					t.Fatalf("phase at %s, after the resume = %s, want backing_off", now.Sub(t0), ph)
				}
				if s.Until.Sub(now) > time.Second {
					t.Fatalf("wait at %s until %s: want a step within paused_poll (1s)", now.Sub(t0), s.Until.Sub(t0))
				}
				switch { // right after the last step before 2.5 s and 6 s
				case paused.IsZero() && !s.Until.Before(at(2500*time.Millisecond)):
					paused = now.Add(time.Millisecond)
					r.setFlag(false)
				case !paused.IsZero() && resumed.IsZero() && !s.Until.Before(at(6*time.Second)):
					resumed = now.Add(time.Millisecond)
					r.setFlag(true)
				}
				now = s.Until
			}
			// The last step before the deadline ran with the flag set back.
			if r.w.Phase() != health.BackingOff {
				t.Fatalf("phase before the deadline after a resume = %s, want backing_off", r.w.Phase())
			}
			if seen.IsZero() || seen.Sub(paused) > time.Second {
				t.Fatalf("pause written at %s, paused shown at %s: want within paused_poll (1s)", paused.Sub(t0), seen.Sub(t0))
			}
			if !now.Equal(at(10 * time.Second)) {
				t.Fatalf("the waits ended at %s, want the deadline 10s", now.Sub(t0))
			}
			r.wantStep(now, tc.want)
		})
	}
}

// A worker backing off for the store makes no store call until its
// deadline, also when the store is back and the cluster paused meanwhile
// (its steps are a driver's wake-ups); the step at the deadline reads the
// flag and shows paused.
func TestStoreBackoffReadsNothingUntilItsDeadline(t *testing.T) {
	r := newRig(t, nil)
	r.st.SetFault(memstore.Down)
	now := t0
	var s worker.Step
	for i := 0; i < 4; i++ { // failed flag reads at 0, 1, 3 and 7 s: the next at 15 s
		s = r.wantStep(now, worker.Wait)
		now = s.Until
	}
	if !now.Equal(at(15*time.Second)) || r.w.Phase() != health.BackingOff {
		t.Fatalf("after four failed reads: waiting until %s in %s, want backing_off until 15s", now.Sub(t0), r.w.Phase())
	}
	r.st.SetFault(memstore.Healthy)
	r.setFlag(false)
	ops := r.st.Ops
	for wake := at(7500 * time.Millisecond); wake.Before(now); wake = wake.Add(500 * time.Millisecond) {
		s := r.wantStep(wake, worker.Wait)
		if !s.Until.Equal(now) || r.w.Phase() != health.BackingOff {
			t.Fatalf("step at %s: wait until %s in %s, want backing_off until 15s", wake.Sub(t0), s.Until.Sub(t0), r.w.Phase())
		}
	}
	if r.st.Ops != ops {
		t.Fatalf("%d store calls during the store's backoff, want none", r.st.Ops-ops)
	}
	r.wantStep(now, worker.Wait)
	if r.w.Phase() != health.Paused || r.st.Ops != ops+1 {
		t.Fatalf("at the deadline: phase %s after %d store calls, want paused after one", r.w.Phase(), r.st.Ops-ops)
	}
}

// A flag read that fails during a GPU backoff is a store failure: one
// store_error, one failure of the store's breaker, backing_off. The worker
// reads no more until the deadline, which stays as it was (7 s), and the
// GPU's backoff goes on growing: the failed preflight at 7 s waits 8 s,
// not the 1 s of a backoff started over.
func TestFailedFlagReadDuringAGPUBackoff(t *testing.T) {
	r, cs := countingRig(t, func(c *worker.Config) { c.UseGPU = true })
	r.gpuAt(t0, false)
	s, _ := r.untilPreflight(cs, t0)
	for i := 2; i <= 3; i++ { // failed preflights at 1 and 3 s: the next at 7 s
		s, _ = r.untilPreflight(cs, s.Until)
	}
	now := s.Until // 4 s
	r.st.SetFault(memstore.Down)
	errs := len(r.ev.of(event.StoreError))
	s = r.wantStep(now, worker.Wait)
	if !s.Until.Equal(at(7*time.Second)) || r.w.Phase() != health.BackingOff {
		t.Fatalf("failed read at 4s: wait until %s in %s, want backing_off until the deadline 7s", s.Until.Sub(t0), r.w.Phase())
	}
	if n := len(r.ev.of(event.StoreError)) - errs; n != 1 {
		t.Fatalf("%d store_error events for one failed read", n)
	}
	if tel := r.w.Telemetry(); tel.Errors != 0 || tel.ConsecutiveErrors != 0 {
		t.Fatalf("telemetry %+v: a failed flag read is no counted error", tel)
	}
	r.st.SetFault(memstore.Healthy)
	ops := r.st.Ops
	if s := r.wantStep(at(5*time.Second), worker.Wait); !s.Until.Equal(at(7*time.Second)) || r.st.Ops != ops {
		t.Fatalf("step at 5s: wait until %s after %d store calls, want none until 7s", s.Until.Sub(t0), r.st.Ops-ops)
	}
	s, at7 := r.untilPreflight(cs, at(7*time.Second))
	if !at7.Equal(at(7 * time.Second)) {
		t.Fatalf("preflight at %s, want 7s", at7.Sub(t0))
	}
	if _, next := r.untilPreflight(cs, s.Until); next.Sub(at7) != 8*time.Second {
		t.Fatalf("preflight after the one at 7s came %s later, want 8s (the GPU's backoff goes on)", next.Sub(at7))
	}
}

// The failed read counts toward the store's breaker: with a threshold of
// one (for every breaker) the GPU's opens at the first failed preflight
// (0 s, retry at 30 s) and the store's at the failed read (2 s, retry at
// 32 s), so the worker makes no store call until 32 s, past the GPU's
// deadline.
func TestFailedFlagReadCountsTowardTheStoreBreaker(t *testing.T) {
	r, cs := countingRig(t, func(c *worker.Config) { c.UseGPU = true; c.Breaker.Threshold = 1 })
	r.gpuAt(t0, false)
	s, _ := r.untilPreflight(cs, t0)
	s = r.wantStep(s.Until, worker.Wait) // 1 s: the flag read is answered
	r.st.SetFault(memstore.Down)
	s = r.wantStep(s.Until, worker.Wait) // 2 s: it fails
	r.st.SetFault(memstore.Healthy)
	ops := r.st.Ops
	now := s.Until
	for ; now.Before(at(32 * time.Second)); now = r.wantStep(now, worker.Wait).Until {
		if r.w.Phase() != health.BackingOff {
			t.Fatalf("phase at %s = %s, want backing_off", now.Sub(t0), r.w.Phase())
		}
	}
	if r.st.Ops != ops || !now.Equal(at(32*time.Second)) {
		t.Fatalf("%d store calls until %s, want none until the store breaker's retry at 32s", r.st.Ops-ops, now.Sub(t0))
	}
	if _, next := r.untilPreflight(cs, now); !next.Equal(now) {
		t.Fatalf("preflight at %s, want 32s", next.Sub(t0))
	}
}

// An answered flag read during a GPU backoff closes the store's breaker,
// as an idle worker's does: four failed reads (0, 1, 3 and 7 s) leave it
// one short of opening; the GPU fails at 15 and 16 s, the read at 17 s is
// answered, and the store's failure at 18 s then waits 1 s, not the 30 s
// of an open breaker.
func TestAnsweredFlagReadDuringAGPUBackoffClosesTheStoreBreaker(t *testing.T) {
	r := newRig(t, func(c *worker.Config) { c.UseGPU = true })
	r.gpuAt(t0, false)
	r.st.SetFault(memstore.Down)
	now := t0
	for _, want := range []time.Duration{1, 3, 7, 15} {
		s := r.wantStep(now, worker.Wait)
		if !s.Until.Equal(at(want * time.Second)) {
			t.Fatalf("failed read at %s: wait until %s, want %s", now.Sub(t0), s.Until.Sub(t0), want*time.Second)
		}
		now = s.Until
	}
	r.st.SetFault(memstore.Healthy)
	for _, want := range []time.Duration{16, 17, 18} { // preflights at 15 and 16 s, the read at 17 s
		s := r.wantStep(now, worker.Wait)
		if !s.Until.Equal(at(want*time.Second)) || r.w.Phase() != health.BackingOff {
			t.Fatalf("step at %s: wait until %s in %s, want backing_off until %s", now.Sub(t0), s.Until.Sub(t0), r.w.Phase(), want*time.Second)
		}
		now = s.Until
	}
	r.st.SetFault(memstore.Down)
	if s := r.wantStep(now, worker.Wait); !s.Until.Equal(at(19 * time.Second)) {
		t.Fatalf("store failure at 18s: wait until %s (%q), want 19s (the store's breaker closed at 17s)", s.Until.Sub(t0), s.Reason)
	}
}
