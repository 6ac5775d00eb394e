package breaker

import (
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"
)

var t0 = time.Unix(1_700_000_000, 0)

func TestDefaultConfig(t *testing.T) {
	if c := DefaultConfig(); c.Threshold != 5 || c.Cooldown != 30*time.Second || c.Validate() != nil {
		t.Fatalf("DefaultConfig() = %+v", c)
	}
	if err := (Config{Threshold: 0}).Validate(); err == nil || !strings.Contains(err.Error(), "Threshold") {
		t.Fatalf("Threshold 0: %v", err)
	}
	if err := (Config{Threshold: 1, Cooldown: -1}).Validate(); err == nil || !strings.Contains(err.Error(), "Cooldown") {
		t.Fatalf("Cooldown -1: %v", err)
	}
	if c := New(Config{Threshold: -3, Cooldown: -time.Second}).Config(); c.Threshold != 1 || c.Cooldown != 0 {
		t.Fatalf("New did not clamp: %+v", c)
	}
}

func TestStateString(t *testing.T) {
	for s, want := range map[State]string{Closed: "closed", Open: "open", HalfOpen: "half-open", State(9): "State(9)"} {
		if s.String() != want {
			t.Errorf("%d.String() = %q, want %q", int(s), s.String(), want)
		}
	}
}

func TestLifecycle(t *testing.T) {
	b := New(DefaultConfig())
	now := t0
	for i := 0; i < 4; i++ {
		if !b.Allow(now) {
			t.Fatalf("closed breaker refused at failure %d", i)
		}
		b.Failure(now)
		if b.State(now) != Closed || !b.RetryAt().IsZero() {
			t.Fatalf("opened after %d failures", i+1)
		}
	}
	b.Failure(now) // 5th
	if b.State(now) != Open || b.Allow(now) {
		t.Fatal("not open after 5 consecutive failures")
	}
	if want := now.Add(30 * time.Second); !b.RetryAt().Equal(want) {
		t.Fatalf("RetryAt = %v, want %v", b.RetryAt(), want)
	}
	if b.Allow(now.Add(30*time.Second - time.Nanosecond)) {
		t.Fatal("allowed before cool-down")
	}
	// Straggler failure while open: no extension.
	b.Failure(now.Add(10 * time.Second))
	if !b.RetryAt().Equal(now.Add(30 * time.Second)) {
		t.Fatal("straggler failure extended the cool-down")
	}
	// State is a pure query.
	if b.State(now.Add(30*time.Second)) != HalfOpen || b.RetryAt().IsZero() {
		t.Fatal("State mutated or wrong")
	}
	now = now.Add(30 * time.Second)
	if !b.Allow(now) || b.State(now) != HalfOpen || !b.RetryAt().IsZero() {
		t.Fatal("not half-open after cool-down")
	}
	if !b.Allow(now) {
		t.Fatal("half-open refused")
	}
	// Failure in half-open: reopen with a fresh cool-down.
	now = now.Add(2 * time.Second)
	b.Failure(now)
	if b.State(now) != Open || !b.RetryAt().Equal(now.Add(30*time.Second)) {
		t.Fatalf("half-open failure: state %v retry %v", b.State(now), b.RetryAt())
	}
	now = now.Add(30 * time.Second)
	if !b.Allow(now) {
		t.Fatal("second trial refused")
	}
	b.Success()
	if b.State(now) != Closed || b.Failures() != 0 || !b.RetryAt().IsZero() {
		t.Fatal("not closed after success")
	}
	// Needs a full Threshold again.
	for i := 0; i < 4; i++ {
		b.Failure(now)
	}
	if b.State(now) != Closed {
		t.Fatal("reopened too early")
	}
}

func TestSuccessResetsCount(t *testing.T) {
	b := New(Config{Threshold: 3, Cooldown: time.Second})
	for i := 0; i < 10; i++ {
		b.Failure(t0)
		b.Failure(t0)
		b.Success()
	}
	if b.State(t0) != Closed {
		t.Fatal("non-consecutive failures opened the breaker")
	}
}

func TestFailureAfterCooldownWithoutAllow(t *testing.T) {
	b := New(Config{Threshold: 1, Cooldown: time.Second})
	b.Failure(t0)
	later := t0.Add(5 * time.Second)
	b.Failure(later) // effectively half-open: reopen from later
	if !b.RetryAt().Equal(later.Add(time.Second)) {
		t.Fatalf("RetryAt = %v", b.RetryAt())
	}
}

func TestZeroCooldown(t *testing.T) {
	b := New(Config{Threshold: 1})
	b.Failure(t0)
	if b.State(t0) != HalfOpen || !b.Allow(t0) {
		t.Fatal("zero cool-down should go half-open at once")
	}
}

func TestZeroValuePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("zero Breaker did not panic")
		}
	}()
	var b Breaker
	b.Allow(t0)
}

// model is a deliberately different formulation: it keeps the time until
// which calls are rejected and a flag for "tripped", and never stores
// HalfOpen.
type model struct {
	threshold int
	cooldown  time.Duration
	fails     int
	tripped   bool
	until     time.Time
}

func (m *model) state(now time.Time) State {
	switch {
	case !m.tripped:
		return Closed
	case now.Before(m.until):
		return Open
	default:
		return HalfOpen
	}
}

func (m *model) allow(now time.Time) bool { return m.state(now) != Open }

func (m *model) success() { *m = model{threshold: m.threshold, cooldown: m.cooldown} }

func (m *model) failure(now time.Time) {
	switch m.state(now) {
	case Closed:
		m.fails++
		if m.fails == m.threshold {
			m.tripped, m.until = true, now.Add(m.cooldown)
		}
	case HalfOpen:
		m.until = now.Add(m.cooldown)
	}
}

func TestPropertyModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := Config{
			Threshold: rapid.IntRange(1, 6).Draw(t, "threshold"),
			Cooldown:  time.Duration(rapid.Int64Range(0, 10).Draw(t, "cooldown")) * time.Second,
		}
		b := New(c)
		m := &model{threshold: c.Threshold, cooldown: c.Cooldown}
		now := t0
		for i, n := 0, rapid.IntRange(1, 200).Draw(t, "n"); i < n; i++ {
			now = now.Add(time.Duration(rapid.Int64Range(0, 4000).Draw(t, "dtMs")) * time.Millisecond)
			switch rapid.IntRange(0, 3).Draw(t, "op") {
			case 0:
				if got, want := b.Allow(now), m.allow(now); got != want {
					t.Fatalf("Allow = %v, model %v", got, want)
				}
			case 1:
				b.Success()
				m.success()
			case 2:
				b.Failure(now)
				m.failure(now)
			case 3:
				// State only: checked below.
			}
			got, want := b.State(now), m.state(now)
			if got != want {
				t.Fatalf("State = %v, model %v", got, want)
			}
			if got == Open {
				if ra := b.RetryAt(); !ra.Equal(m.until) || !now.Before(ra) {
					t.Fatalf("RetryAt = %v, model %v, now %v", ra, m.until, now)
				}
			}
			if got == Closed && b.Failures() >= c.Threshold {
				t.Fatalf("closed with %d failures >= %d", b.Failures(), c.Threshold)
			}
		}
	})
}
