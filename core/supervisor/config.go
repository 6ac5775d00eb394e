package supervisor

import (
	"fmt"
	"time"

	"github.com/nomarr/nomarr/core/claim"
	"github.com/nomarr/nomarr/core/restart"
)

// Config is the owner's configuration (docs/design.md §4, §5, §7, §13).
type Config struct {
	// Instance names this running supervisor; claims are <Instance>/<component>.
	Instance string
	// Node is stable across restarts of the app on one host; restart-policy
	// state is keyed <Node>/<component> so it survives app restarts.
	Node    string
	Workers int

	StaleAfter     time.Duration // 10 s
	HangAfter      time.Duration // 30 s
	StartupTimeout time.Duration // 60 s
	ColdStartMax   time.Duration // 15 min
	StallAfter     time.Duration // 10 min
	StopGrace      time.Duration // 10 s
	// PipeCloseGrace is how long a process may live on after closing its
	// frame pipe before it is killed (1 s).
	PipeCloseGrace time.Duration
	LeaseTTL       time.Duration // 30 s; renewed every LeaseTTL/3

	// QuarantineAfter is the crash count at which a file is quarantined.
	QuarantineAfter int

	Restart restart.Config
}

// DefaultConfig returns the defaults of docs/design.md §13.
func DefaultConfig(instance, node string, workers int) Config {
	return Config{
		Instance:        instance,
		Node:            node,
		Workers:         workers,
		StaleAfter:      10 * time.Second,
		HangAfter:       30 * time.Second,
		StartupTimeout:  60 * time.Second,
		ColdStartMax:    15 * time.Minute,
		StallAfter:      10 * time.Minute,
		StopGrace:       10 * time.Second,
		PipeCloseGrace:  time.Second,
		LeaseTTL:        claim.DefaultLeaseTTL,
		QuarantineAfter: 2,
		Restart:         restart.DefaultConfig(),
	}
}

// Validate names the first invalid field.
func (c Config) Validate() error {
	pos := func(name string, d time.Duration) error {
		if d <= 0 {
			return fmt.Errorf("supervisor config: %s must be > 0, got %s", name, d)
		}
		return nil
	}
	if c.Instance == "" {
		return fmt.Errorf("supervisor config: instance is empty")
	}
	if c.Node == "" {
		return fmt.Errorf("supervisor config: node is empty")
	}
	if c.Workers < 0 {
		return fmt.Errorf("supervisor config: workers must be >= 0, got %d", c.Workers)
	}
	for _, e := range []error{
		pos("stale_after", c.StaleAfter), pos("hang_after", c.HangAfter),
		pos("startup_timeout", c.StartupTimeout), pos("cold_start_max", c.ColdStartMax),
		pos("stall_after", c.StallAfter), pos("stop_grace", c.StopGrace), pos("lease_ttl", c.LeaseTTL),
		pos("pipe_close_grace", c.PipeCloseGrace),
	} {
		if e != nil {
			return e
		}
	}
	if c.HangAfter < c.StaleAfter {
		return fmt.Errorf("supervisor config: hang_after (%s) must be >= stale_after (%s)", c.HangAfter, c.StaleAfter)
	}
	if c.QuarantineAfter < 1 {
		return fmt.Errorf("supervisor config: quarantine_after must be >= 1, got %d", c.QuarantineAfter)
	}
	if err := c.Restart.Validate(); err != nil {
		return fmt.Errorf("supervisor config: %w", err)
	}
	return nil
}

// RestartKey is the key of a component's persisted restart state: stable
// across restarts of the app on one node.
func RestartKey(node, component string) string { return node + "/" + component }

// ComponentID returns the id of worker n.
func ComponentID(n int) string { return fmt.Sprintf("worker:discovery:%d", n) }
