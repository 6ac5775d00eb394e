package restart

import (
	"math"
	"strings"
	"testing"
	"time"
)

const (
	sec    = int64(1000)
	minute = 60 * sec
	hr     = 60 * minute
)

func TestDefaultConfig(t *testing.T) {
	c := DefaultConfig()
	want := Config{
		BackoffBase: time.Second, BackoffMax: 60 * time.Second,
		WindowLimit: 5, Window: 5 * time.Minute,
		LifetimeLimit: 20, HealthyReset: 5 * time.Minute, LifetimeReset: 24 * time.Hour,
	}
	if c != want {
		t.Fatalf("DefaultConfig() = %+v, want %+v", c, want)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("DefaultConfig().Validate() = %v", err)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		field string
		mod   func(*Config)
	}{
		{"BackoffBase", func(c *Config) { c.BackoffBase = 0 }},
		{"BackoffBase", func(c *Config) { c.BackoffBase = -time.Second }},
		{"BackoffMax", func(c *Config) { c.BackoffMax = 500 * time.Millisecond }},
		{"WindowLimit", func(c *Config) { c.WindowLimit = 0 }},
		{"Window", func(c *Config) { c.Window = 0 }},
		{"Window", func(c *Config) { c.Window = time.Microsecond }},
		{"LifetimeLimit", func(c *Config) { c.LifetimeLimit = -1 }},
		{"HealthyReset", func(c *Config) { c.HealthyReset = 0 }},
		{"LifetimeReset", func(c *Config) { c.LifetimeReset = time.Minute }},
	}
	for _, tt := range tests {
		c := DefaultConfig()
		tt.mod(&c)
		err := c.Validate()
		if err == nil {
			t.Errorf("%s: Validate(%+v) = nil, want error", tt.field, c)
			continue
		}
		if !strings.Contains(err.Error(), tt.field) {
			t.Errorf("%s: error %q does not name the field", tt.field, err)
		}
	}
	c := DefaultConfig()
	c.BackoffMax = c.BackoffBase // equal is fine
	if err := c.Validate(); err != nil {
		t.Errorf("BackoffMax == BackoffBase: %v", err)
	}
}

func TestBackoff(t *testing.T) {
	c := DefaultConfig()
	s := time.Second
	tests := []struct {
		n    int
		want time.Duration
	}{
		{-1, 1 * s}, {math.MinInt, 1 * s},
		{0, 1 * s}, {1, 2 * s}, {2, 4 * s}, {3, 8 * s}, {4, 16 * s}, {5, 32 * s},
		{6, 60 * s}, {7, 60 * s}, {8, 60 * s}, {30, 60 * s}, {62, 60 * s}, {63, 60 * s},
		{64, 60 * s}, {1000, 60 * s}, {math.MaxInt, 60 * s},
	}
	for _, tt := range tests {
		if got := c.Backoff(tt.n); got != tt.want {
			t.Errorf("Backoff(%d) = %v, want %v", tt.n, got, tt.want)
		}
	}
	// A huge cap: doubling must stop before overflowing.
	big := Config{BackoffBase: time.Nanosecond, BackoffMax: math.MaxInt64}
	for n := 0; n < 70; n++ {
		want := time.Duration(math.MaxInt64)
		if n < 63 {
			want = time.Duration(int64(1) << n)
		}
		if got := big.Backoff(n); got != want {
			t.Errorf("big.Backoff(%d) = %v, want %v", n, got, want)
		}
	}
	// Invalid configs never panic nor go negative.
	for _, bc := range []Config{{}, {BackoffBase: -1, BackoffMax: 5}, {BackoffBase: 5, BackoffMax: -1}, {BackoffBase: 10, BackoffMax: 3}} {
		for _, n := range []int{0, 1, 100} {
			if got := bc.Backoff(n); got < 0 {
				t.Errorf("%+v.Backoff(%d) = %v < 0", bc, n, got)
			}
		}
	}
}

// TestBackoffSequence walks a crash loop with deaths spaced far enough apart
// never to hit the window limit and checks the §5 curve.
func TestBackoffSequence(t *testing.T) {
	c := DefaultConfig()
	c.WindowLimit = 100
	st := State{Component: "worker:discovery:0"}
	want := []time.Duration{1, 2, 4, 8, 16, 32, 60, 60, 60, 60}
	now := int64(1_700_000_000_000)
	for i, w := range want {
		var d Decision
		st, d = OnDeath(c, st, now)
		if !d.Restart || d.Backoff != w*time.Second {
			t.Fatalf("death %d: %+v, want restart after %v", i, d, w*time.Second)
		}
		if st.Consecutive != i+1 || st.RestartCount != i+1 || st.LastRestartWallMs != now || st.UpdatedAtWallMs != now {
			t.Fatalf("death %d: state %+v", i, st)
		}
		now += sec
	}
}

