package restart

import (
	"fmt"
	"math"
	"time"
)

// DefaultConfig returns the defaults of docs/design.md §13: backoff 1 s doubling up to
// 60 s, at most 5 restarts within 5 min, at most 20 restarts per lifetime,
// healthy_reset 5 min and lifetime reset 24 h.
func DefaultConfig() Config {
	return Config{
		BackoffBase:   1 * time.Second,
		BackoffMax:    60 * time.Second,
		WindowLimit:   5,
		Window:        5 * time.Minute,
		LifetimeLimit: 20,
		HealthyReset:  5 * time.Minute,
		LifetimeReset: 24 * time.Hour,
	}
}

// Validate reports the first field of c that makes the policy meaningless,
// naming the field and its value. A valid Config satisfies:
//
//   - BackoffBase > 0 and BackoffMax >= BackoffBase;
//   - WindowLimit >= 1, LifetimeLimit >= 1;
//   - Window >= 1 ms (timestamps are persisted in whole milliseconds);
//   - HealthyReset > 0;
//   - LifetimeReset >= Window, so that a lifetime reset (which clears the
//     persisted window, see OnHealthy) can only drop restarts that have
//     already left the sliding window. This keeps the window limit exact.
func (c Config) Validate() error {
	if err := c.ValidateNamed(func(field string) string { return field }); err != nil {
		return fmt.Errorf("restart: %w", err)
	}
	return nil
}

// ValidateNamed is Validate with each field called what name returns for
// it (a configuration key, say), and no "restart:" prefix.
func (c Config) ValidateNamed(name func(field string) string) error {
	switch {
	case c.BackoffBase <= 0:
		return fmt.Errorf("%s must be > 0, got %v", name("BackoffBase"), c.BackoffBase)
	case c.BackoffMax < c.BackoffBase:
		return fmt.Errorf("%s (%v) must be >= %s (%v)", name("BackoffMax"), c.BackoffMax, name("BackoffBase"), c.BackoffBase)
	case c.WindowLimit < 1:
		return fmt.Errorf("%s must be >= 1, got %d", name("WindowLimit"), c.WindowLimit)
	case c.Window < time.Millisecond:
		return fmt.Errorf("%s must be >= 1ms, got %v", name("Window"), c.Window)
	case c.LifetimeLimit < 1:
		return fmt.Errorf("%s must be >= 1, got %d", name("LifetimeLimit"), c.LifetimeLimit)
	case c.HealthyReset <= 0:
		return fmt.Errorf("%s must be > 0, got %v", name("HealthyReset"), c.HealthyReset)
	case c.LifetimeReset < c.Window:
		return fmt.Errorf("%s (%v) must be >= %s (%v)", name("LifetimeReset"), c.LifetimeReset, name("Window"), c.Window)
	}
	return nil
}

// Backoff returns min(BackoffBase·2^n, BackoffMax) for n consecutive restarts.
// A negative n is treated as 0. The computation never overflows, whatever n
// is: once BackoffBase·2^n would exceed BackoffMax the result is BackoffMax.
// For a valid Config the result lies in [BackoffBase, BackoffMax]; for an
// invalid one it is still well defined and never negative.
func (c Config) Backoff(n int) time.Duration {
	base, hi := c.BackoffBase, c.BackoffMax
	if base <= 0 || hi <= 0 {
		return 0
	}
	if n < 0 {
		n = 0
	}
	if base >= hi {
		return hi
	}
	// base < hi here. base·2^n <= hi  ⇔  base <= ⌊hi/2^n⌋, which cannot
	// overflow; n >= 63 always exceeds any positive int64 duration.
	if n >= 63 || base > hi>>uint(n) {
		return hi
	}
	return base << uint(n)
}

// windowMs is the window length in whole milliseconds (>= 1 for a valid
// Config; clamped to >= 0 otherwise).
func (c Config) windowMs() int64 {
	ms := c.Window.Milliseconds()
	if ms < 0 {
		return 0
	}
	return ms
}

// satSub returns a-b saturated to the int64 range (b >= 0).
func satSub(a, b int64) int64 {
	if a < math.MinInt64+b {
		return math.MinInt64
	}
	return a - b
}
