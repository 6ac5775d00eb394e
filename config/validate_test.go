package config

import (
	"strings"
	"testing"
	"time"

	"github.com/nomarr/nomarr/core/gpu"
)

// TestValidateNamesRestartAndBreakerKeys guards the promise that an invalid
// value is reported under its configuration key: the restart-policy and
// breaker rules live in core validators whose messages name Go fields
// (WindowLimit, Threshold, …), which a user cannot find in config.yaml.
func TestValidateNamesRestartAndBreakerKeys(t *testing.T) {
	cases := []struct {
		key string
		mod func(*Config)
	}{
		{"backoff_base", func(c *Config) { c.BackoffBase = 0 }},
		{"backoff_max", func(c *Config) { c.BackoffMax = c.BackoffBase / 2 }},
		{"window_limit", func(c *Config) { c.WindowLimit = 0 }},
		{"window", func(c *Config) { c.Window = 0 }},
		{"lifetime_limit", func(c *Config) { c.LifetimeLimit = 0 }},
		{"healthy_reset", func(c *Config) { c.HealthyReset = 0 }},
		{"lifetime_reset", func(c *Config) { c.Window = 48 * time.Hour }},
		{"breaker_threshold", func(c *Config) { c.BreakerThreshold = 0 }},
		{"idle_poll_max", func(c *Config) { c.IdlePollMax = c.IdlePollMin / 2 }},
	}
	for _, tc := range cases {
		c := Defaults()
		tc.mod(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.key) {
			t.Errorf("%s invalid: error %v does not name the key", tc.key, err)
		}
	}
}

// TestValidateGPUStaleAfterCoversProbeInterval guards against a GPU
// configuration under which the health value goes stale between probes:
// workers would refuse every GPU job (gpu_stale_after 0) or some of them
// although the GPU is fine. gpu_stale_after must be at least
// gpu_probe_interval plus the probe timeout when gpu is true.
func TestValidateGPUStaleAfterCoversProbeInterval(t *testing.T) {
	c := Defaults()
	c.GPU = true
	floor := c.GPUProbeInterval + gpu.ProbeTimeout
	for _, stale := range []time.Duration{0, 5 * time.Second, c.GPUProbeInterval, floor - time.Millisecond} {
		c.GPUStaleAfter = stale
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "gpu_stale_after") {
			t.Errorf("gpu: true, gpu_stale_after %s, gpu_probe_interval %s: error %v, want one naming gpu_stale_after",
				stale, c.GPUProbeInterval, err)
		}
	}
	c.GPUStaleAfter = floor
	if err := c.Validate(); err != nil {
		t.Errorf("gpu_stale_after = gpu_probe_interval + probe timeout (%s): %v", floor, err)
	}
	c.GPU, c.GPUStaleAfter = false, 0 // unused without a GPU
	if err := c.Validate(); err != nil {
		t.Errorf("gpu: false, gpu_stale_after 0: %v", err)
	}
}

// TestValidateRejectsZeroDiscoverBatch guards that discover_batch: 0 is an
// error naming the key: the claimer reads 0 as its default batch (8), so
// the value would otherwise be silently replaced.
func TestValidateRejectsZeroDiscoverBatch(t *testing.T) {
	c := Defaults()
	c.DiscoverBatch = 0
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "discover_batch") {
		t.Errorf("discover_batch 0: %v, want an error naming discover_batch", err)
	}
	c.DiscoverBatch = 1
	if err := c.Validate(); err != nil {
		t.Errorf("discover_batch 1: %v", err)
	}
}
