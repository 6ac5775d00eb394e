package sim

import (
	"testing"
	"time"

	"github.com/nomarr/nomarr/core/store"
)

// The progress check: a file made eligible while a worker sits idle must
// be claimed within idle_poll_max. The world is advanced by hand, without
// the worker's wake-up, so the test does not depend on the core: a window
// longer than idle_poll_max is flagged, one that a claim, a pause or a
// fault ends is not.
func TestCheckerProgressWindow(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  func(w *World) // ends the window half-way, or nil
		want bool
	}{
		{name: "idle-sleeps-through", want: true},
		{name: "claimed", end: func(w *World) {
			if _, err := w.Store.Claim(w.ctx, store.Claim{FileKey: "f0000", WorkerID: "a:1/worker:discovery:0", ClaimedAt: w.now, LeaseUntil: w.now.Add(time.Minute)}); err != nil {
				panic(err)
			}
		}},
		{name: "paused", end: func(w *World) { _ = w.Store.SetMeta(w.ctx, store.MetaWorkerEnabled, "false") }},
		{name: "fault", end: func(w *World) { w.Store.Faults++ }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, step := idleWorld(t, "progress")
			if n, err := w.Store.Retag(w.ctx, []string{"f0000"}, "sim-2"); n != 1 || err != nil {
				t.Fatalf("setup: retag: %d, %v", n, err)
			}
			step(time.Millisecond) // the window opens
			step(w.cfg.IdlePollMax / 2)
			if tc.end != nil {
				tc.end(w)
				step(0)
			}
			step(w.cfg.IdlePollMax/2 + time.Second)
			if got := hasViolation(w.check.violations, "no claim for"); got != tc.want {
				t.Errorf("flagged=%v, want %v: %v", got, tc.want, w.check.violations)
			}
		})
	}
}
