package sim

import (
	"time"

	"github.com/nomarr/nomarr/core/event"
)

// Dead claims go at once (docs/design.md §7: "when the owner sees a worker die it
// releases that worker's claims at once (target: file rediscoverable
// < 1 s after a SIGKILL)").
//
// When the owner sees it: the simulator tells a main process of its
// worker's end in the instant the process ends (Instance.deliverExit: a
// zero-delay event that closes the frame pipe, then reports the exit), or,
// while its loop is held up (a store call waiting on a held lock, a
// stopped main process), in the turn that runs once it is free. The
// supervisor emits `exit` and calls ReleaseWorker in that same turn
// (Supervisor.die); a release that fails stays pending and is retried at
// every tick, and a running loop ticks at least every check_interval (the
// monitor's checks).
//
// Property: every claim of the dead worker (its worker id, claimed at or
// before the `exit`) is gone from the store, whether by the owner's
// "worker died" release or otherwise, once check_interval has passed since
// the `exit` event's instant (the first event after exit + check_interval
// finds none). Production releases in the exit's own turn; the slack of
// one tick lets a release on the next tick pass, within the design's < 1 s
// target with the default check_interval of 1 s, while a release left to
// the claim cleanup (a cleanup period, a lease_ttl) fails it.
//
// The bound holds unless something may have held the release back: from
// the exit's instant on, a store fault (down or slow, an operation failed
// by injection or whose answer was lost), a host cut off from the store,
// a hung worker holding the store's lock (each as c.faultAt records it:
// any host, any operation, the lenient side), or the owning main process
// dead, replaced or stopped (`main: hang`). Such a death is left to the
// lease-based bound of afterEvent (lease_ttl + cleanup period + one check
// interval from the death, an owner being up, and the store's recovery).
type ownerExit struct {
	instance string    // the main process that saw the death
	workerID string    // the dead worker's id: <instance>/<component>
	at       time.Time // the `exit` event's instant
}

// releaseExit: the owner declared a worker dead (its `exit` event).
func (c *checker) releaseExit(e *event.Event) {
	c.exits = append(c.exits, ownerExit{instance: e.Instance, workerID: e.Instance + "/" + e.Component, at: c.w.now})
}

// releaseAfterEvent checks the deaths whose claims are due to be gone;
// called after c.faultAt is brought up to date.
func (c *checker) releaseAfterEvent() {
	if len(c.exits) == 0 {
		return
	}
	w := c.w
	keep := c.exits[:0]
	for _, d := range c.exits {
		if !c.faultAt.Before(d.at) || !c.ownerRuns(d.instance) {
			continue // a fault or the owner's absence may hold it: the lease-based bound applies
		}
		if !w.now.After(d.at.Add(w.cfg.CheckInterval)) {
			keep = append(keep, d)
			continue
		}
		for _, cl := range w.Store.Claims() {
			if cl.WorkerID == d.workerID && !cl.ClaimedAt.After(d.at) {
				c.violate("claim on %s of %s, seen dead at %s with the store healthy, not released %s after (want at once, within check_interval %s)",
					cl.FileKey, d.workerID, d.at.Sub(w.start), w.now.Sub(d.at), w.cfg.CheckInterval)
			}
		}
	}
	c.exits = keep
}

// ownerRuns reports whether the main process of instance id is alive and
// not stopped.
func (c *checker) ownerRuns(id string) bool {
	in := c.instance(id)
	return in != nil && in.alive && !c.mainHeld(in)
}

// mainHeld reports whether the main process of in is stopped (`main:
// hang`), or at the end of its stop and not yet continued (its loop's
// first turn, in which it continues, may come after other events of that
// instant).
func (c *checker) mainHeld(in *Instance) bool {
	return c.w.now.Before(in.loop.stopped) || !in.loop.asked.IsZero()
}
