package config

import (
	"strings"
	"testing"
	"time"
)

func TestDefaultsValid(t *testing.T) {
	if err := Defaults().Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestSetNamesTheKey(t *testing.T) {
	c := Defaults()
	for key, val := range map[string]string{"hang_after": "soon", "workers": "-1", "gpu": "perhaps", "nope": "1"} {
		err := c.Set(key, val)
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("Set(%s, %s) = %v, want an error naming the key", key, val, err)
		}
	}
}

func TestValidateNamesTheKey(t *testing.T) {
	c := Defaults()
	c.FrameInterval = time.Millisecond
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "frame_interval") {
		t.Errorf("got %v", err)
	}
	c = Defaults()
	c.Workers = MaxWorkers + 1
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "workers") {
		t.Errorf("got %v", err)
	}
	c = Defaults() // frame_interval 5 s: an orphan's renewal could come after a 7 s lease ended
	c.LeaseTTL = 7 * time.Second
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "lease_ttl") {
		t.Errorf("lease_ttl 7s with frame_interval 5s: got %v", err)
	}
	c.LeaseTTL = 8 * time.Second
	if err := c.Validate(); err != nil {
		t.Errorf("lease_ttl 8s with frame_interval 5s: %v", err)
	}
	for _, bad := range []time.Duration{-time.Hour, time.Second} { // negative; shorter than history_interval
		c = Defaults()
		c.HistoryRetention = bad
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "history_retention") {
			t.Errorf("history_retention %s: got %v", bad, err)
		}
	}
}

// A rule that fires before a frame can come would kill healthy workers:
// stall_after needs two frame intervals, startup_timeout and
// cold_start_max one. Durations are bounded, so that their sums in the
// checks and the core cannot overflow.
func TestValidateTimingAgainstFrames(t *testing.T) {
	for _, tc := range []struct {
		key string
		set func(*Config)
	}{
		{"stall_after", func(c *Config) { c.StallAfter = 3 * time.Second }},
		{"stall_after", func(c *Config) { c.StallAfter = 10 * time.Second }}, // two frames of 5 s: not more
		{"startup_timeout", func(c *Config) { c.StartupTimeout = 5 * time.Second }},
		{"cold_start_max", func(c *Config) { c.ColdStartMax = 4 * time.Second }},
		{"frame_interval", func(c *Config) {
			c.FrameInterval, c.StaleAfter, c.HangAfter = 1000000*time.Hour, 1000001*time.Hour, 1000001*time.Hour
		}},
	} {
		c := Defaults()
		tc.set(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.key) {
			t.Errorf("%s: got %v, want an error naming it", tc.key, err)
		}
	}
	c := Defaults()
	c.StallAfter = 11 * time.Second
	if err := c.Validate(); err != nil {
		t.Errorf("stall_after 11s with frame_interval 5s: %v", err)
	}
}

func TestValuesRoundTrip(t *testing.T) {
	c := Defaults()
	c.Workers, c.HangAfter, c.GPU = 7, 42*time.Second, true
	back, err := FromValues(c.Values())
	if err != nil {
		t.Fatal(err)
	}
	if back != c {
		t.Errorf("round trip changed the configuration:\n%+v\n%+v", c, back)
	}
	if len(c.Values()) != len(Keys()) {
		t.Errorf("Values has %d keys, Keys %d", len(c.Values()), len(Keys()))
	}
}

func TestAliasAndApply(t *testing.T) {
	c := Defaults()
	if err := c.Apply(map[string]any{"tagger_worker_count": 3, "lease_ttl": "45s", "gpu": true}); err != nil {
		t.Fatal(err)
	}
	if c.Workers != 3 || c.LeaseTTL != 45*time.Second || !c.GPU {
		t.Errorf("got %+v", c)
	}
	if err := c.Apply(map[string]any{"workers": 2.5}); err == nil {
		t.Error("a fractional worker count was accepted")
	}
}
