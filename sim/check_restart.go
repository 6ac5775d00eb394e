package sim

import (
	"strings"
	"time"

	"github.com/nomarr/nomarr/core/event"
	"github.com/nomarr/nomarr/core/restart"
)

// Restart timing (docs/design.md §5: "backoff before restart"). A restart_scheduled
// event at t with backoff_ms b makes its component due for a restart at
// t+b, t being the instant of the death that scheduled it; the `restart`
// (the spawn of a new process by the restart policy) that follows must come
// at or after t+b. A later death replaces the timer, and its own due time
// replaces the earlier one; a manual reset of a component not running
// restarts it at once (due now).
//
// At most one pending restart timer per component, and a stop cancels
// them all (docs/design.md §5): each restart consumes the one timer that a
// restart_scheduled or a reset set since the component's last restart, and
// a stop clears every timer of its main process; a restart with no timer
// pending is a violation (a timer that fired twice, or outlived its stop).
//
// The bound is exact: the owner's clock is the simulated one, and a restart
// may come later than due (its claims' release or its restart state's
// write waiting on the store, a stopped main process), never earlier.

// restartScheduled remembers when the scheduled restart of e's component
// is due.
func (c *checker) restartScheduled(e *event.Event) {
	c.restartDue[e.Instance+"/"+e.Component] = c.w.now.Add(time.Duration(e.BackoffMs) * time.Millisecond)
}

// restartReset: a manual reset restarts a component that is not running
// at once.
func (c *checker) restartReset(e *event.Event) {
	k := e.Instance + "/" + e.Component
	if !c.live[k] {
		c.restartDue[k] = c.w.now
	}
}

// restartStop: a stop cancels every pending restart of its main process.
func (c *checker) restartStop(e *event.Event) {
	p := e.Instance + "/"
	for k := range c.restartDue {
		if strings.HasPrefix(k, p) {
			delete(c.restartDue, k)
		}
	}
}

// restarted checks a restart against its pending timer and its due time.
func (c *checker) restarted(e *event.Event) {
	k := e.Instance + "/" + e.Component
	due, ok := c.restartDue[k]
	switch {
	case !ok:
		c.violate("%s restarted with no restart pending (none scheduled or reset since its last restart or its main process's stop)", e.Component)
	case c.w.now.Before(due):
		c.violate("%s restarted %s before its backoff ended (due at %s)", e.Component, due.Sub(c.w.now), due.Sub(c.w.start))
	}
	delete(c.restartDue, k)
}

// checkPersisted checks, as a new main process of its node starts, the
// restart state of component k that it finds in the store (docs/design.md §5: the
// state is persisted and survives app restarts, so a crash loop cannot
// escape its limits by restarting the app) against the checker's model
// built from the previous main processes' events: whether k failed, the
// backoff it reached (min(base·2^(n-1), max) for n consecutive restarts),
// the restarts in the lifetime count and those in the sliding window. The
// store may be behind the model only where a save of k's restart state
// failed since the node's previous main process started (a store_error
// "save restart state" event: store down or erroring, a partition, a held
// lock, a lost answer — a lost answer's write was made, the lenient side):
// the caller skips the check then. Otherwise every decision was written
// when it was taken, so the model must match, except that the lifetime
// count and the window may be lower in the model than in the store: the
// checker counts health from the check before the one that saw it, so it
// may apply a lifetime reset (lifetime_reset of continuous health) that
// the owner has not applied yet.
func (c *checker) checkPersisted(k string, st restart.State) {
	cfg := c.w.cfg
	failed := st.FailedAtWallMs != 0 || st.FailureReason != ""
	var back int64
	if st.Consecutive > 0 {
		back = backoffMs(cfg.BackoffBase, cfg.BackoffMax, st.Consecutive-1)
	}
	cut := c.w.now.Sub(c.w.start).Milliseconds() - cfg.Window.Milliseconds()
	stored := 0
	for _, ms := range st.Recent {
		if ms-c.w.start.UnixMilli() > cut {
			stored++
		}
	}
	recent := 0
	for _, t := range c.restarts[k] {
		if t > cut {
			recent++
		}
	}
	const saved = "with every save of its restart state answered"
	switch {
	case failed != c.failed[k]:
		c.violate("%s: the store's restart state says failed=%v, the checker's model %v, %s", k, failed, c.failed[k], saved)
	case back != c.lastBack[k]:
		c.violate("%s: the store's restart state gives a last backoff of %d ms (consecutive %d), the checker's model %d ms, %s", k, back, st.Consecutive, c.lastBack[k], saved)
	case st.RestartCount < c.lifetime[k]:
		c.violate("%s: the store holds restart_count %d, but %d restarts were granted since its last reset, %s", k, st.RestartCount, c.lifetime[k], saved)
	case stored < recent:
		c.violate("%s: the store holds %d restarts within the window, but %d were granted in it, %s", k, stored, recent, saved)
	}
}
