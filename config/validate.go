package config

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/nomarr/nomarr/core/gpu"
)

// Validate checks the whole configuration. Every error names the key (or
// keys) at fault, as a user writes them: the core's restart and breaker
// validators are run with their fields named as keys (coreKeys).
func (c Config) Validate() error {
	if c.Workers < 1 || c.Workers > MaxWorkers {
		return fmt.Errorf("config: workers must be in [1, %d], got %d", MaxWorkers, c.Workers)
	}
	if c.FrameInterval <= 0 || c.FrameInterval >= c.StaleAfter {
		return fmt.Errorf("config: frame_interval (%s) must be > 0 and < stale_after (%s)", c.FrameInterval, c.StaleAfter)
	}
	for _, p := range []struct {
		key string
		d   time.Duration
	}{{"frame_interval", c.FrameInterval}, {"check_interval", c.CheckInterval}, {"history_interval", c.HistoryInterval},
		{"cleanup_period", c.CleanupPeriod}, {"gpu_probe_interval", c.GPUProbeInterval}, {"idle_poll_min", c.IdlePollMin}} {
		if p.d < MinInterval {
			return fmt.Errorf("config: %s must be at least %s, got %s", p.key, MinInterval, p.d)
		}
	}
	// Every duration is bounded, so that sums and multiples of them (the
	// checks below, deadlines in the core) cannot overflow.
	fs := fields()
	for _, k := range slices.Sorted(maps.Keys(fs)) {
		if d, ok := fs[k](&c).(*time.Duration); ok && *d > MaxDuration {
			return fmt.Errorf("config: %s must be at most %s, got %s", k, MaxDuration, *d)
		}
	}
	// The owner sees a worker's progress and its first frame only through
	// frames: a rule that fires before a frame can come kills healthy
	// workers (a stall_after under frame_interval kills every job longer
	// than it). stall_after needs two frames: the one that saw progress
	// and the next.
	for _, r := range []struct {
		key    string
		d, min time.Duration
	}{{"startup_timeout", c.StartupTimeout, c.FrameInterval}, {"cold_start_max", c.ColdStartMax, c.FrameInterval},
		{"stall_after", c.StallAfter, 2 * c.FrameInterval}} {
		if r.d <= r.min {
			return fmt.Errorf("config: %s (%s) must exceed %s (frame_interval is %s): the owner sees a worker only through its frames", r.key, r.d, r.min, c.FrameInterval)
		}
	}
	// An orphaned worker renews its lease on its frame ticker once lease_ttl/3
	// has passed (worker.KeepLease): the renewal lands before the lease ends
	// when lease_ttl/3 + frame_interval < lease_ttl.
	if 3*c.FrameInterval >= 2*c.LeaseTTL {
		return fmt.Errorf("config: lease_ttl (%s) must exceed 1.5 × frame_interval (%s): a worker whose main process died renews its own lease between frames", c.LeaseTTL, c.FrameInterval)
	}
	if c.HistoryRetention < 0 || (c.HistoryRetention > 0 && c.HistoryRetention < c.HistoryInterval) {
		return fmt.Errorf("config: history_retention must be 0 (keep forever) or at least history_interval (%s), got %s", c.HistoryInterval, c.HistoryRetention)
	}
	// The claimer reads a batch size of 0 as "use the default": refused here
	// so that discover_batch: 0 does not silently mean 8.
	if c.DiscoverBatch < 1 {
		return fmt.Errorf("config: discover_batch must be >= 1, got %d", c.DiscoverBatch)
	}
	if c.IdlePollMax < c.IdlePollMin {
		return fmt.Errorf("config: idle_poll_max (%s) must be >= idle_poll_min (%s)", c.IdlePollMax, c.IdlePollMin)
	}
	if err := c.Restart().ValidateNamed(coreKey); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if err := c.breaker().ValidateNamed(coreKey); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if err := c.validateGPU(); err != nil {
		return err
	}
	if err := c.Node("validate", "validate").Supervisor.Validate(); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if err := c.Worker("worker:discovery:0", "validate/worker:discovery:0", "validate", 0).Validate(); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	return nil
}

// coreKeys names the fields of the core's restart and breaker
// configurations as the keys a user writes, for their validators' messages.
var coreKeys = map[string]string{
	"BackoffBase": "backoff_base", "BackoffMax": "backoff_max", "WindowLimit": "window_limit", "Window": "window",
	"LifetimeLimit": "lifetime_limit", "HealthyReset": "healthy_reset", "LifetimeReset": "lifetime_reset",
	"Threshold": "breaker_threshold", "Cooldown": "breaker_cooldown",
}

func coreKey(field string) string {
	if k, ok := coreKeys[field]; ok {
		return k
	}
	return field
}

// validateGPU checks, when gpu is on, that a GPU health value cannot go
// stale between two probes. The probe runs every gpu_probe_interval and
// takes up to gpu.ProbeTimeout, and workers refuse GPU jobs while the last
// value is older than gpu_stale_after: with gpu_stale_after below
// gpu_probe_interval + gpu.ProbeTimeout (0 included) the preflight would
// block claims between probes, or always, although the GPU is fine.
func (c Config) validateGPU() error {
	if !c.GPU {
		return nil
	}
	if floor := c.GPUProbeInterval + gpu.ProbeTimeout; c.GPUStaleAfter < floor {
		return fmt.Errorf("config: gpu_stale_after (%s) must be at least gpu_probe_interval (%s) + the probe timeout (%s) = %s when gpu is true",
			c.GPUStaleAfter, c.GPUProbeInterval, gpu.ProbeTimeout, floor)
	}
	return nil
}
