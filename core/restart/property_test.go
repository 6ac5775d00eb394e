package restart

import (
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// refBackoff is an independent reference for Config.Backoff: repeated
// doubling with an explicit overflow guard.
func refBackoff(c Config, n int) time.Duration {
	d := c.BackoffBase
	for i := 0; i < n; i++ {
		if d >= c.BackoffMax || d > c.BackoffMax/2 {
			return c.BackoffMax
		}
		d *= 2
	}
	return min(d, c.BackoffMax)
}

// genConfig draws a valid Config with small limits, so that both limits are
// reached often.
func genConfig(t *rapid.T) Config {
	base := time.Duration(rapid.Int64Range(1, 5000).Draw(t, "baseMs")) * time.Millisecond
	c := Config{
		BackoffBase:   base,
		BackoffMax:    base * time.Duration(rapid.Int64Range(1, 200).Draw(t, "maxFactor")),
		WindowLimit:   rapid.IntRange(1, 8).Draw(t, "windowLimit"),
		Window:        time.Duration(rapid.Int64Range(1, 600_000).Draw(t, "windowMs")) * time.Millisecond,
		LifetimeLimit: rapid.IntRange(1, 30).Draw(t, "lifetimeLimit"),
	}
	c.HealthyReset = time.Duration(rapid.Int64Range(1, 1_000_000).Draw(t, "healthyMs")) * time.Millisecond
	c.LifetimeReset = c.Window + time.Duration(rapid.Int64Range(0, 5_000_000).Draw(t, "lifetimeExtraMs"))*time.Millisecond
	if err := c.Validate(); err != nil {
		t.Fatalf("generated invalid config: %v", err)
	}
	return c
}

func TestPropertyPolicy(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var c Config
		if rapid.Bool().Draw(t, "defaults") {
			c = DefaultConfig()
		} else {
			c = genConfig(t)
		}
		winMs := c.Window.Milliseconds()
		now := rapid.Int64Range(0, 2_000_000_000_000).Draw(t, "start")
		startedAt := now // when the component last (re)started
		st := State{Component: "worker:discovery:0"}
		var grants []int64 // wall times of granted restarts
		sinceLifetime := 0 // grants since the last lifetime reset
		wasFailed := false

		steps := rapid.IntRange(1, 120).Draw(t, "steps")
		for i := 0; i < steps; i++ {
			now += rapid.Int64Range(0, 2*winMs).Draw(t, "delta")
			if rapid.IntRange(0, 3).Draw(t, "kind") == 0 {
				// Healthy: the component cannot have been healthy for longer
				// than it has been running.
				healthyFor := time.Duration(rapid.Int64Range(0, now-startedAt).Draw(t, "healthyMs")) * time.Millisecond
				prev := st
				var changed bool
				st, changed = OnHealthy(c, st, healthyFor, now)
				if prev.Failed() && (changed || !st.Failed()) {
					t.Fatalf("OnHealthy changed a failed state")
				}
				if st.RestartCount == 0 && prev.RestartCount > 0 {
					sinceLifetime = 0
				}
				if changed != (st.Consecutive != prev.Consecutive || st.RestartCount != prev.RestartCount || len(st.Recent) != len(prev.Recent)) {
					t.Fatalf("changed=%v but %+v -> %+v", changed, prev, st)
				}
				if changed && st.UpdatedAtWallMs != now {
					t.Fatalf("changed but UpdatedAtWallMs not set")
				}
				continue
			}

			prev := st
			var d Decision
			st, d = OnDeath(c, st, now)
			if st.UpdatedAtWallMs != now {
				t.Fatalf("UpdatedAtWallMs = %d, want %d", st.UpdatedAtWallMs, now)
			}
			// (d) once failed, stays failed.
			if wasFailed && (d.Restart || !st.Failed() || st.FailureReason != prev.FailureReason) {
				t.Fatalf("failed state escaped: %+v %+v", d, st)
			}
			if !d.Restart {
				if !st.Failed() || d.Reason == "" || d.Reason != st.FailureReason {
					t.Fatalf("refusal without failure: %+v %+v", d, st)
				}
				wasFailed = true
				continue
			}
			// (c) backoff is the curve evaluated at the pre-death exponent.
			if want := refBackoff(c, prev.Consecutive); d.Backoff != want {
				t.Fatalf("backoff %v, want %v (n=%d)", d.Backoff, want, prev.Consecutive)
			}
			if d.Backoff < c.BackoffBase || d.Backoff > c.BackoffMax {
				t.Fatalf("backoff %v outside [%v,%v]", d.Backoff, c.BackoffBase, c.BackoffMax)
			}
			grants = append(grants, now)
			sinceLifetime++
			startedAt = now
			// (a) grants in (now-Window, now] never exceed WindowLimit.
			n := 0
			for _, g := range grants {
				if g > now-winMs {
					n++
				}
			}
			if n > c.WindowLimit {
				t.Fatalf("%d grants within %v, limit %d", n, c.Window, c.WindowLimit)
			}
			// (b) lifetime count.
			if st.RestartCount > c.LifetimeLimit || sinceLifetime > c.LifetimeLimit || st.RestartCount != sinceLifetime {
				t.Fatalf("RestartCount %d (model %d), limit %d", st.RestartCount, sinceLifetime, c.LifetimeLimit)
			}
			if !slices.IsSorted(st.Recent) || len(st.Recent) > c.WindowLimit || st.Recent[0] <= now-winMs {
				t.Fatalf("Recent %v not sorted/pruned at %d", st.Recent, now)
			}
		}
	})
}

func TestPropertyBackoff(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := Config{
			BackoffBase: time.Duration(rapid.Int64Range(1, 1<<40).Draw(t, "base")),
		}
		c.BackoffMax = c.BackoffBase + time.Duration(rapid.Int64Range(0, 1<<62).Draw(t, "extra"))
		n := rapid.IntRange(-5, 200).Draw(t, "n")
		got := c.Backoff(n)
		if want := refBackoff(c, max(n, 0)); got != want {
			t.Fatalf("Backoff(%d) = %v, want %v", n, got, want)
		}
		if got < c.BackoffBase || got > c.BackoffMax {
			t.Fatalf("Backoff(%d) = %v outside range", n, got)
		}
		if n > 0 && got < c.Backoff(n-1) {
			t.Fatalf("Backoff not monotone at %d", n)
		}
	})
}
