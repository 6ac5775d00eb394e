package sim

import (
	"testing"
	"time"

	"github.com/nomarr/nomarr/core/health"
	"github.com/nomarr/nomarr/core/store"
)

// The pause check: a worker still idle more than 2 s after a pause is
// flagged. The world is advanced by hand, without the worker's wake-up, so
// the test does not depend on the core: an idle worker that never reads
// the flag is flagged; a resume or a fault ends the window, and a worker
// that shows paused is not flagged.
func TestCheckerPauseShown(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  func(w *World) // acts half-way, or nil
		want bool
	}{
		{name: "idle-sleeps-through", want: true},
		{name: "resumed", end: func(w *World) { _ = w.Store.SetMeta(w.ctx, store.MetaWorkerEnabled, "true") }},
		{name: "fault", end: func(w *World) { w.Store.Faults++ }},
		{name: "shows-paused", end: func(w *World) {
			p := w.Instances[0].procs["worker:discovery:0"]
			p.wk.Step(w.ctx, w.now) // reads the flag: paused
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, step := idleWorld(t, "pause")
			pauseAndWait(t, w, step, tc.end)
			if got := hasViolation(w.check.violations, "still idle"); got != tc.want {
				t.Errorf("flagged=%v, want %v: %v", got, tc.want, w.check.violations)
			}
		})
	}
}

// idleWorld runs a checked one-worker, one-file world named name until
// its worker, done with the file, sits idle with no violation, and gives
// step, which moves the world's time on by d, by hand (no wake-up of the
// worker), and runs the checker.
func idleWorld(t *testing.T, name string) (*World, func(d time.Duration)) {
	t.Helper()
	w := checkedWorld(t, "name: "+name+`
seed: 1
duration: 1m
config: {workers: 1}
library: {files: 1, job_time: 1s}
`)
	w.Run()
	p := w.Instances[0].procs["worker:discovery:0"]
	if f, _ := w.Store.Peek("f0000"); !f.Tagged || p.wk.Phase() != health.Idle || len(w.check.violations) > 0 {
		t.Fatalf("setup: want f0000 tagged and the worker idle, got %+v, %s, %v", f, p.wk.Phase(), w.check.violations)
	}
	return w, handStep(w)
}

// handStep gives a function that moves w's time on by d, by hand (no
// wake-up of its workers), and runs the checker.
func handStep(w *World) func(d time.Duration) {
	return func(d time.Duration) {
		w.now = w.now.Add(d)
		w.check.afterEvent()
	}
}

// The pause check on a worker backing off for the GPU: it is flagged
// when it still shows backing_off more than 2 s after the pause, unless
// a store fault came within the longest store backoff (30 s) + 2 s, as it
// may then be backing off for the store. A resume or a fault in the window
// ends the window; a worker that reads the flag (a step of the core)
// shows paused and is not flagged.
func TestCheckerPauseShownBackingOff(t *testing.T) {
	for _, tc := range []struct {
		name   string
		before time.Duration  // a store fault this long before the pause (0: none)
		end    func(w *World) // acts half-way, or nil
		want   bool
	}{
		{name: "backoff-sleeps-through", want: true},
		{name: "resumed", end: func(w *World) { _ = w.Store.SetMeta(w.ctx, store.MetaWorkerEnabled, "true") }},
		{name: "fault", end: func(w *World) { w.Store.Faults++ }},
		{name: "store-fault-before", before: 10 * time.Second},
		{name: "store-fault-long-before", before: 31 * time.Second, want: true},
		{name: "shows-paused", end: func(w *World) {
			p := w.Instances[0].procs["worker:discovery:0"]
			p.wk.Step(w.ctx, w.now) // reads the flag: paused
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, step := backoffWorld(t, "pause-backoff")
			if tc.before > 0 {
				w.Store.Faults++
				step(0)
				step(tc.before)
			}
			pauseAndWait(t, w, step, tc.end)
			if got := hasViolation(w.check.violations, "still backing off"); got != tc.want {
				t.Errorf("flagged=%v, want %v: %v", got, tc.want, w.check.violations)
			}
		})
	}
}

// backoffWorld runs a checked one-worker world named name, on a GPU host
// whose GPU is down from 5 s on, until its worker backs off for the GPU
// with no violation, and gives handStep.
func backoffWorld(t *testing.T, name string) (*World, func(d time.Duration)) {
	t.Helper()
	w := checkedWorld(t, "name: "+name+`
seed: 1
duration: 20s
config: {workers: 1, gpu: true}
library: {files: 3, job_time: 1s}
faults:
  - {at: 5s, gpu: down, for: 10m}
`)
	w.Run()
	p := w.Instances[0].procs["worker:discovery:0"]
	if p.wk.Phase() != health.BackingOff || len(w.check.violations) > 0 {
		t.Fatalf("setup: want the worker backing off, got %s, %v", p.wk.Phase(), w.check.violations)
	}
	return w, handStep(w)
}

// pauseAndWait pauses the cluster of w and moves it on by hand (step)
// past the checker's pauseShownWithin, calling end, when given, one second
// after the pause.
func pauseAndWait(t *testing.T, w *World, step func(time.Duration), end func(*World)) {
	t.Helper()
	if err := w.Store.SetMeta(w.ctx, store.MetaWorkerEnabled, "false"); err != nil {
		t.Fatal(err)
	}
	step(time.Millisecond) // the window opens
	step(time.Second)
	if end != nil {
		end(w)
		step(0)
	}
	step(pauseShownWithin)
}
