// Package config is Nomarr's configuration: every snake_case key with its
// default (docs/design.md §13), overrides by name with errors that name the key, and
// the translation into the core's per-component configurations. The
// simulator's scenario `config:` block and the production binary use the same
// keys.
package config

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/nomarr/nomarr/core/breaker"
	"github.com/nomarr/nomarr/core/gpu"
	"github.com/nomarr/nomarr/core/monitor"
	"github.com/nomarr/nomarr/core/node"
	"github.com/nomarr/nomarr/core/restart"
	"github.com/nomarr/nomarr/core/store"
	"github.com/nomarr/nomarr/core/supervisor"
	"github.com/nomarr/nomarr/core/worker"
)

// Config holds every key. Field tags name the keys.
type Config struct {
	Workers int `key:"workers"` // alias tagger_worker_count

	FrameInterval  time.Duration `key:"frame_interval"`
	StaleAfter     time.Duration `key:"stale_after"`
	HangAfter      time.Duration `key:"hang_after"`
	StartupTimeout time.Duration `key:"startup_timeout"`
	ColdStartMax   time.Duration `key:"cold_start_max"`
	StallAfter     time.Duration `key:"stall_after"`
	StopGrace      time.Duration `key:"stop_grace"`

	CheckInterval   time.Duration `key:"check_interval"`
	HistoryInterval time.Duration `key:"history_interval"`
	// HistoryRetention: health-history rows older than this are deleted
	// (hourly); 0 keeps them forever. Not in docs/design.md §13: without it the
	// table grows by a row per worker every history_interval.
	HistoryRetention time.Duration `key:"history_retention"`

	BackoffBase   time.Duration `key:"backoff_base"`
	BackoffMax    time.Duration `key:"backoff_max"`
	WindowLimit   int           `key:"window_limit"`
	Window        time.Duration `key:"window"`
	LifetimeLimit int           `key:"lifetime_limit"`
	HealthyReset  time.Duration `key:"healthy_reset"`
	LifetimeReset time.Duration `key:"lifetime_reset"`

	LeaseTTL        time.Duration `key:"lease_ttl"`
	CleanupPeriod   time.Duration `key:"cleanup_period"`
	DiscoverBatch   int           `key:"discover_batch"`
	QuarantineAfter int           `key:"quarantine_after"`

	IdlePollMin      time.Duration `key:"idle_poll_min"`
	IdlePollMax      time.Duration `key:"idle_poll_max"`
	CacheIdleTimeout time.Duration `key:"cache_idle_timeout"`

	MaxConsecutiveErrors int           `key:"max_consecutive_errors"`
	TransientRetries     int           `key:"transient_retries"`
	TransientBase        time.Duration `key:"transient_base"`
	TransientMax         time.Duration `key:"transient_max"`
	BreakerThreshold     int           `key:"breaker_threshold"`
	BreakerCooldown      time.Duration `key:"breaker_cooldown"`

	GPU              bool          `key:"gpu"`
	GPUProbeInterval time.Duration `key:"gpu_probe_interval"`
	GPUStaleAfter    time.Duration `key:"gpu_stale_after"`
}

// MinInterval is the shortest accepted period: shorter ones only burn CPU.
const MinInterval = 10 * time.Millisecond

// MaxDuration bounds every duration key (a year): longer ones mean nothing
// here, and sums of them must not overflow.
const MaxDuration = 365 * 24 * time.Hour

// MaxWorkers bounds workers per instance.
const MaxWorkers = 1024

// DefaultWorkers is the worker count of an instance: the one default the
// core does not hold, since the core takes the count from its caller.
const DefaultWorkers = 2

// DefaultFrameInterval is how often a worker writes a health frame (docs/design.md
// §3): the drivers take it from the configuration, so it has no core
// default.
const DefaultFrameInterval = 5 * time.Second