func TestWindowLimit(t *testing.T) {
	c := DefaultConfig()
	st := State{Component: "w"}
	now := int64(10 * hr)
	for i := 0; i < 5; i++ {
		var d Decision
		st, d = OnDeath(c, st, now+int64(i)*30*sec)
		if !d.Restart {
			t.Fatalf("death %d refused: %+v", i, d)
		}
	}
	// 6th death within 5 min of the first.
	at := now + 4*minute + 59*sec
	st, d := OnDeath(c, st, at)
	if d.Restart {
		t.Fatalf("6th death within window granted: %+v", d)
	}
	wantReason := "restart window: 5 restarts within 5m0s"
	if d.Reason != wantReason || st.FailureReason != wantReason {
		t.Fatalf("reason = %q / %q, want %q", d.Reason, st.FailureReason, wantReason)
	}
	if !st.Failed() || st.FailedAtWallMs != at || st.UpdatedAtWallMs != at {
		t.Fatalf("state not failed correctly: %+v", st)
	}
	if st.RestartCount != 5 || st.Consecutive != 5 {
		t.Fatalf("counters changed on give-up: %+v", st)
	}
}

func TestWindowSlides(t *testing.T) {
	c := DefaultConfig()
	st := State{}
	// One death every 61 s: any 5-minute window (t-5m, t] holds at most
	// 5 restarts, so none is refused up to the lifetime limit.
	now := int64(0)
	for i := 0; i < 20; i++ {
		var d Decision
		st, d = OnDeath(c, st, now)
		if !d.Restart {
			t.Fatalf("death %d at %d refused: %+v (recent %v)", i, now, d, st.Recent)
		}
		if len(st.Recent) > 5 {
			t.Fatalf("Recent not pruned: %v", st.Recent)
		}
		now += 61 * sec
	}
	// Exactly Window apart: the oldest leaves the window (kept are > now-Window).
	st = State{}
	for i := 0; i < 5; i++ {
		st, _ = OnDeath(c, st, int64(i)*sec)
	}
	st2, d := OnDeath(c, st, 5*minute) // first restart was at 0 == 5m-5m: pruned
	if !d.Restart {
		t.Fatalf("death exactly Window after the first refused: %+v", d)
	}
	if len(st2.Recent) != 5 || st2.Recent[0] != sec {
		t.Fatalf("Recent = %v", st2.Recent)
	}
	if _, d := OnDeath(c, st, 5*minute-1); d.Restart {
		t.Fatalf("death 1 ms inside the window granted")
	}
}

func TestLifetimeLimit(t *testing.T) {
	c := DefaultConfig()
	st := State{}
	now := int64(0)
	for i := 0; i < 20; i++ {
		var d Decision
		st, d = OnDeath(c, st, now)
		if !d.Restart {
			t.Fatalf("death %d refused: %+v", i, d)
		}
		now += hr // spaced out: the window never matters
	}
	st, d := OnDeath(c, st, now)
	if d.Restart {
		t.Fatalf("21st death granted")
	}
	if want := "lifetime limit: 20 restarts"; d.Reason != want || st.FailureReason != want {
		t.Fatalf("reason %q, want %q", d.Reason, want)
	}
	if st.RestartCount != 20 || st.FailedAtWallMs != now {
		t.Fatalf("state %+v", st)
	}
}

func TestHealthyReset(t *testing.T) {
	c := DefaultConfig()
	st := State{Component: "w"}
	for i := 0; i < 4; i++ {
		st, _ = OnDeath(c, st, int64(i)*sec)
	}
	if st.Consecutive != 4 {
		t.Fatalf("Consecutive = %d", st.Consecutive)
	}
	before := st
	st2, changed := OnHealthy(c, st, 5*time.Minute-time.Millisecond, 100*sec)
	if changed || st2.Consecutive != 4 || st2.UpdatedAtWallMs != before.UpdatedAtWallMs {
		t.Fatalf("reset too early: changed=%v %+v", changed, st2)
	}
	st2, changed = OnHealthy(c, st, 5*time.Minute, 400*sec)
	if !changed || st2.Consecutive != 0 || st2.UpdatedAtWallMs != 400*sec {
		t.Fatalf("healthy reset: changed=%v %+v", changed, st2)
	}
	if st2.RestartCount != 4 || len(st2.Recent) != 4 {
		t.Fatalf("healthy reset touched lifetime state: %+v", st2)
	}
	// Idempotent.
	if _, changed := OnHealthy(c, st2, 10*time.Minute, 500*sec); changed {
		t.Fatalf("second healthy reset reported a change")
	}
	// Next death restarts with the base backoff again.
	_, d := OnDeath(c, st2, 500*sec)
	if !d.Restart || d.Backoff != time.Second {
		t.Fatalf("after healthy reset: %+v", d)
	}
}

