package supervisor_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nomarr/nomarr/core/event"
	"github.com/nomarr/nomarr/core/health"
	"github.com/nomarr/nomarr/core/supervisor"
)

// WatchDeadline is exactly when Watch kills, rule by rule: nothing a
// millisecond before it, the kill at it. A driver that bounds its store
// calls by it is then never late for a kill, and never early.
func TestWatchDeadlineIsWhenTheKillComes(t *testing.T) {
	short := func(c *supervisor.Config) {
		c.StartupTimeout, c.ColdStartMax, c.StallAfter, c.HangAfter = 5*time.Second, 7*time.Second, 9*time.Second, 30*time.Second
		c.StopGrace = 4 * time.Second
	}
	cases := []struct {
		name   string
		set    func(r *rig)
		want   time.Duration
		reason string
		cause  string // the kill event's, counted by the driver (nomarr_worker_kills_total)
	}{
		{"no first frame", func(r *rig) {}, 5 * time.Second, "startup_timeout", supervisor.KillStartupTimeout},
		{"hang", func(r *rig) { r.frame(w0, at(time.Second), health.Idle, "", 0) }, 31 * time.Second, "hang", supervisor.KillHang},
		{"cold start", func(r *rig) { r.frame(w0, at(time.Second), health.LoadingModels, "", 0) }, 7 * time.Second, "cold start",
			supervisor.KillColdStart},
		{"stall", func(r *rig) { r.frame(w0, at(2*time.Second), health.Processing, "f1", 3) }, 11 * time.Second, "stall", supervisor.KillStall},
		{"pipe closed", func(r *rig) {
			r.frame(w0, at(time.Second), health.Idle, "", 0)
			r.sup.PipeClosed(w0, r.gen(w0), at(3*time.Second))
		}, 4 * time.Second, "pipe closed", supervisor.KillPipeClosed},
		{"stop grace", func(r *rig) {
			r.frame(w0, at(time.Second), health.Idle, "", 0)
			r.sup.Stop(at(2 * time.Second))
		}, 6 * time.Second, "stop grace", supervisor.KillStopGrace},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, 1, short)
			if _, ok := r.sup.WatchDeadline(); ok {
				t.Fatal("a deadline before Start")
			}
			r.sup.Start(r.ctx, t0)
			tc.set(r)
			d, ok := r.sup.WatchDeadline()
			if !ok || !d.Equal(at(tc.want)) {
				t.Fatalf("WatchDeadline = %s, %v; want %s", d.Sub(t0), ok, tc.want)
			}
			r.killedExactlyAt(w0, d)
			if k := r.ev.of("kill", w0); len(k) != 1 || !strings.Contains(k[0].Reason, tc.reason) || k[0].Cause != tc.cause {
				t.Fatalf("kill events %+v, want one for %q, cause %s", k, tc.reason, tc.cause)
			}
			if !slices.Contains(supervisor.KillCauses(), tc.cause) {
				t.Fatalf("KillCauses() = %v lacks %s: its metric series would appear only at the first such kill", supervisor.KillCauses(), tc.cause)
			}
			if _, ok := r.sup.WatchDeadline(); ok {
				t.Fatal("a deadline for a worker already being killed")
			}
		})
	}
}

