package sim

import (
	"strings"
	"time"

	"github.com/nomarr/nomarr/core/event"
)

// Lease renewal (docs/design.md §7: "lease_until = now + lease_ttl; the owner
// renews the leases of its live workers every lease_ttl/3 in one batched
// write").
//
// The rule in the code: a worker claims with lease_until = claimed_at +
// lease_ttl (claim.Claimer); Supervisor.Start sets the first renewal due
// at its start + lease_ttl/3, and Tick renews when one is due, setting
// lease_until = now + lease_ttl on every claim of its running workers not
// being killed and the next renewal due at now + lease_ttl/3 (after a
// failed write: at once, so the next tick tries again). A tick comes at
// the latest check_interval after the one before, on a loop that runs
// (the monitor's checks; earlier ticks only renew earlier). So on a loop
// that runs and a store that answers, a claim's lease was set at most
// lease_ttl/3 + check_interval ago, to then + lease_ttl.
//
// Property, exact: for every claim in the store of a worker whose process
// is alive and has not been killed (no `kill` since its spawn: the owner
// stops renewing a worker it kills), of a main process that is alive and
// not stopped,
//
//	lease_until − now ≥ lease_ttl − lease_ttl/3 − check_interval
//
// at the first event of every instant (the checker runs after each; a
// running loop's ticks are events, at most check_interval apart, so no
// renewal period goes unsampled; the bound holds at any event, so fewer
// samples only see less). A renewal every 2/3·lease_ttl lets it fall to
// about a third.
//
// Excused, as the other checks excuse faults: up to check_interval after
// the last fault (c.faultAt: the store down or slow or just back, an
// operation failed by injection or whose answer was lost, any host cut
// off, a hung worker holding the store's lock: a renewal that failed is
// tried again at the next tick, the first after the fault ends); while the
// main process is stopped (`main: hang`) and up to check_interval after it
// continues (its loop first ticks then). An orphan's lease, which it keeps
// itself (worker.KeepLease), is another rule: its main process is dead.
func (c *checker) leaseAfterEvent() {
	w := c.w
	ttl, ci := w.cfg.LeaseTTL, w.cfg.CheckInterval
	if !w.now.After(c.faultAt.Add(ci)) || w.now.Equal(c.leaseSampled) {
		return
	}
	c.leaseSampled = w.now
	want := ttl - ttl/3 - ci
	for _, cl := range w.Store.Claims() {
		inst, comp, _ := strings.Cut(cl.WorkerID, "/")
		in := c.instance(inst)
		if in == nil || !in.alive || c.mainHeld(in) || c.continuedWithin(in.ID, ci) {
			continue
		}
		if p := in.procs[comp]; p == nil || !p.alive || c.killed[cl.WorkerID] {
			continue
		}
		if left := cl.LeaseUntil.Sub(w.now); left < want && !c.leaseFlagged[cl] {
			c.leaseFlagged[cl] = true // once per lease, not at every event
			c.violate("lease of %s's claim on %s runs out in %s, want at least lease_ttl − lease_ttl/3 − check_interval = %s (renewed every lease_ttl/3 = %s)",
				cl.WorkerID, cl.FileKey, left, want, ttl/3)
		}
	}
}

// continuedWithin reports whether the main process of instance id
// continued from a stop less than d ago (or just now).
func (c *checker) continuedWithin(id string, d time.Duration) bool {
	s := c.stops[id]
	return len(s) > 0 && !c.w.now.After(s[len(s)-1].to.Add(d))
}

// leaseKill: the owner kills a worker; it renews its claims no more.
// A spawn or restart of the component, or its exit, ends the mark.
func (c *checker) leaseKill(e *event.Event) {
	if e.Event == event.Kill {
		c.killed[e.Instance+"/"+e.Component] = true
	} else {
		delete(c.killed, e.Instance+"/"+e.Component)
	}
}