// Defaults returns docs/design.md §13. Every value but DefaultWorkers and
// DefaultFrameInterval is the core's own default, read from its
// DefaultConfig functions and constants, so that a default is written once.
func Defaults() Config {
	n := node.DefaultConfig("defaults", "defaults", DefaultWorkers)
	s, m, r := n.Supervisor, n.Monitor, n.Supervisor.Restart
	w := worker.DefaultConfig("defaults", "defaults")
	return Config{
		Workers:              s.Workers,
		FrameInterval:        DefaultFrameInterval,
		StaleAfter:           s.StaleAfter,
		HangAfter:            s.HangAfter,
		StartupTimeout:       s.StartupTimeout,
		ColdStartMax:         s.ColdStartMax,
		StallAfter:           s.StallAfter,
		StopGrace:            s.StopGrace,
		CheckInterval:        m.CheckInterval,
		HistoryInterval:      m.HistoryInterval,
		HistoryRetention:     n.HistoryRetention,
		BackoffBase:          r.BackoffBase,
		BackoffMax:           r.BackoffMax,
		WindowLimit:          r.WindowLimit,
		Window:               r.Window,
		LifetimeLimit:        r.LifetimeLimit,
		HealthyReset:         r.HealthyReset,
		LifetimeReset:        r.LifetimeReset,
		LeaseTTL:             s.LeaseTTL,
		CleanupPeriod:        n.CleanupPeriod,
		DiscoverBatch:        w.DiscoverBatch,
		QuarantineAfter:      s.QuarantineAfter,
		IdlePollMin:          w.IdlePollMin,
		IdlePollMax:          w.IdlePollMax,
		CacheIdleTimeout:     w.CacheIdleTimeout,
		MaxConsecutiveErrors: w.MaxConsecutiveErrors,
		TransientRetries:     w.TransientRetries,
		TransientBase:        w.TransientBase,
		TransientMax:         w.TransientMax,
		BreakerThreshold:     w.Breaker.Threshold,
		BreakerCooldown:      w.Breaker.Cooldown,
		GPU:                  w.UseGPU,
		GPUProbeInterval:     gpu.ProbeInterval,
		GPUStaleAfter:        w.GPUStaleAfter,
	}
}

