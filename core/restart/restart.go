// Package restart is the restart policy (docs/design.md §5): a pure function of the
// persisted per-component State, the configuration and the current time.
package restart

import "time"

// Config holds the four limits of §5 and the backoff curve.
type Config struct {
	BackoffBase   time.Duration // 1 s: first backoff
	BackoffMax    time.Duration // 60 s: backoff cap
	WindowLimit   int           // 5: at most this many restarts within Window
	Window        time.Duration // 5 min
	LifetimeLimit int           // 20: at most this many restarts until a lifetime reset
	HealthyReset  time.Duration // 5 min of continuous healthy resets the backoff exponent
	LifetimeReset time.Duration // 24 h of continuous healthy resets the lifetime count
}

// State is what is persisted per component (`worker_restart_policy`) so that a
// crash loop cannot escape its limits by restarting the app. All times are
// wall-clock Unix milliseconds; nothing here is a deadline.
type State struct {
	Component string `json:"component"`
	// RestartCount is the lifetime number of restarts since the last lifetime
	// or manual reset.
	RestartCount int `json:"restart_count"`
	// Consecutive is n in the backoff min(2^n, max): restarts since the last
	// healthy_reset.
	Consecutive int `json:"consecutive"`
	// Recent holds the wall times of restarts inside the sliding window,
	// oldest first.
	Recent            []int64 `json:"recent"`
	LastRestartWallMs int64   `json:"last_restart_wall_ms"`
	FailedAtWallMs    int64   `json:"failed_at_wall_ms"`
	FailureReason     string  `json:"failure_reason"`
	UpdatedAtWallMs   int64   `json:"updated_at_wall_ms"`
}

// Decision is the policy's answer to a death.
type Decision struct {
	Restart bool
	Backoff time.Duration
	Reason  string // why the policy gave up, when !Restart
}
