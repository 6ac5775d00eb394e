package supervisor

import (
	"time"

	"github.com/nomarr/nomarr/core/event"
	"github.com/nomarr/nomarr/core/store"
)

// A graceful stop (Stop) is done only once the store has taken every write
// the stop owes: the release of each dead worker's claims and each restart
// state not yet saved. A store that is down, or whose write lock another
// process holds, therefore holds the stop without limit (Done). The
// operator sees it (WaitingOnStore) and may choose to leave instead:
// ForceStop. What a forced stop gives up is not lost work:
//   - a claim not released keeps its file from discovery until its lease
//     expires (lease_ttl after its last renewal: nobody renews it any
//     more); then any owner's claim cleanup removes it and the file is
//     work again (docs/design.md §7). No crash is counted against the file.
//   - a restart state not saved leaves the last state saved: the next start
//     counts restarts from there, so a death or a give-up decided during
//     this run may be forgotten (a failed worker may be spawned again).
//
// A stop gives those writes up by itself when the store refuses them as
// detached (store.ErrDetached: a SQLite file deleted or replaced under the
// process): no retry in this process can make them, so waiting would hold
// the stop until a second signal. Abandoned says so (Detached).

// StoreWait is what a stop waits for while the store refuses its writes:
// the components whose dead process's claims are not yet released, and those
// whose restart state is not yet saved, in component order.
type StoreWait struct {
	Releases      []string
	RestartStates []string
}

// WaitingOnStore reports whether a stop is waiting on the store alone: it is
// stopping and not forced, no worker runs any more, and a claim release or
// a restart-state save is still pending (Tick retries them). The driver
// tells the operator, who may force the stop.
func (s *Supervisor) WaitingOnStore() (StoreWait, bool) {
	if !s.stopping || s.forced {
		return StoreWait{}, false
	}
	var w StoreWait
	for _, c := range s.comps {
		if c.running {
			return StoreWait{}, false
		}
		if c.releasePending {
			w.Releases = append(w.Releases, c.id)
		}
		if c.persistPending {
			w.RestartStates = append(w.RestartStates, c.id)
		}
	}
	return w, len(w.Releases)+len(w.RestartStates) > 0
}

// Abandoned is what a forced stop gave up (see above), in component order:
// the components whose dead process's claims were not released, with their
// instance-qualified worker ids (the claims' owner), and those whose
// restart state was not saved.
type Abandoned struct {
	Releases      []string
	WorkerIDs     []string
	RestartStates []string
	// Detached, when the writes were given up because the store reported
	// itself detached during a stop (store.ErrDetached) rather than by
	// ForceStop, is the store's first such error.
	Detached string
}

// Empty reports whether nothing was given up.
func (a Abandoned) Empty() bool { return len(a.Releases) == 0 && len(a.RestartStates) == 0 }

// ForceStop is the stop that does not wait: the operator asked again.
//
// It emits a stop event with reason "forced". Before any Stop it is a stop
// too: pending restart timers are cancelled first, as by Stop, and no
// SIGTERM is sent. Then every live worker not already being killed gets
// SIGKILL at once (a kill event with reason "forced stop"), and the store
// writes the stop waits for are given up: the pending claim releases and
// restart-state saves are no longer retried. From now on a store write
// that fails is given up rather than left pending: a worker killed here
// still tries to release its claims once, when its exit is reported. So
// Done is true as soon as every worker's exit is reported, whatever the
// store does. Abandoned reports what was given up. Idempotent: a second
// call does nothing.
func (s *Supervisor) ForceStop(now time.Time) {
	if s.forced {
		return
	}
	if s.stopping {
		s.sink.Emit(event.Event{T: now, Event: event.Stop, Instance: s.cfg.Instance, Reason: "forced"})
	} else {
		s.beginStop(now, "forced")
	}
	s.forced = true
	for _, c := range s.comps {
		if c.releasePending {
			c.releasePending, c.releaseAbandoned = false, true
		}
		if c.persistPending {
			c.persistPending, c.persistAbandoned = false, true
		}
	}
	for _, c := range s.comps {
		if c.running && !c.killing {
			s.kill(now, c, KillForcedStop, "forced stop")
		}
	}
}

// givesUp reports whether a store write that failed with err is given up
// rather than left pending for Tick to retry: after ForceStop, and during
// a stop when the store says it can take no write of this process again
// (store.ErrDetached; Detached keeps the first such error).
func (s *Supervisor) givesUp(err error) bool {
	if s.forced {
		return true
	}
	if !s.stopping || !store.IsDetached(err) {
		return false
	}
	if s.detached == "" {
		s.detached = err.Error()
	}
	return true
}

// Forced reports whether ForceStop was called.
func (s *Supervisor) Forced() bool { return s.forced }

// Abandoned returns what a forced stop, or a stop on a detached store, gave
// up so far; it is final once Done.
func (s *Supervisor) Abandoned() Abandoned {
	a := Abandoned{Detached: s.detached}
	for _, c := range s.comps {
		if c.releaseAbandoned {
			a.Releases = append(a.Releases, c.id)
			a.WorkerIDs = append(a.WorkerIDs, c.workerID)
		}
		if c.persistAbandoned {
			a.RestartStates = append(a.RestartStates, c.id)
		}
	}
	return a
}
