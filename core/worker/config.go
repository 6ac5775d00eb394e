package worker

import (
	"fmt"
	"time"

	"github.com/nomarr/nomarr/core/breaker"
	"github.com/nomarr/nomarr/core/claim"
	"github.com/nomarr/nomarr/core/gpu"
	"github.com/nomarr/nomarr/core/store"
)

// Config is one worker's configuration (docs/design.md §8, §13).
type Config struct {
	Component string // worker:discovery:N
	WorkerID  string // <instance>/<component>, names its claims
	PID       int

	LeaseTTL      time.Duration
	DiscoverBatch int

	IdlePollMin    time.Duration // 1 s
	IdlePollMax    time.Duration // 30 s
	IdlePollFactor float64       // 1.5
	// PausedPoll (1 s): how often a worker that claims nothing reads the
	// pause flag. A paused worker sees a resume on its next read; an idle
	// one reads it between the discoveries of its idle poll, so a pause
	// shows within PausedPoll however long that poll has grown; one
	// backing off for anything but the store reads it as often
	// (backoffpause.go).
	PausedPoll time.Duration

	CacheIdleTimeout time.Duration // 5 min: unload models after this long idle

	MaxConsecutiveErrors int           // 10 counted errors in a row: exit non-zero
	TransientRetries     int           // 5 attempts, then the file is failed
	TransientBase        time.Duration // 60 s
	TransientMax         time.Duration // 30 min

	Breaker        breaker.Config
	ServiceBackoff time.Duration // 1 s: first wait after a dependency failure
	ServiceMax     time.Duration // 30 s: cap of that wait

	UseGPU        bool
	GPUStaleAfter time.Duration // 60 s
	// GPUHealthKey is the meta key the GPU preflight reads: its host's
	// (store.GPUHealthKey(node)), written by that host's probe.
	GPUHealthKey string

	// MaxPendingWrites bounds how many times a finished job's store write is
	// retried after the main process died; then the worker exits and the lease
	// expiry returns the file to the pool.
	MaxPendingWrites int
	// StallAfter (stall_after, 10 min): an orphaned worker whose job shows
	// no progress this long abandons it (OrphanAbandons). 0: never.
	StallAfter time.Duration

	// SkipTagging: the worker claims no tagging work (a run that only
	// retags). Set by the process, not by configuration.
	SkipTagging bool
	// Retag: when there is no tagging work, the worker claims retags
	// (store.JobRetag), which its analyzer does without the models. Set
	// by the process from its analyzer, not by configuration.
	Retag bool
	// VectorModelSet: when there is neither tagging nor retag work, the
	// worker claims files tagged by this model set that have no vector
	// of it (store.JobVector), which its analyzer makes; "": none. Set by
	// the process from its analyzer, not by configuration.
	VectorModelSet string
}

// DefaultConfig returns the defaults of docs/design.md §13 for component id.
func DefaultConfig(component, workerID string) Config {
	return Config{
		Component:            component,
		WorkerID:             workerID,
		LeaseTTL:             claim.DefaultLeaseTTL,
		DiscoverBatch:        claim.DefaultBatch,
		IdlePollMin:          time.Second,
		IdlePollMax:          30 * time.Second,
		IdlePollFactor:       1.5,
		PausedPoll:           time.Second,
		CacheIdleTimeout:     5 * time.Minute,
		MaxConsecutiveErrors: 10,
		TransientRetries:     5,
		TransientBase:        60 * time.Second,
		TransientMax:         30 * time.Minute,
		Breaker:              breaker.DefaultConfig(),
		ServiceBackoff:       time.Second,
		ServiceMax:           30 * time.Second,
		GPUStaleAfter:        gpu.StaleAfter,
		GPUHealthKey:         store.MetaGPUHealth,
		MaxPendingWrites:     20,
		StallAfter:           10 * time.Minute,
	}
}

// Validate names the first invalid field.
func (c Config) Validate() error {
	switch {
	case c.Component == "":
		return fmt.Errorf("worker config: component is empty")
	case c.WorkerID == "":
		return fmt.Errorf("worker config: worker_id is empty")
	case c.LeaseTTL <= 0:
		return fmt.Errorf("worker config: lease_ttl must be > 0, got %s", c.LeaseTTL)
	case c.IdlePollMin <= 0 || c.IdlePollMax < c.IdlePollMin:
		return fmt.Errorf("worker config: idle poll range [%s, %s] is invalid", c.IdlePollMin, c.IdlePollMax)
	case c.IdlePollFactor < 1:
		return fmt.Errorf("worker config: idle_poll_factor must be >= 1, got %g", c.IdlePollFactor)
	case c.PausedPoll <= 0:
		return fmt.Errorf("worker config: paused_poll must be > 0")
	case c.MaxConsecutiveErrors <= 0:
		return fmt.Errorf("worker config: max_consecutive_errors must be > 0")
	case c.TransientRetries <= 0:
		return fmt.Errorf("worker config: transient_retries must be > 0")
	case c.ServiceBackoff <= 0 || c.ServiceMax < c.ServiceBackoff:
		return fmt.Errorf("worker config: service backoff range [%s, %s] is invalid", c.ServiceBackoff, c.ServiceMax)
	}
	return nil
}