func TestLifetimeReset(t *testing.T) {
	c := DefaultConfig()
	st := State{}
	now := int64(0)
	for i := 0; i < 19; i++ {
		st, _ = OnDeath(c, st, now)
		now += hr
	}
	last := st.LastRestartWallMs
	st2, changed := OnHealthy(c, st, 24*time.Hour-time.Millisecond, last+24*hr-1)
	if !changed || st2.RestartCount != 19 || st2.Consecutive != 0 {
		t.Fatalf("before 24h: changed=%v %+v", changed, st2)
	}
	st3, changed := OnHealthy(c, st2, 24*time.Hour, last+24*hr)
	if !changed || st3.RestartCount != 0 || st3.Recent != nil || st3.Consecutive != 0 || st3.UpdatedAtWallMs != last+24*hr {
		t.Fatalf("lifetime reset: changed=%v %+v", changed, st3)
	}
	// 20 more restarts are allowed again.
	now = last + 24*hr
	for i := 0; i < 20; i++ {
		var d Decision
		st3, d = OnDeath(c, st3, now)
		if !d.Restart {
			t.Fatalf("death %d after lifetime reset refused: %+v", i, d)
		}
		now += hr
	}
}

func TestFailedIsSticky(t *testing.T) {
	c := DefaultConfig()
	c.LifetimeLimit = 1
	st, d := OnDeath(c, State{Component: "w"}, 1000)
	if !d.Restart {
		t.Fatal("first death refused")
	}
	st, d = OnDeath(c, st, 2000)
	if d.Restart || !st.Failed() {
		t.Fatalf("second death granted: %+v", d)
	}
	reason, failedAt := st.FailureReason, st.FailedAtWallMs
	for i := 0; i < 3; i++ {
		now := int64(3000 + i*int(hr))
		st, d = OnDeath(c, st, now+hr*48)
		if d.Restart || d.Reason != reason || st.FailureReason != reason || st.FailedAtWallMs != failedAt {
			t.Fatalf("failed not sticky: %+v %+v", d, st)
		}
		if st.UpdatedAtWallMs != now+hr*48 {
			t.Fatalf("UpdatedAtWallMs = %d", st.UpdatedAtWallMs)
		}
		var changed bool
		st, changed = OnHealthy(c, st, 1000*time.Hour, now+hr*49)
		if changed || !st.Failed() {
			t.Fatalf("OnHealthy cleared failure: %+v", st)
		}
	}
	// Failed by FailedAtWallMs alone, or by reason alone.
	if !(State{FailedAtWallMs: 1}).Failed() || !(State{FailureReason: "x"}).Failed() || (State{}).Failed() {
		t.Fatal("Failed() wrong")
	}
	if _, d := OnDeath(c, State{FailedAtWallMs: 7}, 8); d.Restart || d.Reason == "" {
		t.Fatalf("reason-less failed state: %+v", d)
	}
}

func TestReset(t *testing.T) {
	st := State{
		Component: "worker:discovery:3", RestartCount: 20, Consecutive: 7,
		Recent: []int64{1, 2, 3}, LastRestartWallMs: 3, FailedAtWallMs: 4,
		FailureReason: "lifetime limit: 20 restarts", UpdatedAtWallMs: 4,
	}
	got := Reset(st, 99)
	want := State{Component: "worker:discovery:3", UpdatedAtWallMs: 99}
	if got.Component != want.Component || got.UpdatedAtWallMs != 99 || got.RestartCount != 0 ||
		got.Consecutive != 0 || got.Recent != nil || got.LastRestartWallMs != 0 ||
		got.FailedAtWallMs != 0 || got.FailureReason != "" || got.Failed() {
		t.Fatalf("Reset = %+v", got)
	}
	if got.Counted() || !st.Counted() {
		t.Errorf("Counted: %v after the reset, %v before; want false, true", got.Counted(), st.Counted())
	}
	for name, one := range map[string]State{"lifetime": {RestartCount: 1}, "backoff": {Consecutive: 1},
		"window": {Recent: []int64{5}}, "last restart": {LastRestartWallMs: 5}, "failed": {FailureReason: "x"}} {
		if !one.Counted() {
			t.Errorf("a state with only its %s set is not Counted", name)
		}
	}
	_, d := OnDeath(DefaultConfig(), got, 100)
	if !d.Restart || d.Backoff != time.Second {
		t.Fatalf("after reset: %+v", d)
	}
}