// Keys lists every known key, sorted.
func Keys() []string {
	keys := make([]string, 0, len(fields()))
	for k := range fields() {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// fields maps key → pointer accessor.
func fields() map[string]func(*Config) any {
	return map[string]func(*Config) any{
		"workers":                func(c *Config) any { return &c.Workers },
		"frame_interval":         func(c *Config) any { return &c.FrameInterval },
		"stale_after":            func(c *Config) any { return &c.StaleAfter },
		"hang_after":             func(c *Config) any { return &c.HangAfter },
		"startup_timeout":        func(c *Config) any { return &c.StartupTimeout },
		"cold_start_max":         func(c *Config) any { return &c.ColdStartMax },
		"stall_after":            func(c *Config) any { return &c.StallAfter },
		"stop_grace":             func(c *Config) any { return &c.StopGrace },
		"check_interval":         func(c *Config) any { return &c.CheckInterval },
		"history_interval":       func(c *Config) any { return &c.HistoryInterval },
		"history_retention":      func(c *Config) any { return &c.HistoryRetention },
		"backoff_base":           func(c *Config) any { return &c.BackoffBase },
		"backoff_max":            func(c *Config) any { return &c.BackoffMax },
		"window_limit":           func(c *Config) any { return &c.WindowLimit },
		"window":                 func(c *Config) any { return &c.Window },
		"lifetime_limit":         func(c *Config) any { return &c.LifetimeLimit },
		"healthy_reset":          func(c *Config) any { return &c.HealthyReset },
		"lifetime_reset":         func(c *Config) any { return &c.LifetimeReset },
		"lease_ttl":              func(c *Config) any { return &c.LeaseTTL },
		"cleanup_period":         func(c *Config) any { return &c.CleanupPeriod },
		"discover_batch":         func(c *Config) any { return &c.DiscoverBatch },
		"quarantine_after":       func(c *Config) any { return &c.QuarantineAfter },
		"idle_poll_min":          func(c *Config) any { return &c.IdlePollMin },
		"idle_poll_max":          func(c *Config) any { return &c.IdlePollMax },
		"cache_idle_timeout":     func(c *Config) any { return &c.CacheIdleTimeout },
		"max_consecutive_errors": func(c *Config) any { return &c.MaxConsecutiveErrors },
		"transient_retries":      func(c *Config) any { return &c.TransientRetries },
		"transient_base":         func(c *Config) any { return &c.TransientBase },
		"transient_max":          func(c *Config) any { return &c.TransientMax },
		"breaker_threshold":      func(c *Config) any { return &c.BreakerThreshold },
		"breaker_cooldown":       func(c *Config) any { return &c.BreakerCooldown },
		"gpu":                    func(c *Config) any { return &c.GPU },
		"gpu_probe_interval":     func(c *Config) any { return &c.GPUProbeInterval },
		"gpu_stale_after":        func(c *Config) any { return &c.GPUStaleAfter },
	}
}

// Known reports whether key (or an alias) is a configuration key.
func Known(key string) bool {
	if a, ok := aliases[key]; ok {
		key = a
	}
	_, ok := fields()[key]
	return ok
}

// Set assigns one key from its text form ("30s", "5", "true"). The error
// names the key and says what was expected.
func (c *Config) Set(key, value string) error {
	if a, ok := aliases[key]; ok {
		key = a
	}
	get, ok := fields()[key]
	if !ok {
		return fmt.Errorf("config: unknown key %q (known: %s)", key, strings.Join(Keys(), ", "))
	}
	value = strings.TrimSpace(value)
	switch p := get(c).(type) {
	case *time.Duration:
		d, err := time.ParseDuration(value)
		if err != nil || d < 0 {
			return fmt.Errorf("config: %s: want a duration such as 30s or 5m, got %q", key, value)
		}
		*p = d
	case *int:
		n, err := strconv.Atoi(value)
		if err != nil || n < 0 {
			return fmt.Errorf("config: %s: want a non-negative integer, got %q", key, value)
		}
		*p = n
	case *bool:
		b, err := strconv.ParseBool(value)
		if err != nil {
			return fmt.Errorf("config: %s: want true or false, got %q", key, value)
		}
		*p = b
	}
	return nil
}

// Apply sets every key of m in SortKeys order (a key beats its alias);
// values may be strings, numbers or booleans (as decoded from YAML or JSON).
func (c *Config) Apply(m map[string]any) error {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	SortKeys(keys)
	for _, k := range keys {
		var s string
		switch v := m[k].(type) {
		case string:
			s = v
		case int, int64, uint64, bool:
			s = fmt.Sprint(v)
		case float64:
			if v != float64(int64(v)) {
				return fmt.Errorf("config: %s: want an integer, got %v", k, v)
			}
			s = strconv.FormatInt(int64(v), 10)
		default:
			return fmt.Errorf("config: %s: unsupported value %v", k, v)
		}
		if err := c.Set(k, s); err != nil {
			return err
		}
	}
	return nil
}

func (c Config) breaker() breaker.Config {
	return breaker.Config{Threshold: c.BreakerThreshold, Cooldown: c.BreakerCooldown}
}

// Restart returns the restart policy configuration.
func (c Config) Restart() restart.Config {
	return restart.Config{BackoffBase: c.BackoffBase, BackoffMax: c.BackoffMax, WindowLimit: c.WindowLimit, Window: c.Window,
		LifetimeLimit: c.LifetimeLimit, HealthyReset: c.HealthyReset, LifetimeReset: c.LifetimeReset}
}

// Node returns the main-process configuration for one instance.
func (c Config) Node(instance, nodeName string) node.Config {
	s := supervisor.DefaultConfig(instance, nodeName, c.Workers)
	s.StaleAfter, s.HangAfter, s.StartupTimeout = c.StaleAfter, c.HangAfter, c.StartupTimeout
	s.ColdStartMax, s.StallAfter, s.StopGrace, s.LeaseTTL = c.ColdStartMax, c.StallAfter, c.StopGrace, c.LeaseTTL
	s.QuarantineAfter = c.QuarantineAfter
	s.Restart = c.Restart()
	m := monitor.DefaultConfig()
	m.CheckInterval, m.HistoryInterval = c.CheckInterval, c.HistoryInterval
	return node.Config{Supervisor: s, Monitor: m, CleanupPeriod: c.CleanupPeriod, HistoryRetention: c.HistoryRetention}
}

// Worker returns the configuration of one worker process of the host named
// node.
func (c Config) Worker(component, workerID, node string, pid int) worker.Config {
	w := worker.DefaultConfig(component, workerID)
	w.PID = pid
	w.GPUHealthKey = store.GPUHealthKey(node)
	w.LeaseTTL, w.DiscoverBatch = c.LeaseTTL, c.DiscoverBatch
	w.IdlePollMin, w.IdlePollMax = c.IdlePollMin, c.IdlePollMax
	w.CacheIdleTimeout = c.CacheIdleTimeout
	w.MaxConsecutiveErrors, w.TransientRetries = c.MaxConsecutiveErrors, c.TransientRetries
	w.TransientBase, w.TransientMax = c.TransientBase, c.TransientMax
	w.Breaker = c.breaker()
	w.UseGPU, w.GPUStaleAfter = c.GPU, c.GPUStaleAfter
	w.StallAfter = c.StallAfter
	return w
}

// Values renders every key in its text form, so that a configuration can be
// handed to a worker process and read back with Set.
func (c Config) Values() map[string]string {
	out := make(map[string]string, len(fields()))
	for k, get := range fields() {
		switch p := get(&c).(type) {
		case *time.Duration:
			out[k] = p.String()
		case *int:
			out[k] = strconv.Itoa(*p)
		case *bool:
			out[k] = strconv.FormatBool(*p)
		}
	}
	return out
}

// FromValues is Defaults with every key of m set (a key beats its alias).
func FromValues(m map[string]string) (Config, error) {
	c := Defaults()
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	SortKeys(keys)
	for _, k := range keys {
		if err := c.Set(k, m[k]); err != nil {
			return c, err
		}
	}
	return c, c.Validate()
}
