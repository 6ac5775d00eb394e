// Package breaker is the per-dependency circuit breaker of docs/design.md §8: it
// stops a worker from hammering a dead service (store, GPU, decoder).
//
// The breaker is a pure state machine. Time enters only through the explicit
// now arguments; it never reads a clock, sleeps or starts goroutines. It is
// not safe for concurrent use: the owner serializes calls, as everything in
// core/ does.
//
// States and transitions:
//
//	Closed   --Threshold consecutive Failure-->   Open (openedAt = now)
//	Open     --now >= openedAt+Cooldown-------->   HalfOpen (lazily, on Allow/State/Failure)
//	HalfOpen --Success------------------------->   Closed (failure count 0)
//	HalfOpen --Failure(now)-------------------->   Open (openedAt = now: a fresh cool-down)
//	any      --Success------------------------->   Closed
//
// Invariants:
//   - Allow returns false only while Open and now < RetryAt().
//   - In Closed, Failures() < Threshold.
//   - A Failure while Open before the cool-down has elapsed (a straggler call
//     admitted before the breaker tripped) changes nothing: it neither extends
//     the cool-down nor counts twice.
package breaker

import (
	"fmt"
	"time"
)

// Config configures a Breaker.
type Config struct {
	// Threshold is the number of consecutive failures that opens a closed
	// breaker (default 5). Must be >= 1.
	Threshold int
	// Cooldown is how long an open breaker rejects calls before it lets one
	// trial through as half-open (default 30 s). Must be >= 0.
	Cooldown time.Duration
}

// DefaultConfig returns the defaults of docs/design.md §13: 5 failures, 30 s cool-down.
func DefaultConfig() Config {
	return Config{Threshold: 5, Cooldown: 30 * time.Second}
}

// Validate reports an invalid field of c by name.
func (c Config) Validate() error {
	if err := c.ValidateNamed(func(field string) string { return field }); err != nil {
		return fmt.Errorf("breaker: %w", err)
	}
	return nil
}

// ValidateNamed is Validate with each field called what name returns for
// it (a configuration key, say), and no "breaker:" prefix.
func (c Config) ValidateNamed(name func(field string) string) error {
	if c.Threshold < 1 {
		return fmt.Errorf("%s must be >= 1, got %d", name("Threshold"), c.Threshold)
	}
	if c.Cooldown < 0 {
		return fmt.Errorf("%s must be >= 0, got %v", name("Cooldown"), c.Cooldown)
	}
	return nil
}

// State is the state of a Breaker.
type State int

const (
	// Closed lets every call through and counts consecutive failures.
	Closed State = iota
	// Open rejects every call until the cool-down has elapsed.
	Open
	// HalfOpen lets calls through as trials: a success closes the breaker, a
	// failure reopens it.
	HalfOpen
)

// String returns "closed", "open" or "half-open".
func (s State) String() string {
	switch s {
	case Closed:
		return "closed"
	case Open:
		return "open"
	case HalfOpen:
		return "half-open"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// Breaker is a circuit breaker for one dependency. The zero value is not
// usable (its methods panic); create one with New.
type Breaker struct {
	cfg      Config
	state    State // stored state; Open may be effectively HalfOpen (see effective)
	failures int   // consecutive failures since the last success
	openedAt time.Time
	valid    bool
}

// New returns a closed Breaker. An invalid Config is clamped rather than
// rejected: Threshold < 1 becomes 1 and a negative Cooldown becomes 0. Use
// Config.Validate to reject bad configuration at load time.
func New(c Config) *Breaker {
	if c.Threshold < 1 {
		c.Threshold = 1
	}
	if c.Cooldown < 0 {
		c.Cooldown = 0
	}
	return &Breaker{cfg: c, valid: true}
}

func (b *Breaker) check() {
	if !b.valid {
		panic("breaker: zero Breaker used; create it with breaker.New")
	}
}

// Config returns the (clamped) configuration the breaker runs with.
func (b *Breaker) Config() Config {
	b.check()
	return b.cfg
}

// effective is the state at now without mutating b: a stored Open whose
// cool-down has elapsed is HalfOpen.
func (b *Breaker) effective(now time.Time) State {
	if b.state == Open && !now.Before(b.openedAt.Add(b.cfg.Cooldown)) {
		return HalfOpen
	}
	return b.state
}

// Allow reports whether a call to the dependency may be made at now. Closed
// and HalfOpen allow; Open refuses until openedAt+Cooldown, at which point
// the breaker becomes HalfOpen and the call is allowed as a trial.
func (b *Breaker) Allow(now time.Time) bool {
	b.check()
	b.state = b.effective(now)
	return b.state != Open
}

// Success records a successful call: the breaker closes and the failure
// count resets, whatever the state was.
func (b *Breaker) Success() {
	b.check()
	b.state = Closed
	b.failures = 0
	b.openedAt = time.Time{}
}

// Failure records a failed call at now. In Closed it counts, and the
// Threshold-th consecutive failure opens the breaker with openedAt = now. In
// HalfOpen (including an Open whose cool-down has elapsed) it reopens the
// breaker with a fresh cool-down from now. In Open before the cool-down has
// elapsed it changes nothing.
func (b *Breaker) Failure(now time.Time) {
	b.check()
	switch b.effective(now) {
	case Closed:
		b.failures++
		if b.failures >= b.cfg.Threshold {
			b.state = Open
			b.openedAt = now
		}
	case HalfOpen:
		if b.failures < b.cfg.Threshold {
			b.failures = b.cfg.Threshold
		}
		b.state = Open
		b.openedAt = now
	case Open:
		// Straggler from before the trip: ignore.
	}
}

// State returns the state at now. It does not change the breaker: an Open
// breaker whose cool-down has elapsed reports HalfOpen.
func (b *Breaker) State(now time.Time) State {
	b.check()
	return b.effective(now)
}

// Failures returns the number of consecutive failures since the last success
// (it stays at >= Threshold while the breaker is not closed).
func (b *Breaker) Failures() int {
	b.check()
	return b.failures
}

// RetryAt returns when an open breaker becomes (or became) half-open:
// openedAt+Cooldown. It is the zero time when the breaker is not open (a
// breaker already moved to HalfOpen by Allow reports zero).
func (b *Breaker) RetryAt() time.Time {
	b.check()
	if b.state != Open {
		return time.Time{}
	}
	return b.openedAt.Add(b.cfg.Cooldown)
}