func TestNoAliasing(t *testing.T) {
	c := DefaultConfig()
	in := State{Recent: make([]int64, 2, 10)}
	in.Recent[0], in.Recent[1] = 10, 20
	out, _ := OnDeath(c, in, 30)
	if len(out.Recent) != 3 {
		t.Fatalf("Recent = %v", out.Recent)
	}
	out.Recent[0] = -1
	if in.Recent[0] != 10 || in.Recent[:3][2] != 0 {
		t.Fatalf("input mutated: %v", in.Recent[:3])
	}
	out2, _ := OnHealthy(c, in, 0, 40)
	out2.Recent[1] = -2
	if in.Recent[1] != 20 {
		t.Fatal("OnHealthy aliases Recent")
	}
	failed := State{FailureReason: "x", Recent: []int64{5}}
	out3, _ := OnDeath(c, failed, 6)
	out3.Recent[0] = 0
	if failed.Recent[0] != 5 {
		t.Fatal("OnDeath on failed state aliases Recent")
	}
	failed.Recent = make([]int64, 5, 8)
	for i := range failed.Recent {
		failed.Recent[i] = int64(i + 1)
	}
	failed.FailureReason = ""
	out4, d := OnDeath(c, failed, 10) // give-up path
	if d.Restart {
		t.Fatal("expected give-up")
	}
	out4.Recent[0] = 0
	if failed.Recent[0] != 1 {
		t.Fatal("give-up path aliases Recent")
	}
}

func TestTimeGoingBackwardsKeepsRecentSorted(t *testing.T) {
	c := DefaultConfig()
	c.WindowLimit = 100
	st := State{}
	for _, now := range []int64{10 * sec, 5 * sec, 20 * sec, 5 * sec, 0} {
		st, _ = OnDeath(c, st, now)
		for i := 1; i < len(st.Recent); i++ {
			if st.Recent[i-1] > st.Recent[i] {
				t.Fatalf("Recent unsorted: %v", st.Recent)
			}
		}
	}
	// Extreme times do not overflow the window cutoff.
	st, d := OnDeath(c, State{Recent: []int64{math.MinInt64, math.MaxInt64}}, math.MinInt64)
	// cutoff saturates at MinInt64, so the MinInt64 entry is pruned; the
	// MaxInt64 one (in the future) counts as now.
	if !d.Restart || len(st.Recent) != 2 || st.Recent[0] != math.MinInt64 || st.Recent[1] != math.MinInt64 {
		t.Fatalf("extreme times: %+v %+v", d, st)
	}
}

// After the wall clock went back an hour, the restarts recorded just
// before the jump count as restarts at the first death after it, and leave
// the window one Window later — not an hour later, when the clock has
// caught up with them.
func TestClockWentBack(t *testing.T) {
	c := DefaultConfig() // 5 within 5 min
	t0 := 100 * hr
	st := State{Recent: []int64{t0, t0 + sec, t0 + 2*sec, t0 + 3*sec}, RestartCount: 4, Consecutive: 4}
	now := t0 - hr // the clock went back
	for i, at := range []int64{now, now + 6*minute, now + 7*minute} {
		var d Decision
		st, d = OnDeath(c, st, at)
		if !d.Restart {
			t.Fatalf("death %d at +%d s refused: %s (Recent %v)", i, (at-now)/sec, d.Reason, st.Recent)
		}
		for _, r := range st.Recent {
			if r > at {
				t.Fatalf("death %d: Recent %v holds a time after now %d", i, st.Recent, at)
			}
		}
	}
	// The window still limits: four more deaths within the minute fail the
	// component at the fifth restart in the window.
	for i := range 4 {
		var d Decision
		st, d = OnDeath(c, st, now+7*minute+int64(i+1)*sec)
		if want := i < 3; d.Restart != want {
			t.Fatalf("death at +7 min %d s: restart %v, want %v (%s)", i+1, d.Restart, want, d.Reason)
		}
	}
}
