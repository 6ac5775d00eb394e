package config

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/nomarr/nomarr/core/gpu"
	"github.com/nomarr/nomarr/core/node"
	"github.com/nomarr/nomarr/core/store"
	"github.com/nomarr/nomarr/core/worker"
)

// coreDefaults gives, for every key, the default that the part of the core
// reading it holds: Defaults must agree with each, and a key added to
// Config without its core default here fails TestDefaultsAgreeWithTheCore.
func coreDefaults() map[string]any {
	n := node.DefaultConfig("i", "n", DefaultWorkers)
	s, m, r := n.Supervisor, n.Monitor, n.Supervisor.Restart
	w := worker.DefaultConfig("c", "i/c")
	return map[string]any{
		"workers":                s.Workers,
		"frame_interval":         DefaultFrameInterval, // no core default: the drivers take it from here
		"stale_after":            s.StaleAfter,
		"hang_after":             s.HangAfter,
		"startup_timeout":        s.StartupTimeout,
		"cold_start_max":         s.ColdStartMax,
		"stall_after":            s.StallAfter,
		"stop_grace":             s.StopGrace,
		"check_interval":         m.CheckInterval,
		"history_interval":       m.HistoryInterval,
		"history_retention":      n.HistoryRetention,
		"backoff_base":           r.BackoffBase,
		"backoff_max":            r.BackoffMax,
		"window_limit":           r.WindowLimit,
		"window":                 r.Window,
		"lifetime_limit":         r.LifetimeLimit,
		"healthy_reset":          r.HealthyReset,
		"lifetime_reset":         r.LifetimeReset,
		"lease_ttl":              s.LeaseTTL,
		"cleanup_period":         n.CleanupPeriod,
		"discover_batch":         w.DiscoverBatch,
		"quarantine_after":       s.QuarantineAfter,
		"idle_poll_min":          w.IdlePollMin,
		"idle_poll_max":          w.IdlePollMax,
		"cache_idle_timeout":     w.CacheIdleTimeout,
		"max_consecutive_errors": w.MaxConsecutiveErrors,
		"transient_retries":      w.TransientRetries,
		"transient_base":         w.TransientBase,
		"transient_max":          w.TransientMax,
		"breaker_threshold":      w.Breaker.Threshold,
		"breaker_cooldown":       w.Breaker.Cooldown,
		"gpu":                    w.UseGPU,
		"gpu_probe_interval":     gpu.ProbeInterval,
		"gpu_stale_after":        w.GPUStaleAfter,
	}
}

// Every key's default is the core's: a default changed in a core package
// changes the configuration's, and none is written twice.
func TestDefaultsAgreeWithTheCore(t *testing.T) {
	want := coreDefaults()
	if got, keys := slices.Sorted(maps.Keys(want)), Keys(); !slices.Equal(got, keys) {
		t.Fatalf("coreDefaults names %v, the configuration has %v", got, keys)
	}
	values := Defaults().Values()
	for _, k := range Keys() {
		var text string
		switch v := want[k].(type) {
		case time.Duration:
			text = v.String()
		default:
			text = fmt.Sprint(v)
		}
		if values[k] != text {
			t.Errorf("%s: the configuration's default is %s, the core's %s", k, values[k], text)
		}
	}
}

// The configurations handed to the core from the defaults are the core's
// own defaults, field for field (the ones that name the process aside).
func TestDefaultsHandTheCoreItsDefaults(t *testing.T) {
	c := Defaults()
	if got, want := c.Node("i", "n"), node.DefaultConfig("i", "n", DefaultWorkers); !reflect.DeepEqual(got, want) {
		t.Errorf("Node:\n got %+v\nwant %+v", got, want)
	}
	want := worker.DefaultConfig("c", "i/c")
	want.PID, want.GPUHealthKey = 7, store.GPUHealthKey("n")
	if got := c.Worker("c", "i/c", "n", 7); !reflect.DeepEqual(got, want) {
		t.Errorf("Worker:\n got %+v\nwant %+v", got, want)
	}
}