// Discount moves every death rule's deadline on by exactly the time the
// main process lost, and the kill comes at the new deadline, no sooner and
// no later; the stop grace, the workers' own time to finish, stays.
func TestDiscountMovesEveryDeathRuleByTheTimeLost(t *testing.T) {
	short := func(c *supervisor.Config) {
		c.StartupTimeout, c.ColdStartMax, c.StallAfter, c.HangAfter = 5*time.Second, 7*time.Second, 9*time.Second, 30*time.Second
		c.StopGrace = 4 * time.Second
	}
	const lost = 20 * time.Second
	cases := []struct {
		name string
		set  func(r *rig)
		want time.Duration // after the discount
	}{
		{"no first frame", func(r *rig) {}, 5*time.Second + lost},
		{"hang", func(r *rig) { r.frame(w0, at(time.Second), health.Idle, "", 0) }, 31*time.Second + lost},
		{"cold start", func(r *rig) { r.frame(w0, at(time.Second), health.LoadingModels, "", 0) }, 7*time.Second + lost},
		{"stall", func(r *rig) { r.frame(w0, at(2*time.Second), health.Processing, "f1", 3) }, 11*time.Second + lost},
		{"pipe closed", func(r *rig) {
			r.frame(w0, at(time.Second), health.Idle, "", 0)
			r.sup.PipeClosed(w0, r.gen(w0), at(3*time.Second))
		}, 4*time.Second + lost},
		{"stop grace", func(r *rig) {
			r.frame(w0, at(time.Second), health.Idle, "", 0)
			r.sup.Stop(at(2 * time.Second))
		}, 6 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, 1, short)
			r.sup.Discount(lost, t0) // before Start: nothing to move
			r.sup.Start(r.ctx, t0)
			tc.set(r)
			before, _ := r.sup.WatchDeadline()
			r.sup.Discount(lost, before.Add(-time.Millisecond))
			d, ok := r.sup.WatchDeadline()
			if !ok || !d.Equal(at(tc.want)) {
				t.Fatalf("WatchDeadline after a discount of %s = %s, %v; want %s (it was %s)", lost, d.Sub(t0), ok, tc.want, before.Sub(t0))
			}
			r.killedExactlyAt(w0, d)
			if p := r.ev.of("main_paused", ""); len(p) != 1 || p[0].Count != 1 || !strings.Contains(p[0].Reason, "20s") {
				t.Fatalf("main_paused events %+v; want one, for one live worker", p)
			}
		})
	}
}

// Only clocks set before the stall's end move: a frame read after the
// main process ran again (drained once it continued) lost nothing.
func TestDiscountLeavesClocksSetAfterTheStall(t *testing.T) {
	r := newRig(t, 1, nil)
	r.sup.Start(r.ctx, t0)
	r.frame(w0, at(50*time.Second), health.Idle, "", 0)
	before, _ := r.sup.WatchDeadline()
	r.sup.Discount(45*time.Second, at(49*time.Second)) // stopped from 4 s to 49 s; the frame came at 50 s
	if after, _ := r.sup.WatchDeadline(); !after.Equal(before) {
		t.Fatalf("hang deadline %s after the discount of a stall that ended before the frame; want %s", after.Sub(t0), before.Sub(t0))
	}
}

// Health the main process did not see is not counted toward healthy_reset:
// a stall within a healthy run moves the run's start on by the time lost,
// so the backoff reset comes that much later, through Discount or, for a
// stall too short for the death rules, DiscountHealth (which moves nothing
// else and says nothing).
func TestDiscountDelaysTheBackoffReset(t *testing.T) {
	for _, tc := range []struct {
		name string
		lost time.Duration
		fn   func(*supervisor.Supervisor, time.Duration, time.Time)
	}{
		{"no stall", 0, nil},
		{"Discount", 20 * time.Second, (*supervisor.Supervisor).Discount},
		{"DiscountHealth", 2 * time.Second, (*supervisor.Supervisor).DiscountHealth},
	} {
		r := newRig(t, 1, nil)
		r.sup.Start(r.ctx, t0)
		r.exit(w0, 1, at(time.Second))
		r.sup.Tick(r.ctx, at(2*time.Second)) // respawned; the healthy run starts at 3 s
		resume := time.Minute
		var resetAt time.Duration
		for d := 3 * time.Second; d <= 6*time.Minute && resetAt == 0; d += time.Second {
			if d >= resume-tc.lost && d < resume {
				continue // stopped: no frame read, no tick
			}
			if d == resume && tc.fn != nil {
				hang, _ := r.sup.WatchDeadline()
				tc.fn(r.sup, tc.lost, at(d))
				after, _ := r.sup.WatchDeadline()
				if moved := after.Sub(hang); (tc.name == "Discount") != (moved == tc.lost) || (tc.name == "DiscountHealth") != (moved == 0) {
					t.Errorf("%s: the hang deadline moved by %s", tc.name, moved)
				}
			}
			r.frame(w0, at(d), health.Idle, "", 0)
			r.sup.Tick(r.ctx, at(d))
			if len(r.ev.of(event.BackoffReset, w0)) > 0 {
				resetAt = d
			}
		}
		if want := 3*time.Second + 5*time.Minute + tc.lost; resetAt != want {
			t.Errorf("%s: backoff reset at %s, want %s", tc.name, resetAt, want)
		}
		if p := r.ev.of("main_paused", ""); (len(p) == 1) != (tc.name == "Discount") || len(p) > 1 {
			t.Errorf("%s: main_paused events %+v", tc.name, p)
		}
	}
}
