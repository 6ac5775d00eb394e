package sim

import (
	"time"

	"github.com/nomarr/nomarr/core/event"
)

// Restart timing (DESIGN §5: "backoff before restart"). A restart_scheduled
// event at t with backoff_ms b makes its component due for a restart at
// t+b, t being the instant of the death that scheduled it; the `restart`
// (the spawn of a new process by the restart policy) that follows must come
// at or after t+b. A later death replaces the timer, and its own due time
// replaces the earlier one; a manual reset restarts at once (due now).
// The bound is exact: the owner's clock is the simulated one, and a restart
// may come later than due (its claims' release or its restart state's
// write waiting on the store, a stopped main process), never earlier.

// restartScheduled remembers when the scheduled restart of e's component
// is due.
func (c *checker) restartScheduled(e *event.Event) {
	c.restartDue[e.Instance+"/"+e.Component] = c.w.now.Add(time.Duration(e.BackoffMs) * time.Millisecond)
}

// restartReset: a manual reset restarts the component at once.
func (c *checker) restartReset(e *event.Event) {
	c.restartDue[e.Instance+"/"+e.Component] = c.w.now
}

// restarted checks a restart against its due time.
func (c *checker) restarted(e *event.Event) {
	k := e.Instance + "/" + e.Component
	if due, ok := c.restartDue[k]; ok && c.w.now.Before(due) {
		c.violate("%s restarted %s before its backoff ended (due at %s)", e.Component, due.Sub(c.w.now), due.Sub(c.w.start))
	}
	delete(c.restartDue, k)
}
